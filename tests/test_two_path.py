"""Recovery path as a decision: scenarios offering warm and cold returns (hypothesis)."""

from __future__ import annotations

import contextlib
import io
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched.calendar import ForecastDecision
from learnsched.cli import main
from learnsched.recovery_choice import (
    PRICES,
    recovery_choice_rows,
    recovery_choice_table,
    two_path_pairs,
)

import reference
from strategies import scenarios, to_reference

TOL = 1e-9
STUDIES = Path(__file__).resolve().parents[1] / "docs" / "studies.md"


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


@settings(max_examples=300, deadline=None)
@given(scenarios(max_windows=3, max_quanta=4, two_path=True))
def test_dp_equals_exhaustive_search_over_both_paths(scenario: ls.Scenario) -> None:
    best = reference.exhaustive_value(to_reference(scenario))
    assert close(ls.solve(scenario, "dp").value, best)
    init = scenario.initial
    model = ls.Model(scenario)
    assert close(model.optimal_value(0, init.progress, init.durable, init.active), best)


@settings(max_examples=300, deadline=None)
@given(scenarios(two_path=True), st.sampled_from(ls.ALL_POLICIES))
def test_core_equals_the_reference_on_two_path_scenarios(
    scenario: ls.Scenario, policy: ls.Policy
) -> None:
    ours = ls.solve(scenario, policy)
    theirs = reference.solve(to_reference(scenario), policy.value)
    assert close(ours.value, theirs.value)
    assert [(s.action, s.quanta, s.checkpoint, s.path) for s in ours.steps] == [
        (
            s.action,
            s.quanta,
            s.checkpoint,
            None if s.action == "wait" else ("cold" if s.cold else "warm"),
        )
        for s in theirs.steps
    ]
    for a, b in zip(ours.steps, theirs.steps, strict=True):
        assert close(a.cost.total, b.cost)
        assert close(a.cost.residency, b.residency)


@settings(max_examples=200, deadline=None)
@given(scenarios(two_path=True))
def test_the_choice_never_loses_to_either_fixed_path_under_dp(scenario: ls.Scenario) -> None:
    both = ls.solve(scenario, "dp").value
    for recovery in ("warm", "cold"):
        try:
            one_path = scenario.with_costs(scenario.costs.path(recovery))
        except ValueError:  # an active start that this path alone cannot return from
            continue
        fixed = ls.solve(one_path, "dp").value
        assert both >= fixed - TOL * max(1.0, abs(fixed))
    for step in ls.solve(scenario, "dp").steps:  # residency only while parked state is held
        assert step.path in (None, "warm", "cold")
        if step.path == "cold":
            assert step.cost.residency == 0.0


def test_residency_is_charged_from_the_window_start_until_capacity_is_ready() -> None:
    costs = ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD)
    scenario = ls.scenario_by_id("S0348").scenario.with_costs(costs)
    for policy in ls.ALL_POLICIES:
        for step in ls.solve(scenario, policy).steps:
            if step.ready_s is None:
                assert step.path is None
                assert step.cost.total == 0.0
                continue
            held_s = step.ready_s - step.start_s
            rate = ls.PAPER_WARM.residency_rate if step.path == "warm" else 0.0
            assert step.cost.residency == pytest.approx(rate * held_s, abs=1e-12)
    # Warm returns first: Window publishes in window 0 by the warm path (30.487 s of 80).
    assert ls.solve(scenario, "window").steps[0].path == "warm"


def test_one_path_scenarios_are_unchanged_and_say_no_path() -> None:
    for sid in ("S0348", "S0349", "S0001"):
        plan = ls.solve(ls.scenario_by_id(sid).scenario, "dp")
        assert all(step.path is None for step in plan.steps)


def test_two_path_json_round_trip_and_its_keys() -> None:
    costs = ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD)
    scenario = ls.scenario_by_id("S0348").scenario.with_costs(costs)
    obj = scenario.to_json()
    assert "recovery_s" not in obj
    assert (obj["warm_recovery_s"], obj["cold_recovery_s"], obj["residency_rate"]) == (
        0.487,
        69.988,
        0.06383,
    )
    assert ls.Scenario.from_json(json.loads(json.dumps(obj))) == scenario
    with pytest.raises(ValueError, match=r"unknown key.*recovery_s"):
        ls.Scenario.from_json({**obj, "recovery_s": 1.0})
    with pytest.raises(ValueError, match="cold_recovery_s must be >= 0"):
        ls.Scenario.from_json({**obj, "cold_recovery_s": -1.0})


