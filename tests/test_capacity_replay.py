"""Trace replay through the fluid single-resource model."""

from __future__ import annotations

import math

import capacity_reference as ref
import numpy as np
import pytest
from capacity_support import MILLION, million_request_trace, run_bounded
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from learnsched import _capacity
from learnsched.capacity import (
    AIMDConfig,
    AIMDController,
    CountThresholdAdmission,
    RateProfile,
    Trace,
    WorkBudgetAdmission,
    burst_trace,
    check_feasibility,
    lend,
    max_share,
    next_share,
    replay,
)

FULL_RATE = 45.0  # work/s: a 40 req/s burst of unit work leaves ~11 % headroom


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40),
    st.lists(st.floats(0.1, 2.0), min_size=40, max_size=40),
    st.sampled_from([0.0, 0.3, 0.75]),
    st.sampled_from([0.05, 0.1, 0.7]),
)
def test_static_share_matches_fifo_recursion(
    gaps: list[float], work: list[float], share: float, period_s: float
) -> None:
    arrival = np.cumsum(gaps)
    trace = Trace(arrival, work[: len(gaps)], arrival + 100.0)
    result = replay(trace, RateProfile.constant(2.0), share, period_s=period_s)
    expected = ref.fifo_finish(arrival.tolist(), work[: len(gaps)], 2.0 * (1 - share))
    np.testing.assert_allclose(result.finish, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(result.shares, share)
    assert result.background_progress == pytest.approx(share * 2.0 * result.duration_s)


def kernel_replay(
    trace: Trace, capacity: RateProfile, share: float, period_s: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """The period-by-period kernel under a static share: finish, shares and progress."""
    start = float(trace.arrival[0])
    periods = max(1, math.ceil((float(trace.deadline.max()) - start) / period_s))
    finish, shares = np.full(len(trace), np.inf), np.empty(periods)
    config = AIMDConfig.static(share)
    progress = _capacity.replay(
        trace.arrival,
        trace.work,
        trace.work,
        capacity.starts,
        capacity.rates,
        capacity.cumulative,
        start,
        period_s,
        1.0,
        share,
        config.step,
        config.factor,
        share,
        share,
        config.burst_rate,
        config.pressure_limit_s,
        0,
        math.inf,
        0.0,
        finish,
        shares,
    )
    return finish, shares, progress


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-5.0, 30.0), min_size=1, max_size=60),
    st.lists(st.floats(0.1, 4.0), min_size=1, max_size=8),
    st.lists(st.sampled_from([0.0, 2.0]) | st.floats(0.0, 9.0), min_size=8, max_size=8),
)
def test_ordered_lookups_equal_the_searches(
    times: list[float], segments: list[float], rates: list[float]
) -> None:
    """Sorted times and service levels take the one-pass lookups: the same numbers."""
    capacity = RateProfile(np.cumsum(segments) - 3.0, np.array(rates[: len(segments)]))
    ordered = np.sort(times)
    np.testing.assert_array_equal(
        capacity.segment_of(ordered, ordered=True), capacity.segment_of(ordered)
    )
    g = capacity.cumulative_at(ordered, ordered=True)
    assert g.tobytes() == capacity.cumulative_at(ordered).tobytes()
    assert capacity.time_of(g, ordered=True).tobytes() == capacity.time_of(g).tobytes()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(0.0, 2.0), min_size=1, max_size=50),
    st.lists(st.floats(0.01, 3.0), min_size=50, max_size=50),
    st.lists(st.floats(0.0, 5.0), min_size=50, max_size=50),
    st.lists(st.floats(0.1, 4.0), min_size=1, max_size=8),
    st.lists(st.sampled_from([0.0, 1.0]) | st.floats(0.0, 9.0), min_size=8, max_size=8),
    st.sampled_from([0.0, 0.25, 0.6, 1.0]) | st.floats(0.0, 0.99),
    st.floats(-10.0, 1e6),
    st.sampled_from([0.05, 0.1, 0.7]),
)
def test_static_closed_form_is_the_kernel_to_its_rounding_bound(
    gaps: list[float],
    work: list[float],
    budgets: list[float],
    segments: list[float],
    rates: list[float],
    share: float,
    origin: float,
    period_s: float,
) -> None:
    """Static-share replay in closed form against the period-by-period kernel: shares and
    progress bit for bit, completions as service within the documented bound."""
    n, m = len(gaps), len(segments)
    arrival = origin + np.cumsum(gaps)
    trace = Trace(arrival, work[:n], arrival + np.array(budgets[:n]))
    starts = origin + np.cumsum(segments) - 2.0
    capacity = RateProfile(starts, np.array(rates[:m]))
    result = replay(trace, capacity, share, period_s=period_s)
    finish, shares, progress = kernel_replay(trace, capacity, share, period_s)
    assert result.shares.tobytes() == shares.tobytes()
    assert result.background_progress == progress
    keep = 1.0 - share
    if keep == 0.0:
        assert np.isinf(result.finish).all()
        assert np.isinf(finish).all()
        return
    g = capacity.cumulative_at(
        np.concatenate((trace.arrival, [result.start_s + result.duration_s]))
    )
    eps, periods = np.finfo(float).eps, result.shares.size
    end_s = result.start_s + result.duration_s
    largest_s = max(float(np.abs(starts).max()), abs(end_s))
    scale = np.abs(g).max() + trace.work.sum() / keep + float(capacity.rates.max()) * largest_s
    bound = 8 * (n + periods + 2) * eps * scale  # the documented bound
    end = g[-1]
    both = np.isfinite(result.finish) & np.isfinite(finish)
    served = capacity.cumulative_at(result.finish[both]) - capacity.cumulative_at(finish[both])
    assert np.all(np.abs(served) <= bound)
    assert np.all(result.finish[both] >= trace.arrival[both])
    # Finished by one and not the other: only within the bound of the replay's end.
    one = np.isfinite(result.finish) != np.isfinite(finish)
    reached = capacity.cumulative_at(np.where(np.isfinite(finish), finish, result.finish)[one])
    assert np.all(end - reached <= bound)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 12), min_size=1, max_size=30),
    st.lists(st.integers(1, 12), min_size=30, max_size=30),
    st.lists(st.integers(0, 40), min_size=30, max_size=30),
    st.lists(st.integers(0, 8), min_size=1, max_size=4),
    st.sampled_from([0.0, 0.25, 0.5]),
)
def test_replay_misses_exactly_the_requests_with_negative_slack(
    gaps: list[int], work: list[int], budgets: list[int], rates: list[int], share: float
) -> None:
    """Two kernels, one model: request i is late in replay iff its Eq. 6 slack is < 0."""
    n = len(gaps)
    arrival = np.cumsum(gaps) / 8
    trace = Trace(arrival, np.array(work[:n]) / 4, arrival + np.array(budgets[:n]) / 8)
    starts = np.arange(len(rates)) * 1.5
    capacity = RateProfile(starts, np.array(rates, dtype=float))
    slack = check_feasibility(trace, lend(capacity, share), tolerance=0.0).slack
    assume(np.all(np.abs(slack) > 1e-9))  # exact fits may round either way
    late = replay(trace, capacity, share, period_s=0.125).finish > trace.deadline
    assert late.tolist() == (slack < 0).tolist()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(0.0, 0.3), min_size=1, max_size=60),
    st.lists(st.floats(0.2, 3.0), min_size=60, max_size=60),
    st.lists(st.integers(0, 2000), min_size=60, max_size=60),
    st.sampled_from([None, WorkBudgetAdmission(1536.0), CountThresholdAdmission(4)]),
)
def test_aimd_replay_matches_time_domain_reference(
    gaps: list[float],
    work: list[float],
    prompts: list[int],
    admission: WorkBudgetAdmission | CountThresholdAdmission | None,
) -> None:
    n = len(gaps)
    arrival = np.cumsum(gaps)
    trace = Trace(
        arrival,
        work[:n],
        arrival + 1.2,
        prompt_tokens=prompts[:n],
        max_output_tokens=np.full(n, 64.0),
    )
    config = AIMDConfig(step=0.1, factor=0.5, burst_rate=8.0, pressure_limit_s=0.2)
    result = replay(trace, RateProfile.constant(10.0), config, admission, stage_estimate=512.0)

    def admits(in_flight: float, count: int) -> bool:
        if isinstance(admission, WorkBudgetAdmission):
            return in_flight + 512.0 <= admission.budget
        if isinstance(admission, CountThresholdAdmission):
            return count <= admission.threshold  # in flight before the stage
        return True

    finish, shares = ref.replay(
        arrival.tolist(),
        work[:n],
        trace.estimated_work().tolist(),
        rate=10.0,
        period_s=0.1,
        periods=result.shares.shape[0],
        rate_window_s=1.0,
        next_share=lambda share, rate, backlog: next_share(config, share, rate, backlog),
        initial_share=config.initial_share,
        admits=admits,
    )
    np.testing.assert_allclose(result.shares, shares, rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.finish, finish, rtol=1e-9, atol=1e-9)


