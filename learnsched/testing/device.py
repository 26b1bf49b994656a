"""An NVML stand-in for a simulated engine on ``cpu``: its device is its own report.

A CPU engine's "device" memory is host pages that no NVML can list;
:class:`SimulatedDeviceReader` reads ``GET /sim/state`` (the bytes the engine holds for
its weights and KV cache right now) and answers ``memory()`` and ``processes()`` as an
:class:`~learnsched.handoff.NvmlDevice` would: the engine's process with those bytes,
and ``free`` as a fixed total minus them. An engine on ``cuda`` is watched with the
real NVML instead.
"""

from __future__ import annotations

import http.client
import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..serving import DeviceMemory, GpuProcess

__all__ = ["SimulatedDeviceReader"]

GIB = 2**30


class SimulatedDeviceReader:
    """The device memory of a simulated engine at ``url``, as NVML would show it.

    Parameters
    ----------
    url
        The engine, ``http://127.0.0.1:PORT``.
    total_bytes
        The device size to report, bytes.
    listed
        ``False`` models a container: the device lists no process of this PID namespace.
    """

    def __init__(self, url: str, total_bytes: int = 64 * GIB, listed: bool = True) -> None:
        parts = urlsplit(url)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"url must be http://HOST:PORT, got {url!r}")
        self.host, self.port = parts.hostname, parts.port
        self.total_bytes = total_bytes
        self.listed = listed

    def state(self) -> dict[str, object]:
        """The engine's ``/sim/state`` report."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        try:
            conn.request("GET", "/sim/state")
            data: dict[str, object] = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        return data

    def _held(self) -> tuple[int, int]:
        state = self.state()
        return int(state["pid"]), int(state["device_bytes"])  # type: ignore[call-overload]

    def memory(self) -> DeviceMemory:
        """Total, used (the engine's bytes) and free, as NVML's v2 memory info."""
        from ..serving import DeviceMemory

        used = self._held()[1]
        total = self.total_bytes
        return DeviceMemory(total=total, reserved=0, used=used, free=total - used, version=2)

    def processes(self) -> list[GpuProcess]:
        """The engine's process with its bytes (none when ``listed`` is false)."""
        from ..serving import GpuProcess

        pid, used = self._held()
        return [GpuProcess(pid, used)] if self.listed else []
