"""Lendable capacity and return deadlines (Eqs. 6-8)."""

from __future__ import annotations

import math

import capacity_reference as ref
import numpy as np
import pytest
from capacity_support import eighths_cases, million_request_trace, run_bounded
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched.capacity import (
    DEFAULT_RESOLUTION,
    DEFAULT_TOLERANCE,
    RateProfile,
    ReturnPath,
    Trace,
    burst_trace,
    check_feasibility,
    lend,
    max_share,
    max_share_schedule,
    return_deadline,
)

STEP = 1e-6  # well above the bisection resolution


def test_max_share_of_one_request_is_analytic() -> None:
    # 2 work in 4 s at rate 1: half the rate can be lent.
    share = max_share(Trace([0.0], [2.0], [4.0]), RateProfile.constant(1.0))
    assert share == pytest.approx(0.5, abs=1e-8)


def test_max_share_is_none_when_deadlines_fail_without_lending() -> None:
    trace = Trace([0.0], [5.0], [4.0])
    capacity = RateProfile.constant(1.0)
    assert max_share(trace, capacity) is None
    assert max_share_schedule(trace, capacity) is None
    assert return_deadline(trace, capacity, 0.5) is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.05, 2.0), min_size=1, max_size=30),
    st.floats(0.5, 3.0),
    st.floats(5.0, 30.0),
)
def test_max_share_is_the_feasibility_boundary(
    gaps: list[float], budget: float, rate: float
) -> None:
    arrival = np.cumsum(gaps)
    trace = Trace(arrival, np.ones_like(arrival), arrival + budget)
    capacity = RateProfile.constant(rate)
    share = max_share(trace, capacity)
    if share is None:
        assert not check_feasibility(trace, capacity).feasible
        return
    assert check_feasibility(trace, lend(capacity, share)).feasible
    if share + STEP <= 1.0:
        assert not check_feasibility(trace, lend(capacity, share + STEP)).feasible


def test_burst_trace_lendable_share() -> None:
    # 40 req/s of unit work on 45 work/s with 1.2 s budgets: the burst binds. Over a
    # window [a_k, d_i] of the burst, 40*t + 1 work must fit in (1-s)*45*(t+1.2).
    share = max_share(burst_trace(), RateProfile.constant(45.0))
    assert share is not None
    assert 0.1 < share < 0.25  # the paper's feasible/infeasible static shares (Fig. 5)


def test_schedule_lends_more_outside_the_burst_and_stays_feasible() -> None:
    trace = burst_trace()
    capacity = RateProfile(np.array([0.0, 10.0, 20.0, 30.0]), np.full(4, 45.0))
    shares = max_share_schedule(trace, capacity)
    assert shares is not None
    assert check_feasibility(trace, lend(capacity, shares)).feasible
    constant = max_share(trace, RateProfile.constant(45.0))
    assert constant is not None
    assert shares[0] > 0.8  # 4 req/s needs under a tenth of the resource
    assert shares[1] < 0.25  # the burst interval lends about as little as a constant share
    assert shares[:3].mean() > constant
    assert shares[3] == 1.0  # after the last deadline nothing needs the capacity
    for j in range(3):  # each share is maximal given the earlier ones
        bumped = shares.copy()
        bumped[j] += STEP
        if bumped[j] <= 1.0:
            assert not check_feasibility(trace, lend(capacity, bumped)).feasible


def test_return_path_is_eq7_and_reclaim_is_eq8() -> None:
    path = ReturnPath(actuation_s=0.05, release_s=1.2, ready_s=0.487)
    assert path.total_s == pytest.approx(1.737)
    assert path.reclaim_by(100.0) == pytest.approx(100.0 - 1.737)
    with pytest.raises(ValueError, match="release_s must be >= 0"):
        ReturnPath(release_s=-1.0)


def test_return_deadline_precedes_the_burst() -> None:
    trace = burst_trace()
    capacity = RateProfile.constant(45.0)
    path = ReturnPath(0.1, 0.2, 0.487)
    deadline = return_deadline(trace, capacity, 0.9, path)
    assert deadline is not None
    # Lending 90 % is fine at 4 req/s; the burst at t = 10 s needs capacity back soon after.
    assert 10.0 < deadline.ready_by_s < 12.0
    assert deadline.reclaim_by_s == pytest.approx(deadline.ready_by_s - path.total_s)
    with_return = np.array([0.0, deadline.ready_by_s])
    lent = RateProfile(with_return, np.array([4.5, 45.0]))
    assert check_feasibility(trace, lent).feasible
    late = RateProfile(with_return + np.array([0.0, 1e-3]), np.array([4.5, 45.0]))
    assert not check_feasibility(trace, late).feasible


def test_return_deadline_is_infinite_when_share_always_fits() -> None:
    deadline = return_deadline(Trace([0.0], [1.0], [4.0]), RateProfile.constant(1.0), 0.5)
    assert deadline is not None
    assert math.isinf(deadline.ready_by_s)
    assert math.isinf(deadline.reclaim_by_s)