def test_piecewise_rate_replay_finishes_where_service_runs_out() -> None:
    capacity = RateProfile(np.array([0.0, 1.0, 3.0]), np.array([1.0, 0.0, 2.0]))
    result = replay(Trace([0.5, 0.6], [1.0, 1.0], [10.0, 10.0]), capacity, 0.0)
    # 0.5 work by t = 1, nothing until 3, then 0.5 more (t = 3.25) and 1 more (t = 3.75).
    np.testing.assert_allclose(result.finish, [3.25, 3.75])


@pytest.mark.parametrize("share", [0.0, 0.1, 0.15, 0.2, 0.21, 0.25, 0.5])
def test_static_replay_misses_iff_eq6_fails(share: float) -> None:
    trace = burst_trace()
    capacity = RateProfile.constant(FULL_RATE)
    result = replay(trace, capacity, share)
    assert (result.deadline_misses == 0) == check_feasibility(trace, lend(capacity, share)).feasible


def test_aimd_replay_follows_the_controller() -> None:
    trace = burst_trace()
    config = AIMDConfig(step=0.05, factor=0.5, max_share=0.9, burst_rate=10.0)
    result = replay(trace, RateProfile.constant(FULL_RATE), config, period_s=0.1)
    controller = AIMDController(config)
    for k, share in enumerate(result.shares[:100]):  # the low-load phase: no backlog
        t = trace.arrival[0] + 0.1 * k
        rate = np.count_nonzero((trace.arrival >= t - 1.0) & (trace.arrival < t)) / 1.0
        assert share == pytest.approx(controller.update(rate, 0.0))


