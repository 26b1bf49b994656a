"""Release confirmation: device memory really freed, not merely a pause command answered.

The paper's Section 1: stopping evolution, releasing memory and being ready to serve
are distinct events. A pause or terminate call returning says nothing about the device
memory; :func:`wait_for_release` polls NVML until the release is seen.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from .._checks import integer, positive
from ..serving.memory import DeviceMemory, GpuProcess
from ..serving.polling import poll_until

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
        From ``since_ns`` to the end of the poll that saw it, seconds: an upper bound.
    resolution_s
        From the start of the poll before it (or ``since_ns`` if the first poll saw it) to
        ``seen_ns``, seconds: the release happened within this interval.
    polls
        NVML polls made.
    memory
        Device memory at the confirming poll.
    seen_ns
        ``perf_counter_ns()`` when the confirming poll returned.
    """

    condition: str
    latency_s: float
    resolution_s: float
    polls: int
    memory: DeviceMemory
    seen_ns: int


def _watched(
    pid: int | Collection[int] | None, listed: Collection[GpuProcess] | None, device: MemoryReader
) -> frozenset[int]:
    """The watched pids NVML lists at the start; ``ValueError`` if it lists none of them."""
    if pid is None:
        return frozenset()
    wanted = [pid] if isinstance(pid, int) else list(pid)
    if not wanted:
        raise ValueError("pid must name at least one process")
    for one in wanted:
        integer("pid", one, low=1)
    listed_pids = {p.pid for p in (device.processes() if listed is None else listed)}
    present = frozenset(wanted) & listed_pids
    if not present:
        shown = wanted[0] if len(wanted) == 1 else wanted
        raise ValueError(
            f"pid {shown} is not among the compute processes NVML lists on this device "
            f"({sorted(listed_pids) or 'none'}): its leaving could not be told from a release "
            "(a container shows host PIDs to NVML; check the PID, or use free_rise_bytes)"
        )
    return present


def _check_arguments(
    pid: int | Collection[int] | None,
    floor_bytes: int | None,
    free_rise_bytes: int | None,
    timeout_s: float,
    poll_s: float,
) -> None:
    positive("timeout_s", timeout_s)
    positive("poll_s", poll_s)
    if pid is None and free_rise_bytes is None:
        raise ValueError("give pid (with or without floor_bytes) or free_rise_bytes")
    if floor_bytes is not None:
        if pid is None:
            raise ValueError("floor_bytes needs pid")
        integer("floor_bytes", floor_bytes, low=0)
    if free_rise_bytes is not None:
        # 0 would confirm at the first poll: a pause reported as a release.
        integer("free_rise_bytes", free_rise_bytes, low=1)


def _release_seen(
    device: MemoryReader,
    watched: frozenset[int],
    floor_bytes: int | None,
    free_rise_bytes: int | None,
    baseline_free_bytes: int | None,
) -> tuple[str, DeviceMemory] | None:
    """One poll: the condition that holds now, or ``None``."""
    memory = device.memory()
    rise = None if baseline_free_bytes is None else memory.free - baseline_free_bytes
    if free_rise_bytes is not None and rise is not None and rise >= free_rise_bytes:
        return "free-rose", memory
    if not watched:
        return None
    mine = [p for p in device.processes() if p.pid in watched]
    if not mine:
        return "process-gone", memory
    if floor_bytes is not None:
        used = [p.used_bytes for p in mine]
        if any(u is None for u in used):
            raise ValueError(
                f"pid {sorted(watched)}: NVML does not report per-process memory on this "
                "device; use free_rise_bytes or wait for the process to leave the device"
            )
        if sum(u for u in used if u is not None) <= floor_bytes:
            return "process-below-floor", memory
    return None


def wait_for_release(
    device: MemoryReader,
    *,
    pid: int | Collection[int] | None = None,
    floor_bytes: int | None = None,
    free_rise_bytes: int | None = None,
    baseline_free_bytes: int | None = None,
    baseline_processes: Collection[GpuProcess] | None = None,
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
        Watch this process (or these, e.g. an engine's process tree): released when none
        of them is among the device's compute processes any more, or (with
        ``floor_bytes``) when their summed device memory is at most the floor. At least
        one must be listed at the start (``baseline_processes``): a process NVML never
        listed would look released at the first poll.
    floor_bytes
        Floor for the watched processes' device memory, bytes (needs ``pid``).
    free_rise_bytes
        Released when device ``free`` has risen by this many bytes (>= 1) over
        ``baseline_free_bytes``.
    baseline_free_bytes
        Device ``free`` before the release was requested, bytes (default: read now,
        which is right only if nothing has been freed yet).
    baseline_processes
        The device's compute processes before the release was requested (default: read
        now, which is right only if the watched process has not left yet).
    since_ns
        ``perf_counter_ns()`` of the release request in this process (default: now).
    timeout_s, poll_s
        Give up after ``timeout_s`` seconds; poll every ``poll_s`` seconds (10-50 ms).

    Raises
    ------
    ValueError
        No condition given, a count is out of range, the watched process is not on the
        device, or ``since_ns`` lies in the future (not this process's perf_counter_ns).
    TimeoutError
        No condition held within ``timeout_s``.
    """
    now = time.perf_counter_ns()
    start = now if since_ns is None else integer("since_ns", since_ns, low=None)
    if start > now:  # a clock mix-up: refuse rather than clamp a negative latency
        raise ValueError(
            f"since_ns {start} is {(start - now) / 1e9:.3f} s in the future: "
            "not a time.perf_counter_ns() stamp of this process"
        )
    _check_arguments(pid, floor_bytes, free_rise_bytes, timeout_s, poll_s)
    watched = _watched(pid, baseline_processes, device)
    if free_rise_bytes is not None and baseline_free_bytes is None:
        baseline_free_bytes = device.memory().free
    seen = poll_until(
        lambda: _release_seen(device, watched, floor_bytes, free_rise_bytes, baseline_free_bytes),
        what="device memory release",
        timeout_s=timeout_s,
        poll_s=poll_s,
    )
    condition, memory = seen.value
    previous = start if seen.previous_ns is None else seen.previous_ns
    return ReleaseResult(
        condition=condition,
        latency_s=(seen.t_ns - start) / 1e9,  # >= 0: start <= now <= the seeing poll
        resolution_s=(seen.t_ns - previous) / 1e9,
        polls=seen.polls,
        memory=memory,
        seen_ns=seen.t_ns,
    )