def test_choice_rejects_inconsistent_paths() -> None:
    with pytest.raises(ValueError, match="cold residency_rate must be 0"):
        ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_WARM)
    with pytest.raises(ValueError, match="save_s must be the same"):
        ls.HandoffCosts.choice(ls.PAPER_WARM, ls.HandoffCosts(69.988, 0.0, 0.0, 0.047748))
    with pytest.raises(ValueError, match="needs costs that offer both"):
        ls.PAPER_WARM.path("cold")


def test_an_active_candidate_may_return_by_the_path_that_fits() -> None:
    scenario = ls.Scenario(
        windows=((0.0, 10.0), (20.0, 200.0)),
        work_quanta=4,
        quantum_s=5.0,
        benefit_rate=1.0,
        horizon_s=400.0,
        costs=ls.HandoffCosts(recovery_s=1.0, residency_rate=0.1, cold_recovery_s=50.0),
        initial=ls.InitialState(2, 0, True),
    )
    assert ls.solve(scenario, "never").steps[0].path == "warm"  # cold does not fit window 0
    with pytest.raises(ValueError, match="must be able to return"):
        ls.Scenario(
            windows=((0.0, 10.0),),
            work_quanta=4,
            quantum_s=5.0,
            benefit_rate=1.0,
            horizon_s=40.0,
            costs=ls.HandoffCosts(recovery_s=20.0, cold_recovery_s=30.0),
            initial=ls.InitialState(2, 0, True),
        )


def test_the_studies_table_is_what_the_code_computes() -> None:
    rows = recovery_choice_rows()
    for row in rows:
        assert row.dp_gain_max >= row.dp_gain_mean >= 0.0
        assert row.scenarios == 160
        assert row.costed_window_gain_min >= -TOL  # the reference never loses to a fixed path
        assert row.rollout_over_costed_window_min >= -TOL
    assert recovery_choice_table(rows) in STUDIES.read_text(encoding="utf-8")
    assert math.isfinite(sum(r.dp_gain_mean for r in rows))


@pytest.mark.parametrize("price", PRICES)
def test_rollout_keeps_its_guarantee_with_a_path_choice_on_the_grid(price: float) -> None:
    """Per grid pair at each residency price of the table: Rollout >= its reference
    (Costed Window with the choice) >= the better fixed-path Costed Window."""
    pairs = two_path_pairs(price)
    policies = ("costed_window", "rollout")
    both = ls.solve_batch([b for _, _, b in pairs], policies, threads=2)
    fixed = ls.solve_batch([g.scenario for w, c, _ in pairs for g in (w, c)], policies, threads=2)
    best_fixed = fixed.column("costed_window").reshape(-1, 2).max(axis=1)
    reference_value, rollout = both.column("costed_window"), both.column("rollout")
    slack = TOL * np.maximum(1.0, np.abs(best_fixed))
    assert (reference_value >= best_fixed - slack).all()
    assert (rollout >= reference_value - slack).all()


def test_two_path_examples_s0632_and_s0936() -> None:
    """At 1 s-eq. per GiB-second: S0632's two-path Rollout scored 238.468 against cold
    recovery's 649.605 (DP 760.026); S0936's Costed Window 66.773 against 664.860."""
    pairs = {w.sid: (w, c, b) for w, c, b in two_path_pairs(1.0)}
    _, c, both = pairs["S0632"]
    cold = ls.solve(c.scenario, "rollout").value
    assert cold == pytest.approx(649.605035, abs=1e-6)
    assert ls.solve(both, "costed_window").value == pytest.approx(cold, abs=1e-9)
    assert ls.solve(both, "rollout").value == pytest.approx(751.124353, abs=1e-6)
    assert ls.solve(both, "dp").value == pytest.approx(760.025637, abs=1e-6)
    _, c, both = pairs["S0936"]
    assert ls.solve(both, "costed_window").value == pytest.approx(664.860429, abs=1e-6)
    assert ls.solve(c.scenario, "costed_window").value == pytest.approx(664.860429, abs=1e-6)


def _valid_states(scenario: ls.Scenario, costs: ls.HandoffCosts) -> list[tuple[int, int, int, bool]]:
    """Every state of every window that ``costs`` can leave (an active state must return)."""
    cold_s = costs.cold_recovery_s
    fastest_s = min(costs.recovery_s, costs.recovery_s if cold_s is None else cold_s)
    out = []
    for k, (start, end) in enumerate(scenario.windows):
        for p in range(scenario.work_quanta + 1):
            out.append((k, p, p, False))
            if fastest_s <= end - start:
                out += [(k, p, pbar, True) for pbar in range(p + 1)]
    return out


