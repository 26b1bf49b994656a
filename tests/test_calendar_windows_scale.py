"""learnsched.calendar.idle_windows in O(n log n): the same windows, bit for bit, as the
plain walk that runs return_deadline's bisection with a full Eq. 6 scan per test, kept
here as the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched.calendar import idle_windows
from learnsched.calendar.windows import IdleWindow
from learnsched.capacity import RateProfile, ReturnPath, Trace, check_feasibility, return_deadline


def reference_windows(
    trace: Trace, rate: float, path: ReturnPath, min_useful_s: float
) -> list[IdleWindow]:
    """idle_windows the plain way: return_deadline over the rest of the trace at every
    queue-empty instant."""
    assert check_feasibility(trace, RateProfile.constant(rate)).feasible
    arrival, service, deadline = trace.arrival, trace.work / rate, trace.deadline
    windows: list[IdleWindow] = []
    free = float(arrival[0])
    for i in range(len(trace)):
        a = float(arrival[i])
        if (
            i > 0
            and free < a
            and free + path.total_s + min_useful_s <= float(deadline[i] - service[i])
        ):
            rest = Trace(arrival[i:], trace.work[i:], deadline[i:])
            capacity = RateProfile(np.array([free]), np.array([rate]))
            found = return_deadline(rest, capacity, 1.0, path)
            assert found is not None
            ready_by = min(found.ready_by_s, float(rest.deadline.max()))
            window = IdleWindow(free, ready_by, path.reclaim_by(ready_by))
            if window.useful_s >= min_useful_s:
                windows.append(window)
                free = window.ready_by_s
        free = max(a, free) + float(service[i])
    return windows


def bursty_trace(seed: int, n: int, rate: float, budget_s: float) -> Trace:
    """Bursts of requests with idle gaps between them (and some tight deadlines), feasible
    at `rate` with nothing lent."""
    rng = np.random.default_rng(seed)
    gaps = np.where(rng.random(n) < 0.05, rng.exponential(60.0, n), rng.exponential(0.4, n))
    arrival = np.cumsum(gaps)
    work = rng.uniform(0.05, 1.0, n)
    deadline = arrival + work / rate + rng.uniform(0.0, budget_s, n)
    trace = Trace(arrival, work, deadline)
    while not check_feasibility(trace, RateProfile.constant(rate)).feasible:
        deadline = deadline + budget_s  # loosen until it is feasible unlent
        trace = Trace(arrival, work, deadline)
    return trace


def window_bits(windows: list[IdleWindow] | tuple[IdleWindow, ...]) -> list[tuple[str, ...]]:
    return [tuple(float.hex(x) for x in (w.start_s, w.ready_by_s, w.reclaim_by_s)) for w in windows]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 300),
    st.sampled_from([0.5, 1.0, 3.0]),
    st.sampled_from([0.5, 5.0, 60.0]),
    st.sampled_from([0.0, 0.487, 69.988]),
    st.sampled_from([1.0, 10.0]),
)
def test_windows_are_the_full_scan_bisections_bit_for_bit(
    seed: int, n: int, rate: float, budget_s: float, recovery_s: float, min_useful_s: float
) -> None:
    trace = bursty_trace(seed, n, rate, budget_s)
    path = ReturnPath(ready_s=recovery_s)
    fast = idle_windows(trace, rate, path, min_useful_s)
    assert window_bits(fast.windows) == window_bits(reference_windows(trace, rate, path, min_useful_s))


@pytest.mark.parametrize("origin", [0.0, 1.7e9])  # seconds from 0 and epoch seconds
def test_long_traces_match_the_reference(origin: float) -> None:
    trace = bursty_trace(7, 3000, 1.0, 20.0)
    trace = Trace(trace.arrival + origin, trace.work, trace.deadline + origin)
    path = ReturnPath(ready_s=0.487)
    fast = idle_windows(trace, 1.0, path, 10.0)
    assert len(fast.windows) > 20
    assert window_bits(fast.windows) == window_bits(reference_windows(trace, 1.0, path, 10.0))
