"""solve / decide / Model: the worked example, plan bookkeeping and the decide API."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.solver import decide_arguments

from conftest import calendar, small_scenario


def test_worked_example_s0348(s0348: ls.Scenario) -> None:
    plans = ls.solve_all(s0348, ["costed_window", "rollout"])
    cw, ro = plans["costed_window"], plans["rollout"]
    # Costed Window waits twice, advances 5 s with a checkpoint at t=200, loads and
    # finishes 25 s at t=300, publishing at 325.047748 for cost 170.091823.
    assert [s.action for s in cw.steps] == ["wait", "wait", "advance", "publish"]
    assert (cw.steps[2].start_s, cw.steps[2].quanta, cw.steps[2].checkpoint) == (200.0, 1, True)
    assert (cw.steps[3].start_s, cw.steps[3].quanta) == (300.0, 5)
    assert cw.publish_s == pytest.approx(325.047748, abs=1e-9)
    assert cw.cost.total == pytest.approx(170.091823, abs=1e-9)
    # Rollout waits three windows and publishes at 330 for cost 99.988: +68.866 net.
    assert [s.action for s in ro.steps] == ["wait", "wait", "wait", "publish"]
    assert ro.publish_s == pytest.approx(330.0, abs=1e-9)
    assert ro.cost.total == pytest.approx(99.988, abs=1e-9)
    assert round(ro.value - cw.value, 3) == 68.866


def test_worked_example_warm_publishes_at_30(s0348: ls.Scenario) -> None:
    warm = ls.scenario_by_id("S0344").scenario  # same case, warm recovery
    assert warm.costs == ls.PAPER_WARM
    assert warm.windows == s0348.windows
    for policy in ("costed_window", "rollout"):
        assert ls.solve(warm, policy).publish_s == pytest.approx(30.0)


def test_plan_bookkeeping_adds_up(s0348: ls.Scenario) -> None:
    for plan in ls.solve_all(s0348).values():
        assert plan.value == pytest.approx(sum(s.value for s in plan.steps), abs=1e-9)
        assert plan.cost.total == pytest.approx(sum(s.cost.total for s in plan.steps), abs=1e-9)
        for step in plan.steps:
            if step.ready_s is not None:  # Eq. 10: capacity is back by the window's end
                assert step.ready_s <= s0348.windows[step.window][1] + 1e-9


def test_warm_residency_is_charged_on_every_busy_second() -> None:
    scenario = ls.Scenario(
        windows=[(0.0, 100.0)],
        work_quanta=4,
        quantum_s=5.0,
        benefit_rate=1.0,
        horizon_s=200.0,
        costs=ls.HandoffCosts(2.0, 0.5, 0.1, 0.1),
    )
    plan = ls.solve(scenario, "window")
    (step,) = plan.steps
    assert step.action == "publish"
    assert step.publish_s == 20.0
    assert step.ready_s == 22.0
    assert step.cost.residency == pytest.approx(0.5 * 22.0)
    assert plan.value == pytest.approx(1.0 * (200 - 20) - 1.5 * 22.0)


def test_active_candidate_never_policy_pays_its_return() -> None:
    scenario = ls.Scenario(
        windows=calendar(80, 80),
        work_quanta=6,
        quantum_s=5.0,
        benefit_rate=0.1,
        horizon_s=300.0,
        costs=ls.PAPER_WARM,
        initial=ls.InitialState(3, 0, True),
    )
    plan = ls.solve(scenario, "never")
    assert [s.action for s in plan.steps] == ["abandon"]
    assert plan.value == pytest.approx(-(1 + ls.PAPER_WARM.residency_rate) * 0.487)


def test_decide_matches_the_plans_actions(s0348: ls.Scenario) -> None:
    model = ls.Model(s0348)
    for policy in ls.ALL_POLICIES:
        progress = durable = 0  # S0348 starts fresh in service mode
        for step in model.solve(policy).steps:
            action = model.decide(step.window, progress, durable, policy=policy)
            assert (action.name, action.quanta, action.checkpoint) == (
                step.action,
                step.quanta,
                step.checkpoint,
            )
            progress, durable = step.progress, step.durable


def test_decide_accepts_names_and_members(s0348: ls.Scenario) -> None:
    model = ls.Model(s0348)
    assert model.decide(0, 0, 0) == model.decide(0, 0, 0, policy=ls.Policy.ROLLOUT)
    assert model.decide(3, 2, 2, policy="dp").kind == ls.ActionKind.PUBLISH
    with pytest.raises(ValueError, match=r"policy must be one of never, window.*got 'greedy'"):
        model.decide(0, 0, 0, policy="greedy")
    with pytest.raises(ValueError, match=r"window must be in \[0, 4\), got 9"):
        model.decide(9, 0, 0)


def checked_decide(model: ls.Model, *args: object) -> object:
    """decide as the Python checks see it: every argument converted by
    ``decide_arguments`` (the one home of their messages), then the core's decision of
    those values; the error if they refuse."""
    try:
        checked = decide_arguments(*args)
        action = model._model.decide(*checked)
    except (TypeError, ValueError) as err:
        return type(err), str(err)
    return action


def decide_outcome(model: ls.Model, *args: object) -> object:
    try:
        return model.decide(*args)  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        return type(err), str(err)


S0348_MODEL = ls.Model(ls.scenario_by_id("S0348").scenario)
FIELD_VALUES = st.one_of(
    st.integers(-3, 40),
    st.integers(2**31 - 3, 2**31 + 3).map(lambda v: v * (-1) ** (v % 2)),
    st.sampled_from([True, False, None, 1.0, "0", np.int64(2), np.uint8(1), np.bool_(True)]),
    st.sampled_from([np.timedelta64(1, "s"), 10**50, -(10**50)]),
)
POLICY_VALUES = st.one_of(
    st.sampled_from(list(ls.Policy)),
    st.sampled_from([p.value for p in ls.Policy]),
    st.sampled_from([*_core.finite.Policy.__members__.values(), _core.finite.Policy(99)]),
    st.sampled_from(["greedy", "", "Rollout", 3, None, "rollout\x00"]),
)


@settings(max_examples=400, deadline=None)
@given(
    st.tuples(FIELD_VALUES, FIELD_VALUES, FIELD_VALUES),
    st.sampled_from([True, False, None, 0, 1, np.bool_(False), np.bool_(True)]),
    POLICY_VALUES,
    st.sampled_from([0.0, 0, -0.0, 1.0, -1.0, math.inf, math.nan, np.float64(0.0), "1", None]),
    st.sampled_from([None, lambda s, a: 0.0, 3]),
    st.sampled_from([None, lambda s, a: 1.0, "x"]),
)
def test_decide_checks_in_the_core_as_the_python_checks_do(
    fields: tuple[object, object, object],
    active: object,
    policy: object,
    epsilon: object,
    noise: object,
    scores: object,
) -> None:
    """decide's plain arguments are checked in C++ and every other call goes
    through decide_arguments: either way the action, or the error's type and message, is
    that of the Python checks followed by the core."""
    model = S0348_MODEL
    args = (*fields, active, policy, epsilon, noise, scores)
    assert decide_outcome(model, *args) == checked_decide(model, *args)


def test_equal_actions_are_one_object(s0348: ls.Scenario) -> None:
    model = ls.Model(s0348)
    first = model.decide(0, 0, 0)
    assert model.decide(0, 0, 0) is first
    assert model.decide(window=0, progress=0, durable=0, policy="rollout") is first
    assert ls.Model(s0348).decide(0, 0, 0, False, ls.Policy.ROLLOUT) is first
    assert first == ls.Action(first.kind, first.quanta, first.checkpoint, first.cold)
    with pytest.raises(AttributeError):
        first.quanta = 3  # type: ignore[misc]  # shared, so immutable


def test_many_distinct_actions_come_back_right() -> None:
    """Thousands of distinct advances through decide's cache of 1024 actions (collisions
    replace entries): each is the action decide_many computes for its state."""
    quanta = 3000
    scenario = ls.Scenario(
        windows=((0.0, 0.7 * quanta), (quanta + 100.0, 2.0 * quanta)),
        work_quanta=quanta,
        quantum_s=1.0,
        benefit_rate=0.5,
        horizon_s=3.0 * quanta,
        costs=ls.PAPER_WARM,
        initial=ls.InitialState(0, 0, False),
    )
    model = ls.Model(scenario)
    progress = np.arange(quanta + 1)
    for policy in ("window", "rollout"):
        for k in (0, 1):
            window = np.full(quanta + 1, k)
            many = model.decide_many(window, progress, progress, np.zeros(quanta + 1, bool), policy)
            one = [model.decide(k, p, p, False, policy) for p in range(quanta + 1)]
            assert [(int(a.kind), a.quanta, a.checkpoint, a.cold) for a in one] == list(
                zip(
                    many.kind.tolist(),
                    many.quanta.tolist(),
                    many.checkpoint.tolist(),
                    many.cold.tolist(),
                    strict=True,
                )
            )
    assert len({id(a) for a in one}) > 1024  # the cache was overrun


def test_values_of_states(s0348: ls.Scenario) -> None:
    model = ls.Model(s0348)
    assert model.optimal_value(0, 0, 0) == pytest.approx(ls.solve(s0348, "dp").value)
    assert model.reference_value(0, 0, 0) == pytest.approx(ls.solve(s0348, "costed_window").value)
    assert model.optimal_value(3, 6, 6) == pytest.approx(0.25 * (1020 - 300.047748) - 70.035748)


def test_publish_time_is_none_when_never_published(s0348: ls.Scenario) -> None:
    plan = ls.solve(s0348, "never")
    assert plan.publish_s is None
    assert plan.value == 0.0
    assert all(step.ready_s is None for step in plan.steps)
    assert math.isclose(plan.benefit, 0.0)


def test_publish_step_reports_the_completed_work(s0348: ls.Scenario) -> None:
    last = ls.solve(s0348, "rollout").steps[-1]
    assert last.action == "publish"
    assert (last.progress, last.durable) == (s0348.work_quanta, s0348.work_quanta)


def test_model_api_types(s0348: ls.Scenario) -> None:
    with pytest.raises(TypeError, match="scenario must be a Scenario, got dict"):
        ls.Model(s0348.to_json())  # type: ignore[arg-type]
    model = ls.Model(s0348)
    with pytest.raises(AttributeError):
        model.scenario = s0348  # type: ignore[misc]
    assert model.window_plan_value(0, 0, 0) == pytest.approx(ls.solve(s0348, "window").value)


def test_model_repr_names_the_scenario(s0348: ls.Scenario) -> None:
    text = repr(ls.Model(s0348))
    assert text == (
        "<Model: 4 windows, 6 quanta of 5 s, benefit 0.25 s-eq./s until 1020 s, recovery 69.988 s>"
    )


def test_one_policy_name_is_one_policy(s0348: ls.Scenario) -> None:
    assert list(ls.solve_all(s0348, "dp")) == ["dp"]
    assert list(ls.Model(s0348).solve_all(ls.Policy.ROLLOUT)) == ["rollout"]


def test_solve_documents_its_arguments_and_returns() -> None:
    for function in (ls.solve, ls.solve_all, ls.solve_batch, ls.Model.solve):
        doc = inspect.getdoc(function) or ""
        for section in ("Parameters\n----------", "Returns\n-------"):
            assert section in doc, (function.__qualname__, section)
    assert "policy\n    Policy name" in (inspect.getdoc(ls.solve) or "")


# --- the state fields of decide and the value calls -------------------------------------------


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0, 0, 0, None), TypeError, "active must be true or false, got None"),
        ((0, 0, 0, 2), TypeError, "active must be true or false, got 2"),
        ((True, True, True), TypeError, "window must be an integer, got True"),
        ((0, 0.0, 0), TypeError, "progress must be an integer, got 0.0"),
        ((0, 0, 2**40), ValueError, "durable must be <= 2147483647, got 1099511627776"),
        ((0, 10**5000, 0), ValueError, "progress must be <= 2147483647, got an integer of"),
        (("0", 0, 0), TypeError, "window must be an integer, got '0'"),
    ],
)
def test_decide_and_values_name_bad_state_fields(
    args: tuple[object, ...], error: type[Exception], message: str
) -> None:
    model = ls.Model(small_scenario())
    with pytest.raises(error, match=message):
        model.decide(*args)  # type: ignore[arg-type]
    for value in (model.optimal_value, model.reference_value, model.window_plan_value):
        with pytest.raises(error, match=message):
            value(*args)  # type: ignore[arg-type]


def test_decide_accepts_numpy_integers_and_bools() -> None:
    model = ls.Model(small_scenario())
    expected = model.decide(0, 0, 0, False)
    assert model.decide(np.int64(0), np.int32(0), np.uint8(0), np.bool_(False)) == expected
    assert model.optimal_value(np.int64(0), 0, 0) == model.optimal_value(0, 0, 0)