@settings(max_examples=300, deadline=None)
@given(scenarios(two_path=True))
def test_the_reference_with_a_choice_beats_both_fixed_paths_in_every_state(
    scenario: ls.Scenario,
) -> None:
    both = ls.Model(scenario)
    fixed = {}
    for recovery in ("warm", "cold"):
        costs = scenario.costs.path(recovery)
        # A fresh start: the initial state may be one this path alone cannot return from.
        fixed[recovery] = (costs, ls.Model(replace(scenario, costs=costs, initial=ls.InitialState())))
    for state in _valid_states(scenario, scenario.costs):
        v0 = both.reference_value(*state)
        for costs, model in fixed.values():
            if state in _valid_states(scenario, costs):
                v = model.reference_value(*state)
                assert v0 >= v - TOL * max(1.0, abs(v)), (state, costs)
    for plan_value in (ls.solve(scenario, "rollout").value, ls.solve(scenario, "guarded").value):
        v0 = ls.solve(scenario, "costed_window").value
        assert plan_value >= v0 - TOL * max(1.0, abs(v0))


def test_solve_json_names_each_steps_path(tmp_path: Path) -> None:
    costs = ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD)
    path = tmp_path / "two.json"
    path.write_text(json.dumps(ls.scenario_by_id("S0348").scenario.with_costs(costs).to_json()))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["solve", str(path), "--policy", "dp", "--json"]) == 0
    steps = json.loads(out.getvalue())["policies"]["dp"]["steps"]
    assert [s["path"] for s in steps] == ["warm"]  # publishes in window 0, warm
    one = tmp_path / "one.json"
    one.write_text(json.dumps(ls.scenario_by_id("S0348").scenario.to_json()))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["solve", str(one), "--policy", "dp", "--json"]) == 0
    assert {s["path"] for s in json.loads(out.getvalue())["policies"]["dp"]["steps"]} == {None}


def test_an_unusable_cold_path_changes_nothing_bit_for_bit() -> None:
    """A cold path too slow for every window leaves every grid value exactly as one path."""
    grid = ls.paper_grid()
    one = [g.scenario for g in grid.scenarios]
    two = [
        s.with_costs(
            ls.HandoffCosts.choice(s.costs, replace(s.costs, recovery_s=1e4, residency_rate=0.0))
        )
        for s in one
    ]
    a = ls.solve_batch(one, ls.ALL_POLICIES, threads=2)
    b = ls.solve_batch(two, ls.ALL_POLICIES, threads=2)
    for field in ("value", "benefit", "publish_s", "cost"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


@settings(max_examples=150, deadline=None)
@given(scenarios(two_path=True))
def test_an_exact_forecast_decides_as_the_model_with_two_paths(scenario: ls.Scenario) -> None:
    """Under the exact forecast each window's decisions are the model's, pi0's path choice
    included, also where no window follows (an empty continuation)."""
    model = ls.Model(scenario)
    for k, window in enumerate(scenario.windows):
        decision = ForecastDecision(scenario, window, [list(scenario.windows[k + 1 :])])
        for _, p, pbar, active in (x for x in _valid_states(scenario, scenario.costs) if x[0] == k):
            for policy in ("window", "costed_window", "rollout", "dp"):
                expected = model.decide(k, p, pbar, active, policy)
                assert decision.decide(p, pbar, active, policy) == expected, (k, policy)


def test_a_two_path_scenario_has_half_the_states() -> None:
    """Its reference keeps each fixed path's two tables too (up to seven tables)."""
    assert ls._core.finite.MAX_TWO_PATH_STATES == ls._core.finite.MAX_STATES // 2
    base = {"windows": ((0.0, 10.0),), "quantum_s": 1e-6, "benefit_rate": 1.0, "horizon_s": 20.0}
    one = ls.Scenario(work_quanta=2**23 - 1, costs=ls.PAPER_WARM, **base)  # 2^24 states: fine
    assert one.work_quanta == 2**23 - 1
    with pytest.raises(ValueError, match="exceeds the limit of 8388608 for a scenario offering two"):
        ls.Scenario(
            work_quanta=2**22, costs=ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD), **base
        )


def test_two_path_forecast_samples_have_half_the_states() -> None:
    from learnsched.calendar import sample_tables

    candidate = ls.Scenario(
        windows=((0.0, 10.0),), work_quanta=2**21, quantum_s=1e-6, benefit_rate=1.0,
        horizon_s=20.0, costs=ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD),
    )  # fmt: skip
    # Three samples of one window: 3 x 2 x (2^21 + 1) states, below MAX_SAMPLE_STATES only
    # (distinct: equal samples would share one build).
    with pytest.raises(ValueError, match="exceeds the limit of 8388608"):
        sample_tables(candidate, [[(20.0 + i, 30.0 + i)] for i in range(3)])
