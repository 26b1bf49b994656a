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
from learnsched.cli import main
from learnsched.recovery_choice import recovery_choice_rows, recovery_choice_table

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
    assert recovery_choice_table(rows) in STUDIES.read_text(encoding="utf-8")
    assert math.isfinite(sum(r.dp_gain_mean for r in rows))


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
