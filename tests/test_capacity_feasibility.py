"""Deadline feasibility (Eq. 6): the O(n) scan against the O(n^2) reference, and bad input."""

from __future__ import annotations

import threading
import tracemalloc

import capacity_reference as ref
import numpy as np
import pytest
from capacity_support import MILLION, eighths_cases, million_request_trace, run_bounded
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched import _capacity
from learnsched.capacity import RateProfile, Trace, check_feasibility

# Multiples of 1/8 keep every sum and product exact in float64, so the scan and the
# reference must agree bit for bit, including on which request is first to miss.
traces = eighths_cases(
    requests=25, gap=160, work=40, budget=160, segments=4, first_start=20, segment=80, rate=16
)


@settings(max_examples=300, deadline=None)
@given(traces)
def test_scan_matches_quadratic_reference(case: tuple[Trace, RateProfile]) -> None:
    trace, capacity = case
    expected = ref.slack(
        trace.arrival.tolist(),
        trace.work.tolist(),
        trace.deadline.tolist(),
        capacity.starts.tolist(),
        capacity.rates.tolist(),
    )
    result = check_feasibility(trace, capacity, tolerance=0.0)
    assert result.slack.tolist() == expected
    assert result.first_violation == ref.first_violation(expected)
    assert result.feasible == (min(expected) >= 0)
    assert result.min_slack == min(expected)


@st.composite
def segmented_cases(draw: st.DrawFn) -> tuple[Trace, RateProfile]:
    """Inexact times and rates over up to 60 segments, deadlines out of order and often
    several segments past their arrival, so the forward cursors jump and step back."""
    n = draw(st.integers(1, 40))
    unit = st.floats(0.0, 3.0, allow_subnormal=False)
    arrival = np.cumsum(draw(st.lists(unit, min_size=n, max_size=n)))
    work = draw(st.lists(st.floats(0.01, 3.0), min_size=n, max_size=n))
    budget = draw(st.lists(st.floats(0.0, 40.0, allow_subnormal=False), min_size=n, max_size=n))
    m = draw(st.integers(1, 60))
    gaps = draw(st.lists(st.floats(0.01, 4.0), min_size=m, max_size=m))
    starts = np.cumsum(gaps) + draw(st.floats(-20.0, 20.0))
    rates = draw(
        st.lists(st.sampled_from([0.0, 0.5]) | st.floats(0.0, 9.0), min_size=m, max_size=m)
    )
    return Trace(arrival, work, arrival + np.array(budget)), RateProfile(starts, np.array(rates))


@settings(max_examples=300, deadline=None)
@given(segmented_cases(), st.floats(-5.0, 5.0), st.floats(-50.0, 50.0))
def test_segment_cursors_give_the_binary_search_results_bitwise(
    case: tuple[Trace, RateProfile], before: float, best: float
) -> None:
    """Both scans find segments with forward cursors; with binary searches from scratch
    (the reference, operation for operation) every bit of every slack is the same."""
    trace, capacity = case
    slack = check_feasibility(trace, capacity, tolerance=0.0).slack
    assert slack.tobytes() == np.array(ref.relative_scan(trace, capacity)).tobytes()
    window = np.empty(len(trace))
    running = _capacity.scan_window(
        trace.arrival,
        trace.work,
        trace.deadline,
        capacity.starts,
        capacity.rates,
        capacity.cumulative,
        before,
        best,
        window,
    )
    expected, expected_best = ref.window_scan(trace, capacity, before, best)
    assert window.tobytes() == np.array(expected).tobytes()
    assert running == expected_best


@settings(max_examples=200, deadline=None)
@given(segmented_cases(), st.floats(0.0, 9.0), st.floats(-1e9, 1e9))
def test_constant_rate_scan_is_the_relative_scan_bitwise(
    case: tuple[Trace, RateProfile], rate: float, start: float
) -> None:
    """One rate segment takes the kernel's loop without segment lookups: every
    slack is still the general loop's (the reference, operation for operation), bit for bit,
    wherever the segment starts."""
    trace, _ = case
    capacity = RateProfile(np.array([start]), np.array([rate]))
    slack = check_feasibility(trace, capacity, tolerance=0.0).slack
    assert slack.tobytes() == np.array(ref.relative_scan(trace, capacity)).tobytes()


