"""Online evaluation: the exact-forecast identity, the clairvoyant bound, Eq. 10 on the
truth, repeated truth, and determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched.calendar import (
    ONLINE_POLICIES,
    EmpiricalForecaster,
    OnlineCase,
    SampleForecaster,
    evaluate_online,
    run_calendar,
)

from strategies import scenarios

# Under a forecast DP is called mean_dp: with the exact forecast it is the paper's DP.
FORECAST_NAMES = {"window": "window", "costed_window": "costed_window", "rollout": "rollout",
                  "mean_dp": "dp"}


def test_exact_forecast_is_the_paper_on_the_whole_grid(
    paper_grid_result: tuple[ls.Grid, ls.BatchResult],
) -> None:
    grid, batch = paper_grid_result
    result = evaluate_online([OnlineCase.exact(g.scenario) for g in grid.scenarios])
    for name, paper in FORECAST_NAMES.items():
        # Value for value, not approximately: the same tables and the same sums.
        assert list(result.policies[name].values) == batch.column(paper).tolist()
    assert list(result.policies["clairvoyant"].values) == batch.column("dp").tolist()
    assert result.policies["rollout"].mean_regret == pytest.approx(0.246, abs=5e-4)
    assert result.policies["costed_window"].mean_regret == pytest.approx(5.369, abs=5e-4)


def test_exact_steps_are_the_papers_plan(s0348: ls.Scenario) -> None:
    outcome = run_calendar(OnlineCase.exact(s0348), np.random.default_rng(0))
    for name, paper in FORECAST_NAMES.items():
        assert outcome[name].steps == ls.solve(s0348, paper).steps
    rollout = outcome["rollout"]
    assert [s.action for s in rollout.steps] == ["wait", "wait", "wait", "publish"]
    assert rollout.handoffs == 1
    assert rollout.checkpoints == 0
    assert outcome["costed_window"].checkpoints == 1


@settings(max_examples=80, deadline=None)
@given(scenario=scenarios(max_windows=5, two_path=True))
def test_exact_forecast_is_the_paper_with_two_recovery_paths(scenario: ls.Scenario) -> None:
    outcome = run_calendar(OnlineCase.exact(scenario), np.random.default_rng(0))
    for name, paper in FORECAST_NAMES.items():
        assert outcome[name].steps == ls.solve(scenario, paper).steps
    assert outcome["clairvoyant"].value == ls.solve(scenario, "dp").value


def repeated(scenario: ls.Scenario, n: int) -> OnlineCase:
    return OnlineCase(scenario, SampleForecaster([scenario.windows] * n), samples=n)


@settings(max_examples=80, deadline=None)
@given(scenario=scenarios(max_windows=5), n=st.integers(1, 5))
def test_truth_repeated_equals_exact_mode(scenario: ls.Scenario, n: int) -> None:
    exact = evaluate_online([OnlineCase.exact(scenario)])
    samples = evaluate_online([repeated(scenario, n)])
    for name in ONLINE_POLICIES:
        assert samples.policies[name].values == exact.policies[name].values


def noisy_samples(
    scenario: ls.Scenario, rng: np.random.Generator, n: int
) -> list[list[tuple[float, float]]]:
    """Calendars near the truth: each window stretched or shrunk, some dropped."""
    out = []
    for _ in range(n):
        windows, t = [], 0.0
        for start, end in scenario.windows:
            t = max(t, start * float(rng.uniform(0.8, 1.2)))
            length = (end - start) * float(rng.uniform(0.5, 1.5))
            if rng.random() < 0.8:
                windows.append((t, t + length))
            t += length
        out.append(windows or [(t + 1.0, t + 2.0)])
    return out


def check_bound_and_deadlines(scenario: ls.Scenario, case: OnlineCase) -> None:
    outcome = run_calendar(case, np.random.default_rng(7))
    best = outcome["clairvoyant"].value
    for name in ONLINE_POLICIES:
        assert outcome[name].value <= best + 1e-9 * (1 + abs(best))
        for step in outcome[name].steps:
            start, end = scenario.windows[step.window]
            assert step.start_s == start
            if step.ready_s is not None:  # Eq. 10 on the true window: capacity back in time
                assert step.ready_s <= end + 1e-9 + 1e-12 * abs(end)
            if step.publish_s is not None:
                assert step.publish_s <= step.ready_s  # type: ignore[operator]


@settings(max_examples=150, deadline=None)
@given(scenario=scenarios(max_windows=5), seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_clairvoyant_bounds_every_policy_and_eq10_holds(
    scenario: ls.Scenario, seed: int, n: int
) -> None:
    rng = np.random.default_rng(seed)
    case = OnlineCase(scenario, SampleForecaster(noisy_samples(scenario, rng, n)), samples=n)
    check_bound_and_deadlines(scenario, case)


@settings(max_examples=60, deadline=None)
@given(scenario=scenarios(max_windows=6), n=st.integers(1, 8))
def test_empirical_forecasts_never_beat_clairvoyance(scenario: ls.Scenario, n: int) -> None:
    case = OnlineCase(scenario, EmpiricalForecaster(), samples=n, until_s=scenario.horizon_s)
    check_bound_and_deadlines(scenario, case)


def test_clairvoyant_bounds_every_policy_on_the_grid_with_forecasts(
    paper_grid_result: tuple[ls.Grid, ls.BatchResult],
) -> None:
    grid, _ = paper_grid_result
    rng = np.random.default_rng(11)
    cases = [
        OnlineCase(g.scenario, SampleForecaster(noisy_samples(g.scenario, rng, 4)), samples=4)
        for g in grid.scenarios
    ]
    result = evaluate_online(cases)
    for name in ONLINE_POLICIES:
        assert min(result.policies[name].regrets) >= -1e-9
    # With imperfect forecasts, the information bound is strictly ahead somewhere.
    assert result.policies["rollout"].mean_regret > 0


class Redrawn(SampleForecaster):
    """The same samples, but offered as a forecast that may change: no prebuilt tables."""

    def fixed(self, n: int) -> None:
        return None


@settings(max_examples=60, deadline=None)
@given(scenario=scenarios(max_windows=5), seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_prebuilt_tables_decide_as_per_window_forecasts(
    scenario: ls.Scenario, seed: int, n: int
) -> None:
    samples = noisy_samples(scenario, np.random.default_rng(seed), n)
    for until_s in (math.inf, scenario.windows[-1][0]):  # all windows, or the truth's span
        fixed = OnlineCase(scenario, SampleForecaster(samples), n, until_s=until_s)
        redrawn = OnlineCase(scenario, Redrawn(samples), n, until_s=until_s)
        assert run_calendar(fixed, np.random.default_rng(0)) == run_calendar(
            redrawn, np.random.default_rng(0)
        )


def trace_like_cases(n: int) -> list[OnlineCase]:
    rng = np.random.default_rng(5)
    cases = []
    for _ in range(n):
        windows, t = [], 0.0
        for _ in range(8):
            t += float(rng.exponential(40.0))
            length = float(rng.uniform(60.0, 250.0))
            windows.append((t, t + length))
            t += length
        history = tuple((w[0] - t - 100.0, w[1] - t - 100.0) for w in windows)
        scenario = ls.Scenario(tuple(windows), 12, 5.0, 0.5, t + 300.0, ls.PAPER_COLD)
        cases.append(OnlineCase(scenario, EmpiricalForecaster(), 8, history, t))
    return cases


def test_seed_and_threads_determine_the_result() -> None:
    cases = trace_like_cases(6)
    one = evaluate_online(cases, seed=3, threads=1)
    again = evaluate_online(cases, seed=3, threads=1)
    two = evaluate_online(cases, seed=3, threads=2)
    assert one.to_json() == again.to_json() == two.to_json()
    assert one.outcomes == two.outcomes  # every realised step too


def test_summary_json() -> None:
    result = evaluate_online(trace_like_cases(5), seed=1)
    out = result.to_json()
    assert set(out) == {"policies", "differences"}
    assert set(out["policies"]) == set(ONLINE_POLICIES)
    for name, summary in out["policies"].items():
        assert set(summary) == {
            "values",
            "values_by_seed",
            "mean_value",
            "ci95",
            "mean_regret",
            "late_requests",
            "lateness_s",
            "slo_misses",
            "handoffs",
            "checkpoints",
            "lent_s",
        }
        # Returns are planned by the known window ends: nobody is late, no requests exist,
        # and lent seconds are not counted.
        assert summary["late_requests"] == summary["lateness_s"] == 0.0
        assert summary["slo_misses"] is summary["lent_s"] is None
        assert len(summary["values"]) == 5
        assert summary["mean_value"] == pytest.approx(np.mean(summary["values"]))
        low, high = summary["ci95"]
        assert low <= summary["mean_value"] <= high
        if name == "clairvoyant":
            assert summary["mean_regret"] == 0.0
    one = evaluate_online(trace_like_cases(1)).to_json()
    assert one["policies"]["rollout"]["ci95"] is None
    assert all(math.isfinite(v) for v in one["policies"]["mean_dp"]["values"])
    pairs = {(d["a"], d["b"]) for d in out["differences"]}
    assert ("rollout", "clairvoyant") in pairs
    assert len(pairs) == len(ONLINE_POLICIES) * (len(ONLINE_POLICIES) - 1) // 2


def test_bad_cases() -> None:
    with pytest.raises(ValueError, match="at least one true calendar"):
        evaluate_online([])
    scenario = trace_like_cases(1)[0].scenario
    with pytest.raises(ValueError, match="samples must be >= 1"):
        OnlineCase(scenario, EmpiricalForecaster(), samples=0)
    with pytest.raises(TypeError, match="forecaster must be a Forecaster"):
        OnlineCase(scenario, "exact", samples=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"history\[1\] starts at"):
        OnlineCase(scenario, EmpiricalForecaster(), history=((0.0, 10.0), (5.0, 20.0)))
