"""The memory a serving engine holds, read at a handoff's phases for the ledger's records.

A scheduler knows its engine by URL only. Reached at a loopback address, the engine is a
process of this machine: the one listening on the URL's port (found through
``/proc/net/tcp``, ``tcp6`` and the processes' open sockets), read with its descendants
(:func:`~.host_memory.read_host_memory`: host PSS). Where NVML is there, the device
memory of the GPU that lists the engine's processes (or of the only GPU) is read too. An
engine on another machine, or one whose processes cannot be read, is recorded without
that reading (``None``), never with a made-up one.
"""

from __future__ import annotations

import ipaddress
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..serving.errors import NvmlError
from ..serving.memory import DeviceMemory, HostMemory
from .host_memory import PROC, read_host_memory
from .nvml import NvmlDevice, device_count, open_device

__all__ = ["EngineMemory", "listening_pid"]

LISTEN = "0A"  # the TCP state /proc/net/tcp gives a listening socket


def _loopback_or_any(hex_address: str) -> bool:
    """Whether a ``/proc/net/tcp{,6}`` address (hex, 32-bit words in host order) is a
    loopback or wildcard address: one a loopback URL reaches."""
    raw = bytes.fromhex(hex_address)
    step = -1 if sys.byteorder == "little" else 1  # each word printed as a native integer
    packed = b"".join(raw[i : i + 4][::step] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(packed)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _listening_inodes(port: int) -> set[str]:
    """The socket inodes listening on ``port`` at a loopback or wildcard address."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:  # no IPv6 in this kernel
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port and _loopback_or_any(address):
                inodes.add(fields[9])
    return inodes


def _socket_links(pid: Path) -> Iterator[str]:
    """The ``socket:[INODE]`` links of one process's open files (none if unreadable)."""
    try:
        for fd in (pid / "fd").iterdir():
            try:
                yield fd.readlink().name
            except OSError:  # closed while listed
                continue
    except OSError:  # exited, or another user's
        return


def listening_pid(port: int) -> int | None:
    """The process of this machine listening on TCP ``port`` at a loopback or wildcard
    address, or ``None`` (nobody, or a process this user cannot read)."""
    wanted = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not wanted:
        return None
    for entry in PROC.iterdir():
        if entry.name.isdigit() and any(link in wanted for link in _socket_links(entry)):
            return int(entry.name)
    return None


def _loopback_port(url: str) -> int | None:
    """The port of a loopback ``url`` (``None``: another host, whose processes are not here)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return None
        except ValueError:  # a name: resolving it is not this reading's business
            return None
    return parts.port or (443 if parts.scheme == "https" else 80)


class EngineMemory:
    """Host and device memory of the engine at ``url``, read at named phases.

    :meth:`mark` reads in a thread of its own, so a handoff never waits for the reading
    (a large engine's ``smaps_rollup`` takes tens of milliseconds); :meth:`fields` waits
    for the phases it is asked for and gives them as a ledger record's memory fields.

    Parameters
    ----------
    url
        The engine's base URL, ``http(s)://HOST:PORT``.
    """

    def __init__(self, url: str) -> None:
        self.port = _loopback_port(url)
        self.pid: int | None = None
        self.nvml = True  # until NVML proves unusable here
        self._readings: dict[str, tuple[DeviceMemory | None, HostMemory | None]] = {}
        self._threads: dict[str, threading.Thread] = {}

    def _engine_pid(self) -> int | None:
        """The engine's listening process, found again when the last one has gone."""
        if self.port is None:
            return None
        if self.pid is None or not (PROC / str(self.pid)).exists():
            self.pid = listening_pid(self.port)
        return self.pid

    def _device(self, pids: set[int]) -> NvmlDevice | None:
        """The GPU listing one of ``pids``, or the only GPU; ``None`` without NVML."""
        if not self.nvml:
            return None
        try:
            count = device_count()
            devices = [open_device(index) for index in range(count)]
            for device in devices:
                if any(p.pid in pids for p in device.processes()):
                    return device
        except NvmlError:  # no nvidia-ml-py, no driver, or no GPU: host memory only
            self.nvml = False
            return None
        return devices[0] if count == 1 and pids else None

    def read(self) -> tuple[DeviceMemory | None, HostMemory | None]:
        """The engine's device memory and its process tree's host PSS now (each
        ``None`` where it cannot be read)."""
        pid = self._engine_pid()
        host = None
        if pid is not None:
            try:
                host = read_host_memory(pid)
            except OSError:  # restarted, or not ours to read
                self.pid = None
        device = self._device(set() if host is None else set(host.pids))
        try:
            return (None if device is None else device.memory()), host
        except NvmlError:
            return None, host

    def mark(self, phase: str) -> None:
        """Start reading the memory now, as ``phase`` (replacing an earlier one)."""

        def read() -> None:
            self._readings[phase] = self.read()

        thread = threading.Thread(target=read, name=f"engine-memory-{phase}", daemon=True)
        self._threads[phase] = thread
        thread.start()

    def fields(self, before: str | None, after: str | None = None) -> dict[str, Any]:
        """The readings of ``before`` and ``after`` as a record's ``device_before``,
        ``host_before``, ``device_after`` and ``host_after`` (a phase never marked:
        ``None``); each reading is given once, then forgotten."""
        out: dict[str, Any] = {}
        for side, phase in (("before", before), ("after", after)):
            out[f"device_{side}"], out[f"host_{side}"] = self._take(phase)
        return out

    def _take(self, phase: str | None) -> tuple[DeviceMemory | None, HostMemory | None]:
        """The reading of ``phase`` once it is done, forgotten here (none: ``None``s)."""
        thread = None if phase is None else self._threads.pop(phase, None)
        if thread is not None:
            thread.join()
        return (None, None) if phase is None else self._readings.pop(phase, (None, None))