def test_single_request_exact_fit_is_feasible() -> None:
    trace = Trace([1.0], [3.0], [4.0])
    result = check_feasibility(trace, RateProfile.constant(1.0))
    assert result.feasible
    assert result.slack.tolist() == [0.0]


def test_burst_needs_the_earlier_arrival_in_the_window() -> None:
    # Request 1 alone fits (2 work in 2 s), but request 0's backlog makes it late:
    # the binding pair is k = 0, i = 1.
    trace = Trace([0.0, 1.0], [2.0, 2.0], [2.0, 3.0])
    result = check_feasibility(trace, RateProfile.constant(1.0))
    assert result.first_violation == 1
    assert result.slack.tolist() == [0.0, -1.0]
    assert result.violations == 1


def test_zero_rate_interval_offers_no_service() -> None:
    capacity = RateProfile(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.0, 1.0]))
    assert capacity.service(0.5, 3.5) == 1.0
    assert check_feasibility(Trace([0.5], [1.0], [3.5]), capacity).feasible
    late = check_feasibility(Trace([0.5], [1.5], [3.5]), capacity)
    assert late.first_violation == 0
    assert late.min_slack == -0.5


def test_first_rate_extends_before_first_start() -> None:
    capacity = RateProfile(np.array([10.0]), np.array([2.0]))
    assert capacity.service(-1.0, 1.0) == 4.0
    assert check_feasibility(Trace([-1.0], [4.0], [1.0]), capacity).feasible


