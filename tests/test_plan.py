"""Plans from the core: columnar steps made lazily, equal to the step-by-step copy."""

from __future__ import annotations

import copy
import json
import pickle
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.plan import Plan, Step, Steps


def long_scenario(windows: int, two_path: bool) -> ls.Scenario:
    """``windows`` 80 s windows, 20 s apart; work that needs several of them."""
    costs = ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD) if two_path else ls.PAPER_WARM
    return ls.Scenario(
        windows=tuple((100.0 * k, 100.0 * k + 80.0) for k in range(windows)),
        work_quanta=300,
        quantum_s=1.0,
        benefit_rate=0.5,
        horizon_s=100.0 * windows + 500.0,
        costs=costs,
        initial=ls.InitialState(10, 0, True),
    )


def stepwise(core: _core.finite.Plan, two_path: bool) -> tuple[Step, ...]:
    """The steps copied one segment at a time (the conversion before the columns)."""
    return tuple(Step.from_core(seg, two_path) for seg in core.steps)


@pytest.mark.parametrize("two_path", [False, True])
@pytest.mark.parametrize("policy", [p for p in ls.Policy if p is not ls.Policy.GUARDED])
def test_columns_give_the_stepwise_steps(two_path: bool, policy: ls.Policy) -> None:
    scenario = long_scenario(40, two_path)
    core = ls.Model(scenario)._model.solve(ls.solver.core_policy(policy), 0.0, None)
    plan = Plan.from_core(core, two_path)
    expected = stepwise(core, two_path)
    assert isinstance(plan.steps, Steps)
    assert len(plan.steps) == len(expected) == len(core.steps)
    assert plan.steps == expected
    assert expected == plan.steps
    assert hash(plan.steps) == hash(expected)
    assert repr(plan.steps) == repr(expected)
    # the JSON path reads the columns: the same text as each step's own to_json()
    assert json.dumps(plan.to_json()["steps"]) == json.dumps([s.to_json() for s in expected])


def test_steps_index_slice_and_keep_identity() -> None:
    fresh = replace(long_scenario(40, False), initial=ls.InitialState())
    plan = ls.solve(fresh, "never")  # waits in every window
    steps = plan.steps
    n = len(steps)
    assert n == 40
    assert steps[-1] is steps[n - 1]
    assert steps[3] is steps[3]
    assert steps[1:4] == tuple(steps)[1:4]
    assert isinstance(steps[::7], tuple)
    assert list(reversed(steps)) == list(steps)[::-1]
    assert steps.index(steps[5]) == 5
    with pytest.raises(IndexError, match="index 40 out of range for 40 items"):
        steps[40]
    with pytest.raises(IndexError):
        steps[-41]


def test_plans_with_lazy_steps_pickle_copy_and_compare() -> None:
    plan = ls.solve(long_scenario(12, True), "dp")
    built = Plan(
        plan.policy, plan.value, plan.benefit, plan.publish_s, plan.cost, tuple(plan.steps)
    )
    assert built == plan
    assert plan == built
    assert built.to_json() == plan.to_json()
    for again in (pickle.loads(pickle.dumps(plan)), copy.deepcopy(plan), copy.copy(plan)):
        assert again == plan
        assert isinstance(again.steps, Steps)
        assert again.to_json() == plan.to_json()


finite = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False)


@given(st.tuples(finite, finite, finite, finite, finite))
def test_cost_total_adds_left_to_right_as_the_core(parts: tuple[float, ...]) -> None:
    # The core's CostSplit::total() is work + save + load + recovery + residency. The
    # built-in sum() of floats is compensated from Python 3.12 on and rounds otherwise.
    work, save, load, recovery, residency = parts
    split = ls.CostSplit(*parts)
    assert split.total == work + save + load + recovery + residency


def test_cost_total_is_not_a_compensated_sum() -> None:
    assert ls.CostSplit(work=0.1, save=0.2, load=0.3).total == 0.6000000000000001


# --- one association for time sums ------------------------------------------------------------


def test_publish_is_never_after_ready() -> None:
    # (0.1 + 0.2) + 0.3 = 0.6000000000000001 > 0.1 + (0.2 + 0.3) = 0.6: summed in two
    # associations, publish could come after ready.
    s = ls.Scenario(
        windows=((0.1, 10.0),),
        work_quanta=2,
        quantum_s=0.3,
        benefit_rate=1.0,
        horizon_s=100.0,
        costs=ls.HandoffCosts(recovery_s=0.0, load_s=0.2),
        initial=ls.InitialState(progress=1, durable=1),
    )
    step = ls.solve(s, "window").steps[0]
    assert step.action == "publish"
    assert step.publish_s is not None
    assert step.ready_s is not None
    assert step.publish_s <= step.ready_s
    assert step.publish_s == 0.1 + (0.2 + 0.3)