def test_bisection_terminates_at_large_times() -> None:
    # Near 1e9 s adjacent floats are 1.2e-7 apart, wider than the resolution.
    trace = Trace([1e9], [1.0], [1e9 + 2.0])
    deadline = return_deadline(trace, RateProfile.constant(1.0), 1.0)
    assert deadline is not None
    assert deadline.ready_by_s == pytest.approx(1e9 + 1.0, abs=1e-6)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t, c: lend(c, 1.5), "share must be in"),
        (lambda t, c: lend(c, np.array([0.5, 0.5])), "shares has 2 entries"),
        (lambda t, c: lend(c, [-0.5]), r"shares\[0\] must be in \[0, 1\]"),
        (lambda t, c: max_share(t, c, tolerance=-1.0), "tolerance must be >= 0"),
        (lambda t, c: max_share(t, c, resolution=0.0), "resolution must be > 0"),
        (lambda t, c: return_deadline(t, c, float("nan")), "share must be finite"),
    ],
)
def test_bad_lending_arguments(call: object, message: str) -> None:
    trace = Trace([0.0], [1.0], [4.0])
    with pytest.raises(ValueError, match=message):
        call(trace, RateProfile.constant(1.0))  # type: ignore[operator]


# Traces on a grid of eighths, so exact fits (the hardest rounding cases) are common.
schedule_cases = eighths_cases(
    requests=30, gap=8, work=16, budget=40, segments=6, first_start=16, segment=32, rate=24
)


@settings(max_examples=150, deadline=None)
@given(schedule_cases, st.sampled_from([0.0, 1e-9]))
def test_schedule_matches_full_rescan_reference(
    case: tuple[Trace, RateProfile], tolerance: float
) -> None:
    """The windowed search gives the shares of bisecting every segment with full scans."""
    trace, capacity = case
    fast = max_share_schedule(trace, capacity, tolerance)
    slow = ref.max_share_schedule_bisect(trace, capacity, tolerance, DEFAULT_RESOLUTION)
    if slow is None:
        assert fast is None
        return
    assert fast is not None
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-6)
    assert check_feasibility(trace, lend(capacity, fast), tolerance).feasible


def test_schedule_with_a_request_due_long_after_the_others() -> None:
    # Request 0 straddles every later segment; its bound on each share is direct.
    rng = np.random.default_rng(5)
    arrival = np.cumsum(rng.exponential(0.05, 2000))
    deadline = arrival + 1.0
    deadline[0] = arrival[-1] + 5.0
    trace = Trace(arrival, rng.uniform(0.5, 1.5, arrival.size), deadline)
    capacity = RateProfile(np.linspace(0.0, float(arrival[-1]), 12), np.full(12, 40.0))
    fast = max_share_schedule(trace, capacity)
    slow = ref.max_share_schedule_bisect(trace, capacity, DEFAULT_TOLERANCE, DEFAULT_RESOLUTION)
    assert fast is not None
    assert slow is not None
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-6)


def test_million_request_schedule_over_100_segments_is_quick() -> None:
    """The issue's bound: a million-request trace never hangs (the full-rescan search
    took about 13 minutes here)."""
    trace = million_request_trace()
    capacity = RateProfile(np.linspace(0.0, float(trace.arrival[-1]), 100), np.full(100, 60.0))
    result: list[np.ndarray] = []

    def run() -> None:
        shares = max_share_schedule(trace, capacity)
        assert shares is not None
        result.append(shares)

    run_bounded(run, timeout_s=30)
    shares = result[0]
    assert shares.shape == (100,)
    assert check_feasibility(trace, lend(capacity, shares)).feasible
    assert 0.1 < float(shares[:-1].min()) <= float(shares[:-1].max()) < 1 / 3  # 40 of 60 work/s
    assert shares[-1] > 0.9  # only the last requests' deadlines fall in the last segment


def test_bisection_returns_a_value_that_passed_the_test() -> None:
    """Finding 6: 2 work due in 3 s at rate 1 lends exactly 1/3. The tolerant test accepts
    slightly more; the exact one (tolerance 0) never exceeds 1/3."""
    trace = Trace([0.0], [2.0], [3.0])
    capacity = RateProfile.constant(1.0)
    tolerant = max_share(trace, capacity)
    assert tolerant is not None
    assert check_feasibility(trace, lend(capacity, tolerant)).feasible
    assert not check_feasibility(trace, lend(capacity, tolerant + DEFAULT_RESOLUTION)).feasible
    # Above 1/3 by at most tolerance * sum(work) over the lent service (3 s at rate 1).
    assert 1 / 3 < tolerant <= 1 / 3 + DEFAULT_TOLERANCE * 2.0 / 3.0 + DEFAULT_RESOLUTION
    exact = max_share(trace, capacity, tolerance=0.0)
    assert exact is not None
    assert 1 / 3 - DEFAULT_RESOLUTION <= exact <= 1 / 3
    assert check_feasibility(trace, lend(capacity, exact), tolerance=0.0).feasible
    schedule = max_share_schedule(trace, capacity, tolerance=0.0)
    assert schedule is not None
    assert schedule[0] <= 1 / 3
    deadline = return_deadline(trace, capacity, 0.5, tolerance=0.0)
    assert deadline is not None  # 0.5 * t_b + (3 - t_b) >= 2: t_b <= 2
    assert 2.0 - DEFAULT_RESOLUTION <= deadline.ready_by_s <= 2.0


def test_lend_rejects_a_non_profile() -> None:
    with pytest.raises(TypeError, match="capacity must be a RateProfile, got float"):
        lend(1.0, 0.5)  # type: ignore[arg-type]