def test_tolerance_absorbs_rounding_only() -> None:
    trace = Trace([0.0], [0.3], [0.1 + 0.2])
    exact = check_feasibility(trace, RateProfile.constant(1.0), tolerance=0.0)
    tolerant = check_feasibility(trace, RateProfile.constant(1.0))
    assert tolerant.feasible
    assert exact.min_slack == pytest.approx(0.0, abs=1e-15)
    assert not check_feasibility(Trace([0.0], [0.31], [0.3]), RateProfile.constant(1.0)).feasible


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"arrival": [1.0, 0.5], "work": [1, 1], "deadline": [2, 2]}, "arrival must be sorted"),
        ({"arrival": [0.0, 1.0], "work": [1, 1], "deadline": [2, 0.5]}, r"deadline\[1\]"),
        ({"arrival": [0.0], "work": [0.0], "deadline": [1.0]}, r"work\[0\] must be > 0"),
        ({"arrival": [0.0], "work": [-1.0], "deadline": [1.0]}, r"work\[0\] must be > 0"),
        ({"arrival": [0.0, float("nan")], "work": [1, 1], "deadline": [1, 1]}, r"arrival\[1\]"),
        ({"arrival": [0.0], "work": [float("inf")], "deadline": [1.0]}, r"work\[0\]"),
        ({"arrival": [0.0], "work": [1.0], "deadline": [float("nan")]}, r"deadline\[0\]"),
        ({"arrival": [0.0, 1.0], "work": [1.0], "deadline": [1, 2]}, "work has 1 entries"),
        ({"arrival": [0.0], "work": [1.0], "deadline": [1, 2]}, "deadline has 2 entries"),
        ({"arrival": [], "work": [], "deadline": []}, "at least one request"),
        ({"arrival": [[0.0]], "work": [1.0], "deadline": [1.0]}, "arrival must be one-dim"),
    ],
)
def test_bad_trace_raises_naming_argument(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Trace(**kwargs)  # type: ignore[arg-type]


def test_non_numbers_in_a_trace_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="arrival must hold real numbers, got an array of dtype"):
        Trace(["x"], [1.0], [1.0])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("starts", "rates", "message"),
    [
        ([0.0, 1.0], [1.0, -0.5], r"rates\[1\] must be >= 0"),
        ([0.0, 0.0], [1.0, 1.0], "starts must be strictly increasing"),
        ([1.0, 0.0], [1.0, 1.0], "starts must be strictly increasing"),
        ([0.0], [float("nan")], r"rates\[0\] must be finite"),
        ([0.0], [1.0, 2.0], "rates has 2 entries"),
        ([], [], "starts must have at least one entry"),
    ],
)
def test_bad_profile_raises_naming_argument(
    starts: list[float], rates: list[float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        RateProfile(np.array(starts), np.array(rates))


def test_constant_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rate must be > 0"):
        RateProfile.constant(0.0)


def test_wrong_types_raise_type_error() -> None:
    with pytest.raises(TypeError, match="trace must be a Trace"):
        check_feasibility([0.0], RateProfile.constant(1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="capacity must be a RateProfile"):
        check_feasibility(Trace([0.0], [1.0], [1.0]), 1.0)  # type: ignore[arg-type]


def test_trace_arrays_are_copied_and_read_only() -> None:
    arrival = np.array([0.0, 1.0])
    trace = Trace(arrival, [1.0, 1.0], [2.0, 3.0])
    arrival[0] = 5.0
    assert trace.arrival[0] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        trace.arrival[0] = 1.0


def test_threaded_and_serial_checks_agree() -> None:
    rng = np.random.default_rng(3)
    arrival = np.cumsum(rng.exponential(0.02, 20_000))
    trace = Trace(arrival, rng.uniform(0.5, 1.5, arrival.size), arrival + 1.0)
    capacity = RateProfile(np.array([0.0, 100.0, 200.0]), np.array([60.0, 45.0, 60.0]))
    serial = check_feasibility(trace, capacity).slack
    results: list[np.ndarray] = []
    threads = [
        threading.Thread(target=lambda: results.append(check_feasibility(trace, capacity).slack))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(np.array_equal(serial, slack) for slack in results)


def test_million_requests_bounded_time_and_memory() -> None:
    trace = million_request_trace()
    capacity = RateProfile.constant(45.0)

    def check() -> None:
        tracemalloc.start()
        try:
            result = check_feasibility(trace, capacity)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert result.slack.shape == (MILLION,)
        assert peak < 64 * 2**20  # the slack array (8 MB) and small temporaries

    run_bounded(check, timeout_s=60)


# --- large absolute times ---------------------------------------------------------------------


@pytest.mark.parametrize("origin", [0.0, 1.7e9, 1e12, 1e16, 1e18])
def test_feasibility_does_not_depend_on_the_time_origin(origin: float) -> None:
    capacity = RateProfile.constant(1.0)
    due_now = Trace([origin], [1.0], [origin])  # d == a with work: always late
    assert not check_feasibility(due_now, capacity).feasible
    if origin <= 1e12:  # sub-second gaps are representable at these times
        fits = Trace([origin, origin + 0.5], [1.0, 1.0], [origin + 1.0, origin + 2.0])
        assert check_feasibility(fits, capacity).feasible
        late = Trace([origin, origin + 0.5], [1.0, 1.0], [origin + 1.0, origin + 1.75])
        check = check_feasibility(late, capacity)
        assert check.first_violation == 1
        assert check.slack[1] == pytest.approx(-0.25, abs=1e-6)


def test_feasibility_across_rate_segments_at_epoch_times() -> None:
    epoch = 1.7e9
    capacity = RateProfile([epoch, epoch + 10.0], [1.0, 2.0])
    trace = Trace([epoch + 8.0, epoch + 9.0], [2.0, 3.0], [epoch + 10.0, epoch + 11.0])
    check = check_feasibility(trace, capacity)
    # Service on [epoch+8, epoch+11] is 2 + 2*1 = 4 < 5: the second is late by 1.
    assert check.slack[1] == pytest.approx(-1.0, abs=1e-6)
    assert check.slack[0] == pytest.approx(0.0, abs=1e-6)
