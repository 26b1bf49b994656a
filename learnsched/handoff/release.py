"""Release confirmation: device memory really freed, not merely a pause command answered.

The paper's Section 1: stopping evolution, releasing memory and being ready to serve
are distinct events. A pause or terminate call returning says nothing about the device
memory; :func:`wait_for_release` polls NVML until the release is seen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from .nvml import DeviceMemory, GpuProcess
from .waits import check_count, check_positive, poll_until

__all__ = ["MemoryReader", "ReleaseResult", "wait_for_release"]


class MemoryReader(Protocol):
    """What release confirmation reads (an :class:`~learnsched.handoff.nvml.NvmlDevice`)."""

    def memory(self) -> DeviceMemory:
        """Device memory now."""
        ...

    def processes(self) -> list[GpuProcess]:
        """Compute processes on the device now."""
        ...


@dataclass(frozen=True)
class ReleaseResult:
    """When a release was confirmed.

    Parameters
    ----------
    condition
        What was seen: ``"process-gone"``, ``"process-below-floor"`` or ``"free-rose"``.
    latency_s
        From ``since_ns`` to the poll that saw it, seconds.
    resolution_s
        Time between that poll and the one before it, seconds: the release happened
        within this interval (0 if the first poll saw it).
    polls
        NVML polls made.
    memory
        Device memory at the confirming poll.
    """

    condition: str
    latency_s: float
    resolution_s: float
    polls: int
    memory: DeviceMemory


def wait_for_release(
    device: MemoryReader,
    *,
    pid: int | None = None,
    floor_bytes: int | None = None,
    free_rise_bytes: int | None = None,
    baseline_free_bytes: int | None = None,
    since_ns: int | None = None,
    timeout_s: float = 60.0,
    poll_s: float = 0.02,
) -> ReleaseResult:
    """Poll ``device`` until a release is seen; whichever condition holds first wins.

    Parameters
    ----------
    device
        The GPU (an ``NvmlDevice``).
    pid
        Watch this process: released when it is no longer among the device's compute
        processes, or (with ``floor_bytes``) when its memory is at most the floor.
    floor_bytes
        Per-process floor, bytes (needs ``pid``).
    free_rise_bytes
        Released when device ``free`` has risen by this many bytes over
        ``baseline_free_bytes``.
    baseline_free_bytes
        Device ``free`` before the release was requested, bytes (default: read now,
        which is right only if nothing has been freed yet).
    since_ns
        ``perf_counter_ns()`` of the release request (default: now).
    timeout_s, poll_s
        Give up after ``timeout_s`` seconds; poll every ``poll_s`` seconds (10-50 ms).

    Raises
    ------
    ValueError
        No condition given, or a count is negative.
    TimeoutError
        No condition held within ``timeout_s``.
    """
    start = time.perf_counter_ns() if since_ns is None else since_ns
    check_positive("timeout_s", timeout_s)
    check_positive("poll_s", poll_s)
    if pid is None and free_rise_bytes is None:
        raise ValueError("give pid (with or without floor_bytes) or free_rise_bytes")
    if floor_bytes is not None and pid is None:
        raise ValueError("floor_bytes needs pid")
    if pid is not None:
        check_count("pid", pid)
    for name, value in (("floor_bytes", floor_bytes), ("free_rise_bytes", free_rise_bytes)):
        if value is not None:
            check_count(name, value, minimum=0)
    if free_rise_bytes is not None and baseline_free_bytes is None:
        baseline_free_bytes = device.memory().free

    def check() -> tuple[str, DeviceMemory] | None:
        memory = device.memory()
        rise = None if baseline_free_bytes is None else memory.free - baseline_free_bytes
        if free_rise_bytes is not None and rise is not None and rise >= free_rise_bytes:
            return "free-rose", memory
        if pid is None:
            return None
        mine = [p for p in device.processes() if p.pid == pid]
        if not mine:
            return "process-gone", memory
        if floor_bytes is not None:
            used = mine[0].used_bytes
            if used is None:
                raise ValueError(
                    f"pid {pid}: NVML does not report per-process memory on this device; "
                    "use free_rise_bytes or wait for the process to leave the device"
                )
            if used <= floor_bytes:
                return "process-below-floor", memory
        return None

    seen = poll_until(check, what="device memory release", timeout_s=timeout_s, poll_s=poll_s)
    condition, memory = seen.value
    previous = seen.t_ns if seen.previous_ns is None else seen.previous_ns
    return ReleaseResult(
        condition=condition,
        latency_s=max(seen.t_ns - start, 0) / 1e9,
        resolution_s=(seen.t_ns - previous) / 1e9,
        polls=seen.polls,
        memory=memory,
    )
