"""The two-action early-return model (Appendix C.1, Eqs. C.1-C.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from learnsched.economics import (
    early_advantage,
    return_threshold,
    returns_early,
    robust_returns_early,
    threshold_sensitivity,
    wait_return_losses,
)

costs = st.floats(1e-3, 1e4)
probabilities = st.floats(0, 1)


@given(b=costs, c_f=costs)
def test_threshold_lies_strictly_inside_the_unit_interval(b: float, c_f: float) -> None:
    p_star = float(return_threshold(b, c_f))
    assert 0 < p_star < 1


@given(b=costs, db=costs, c_f=costs, dc=costs)
def test_threshold_falls_with_benefit_and_rises_with_false_alarm_cost(
    b: float, db: float, c_f: float, dc: float
) -> None:
    assert return_threshold(b + db, c_f) <= return_threshold(b, c_f)
    assert return_threshold(b, c_f + dc) >= return_threshold(b, c_f)
    d_b, d_c = threshold_sensitivity(b, c_f)
    assert d_b < 0 < d_c  # Eq. C.3


@given(b=st.floats(0.1, 100), c_f=st.floats(0.1, 100))
def test_sensitivity_matches_finite_differences(b: float, c_f: float) -> None:
    h = 1e-6
    d_b, d_c = threshold_sensitivity(b, c_f)
    fd_b = (return_threshold(b + h, c_f) - return_threshold(b - h, c_f)) / (2 * h)
    fd_c = (return_threshold(b, c_f + h) - return_threshold(b, c_f - h)) / (2 * h)
    assert d_b == pytest.approx(fd_b, rel=1e-4, abs=1e-9)
    assert d_c == pytest.approx(fd_c, rel=1e-4, abs=1e-9)


@given(p=probabilities, c_w=st.floats(0, 1e3), c_a=st.floats(0, 1e3), c_f=costs)
def test_rule_is_strict_loss_comparison(p: float, c_w: float, c_a: float, c_f: float) -> None:
    q_w, q_a = wait_return_losses(p, c_w, c_a, c_f)
    assert q_w == pytest.approx(p * c_w)
    margin = abs(float(q_w - q_a))
    assume(margin > 1e-9 * (1 + c_w + c_a + c_f))  # outside the rounding band of a tie
    assert bool(returns_early(p, c_w - c_a, c_f)) == bool(q_a < q_w)


def test_ties_and_nonpositive_benefit_keep_waiting() -> None:
    # p*B = (1-p)*C_f exactly: p = 0.25, B = 3, C_f = 1
    assert not returns_early(0.25, 3.0, 1.0)
    assert not returns_early(0.5, 1.0, 1.0)  # 0.5 = 0.5: a tie waits
    assert returns_early(0.51, 1.0, 1.0)
    p = np.linspace(0, 1, 101)
    assert not returns_early(p, 0.0, 1.0).any()
    assert not returns_early(p, -5.0, 1.0).any()
    assert return_threshold(-5.0, 1.0) == 1.0  # no p in [0, 1] exceeds it
    assert return_threshold(0.0, 1.0) == 1.0


def test_threshold_example() -> None:
    assert return_threshold(3.0, 1.0) == pytest.approx(0.25)
    np.testing.assert_allclose(return_threshold([1.0, 3.0, -1.0], 1.0), [0.5, 0.25, 1.0])


@given(p=probabilities, err=st.floats(-0.5, 0.5), eps=st.floats(0, 0.5), b=costs, c_f=costs)
def test_robust_rule_never_returns_when_the_true_advantage_is_negative(
    p: float, err: float, eps: float, b: float, c_f: float
) -> None:
    p_hat = min(max(p + err, 0.0), 1.0)
    assume(abs(p - p_hat) <= eps)
    if robust_returns_early(p_hat, b, c_f, eps):
        assert early_advantage(p, b, c_f) > 0  # Eq. C.4: lower true loss
    if early_advantage(p, b, c_f) < 0:
        assert not robust_returns_early(p_hat, b, c_f, eps)


def test_robust_rule_reduces_to_the_plain_rule_at_zero_error() -> None:
    p = np.linspace(0, 1, 11)
    np.testing.assert_array_equal(
        robust_returns_early(p, 3.0, 1.0, 0.0), returns_early(p, 3.0, 1.0)
    )
    assert not robust_returns_early(1.0, -1.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: return_threshold(1.0, 0.0), "false_alarm_cost"),
        (lambda: return_threshold(math.nan, 1.0), "benefit"),
        (lambda: returns_early(1.2, 1.0, 1.0), "confidence"),
        (lambda: returns_early(-0.1, 1.0, 1.0), "confidence"),
        (lambda: returns_early([], 1.0, 1.0), "confidence"),
        (lambda: returns_early([0.1, 0.2], [1.0, 2.0, 3.0], 1.0), "confidence=.*benefit="),
        (lambda: return_threshold([1.0, 2.0], [1.0, 2.0, 3.0]), "benefit=.*false_alarm_cost="),
        (lambda: threshold_sensitivity(0.0, 1.0), "benefit"),
        (lambda: robust_returns_early(0.5, 1.0, 1.0, -0.1), "probability_error"),
        (lambda: wait_return_losses(0.5, math.inf, 1.0, 1.0), "wait_cost"),
    ],
)
def test_rejects(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


FALSE_ALARM_USERS = {
    "wait_return_losses": lambda c_f: wait_return_losses(0.5, 10.0, 5.0, c_f),
    "early_advantage": lambda c_f: early_advantage(0.5, 3.0, c_f),
    "returns_early": lambda c_f: returns_early(0.5, 3.0, c_f),
    "return_threshold": lambda c_f: return_threshold(3.0, c_f),
    "threshold_sensitivity": lambda c_f: threshold_sensitivity(3.0, c_f),
    "robust_returns_early": lambda c_f: robust_returns_early(0.5, 3.0, c_f, 0.1),
}


@pytest.mark.parametrize("function", sorted(FALSE_ALARM_USERS))
@pytest.mark.parametrize(
    ("c_f", "match"),
    [
        (-3.0, "false_alarm_cost must be > 0, got -3.0"),
        (0.0, "false_alarm_cost must be > 0, got 0.0"),
        ([1.0, 0.0], "false_alarm_cost must be > 0, got 0.0"),
        (math.nan, "false_alarm_cost must be finite"),
        (math.inf, "false_alarm_cost must be finite"),
    ],
)
def test_every_function_requires_a_positive_false_alarm_cost(
    function: str, c_f: object, match: str
) -> None:
    # App. C.1 assumes C_f > 0 throughout; one check (_false_alarm) enforces it everywhere.
    with pytest.raises(ValueError, match=match):
        FALSE_ALARM_USERS[function](c_f)
    FALSE_ALARM_USERS[function](1e-9)  # any positive cost is accepted


def test_wait_return_losses_example() -> None:
    q_w, q_a = wait_return_losses(0.5, 10.0, 5.0, 3.0)
    assert (float(q_w), float(q_a)) == (5.0, 4.0)
