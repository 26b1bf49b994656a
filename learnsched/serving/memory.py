"""What a memory reading holds: device memory and its processes, host memory of a
process tree. Values only; the probes that read them are
:mod:`learnsched.handoff.nvml` (NVML) and :mod:`learnsched.handoff.host_memory`
(``/proc``), and the handoff ledger records them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DeviceMemory", "GpuProcess", "HostMemory"]


@dataclass(frozen=True)
class DeviceMemory:
    """Device memory as NVML reports it, bytes.

    Parameters
    ----------
    total, used, free
        Bytes. With the v2 struct ``used`` excludes the driver's reservation.
    reserved
        Bytes the driver reserves (``None`` on drivers with only the v1 struct).
    version
        The struct version read (2, or 1 on old drivers).
    """

    total: int
    reserved: int | None
    used: int
    free: int
    version: int

    @property
    def occupied(self) -> int:
        """Bytes not free: ``total - free``, the same under v1 and v2.

        The v1 struct's ``used`` includes the driver's reservation and the v2 struct's
        does not, and drivers have differed in what they count in either; ``total`` and
        ``free`` mean the same in both, so their difference is safe.
        """
        return self.total - self.free


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on a device.

    Parameters
    ----------
    pid
        Process id (in NVML's view, which may be another PID namespace).
    used_bytes
        Device memory the process uses, bytes; ``None`` where NVML says not available.
    """

    pid: int
    used_bytes: int | None


@dataclass(frozen=True)
class HostMemory:
    """PSS of one process or a summed tree, bytes.

    Parameters
    ----------
    pss
        Proportional set size, bytes.
    pss_anon, pss_file, pss_shmem
        Its anonymous, file-backed and shared-memory parts, bytes (``None`` where the
        kernel does not report the split: before Linux 5.7, or through psutil).
    pids
        The processes summed.
    """

    pss: int
    pss_anon: int | None
    pss_file: int | None
    pss_shmem: int | None
    pids: tuple[int, ...]
