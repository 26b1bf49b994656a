"""The handoff ledger: one JSON line per handoff, durable once :meth:`HandoffLedger.append` returns.

Each append takes an exclusive lock, writes the whole line, then fsyncs the file (and
the folder when it creates the file). A writer killed mid-append can leave only its own
uncommitted line torn at the end: the next append cuts it off, and :func:`read_ledger`
skips it with a :class:`TornRecordWarning`. No record whose append returned is lost.

A full disk must not stop the records that say an engine came back: a run preallocates
:data:`RESERVE_BYTES` in the file ``.NAME.reserve`` beside the ledger
(:meth:`HandoffLedger.reserve`), and an append marked ``reserved`` that meets a full disk
(``ENOSPC``, ``EDQUOT``) frees that file and tries once more. Every operating-system
error of an append names the file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._atomic import FILE_MODE, fsync_folder, naming_file
from .._checks import integer
from .._json import parse as parse_json
from .memory import DeviceMemory, HostMemory

__all__ = ["RESERVE_BYTES", "HandoffLedger", "HandoffRecord", "TornRecordWarning", "read_ledger"]

RESERVE_BYTES = 1 << 20
"""Room a run keeps beside its ledger for the records of a return on a full disk, bytes
(a return record is a few KiB; the latencies of thousands of held requests, tens)."""

# A full disk, or the user's quota spent: what freeing the reserve can cure.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def _allocate(fd: int, size: int) -> None:
    """Hold ``size`` bytes of disk for ``fd``: preallocated (blocks already held cost no
    new room), or written as zeros where the file system cannot preallocate (NFS before
    4.2, some FUSE file systems)."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as err:
        if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        zeros = bytes(min(size, 1 << 16))
        written = os.lseek(fd, 0, os.SEEK_SET)
        while written < size:
            written += os.write(fd, zeros[: size - written])


class TornRecordWarning(UserWarning):
    """The ledger ends in a partial line (a writer was killed mid-append)."""


