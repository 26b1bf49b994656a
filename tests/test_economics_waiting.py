"""Waiting value, Eq. 13, and the paper's worked example re-solved (Section 6.1)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import learnsched as ls
from learnsched.economics import WaitingComparison, paper_waiting_example, waiting_gain


def test_worked_example_from_the_solver() -> None:
    w = paper_waiting_example()
    assert round(w.publish_now_s, 3) == 325.048
    assert round(w.cost_now, 3) == 170.092
    assert w.publish_wait_s == 330.0
    assert round(w.cost_wait, 3) == 99.988
    assert round(w.cost_saving, 3) == 70.104
    assert round(w.benefit_lost, 3) == 1.238
    assert round(w.gain, 3) == 68.866


def test_printed_inputs_give_the_printed_gain() -> None:
    assert round(waiting_gain(170.092, 99.988, 325.048, 330.0, 0.25), 3) == 68.866


@given(
    c1=st.floats(0, 1e4),
    c2=st.floats(0, 1e4),
    t1=st.floats(0, 1e4),
    delay=st.floats(0, 1e4),
    g=st.floats(1e-3, 10),
)
def test_gain_is_cost_saving_minus_benefit_lost(
    c1: float, c2: float, t1: float, delay: float, g: float
) -> None:
    gain = waiting_gain(c1, c2, t1, t1 + delay, g)
    assert gain == pytest.approx((c1 - c2) - g * ((t1 + delay) - t1), abs=1e-9)
    assert waiting_gain(c1, c2, t1, t1, g) == pytest.approx(c1 - c2)  # no delay, no loss


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1.0, 1.0, 10.0, 5.0, 0.25), "publish_wait_s"),
        ((-1.0, 1.0, 0.0, 5.0, 0.25), "cost_now"),
        ((1.0, -1.0, 0.0, 5.0, 0.25), "cost_wait"),
        ((1.0, 1.0, 0.0, 5.0, 0.0), "benefit_rate"),
        ((1.0, 1.0, math.nan, 5.0, 0.25), "publish_now_s"),
    ],
)
def test_rejects_bad_inputs(args: tuple[float, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        waiting_gain(*args)


def test_from_plans_needs_publication(s0348: ls.Scenario) -> None:
    published = ls.solve(s0348, "rollout")
    never = ls.solve(s0348, "never")
    with pytest.raises(ValueError, match="now plan"):
        WaitingComparison.from_plans(never, published, 0.25)
    with pytest.raises(ValueError, match="wait plan"):
        WaitingComparison.from_plans(published, never, 0.25)
