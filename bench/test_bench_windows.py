"""Idle windows of a trace (learnsched.calendar.idle_windows, Eqs. 6-8): the O(n log n) walk
against the reference that runs return_deadline with a full Eq. 6 scan per bisection step
(quadratic: docs/performance.md has its times).

Run with ``pytest bench/test_bench_windows.py``; each benchmark asserts its answer (the
reference's windows, bit for bit, where the reference runs). Target: 10^6 rows well under
5 s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from test_calendar_windows_scale import bursty_trace, reference_windows, window_bits

from learnsched.calendar import idle_windows
from learnsched.capacity import ReturnPath

Benchmark = Callable[..., Any]
PATH = ReturnPath(ready_s=69.988)  # the paper's cold return
REFERENCE_SIZES = [10_000, 20_000]


@pytest.mark.benchmark(group="idle windows of a trace")
@pytest.mark.parametrize("n", [*REFERENCE_SIZES, 160_000, 320_000, 1_000_000])
def test_idle_windows(benchmark: Benchmark, n: int) -> None:
    trace = bursty_trace(3, n, 1.0, 20.0)
    found = benchmark(idle_windows, trace, 1.0, PATH, 10.0)
    assert len(found.windows) > n // 100
    if n in REFERENCE_SIZES:
        assert window_bits(found.windows) == window_bits(reference_windows(trace, 1.0, PATH, 10.0))


@pytest.mark.benchmark(group="idle windows of a trace")
@pytest.mark.parametrize("n", REFERENCE_SIZES)
def test_idle_windows_reference(benchmark: Benchmark, n: int) -> None:
    trace = bursty_trace(3, n, 1.0, 20.0)
    found = benchmark.pedantic(reference_windows, (trace, 1.0, PATH, 10.0), rounds=1)
    assert len(found) > n // 100