@dataclass(frozen=True)
class HandoffRecord:
    """One handoff between evolution and serving.

    Parameters
    ----------
    kind
        What happened, e.g. ``"cold"`` or ``"warm"`` recovery, ``"checkpoint"``.
    engine
        Serving engine (``"vllm"``, ``"sglang"``), or ``None``.
    stamps_ns
        Event stamps on one monotonic clock (``perf_counter_ns``) of the recording
        process, e.g. ``{"resume_sent": ..., "request_done": ...}``.
    readiness_s
        From the handoff's start to serving capacity ready, seconds (``None`` if the
        handoff does not restore capacity).
    durable_progress
        Checkpointed progress after the handoff, quanta (``None`` when no candidate).
    unsaved_lost
        Completed but unsaved progress discarded, quanta (``None`` when no candidate).
    device_before, device_after
        Device memory around the handoff (``None`` without NVML).
    host_before, host_after
        Host PSS of the engine's process tree around the handoff (``None`` if not read).
    wall_time
        Seconds since the epoch when recorded (for humans; intervals use the stamps).
    failure
        Why the handoff did not bring the capacity back as it was (e.g. ``"weights not
        restored: ..."``), or ``None``.
    detail
        Kind-specific JSON fields (e.g. a scheduler decision's window and action).
    """

    kind: str
    engine: str | None = None
    stamps_ns: Mapping[str, int] = field(default_factory=dict)
    readiness_s: float | None = None
    durable_progress: int | None = None
    unsaved_lost: int | None = None
    device_before: DeviceMemory | None = None
    device_after: DeviceMemory | None = None
    host_before: HostMemory | None = None
    host_after: HostMemory | None = None
    wall_time: float = field(default_factory=time.time)
    failure: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind: object = self.kind  # checked at run time: records are read from JSON
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"kind must be a non-empty string, got {self.kind!r}")
        for name in ("durable_progress", "unsaved_lost"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer or None, got {value!r}")
            integer(name, value, low=0)
        object.__setattr__(self, "stamps_ns", dict(self.stamps_ns))
        object.__setattr__(self, "detail", dict(self.detail))

    def to_json(self) -> dict[str, Any]:
        """A JSON object (tuples become lists)."""
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> HandoffRecord:
        """Rebuild from :meth:`to_json`'s object."""
        data = dict(obj)
        for key in ("device_before", "device_after"):
            if data.get(key) is not None:
                data[key] = DeviceMemory(**data[key])
        for key in ("host_before", "host_after"):
            if data.get(key) is not None:
                data[key] = HostMemory(**{**data[key], "pids": tuple(data[key]["pids"])})
        return cls(**data)


def _cut_torn_tail(fd: int) -> None:
    """Truncate after the last newline: an unterminated tail was never committed."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    block = 4096
    end = size
    while end > 0:
        start = max(0, end - block)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            os.ftruncate(fd, start + cut + 1)
            return
        end = start
    os.ftruncate(fd, 0)


class HandoffLedger:
    """An append-only JSON-lines file of :class:`HandoffRecord`.

    Parameters
    ----------
    path
        The ledger file (created on the first append; its folder must exist).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.reserve_path = self.path.with_name(f".{self.path.name}.reserve")
        self.reserve_spent = False  # a reserved append freed the reserve

    def __repr__(self) -> str:
        return f"HandoffLedger({str(self.path)!r})"

    def reserve(self, size: int = RESERVE_BYTES) -> None:
        """Preallocate ``size`` bytes in :attr:`reserve_path` for reserved appends (an
        ``OSError`` naming that file where the disk has no room for it)."""
        integer("size", size, low=1)
        created = not self.reserve_path.exists()
        with naming_file(self.reserve_path):
            fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
            try:
                _allocate(fd, size)
                os.fsync(fd)
            finally:
                os.close(fd)
        if created:
            fsync_folder(self.path.parent)
        self.reserve_spent = False

    def append(self, record: HandoffRecord, *, reserved: bool = False) -> None:
        """Write one record durably (flushed and fsynced before returning).

        With ``reserved``, a full disk (``ENOSPC``, ``EDQUOT``) frees the reserve
        (:meth:`reserve`; :attr:`reserve_spent` is then set) and the write is tried once
        more. An ``OSError`` names the ledger.
        """
        line = (json.dumps(record.to_json(), sort_keys=True, allow_nan=False) + "\n").encode()
        try:
            self._write(line)
        except OSError as err:
            if not (reserved and err.errno in _FULL and self._free_reserve()):
                raise
            self._write(line)

    def _free_reserve(self) -> bool:
        """Give the reserve's room back to the disk; whether it held any."""
        try:
            if self.reserve_path.stat().st_size == 0:
                return False
            os.truncate(self.reserve_path, 0)
        except FileNotFoundError:
            return False
        self.reserve_spent = True
        return True

    def _write(self, line: bytes) -> None:
        """Append ``line`` under the lock, fsynced; a failed write is cut off."""
        created = not self.path.exists()
        with naming_file(self.path):
            self._write_locked(line)
        if created:
            fsync_folder(self.path.parent)

    def _write_locked(self, line: bytes) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            # One writer at a time: the torn-tail cut must not race another append.
            fcntl.flock(fd, fcntl.LOCK_EX)
            _cut_torn_tail(fd)
            committed = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError:
                # A failed write (a full disk: ENOSPC) may have left part of the line:
                # cut it, so the ledger ends at its last committed record and no reader
                # takes a failed write for a killed writer.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, committed)
                raise
        finally:
            os.close(fd)  # closing releases the lock

    def records(self) -> list[HandoffRecord]:
        """Every committed record, oldest first (see :func:`read_ledger`)."""
        return read_ledger(self.path)


def read_ledger(path: str | os.PathLike[str]) -> list[HandoffRecord]:
    """Read a ledger; a torn final line is skipped with a :class:`TornRecordWarning`.

    Raises
    ------
    ValueError
        A line other than the last is not a record (the message names file and line).
    """
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # text after the final newline: empty unless torn
    if tail:
        warnings.warn(
            f"{path}: skipped a torn final record ({len(tail)} bytes: an append that never "
            "completed, because its writer was killed or the machine stopped mid-append, "
            "so it was never committed)",
            TornRecordWarning,
            stacklevel=2,
        )
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(HandoffRecord.from_json(parse_json(line, f"{path}:{number}")))
        except (ValueError, TypeError, KeyError) as err:
            raise ValueError(f"{path}:{number}: not a handoff record ({err})") from err
    return records