def test_adaptive_share_beats_best_feasible_static_without_bad_requests() -> None:
    """Fig. 5 in the fluid model: AIMD lends more than any all-feasible static share."""
    trace = burst_trace()
    capacity = RateProfile.constant(FULL_RATE)
    static = {share: replay(trace, capacity, share) for share in (0.0, 0.1, 0.25, 0.5)}
    feasible = [s for s, r in static.items() if r.risk.bad_rate <= 0.01]
    assert feasible == [0.0, 0.1]  # as in the paper, only shares up to 10 % pass
    assert static[0.5].risk.bad_rate > static[0.25].risk.bad_rate > 0.01
    adaptive = replay(trace, capacity, AIMDConfig())
    assert adaptive.deadline_misses == 0
    best = static[max(feasible)].background_progress
    assert adaptive.background_progress > 2.5 * best
    lendable = max_share(trace, capacity)
    assert lendable is not None
    assert adaptive.background_progress > lendable * FULL_RATE * adaptive.duration_s


def test_work_budget_admission_holds_background_under_load() -> None:
    trace = burst_trace(prompt_tokens=512, max_output_tokens=64)  # 96 tokens each
    capacity = RateProfile.constant(FULL_RATE)
    free = replay(trace, capacity, 0.5)
    gated = replay(trace, capacity, 0.5, WorkBudgetAdmission(1536), stage_estimate=576)
    assert gated.deadline_misses < free.deadline_misses
    assert gated.background_progress < free.background_progress
    assert set(np.unique(gated.shares)) <= {0.0, 0.5}
    idle_only = replay(trace, capacity, 0.5, CountThresholdAdmission(0))
    assert 0.0 < idle_only.background_progress < free.background_progress
    assert idle_only.deadline_misses <= free.deadline_misses


