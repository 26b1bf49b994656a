"""Benefit over time: a piecewise-constant benefit rate in the core and every policy."""

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
from learnsched import _core
from learnsched.calendar import ForecastDecision
from learnsched.cli import main
from learnsched.sweep import parse_spec, solve_rows

import reference
from strategies import benefit_schedules, scenarios, to_reference

TOL = 1e-9
POLICIES = (*ls.ALL_POLICIES, ls.Policy.GUARDED)


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


def scheduled(scenario: ls.Scenario, schedule: object) -> ls.Scenario:
    return replace(scenario, benefit_rate=schedule)


S0348 = ls.scenario_by_id("S0348").scenario  # the worked example: g = 0.25, H = 1020 s


@pytest.mark.parametrize(
    "schedule",
    [
        lambda g: [[0.0, g]],  # one piece from the first window's start
        lambda g: [[-50.0, g], [10.0, g], [400.0, g]],  # the same rate, three pieces
    ],
    ids=["one-piece", "equal-pieces"],
)
def test_constant_schedules_are_bit_identical_on_the_grid(schedule: object) -> None:
    grid = ls.paper_grid()
    plain = [g.scenario for g in grid.scenarios]
    pieces = [scheduled(s, schedule(s.benefit_rate)) for s in plain]  # type: ignore[operator]
    policies = POLICIES
    a = ls.solve_batch(plain, policies, epsilon=2.0)
    b = ls.solve_batch(pieces, policies, epsilon=2.0)
    for field in ("value", "benefit", "publish_s", "cost"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    summary = ls.summarize(grid, a)
    assert summary == ls.summarize(grid, b)


def test_constant_schedules_are_bit_identical_under_a_forecast() -> None:
    for sid in ("S0348", "S0349", "S0301", "S1000"):
        s = ls.scenario_by_id(sid).scenario
        t = scheduled(s, [[0.0, s.benefit_rate]])
        future = [list(s.windows[1:])]
        for policy in ("window", "costed_window", "rollout", "dp"):
            a = ForecastDecision(s, s.windows[0], future).decide(
                s.initial.progress, s.initial.durable, s.initial.active, policy
            )
            b = ForecastDecision(t, t.windows[0], future).decide(
                t.initial.progress, t.initial.durable, t.initial.active, policy
            )
            assert a == b


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_phi_is_the_integral_of_the_rate(data: st.DataObject) -> None:
    horizon_s = data.draw(st.floats(-10, 100))
    schedule = data.draw(benefit_schedules(100.0))
    scenario = replace(S0348, benefit_rate=schedule, horizon_s=horizon_s)
    for t in data.draw(st.lists(st.floats(-20, 120), min_size=1, max_size=8)):
        expected = reference.scheduled_benefit(schedule, horizon_s, t)
        assert close(scenario.benefit(t), expected)
    # Pieces starts and the horizon are where the rate changes: Phi is exact there too.
    for t, _ in schedule:
        assert close(scenario.benefit(t), reference.scheduled_benefit(schedule, horizon_s, t))
    assert scenario.benefit(horizon_s) == 0.0


def test_phi_of_the_worked_example_by_hand() -> None:
    s = scheduled(S0348, [[0.0, 1.0], [320.0, 0.25], [600.0, 0.0]])
    assert s.benefit(0.0) == 320.0 + 0.25 * 280.0
    assert s.benefit(330.0) == 0.25 * 270.0
    assert s.benefit(700.0) == 0.0
    late = scheduled(S0348, [[100.0, 0.5]])  # no rate before the first piece
    assert late.benefit(0.0) == late.benefit(100.0) == 0.5 * 920.0


@settings(max_examples=300, deadline=None)
@given(scenarios(scheduled=True), st.sampled_from(ls.ALL_POLICIES))
def test_every_policy_equals_the_reference_with_a_schedule(
    scenario: ls.Scenario, policy: ls.Policy
) -> None:
    ours = ls.solve(scenario, policy)
    theirs = reference.solve(to_reference(scenario), policy.value)
    assert close(ours.value, theirs.value)
    assert close(ours.benefit, theirs.benefit)
    assert [(s.action, s.quanta, s.checkpoint) for s in ours.steps] == [
        (s.action, s.quanta, s.checkpoint) for s in theirs.steps
    ]


@settings(max_examples=200, deadline=None)
@given(scenarios(scheduled=True, two_path=True), st.sampled_from(ls.ALL_POLICIES))
def test_two_path_scenarios_with_a_schedule_equal_the_reference(
    scenario: ls.Scenario, policy: ls.Policy
) -> None:
    ours = ls.solve(scenario, policy)
    assert close(ours.value, reference.solve(to_reference(scenario), policy.value).value)


@settings(max_examples=200, deadline=None)
@given(scenarios(max_windows=3, max_quanta=4, scheduled=True))
def test_dp_is_the_best_plan_with_a_schedule(scenario: ls.Scenario) -> None:
    best = reference.exhaustive_value(to_reference(scenario))
    assert close(ls.solve(scenario, "dp").value, best)
    init = scenario.initial
    model = ls.Model(scenario)
    assert close(model.optimal_value(0, init.progress, init.durable, init.active), best)


@settings(max_examples=100, deadline=None)
@given(scenarios(scheduled=True), st.sampled_from([0.0, 0.5, 5.0, math.inf]))
def test_guarded_equals_the_reference_with_a_schedule(
    scenario: ls.Scenario, epsilon: float
) -> None:
    ours = ls.solve(scenario, "guarded", epsilon=epsilon)
    theirs = reference.solve_guarded(to_reference(scenario), epsilon)
    assert close(ours.value, theirs.value)
    assert ours.value >= ls.solve(scenario, "costed_window").value - TOL * max(1.0, abs(ours.value))


def test_a_falling_rate_makes_publishing_early_pay() -> None:
    # 2 s-eq./s until 100 s, then nothing: only a plan that publishes in window 0 earns
    # (S0344: S0348 with warm recovery).
    s = scheduled(ls.scenario_by_id("S0344").scenario, [[0.0, 2.0], [100.0, 0.0]])
    assert s.benefit(30.0) == 140.0
    for policy in ("window", "costed_window", "rollout", "dp"):
        plan = ls.solve(s, policy)
        assert plan.publish_s == 30.0, policy  # publishes in the first window (30 s of work)
        assert plan.benefit == 140.0
    # Static ROI is handoff-blind: Phi(l_k + 30 s) - 30 s, positive only in window 0.
    assert ls.solve(s, "static_roi").steps[0].action == "publish"


def test_a_rising_rate_makes_waiting_pay() -> None:
    # Nothing until 300 s, then 3 s-eq./s: rollout and DP wait for the long last window.
    s = scheduled(S0348, [[0.0, 0.0], [300.0, 3.0]])
    dp = ls.solve(s, "dp")
    assert dp.publish_s is not None
    assert dp.publish_s >= 300.0
    assert ls.solve(s, "rollout").value >= ls.solve(s, "costed_window").value


def test_json_round_trip_and_the_cli(tmp_path: Path) -> None:
    s = scheduled(S0348, [[0, 1.0], [320, 0.25], [600, 0]])
    obj = s.to_json()
    assert obj["benefit_rate"] == [[0.0, 1.0], [320.0, 0.25], [600.0, 0.0]]
    assert ls.Scenario.from_json(json.loads(json.dumps(obj))) == s
    path = tmp_path / "s.json"
    path.write_text(json.dumps(obj))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["solve", str(path), "--policy", "dp", "--json"]) == 0
    dp = json.loads(out.getvalue())["policies"]["dp"]
    assert dp["value"] == ls.solve(s, "dp").value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**obj, "benefit_rate": [[10, 1], [5, 1]]}))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["solve", str(bad)]) == 2
    assert "benefit_rate[1] starts at 5" in err.getvalue()


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ([], ValueError, "non-empty list"),
        ([[0.0, 1.0, 2.0]], ValueError, r"benefit_rate\[0\] must be a \[start_s, rate\] pair"),
        ([[0.0, True]], TypeError, r"benefit_rate\[0\] rate must be a number"),
        ([[0.0, -1.0]], ValueError, r"benefit_rate\[0\] rate must be finite and >= 0"),
        ([[0.0, 1.0], [0.0, 2.0]], ValueError, r"benefit_rate\[1\] starts at 0, not after"),
        ([[math.nan, 1.0]], ValueError, r"benefit_rate\[0\] start must be finite"),
        ([[0.0, math.inf]], ValueError, r"benefit_rate\[0\] rate must be finite"),
        ([[-1e308, 1e300]], ValueError, r"benefit_rate\[0\] start must be finite and within"),
        ([[0.0, 1e300], [1.0, 1e305]], ValueError, "benefit schedule's integral .* overflows"),
        ("0.25", TypeError, "benefit_rate must be a number"),
    ],
)
def test_bad_schedules_name_the_piece(value: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        scheduled(S0348, value)


def test_the_core_guards_its_schedule() -> None:
    core = S0348.to_core()
    args = (core.windows, core.work_quanta, core.quantum_s)
    with pytest.raises(ValueError, match="benefit_rate must be 0 when a benefit schedule"):
        _core.finite.validate(
            _core.finite.Scenario(*args, 0.25, 1020.0, core.costs, core.initial, [(0.0, 1.0)])
        )
    unsorted = _core.finite.Scenario(*args, 0.0, 1020.0, core.costs, core.initial, [(5.0, 1.0), (1.0, 1.0)])
    with pytest.raises(ValueError, match="sorted by start"):
        unsorted.benefit(0.0)
    ok = _core.finite.Scenario(*args, 0.0, 1020.0, core.costs, core.initial, [(0.0, 1.0)])
    assert ok.benefit_schedule == [(0.0, 1.0)]
    assert ok.benefit(20.0) == 1000.0


def test_batch_equals_one_by_one_with_schedules() -> None:
    base = [ls.scenario_by_id(f"S{i:04d}").scenario for i in range(300, 340)]
    items = [scheduled(s, [[0.0, 2 * s.benefit_rate], [150.0 + i, s.benefit_rate / 2]])
             for i, s in enumerate(base)]  # fmt: skip
    batch = ls.solve_batch(items, ls.ALL_POLICIES, threads=2)
    for i, s in enumerate(items):
        for j, policy in enumerate(ls.ALL_POLICIES):
            assert batch.value[i, j] == ls.solve(s, policy).value


def test_a_sweep_keeps_a_base_schedule_and_sets_a_swept_rate() -> None:
    s = scheduled(S0348, [[0.0, 1.0], [320.0, 0.25]])
    spec = parse_spec(
        {"base": [s.to_json()], "vary": {"quantum_s": [5.0]}, "policies": ["dp", "rollout"]}
    )
    rows = solve_rows(spec, 0, 1)
    assert rows.value[0].tolist() == [ls.solve(s, "dp").value, ls.solve(s, "rollout").value]
    spec = parse_spec({"base": [s.to_json()], "vary": {"benefit_rate": [0.25]}, "policies": ["dp"]})
    assert solve_rows(spec, 0, 1).value[0].tolist() == [ls.solve(S0348, "dp").value]


@settings(max_examples=100, deadline=None)
@given(st.one_of(scenarios(scheduled=True), scenarios(scheduled=True, two_path=True)))
def test_an_exact_forecast_decides_as_the_model_with_a_schedule(scenario: ls.Scenario) -> None:
    """Each sample's tables and the current window price publication by the same Phi."""
    model = ls.Model(scenario)
    init = scenario.initial
    for k, window in enumerate(scenario.windows):
        decision = ForecastDecision(scenario, window, [list(scenario.windows[k + 1 :])])
        p, pbar, active = (init.progress, init.durable, init.active) if k == 0 else (0, 0, False)
        for policy in ("window", "costed_window", "rollout", "dp"):
            assert decision.decide(p, pbar, active, policy) == model.decide(k, p, pbar, active, policy)
