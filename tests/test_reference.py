"""The C++ core against the independent pure-Python reference on the paper's grid."""

from __future__ import annotations

import math

import pytest

import learnsched as ls

import reference


def assert_same_plan(ours: ls.Plan, theirs: reference.RefPlan, label: str) -> None:
    assert math.isclose(ours.value, theirs.value, rel_tol=1e-12, abs_tol=1e-9), label
    assert [(s.action, s.quanta, s.checkpoint) for s in ours.steps] == [
        (s.action, s.quanta, s.checkpoint) for s in theirs.steps
    ], label
    for a, b in zip(ours.steps, theirs.steps, strict=True):
        assert math.isclose(a.cost.total, b.cost, abs_tol=1e-9), label
        assert (a.publish_s is None) == (b.publish_s is None), label


def test_grids_have_the_same_scenarios() -> None:
    ours = ls.paper_grid()
    theirs = reference.paper_grid()
    assert len(ours) == len(theirs) == 1920
    for g, (_, ref) in zip(ours.scenarios, theirs, strict=True):
        assert reference.RefScenario.from_json(g.scenario.to_json()) == ref, g.sid


@pytest.mark.parametrize("policy", ls.ALL_POLICIES)
def test_core_equals_reference_on_the_5s_grid(policy: ls.Policy) -> None:
    for g, (_, ref) in zip(ls.paper_grid().scenarios, reference.paper_grid(), strict=True):
        assert_same_plan(ls.solve(g.scenario, policy), reference.solve(ref, policy.value), g.sid)


def test_core_equals_reference_on_a_1s_sample() -> None:
    fine = ls.paper_grid(quantum_s=1.0, fresh_only=True).scenarios[::16]
    for g in fine:
        ref = reference.RefScenario.from_json(g.scenario.to_json())
        for policy in ls.ALL_POLICIES:
            label = f"{g.sid}@1s/{policy.value}"
            assert_same_plan(
                ls.solve(g.scenario, policy), reference.solve(ref, policy.value), label
            )