def test_count_threshold_zero_runs_the_stage_only_when_the_queue_is_empty() -> None:
    # One request of 2 work arriving at t = 0.05, the start of period 0, on rate 10.
    trace = Trace([0.05], [2.0], [10.0], prompt_tokens=[0.0], max_output_tokens=[1.0])
    capacity = RateProfile.constant(10.0)
    idle_only = replay(trace, capacity, 0.5, CountThresholdAdmission(0))
    # Period 0 is decided before the arrival joins (queue empty: run at 0.5, 0.5 work
    # served); periods 1-2 hold it while the request is in flight (1.0 by 0.25, the
    # last 0.5 by 0.3); from period 3 the queue is empty again.
    assert idle_only.shares[:4].tolist() == [0.5, 0.0, 0.0, 0.5]
    assert idle_only.finish.tolist() == pytest.approx([0.3])
    one = replay(trace, capacity, 0.5, CountThresholdAdmission(1))  # 1 in flight is fine
    assert set(one.shares.tolist()) == {0.5}
    assert one.finish.tolist() == pytest.approx([0.45])


def test_admission_needs_token_columns() -> None:
    trace = Trace([0.0], [1.0], [2.0])
    with pytest.raises(ValueError, match="no prompt_tokens/max_output_tokens"):
        replay(trace, RateProfile.constant(1.0), 0.1, WorkBudgetAdmission())


def test_full_share_starves_the_queue_and_replay_still_ends() -> None:
    trace = Trace([0.0, 0.5], [1.0, 1.0], [1.0, 2.0])
    result = replay(trace, RateProfile.constant(10.0), 1.0)
    assert np.isinf(result.finish).all()
    assert result.deadline_misses == 2
    assert result.risk.bad_rate == 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"policy": 1.5}, r"share must be in \[0, 1\]"),
        ({"period_s": 0.0}, "period_s must be > 0"),
        ({"rate_window_s": -1.0}, "rate_window_s must be > 0"),
        ({"stage_estimate": -1.0}, "stage_estimate must be >= 0"),
        ({"period_s": 1e-9}, "control periods"),
    ],
)
def test_bad_replay_arguments(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"policy": 0.1, **kwargs}
    trace = Trace([0.0], [1.0], [100.0])
    with pytest.raises(ValueError, match=message):
        replay(trace, RateProfile.constant(1.0), **arguments)  # type: ignore[arg-type]


def test_bad_admission_type() -> None:
    trace = Trace([0.0], [1.0], [1.0])
    with pytest.raises(TypeError, match="admission must be"):
        replay(trace, RateProfile.constant(1.0), 0.1, "budget")  # type: ignore[arg-type]


def test_million_request_replay_is_bounded() -> None:
    trace = million_request_trace()

    def run() -> None:
        result = replay(trace, RateProfile.constant(FULL_RATE), AIMDConfig())
        assert result.finish.shape == (MILLION,)
        assert np.isfinite(result.finish).all()

    run_bounded(run, timeout_s=60)
