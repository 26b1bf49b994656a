"""Facts with one home in the core: policy names, cost-split order, the tie rule."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core


def test_policies_are_the_cores_in_its_order() -> None:
    core = [_core.finite.policy_name(p) for p in _core.finite.Policy.__members__.values()]
    assert core == [p.value for p in ls.Policy]


def test_cost_fields_are_the_cores_columns(s0348: ls.Scenario) -> None:
    assert tuple(_core.finite.cost_fields()) == ls.COST_FIELDS
    plan = ls.solve(s0348, "rollout")
    result = ls.solve_batch([s0348], ["rollout"])
    assert result.cost[0, 0].tolist() == [getattr(plan.cost, f) for f in ls.COST_FIELDS]


values = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


@given(values, st.floats(min_value=-1e-8, max_value=1e-8))
def test_ties_are_the_documented_rule(a: float, delta: float) -> None:
    b = a + delta
    scale = max(abs(a), abs(b))
    expected = abs(a - b) <= _core.finite.TIE_TOLERANCE + _core.finite.RELATIVE_TIE_TOLERANCE * scale
    assert bool(_core.finite.ties(a, b)) == expected
    assert _core.finite.ties(np.array([a, b]), np.array([b, a])).tolist() == [expected, expected]


def test_recovery_is_one_enum() -> None:
    assert [r.value for r in ls.Recovery] == ["warm", "cold"]
    assert ls.HandoffCosts.paper(ls.Recovery.COLD) == ls.PAPER_COLD
    assert ls.HandoffCosts.paper("warm") == ls.PAPER_WARM
    assert f"{ls.Recovery.WARM}" == str(ls.Recovery.WARM) == "warm"
