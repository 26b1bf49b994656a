"""Timers: host monotonic intervals and CUDA event intervals, first run kept apart.

Anything that touches disk, HTTP or another process is timed on the host with
``time.perf_counter_ns``; work queued on a GPU stream is timed with CUDA events
(``torch.cuda.Event(enable_timing=True)``), synchronised before reading. The first
(cold) run pays for caches, allocator growth and lazy initialisation, so it is reported
apart from the median and 95th percentile of the warm runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from .._checks import integer
from .._progress import Progress
from ._util import median, p95, torch_module
from .nvml import ClockReading, NvmlDevice

__all__ = ["MAX_RUNS", "Timing", "time_device", "time_host"]


@dataclass(frozen=True)
class Timing:
    """Repeated measurements of one operation.

    Parameters
    ----------
    first_ms
        The first (cold) run, milliseconds.
    warm_ms
        The following runs, milliseconds.
    clock
        ``"host"`` (perf_counter_ns) or ``"cuda-event"``.
    clocks_start, clocks_end
        GPU clocks read before the first and after the last run (``None`` without NVML).
    """

    first_ms: float
    warm_ms: tuple[float, ...]
    clock: str
    clocks_start: ClockReading | None = None
    clocks_end: ClockReading | None = None

    @property
    def median_ms(self) -> float:
        """Median of the warm runs, milliseconds."""
        return median(self.warm_ms)

    @property
    def p95_ms(self) -> float:
        """95th percentile (nearest rank) of the warm runs, milliseconds."""
        return p95(self.warm_ms)

    @property
    def mean_ms(self) -> float:
        """Mean of the warm runs, milliseconds."""
        return math.fsum(self.warm_ms) / len(self.warm_ms)


MAX_RUNS = 10_000
"""Most runs one timing repeats (each a real save, load or call)."""


def _clocks(device: NvmlDevice | None) -> ClockReading | None:
    return None if device is None else device.clocks()


def _repeat(
    measure_ms: Callable[[], float], runs: int, label: str, device: NvmlDevice | None, clock: str
) -> Timing:
    integer("runs", runs, low=2, high=MAX_RUNS)  # one cold run and at least one warm run
    start = _clocks(device)
    samples = []
    with Progress(runs, label) as progress:
        for _ in range(runs):
            samples.append(measure_ms())
            progress.advance(1)
    return Timing(samples[0], tuple(samples[1:]), clock, start, _clocks(device))


def time_host(
    fn: Callable[[], object], runs: int, *, label: str = "runs", device: NvmlDevice | None = None
) -> Timing:
    """Time ``fn()`` ``runs`` times on the host monotonic clock.

    Parameters
    ----------
    fn
        The operation; it must finish its work before returning (synchronise any GPU
        work it queues).
    runs
        Runs in all, >= 2: the first is reported apart.
    label
        Progress label on long runs.
    device
        Read this GPU's clocks at start and end.
    """

    def once() -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e6

    return _repeat(once, runs, label, device, "host")


def time_device(
    fn: Callable[[], object],
    runs: int,
    *,
    cuda_device: Any,
    label: str = "runs",
    device: NvmlDevice | None = None,
) -> Timing:
    """Time the GPU work ``fn()`` queues on the current stream with CUDA events.

    The device is synchronised before each start event, so earlier work is excluded,
    and the end event is waited on before reading the interval.

    Parameters
    ----------
    fn
        Queues GPU work on the current stream of ``cuda_device``.
    runs
        Runs in all, >= 2.
    cuda_device
        A CUDA ``torch.device`` or its name (``"cuda:0"``).
    label
        Progress label on long runs.
    device
        Read this GPU's clocks at start and end.
    """
    torch = torch_module()
    target = torch.device(cuda_device)
    if target.type != "cuda":
        raise ValueError(f"cuda_device must be a CUDA device, got {cuda_device!r}")

    def once() -> float:
        with torch.cuda.device(target) if target.index is not None else nullcontext():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(target)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end))

    return _repeat(once, runs, label, device, "cuda-event")
