"""Property tests over random small scenarios (hypothesis).

DP equals an exhaustive search; DP is never below any policy; Rollout is never below
Costed Window (Proposition 1); every step returns capacity by its window's end; and the
C++ core equals the independent pure-Python reference, plan by plan.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls

import reference
from strategies import scenarios, to_reference

TOL = 1e-9


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(a), abs(b))


@settings(max_examples=300, deadline=None)
@given(scenarios(max_windows=3, max_quanta=5))
def test_dp_equals_exhaustive_search(scenario: ls.Scenario) -> None:
    best = reference.exhaustive_value(to_reference(scenario))
    model = ls.Model(scenario)
    assert close(ls.solve(scenario, "dp").value, best)
    init = scenario.initial
    assert close(model.optimal_value(0, init.progress, init.durable, init.active), best)


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_policy_ordering(scenario: ls.Scenario) -> None:
    plans = ls.solve_all(scenario)
    dp = plans["dp"].value
    for name, plan in plans.items():
        assert plan.value <= dp + TOL * max(1.0, abs(dp)), name
    rollout, costed = plans["rollout"].value, plans["costed_window"].value
    assert rollout >= costed - TOL * max(1.0, abs(costed))  # Proposition 1 (Eq. 12)


# Derandomized: the same 400 examples in every run, so CI never sees a seed that passes
# here and fails there (publish_s <= ready_s is exact now, and stays strictly checked).
@settings(max_examples=400, deadline=None, derandomize=True)
@given(scenarios())
def test_every_step_meets_its_return_deadline(scenario: ls.Scenario) -> None:
    for plan in ls.solve_all(scenario).values():
        windows = [step.window for step in plan.steps]
        assert windows == list(range(len(windows)))
        for step in plan.steps:
            start, end = scenario.windows[step.window]
            assert step.start_s == start
            if step.ready_s is not None:  # Eq. 10: capacity ready again by d_k
                assert start <= step.ready_s <= end + TOL * max(1.0, end)
            if step.publish_s is not None:
                assert step.ready_s is not None
                assert step.publish_s <= step.ready_s
                assert step is plan.steps[-1]
        assert close(plan.value, plan.benefit - plan.cost.total)


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.sampled_from(ls.ALL_POLICIES))
def test_core_equals_python_reference(scenario: ls.Scenario, policy: ls.Policy) -> None:
    ours = ls.solve(scenario, policy)
    theirs = reference.solve(to_reference(scenario), policy.value)
    assert close(ours.value, theirs.value)
    assert len(ours.steps) == len(theirs.steps)
    for a, b in zip(ours.steps, theirs.steps, strict=True):
        assert (a.window, a.action, a.quanta, a.checkpoint) == (
            b.window,
            b.action,
            b.quanta,
            b.checkpoint,
        )
        for ours_s, theirs_s in ((a.publish_s, b.publish_s), (a.ready_s, b.ready_s)):
            assert (ours_s is None and theirs_s is None) or math.isclose(
                ours_s or 0.0, theirs_s or 0.0, abs_tol=1e-9
            )
        assert close(a.cost.total, b.cost)


@settings(max_examples=80, deadline=None)
@given(st.booleans().flatmap(lambda two: scenarios(max_windows=4, max_quanta=40, two_path=two)))
def test_every_state_matches_the_reference(scenario: ls.Scenario) -> None:
    """V*, V^pi0 and every policy's action at every service state (k, pbar), with one
    recovery path or two: this exercises the monotone-deque DP (per path) over long
    sliding ranges, not only the initial state."""
    model = ls.Model(scenario)
    ref = to_reference(scenario)
    for k in range(len(scenario.windows)):
        for pbar in range(scenario.work_quanta + 1):
            state = (k, pbar, pbar, False)
            assert close(model.optimal_value(*state), reference.state_value(ref, "dp", state))
            assert close(
                model.reference_value(*state), reference.state_value(ref, "costed_window", state)
            )
            for policy in ls.ALL_POLICIES:
                action = model.decide(*state, policy=policy)
                assert (action.name, action.quanta, action.checkpoint, action.cold) == (
                    reference.policy_action(ref, policy.value, state)
                ), (state, policy)
