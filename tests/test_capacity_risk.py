"""Service-risk accounting (Appendix A.1-A.2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnsched.capacity import (
    RateProfile,
    RunRisk,
    Trace,
    burst_trace,
    empirical_tail,
    normalized_latency,
    replay,
    run_risk,
    summarize_risk,
)


def test_normalized_latency_from_scheduled_arrival() -> None:
    x = normalized_latency([0.0, 10.0, 20.0], [0.6, 12.4, np.inf], [1.2, 11.2, 21.2])
    assert x.tolist() == pytest.approx([0.5, 2.0, np.inf])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0.0], [1.0], [0.0]), r"deadline\[0\] = 0.0 equals arrival\[0\]: a zero latency"),
        (([1.0], [1.0], [0.5]), r"deadline\[0\] = 0.5 is before arrival\[0\]"),
        (([0.0], [np.nan], [1.0]), r"finish\[0\] must be a time or inf"),
        (([0.0, 1.0], [1.0], [1.0, 2.0]), "finish has 1 entries"),
        (([np.nan], [1.0], [1.0]), r"arrival\[0\] must be finite"),
    ],
)
def test_bad_latency_inputs(args: tuple[list[float], ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalized_latency(*args)


@given(
    st.lists(
        st.one_of(st.floats(0.0, 3.0), st.just(1.0), st.none()),  # None: a failure
        min_size=1,
        max_size=200,
    )
)
def test_decomposition_identity_a2(outcomes: list[float | None]) -> None:
    failed = np.array([x is None for x in outcomes])
    x = np.array([np.nan if v is None else v for v in outcomes])
    arrival = np.zeros(x.size)
    risk = run_risk(arrival, x * 1.2, np.full(x.size, 1.2), failed=failed)
    assert risk.failures == int(failed.sum())
    assert risk.bad_rate == (failed.sum() + np.count_nonzero(x[~failed] > 1.0)) / x.size
    tail = risk.tail_at_one
    if risk.successes == 0:
        assert tail is None  # S_s is undefined; the count form gives b = 1
        assert risk.bad_rate == 1.0
        return
    assert tail is not None
    f = risk.failure_fraction
    assert risk.bad_rate == pytest.approx(f + (1 - f) * tail, abs=1e-15)  # Eq. A.2
    assert empirical_tail(x[~failed] * 1.2 / 1.2, [1.0])[0] == pytest.approx(tail)


@given(
    st.lists(st.floats(0.0, 5.0), min_size=1, max_size=100),
    st.lists(st.floats(-1.0, 6.0), min_size=1, max_size=20),
)
def test_empirical_tail_counts_strictly_greater(latency: list[float], points: list[float]) -> None:
    expected = [sum(v > p for v in latency) / len(latency) for p in points]
    assert empirical_tail(latency, points).tolist() == expected


def test_empirical_tail_needs_successes() -> None:
    with pytest.raises(ValueError, match="N_s > 0"):
        empirical_tail([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        empirical_tail([0.5, np.nan], [1.0])


def test_pooled_and_per_run_means_differ_with_unequal_denominators() -> None:
    runs = [RunRisk(requests=100, failures=0, late=0), RunRisk(requests=10, failures=1, late=4)]
    summary = summarize_risk(runs)
    assert summary.pooled_bad_rate == pytest.approx(5 / 110)
    assert summary.per_run_mean_bad_rate == pytest.approx((0.0 + 0.5) / 2)
    assert summary.pooled_tail_at_one == pytest.approx(4 / 109)
    assert summary.max_run_bad_rate == 0.5
    assert summary.runs == 2


def test_all_failed_runs_have_no_tail() -> None:
    summary = summarize_risk([RunRisk(requests=3, failures=3, late=0)])
    assert summary.pooled_tail_at_one is None
    assert summary.pooled_bad_rate == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"requests": 0, "failures": 0, "late": 0}, "requests must be >= 1"),
        ({"requests": 2, "failures": 2, "late": 1}, "failures \\+ late must be <= requests"),
        ({"requests": 2, "failures": -1, "late": 0}, "failures must be >= 0"),
    ],
)
def test_bad_run_counts(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RunRisk(**kwargs)


def test_bad_summaries_and_masks() -> None:
    with pytest.raises(ValueError, match="at least one RunRisk"):
        summarize_risk([])
    with pytest.raises(ValueError, match="failed must be 2 booleans"):
        run_risk([0.0, 1.0], [0.5, 1.5], [1.0, 2.0], failed=[0, 1])


def test_run_risk_errors_name_indices_of_the_full_arrays() -> None:
    failed = np.array([True, False, False])
    with pytest.raises(ValueError, match=r"finish\[2\] must be a time or inf, got nan"):
        run_risk([0.0, 0.0, 0.0], [1.0, 1.0, np.nan], [2.0, 2.0, 2.0], failed=failed)
    with pytest.raises(ValueError, match=r"deadline\[2\] = 0.5 is before arrival\[2\]"):
        run_risk([0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [2.0, 2.0, 0.5], failed=failed)
    with pytest.raises(ValueError, match=r"arrival\[1\] must be finite"):
        run_risk([0.0, np.nan, 0.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0], failed=failed)
    with pytest.raises(ValueError, match="finish has 2 entries but arrival has 3"):
        run_risk([0.0, 0.0, 0.0], [1.0, 1.0], [2.0, 2.0, 2.0], failed=failed)
    # A failed request's finish is ignored, whatever it is.
    risk = run_risk([0.0, 0.0], [np.nan, 3.0], [2.0, 2.0], failed=np.array([True, False]))
    assert (risk.failures, risk.late) == (1, 1)


def test_zero_budget_requests_count_as_in_a_trace() -> None:
    """Trace allows d = a (burst_trace does not); run_risk counts such a request (late
    unless it finishes at arrival), while normalised latency rejects it by name."""
    risk = run_risk([0.0, 1.0, 2.0], [0.0, 1.5, 2.5], [0.0, 1.0, 3.0])
    assert (risk.requests, risk.failures, risk.late) == (3, 0, 1)
    with pytest.raises(ValueError, match=r"deadline\[1\] = 1.0 equals arrival\[1\]"):
        normalized_latency([0.0, 1.0], [0.5, 1.5], [1.0, 1.0])
    with pytest.raises(ValueError, match="slo_s must be > 0"):
        burst_trace(slo_s=0.0)
    trace = Trace([0.0, 1.0], [1.0, 1.0], [0.0, 3.0])  # Eq. 6 accepts and flags it
    outcome = replay(trace, RateProfile.constant(2.0), 0.0)
    assert outcome.deadline_misses == 1
    assert outcome.risk.late == run_risk(trace.arrival, outcome.finish, trace.deadline).late


@given(
    st.lists(st.floats(0.0, 3.0), min_size=1, max_size=50),
    st.lists(st.floats(0.01, 5.0), min_size=50, max_size=50),
)
def test_late_count_agrees_with_normalised_latency(
    finish: list[float], budgets: list[float]
) -> None:
    arrival = np.zeros(len(finish))
    deadline = np.array(budgets[: len(finish)])
    x = normalized_latency(arrival, finish, deadline)
    assert run_risk(arrival, finish, deadline).late == np.count_nonzero(x > 1)
