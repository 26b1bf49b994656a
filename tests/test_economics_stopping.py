"""The stopping rule with sunk costs cancelling (Appendix C.3, Eq. C.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnsched.economics import continuation_advantage, should_continue


def test_batch_rule() -> None:
    dq = [0.5, 0.1, 0.0, -0.2, 0.25]
    dc = [100.0, 100.0, -5.0, 0.0, 250.0]
    np.testing.assert_array_equal(
        should_continue(1000.0, dq, dc),
        [True, False, True, False, False],  # last one ties
    )
    np.testing.assert_allclose(continuation_advantage(1000.0, dq, dc), [400, 0, 5, -200, 0])


def test_scalar_form_returns_python_scalars() -> None:
    decision = should_continue(1, 0.5, 0.1)
    assert decision is True  # a bool, not a 0-d array
    assert should_continue(1000.0, 0.25, 250.0) is False  # a tie stops
    advantage = continuation_advantage(1, 0.5, 0.1)
    assert type(advantage) is float
    assert advantage == pytest.approx(0.4)
    assert should_continue(1.0, np.float64(0.5), np.float64(0.6)) is False


def test_array_form_returns_arrays_and_broadcasts_a_number() -> None:
    one = should_continue(1.0, [0.5], [0.1])
    assert isinstance(one, np.ndarray)
    assert one.shape == (1,)
    np.testing.assert_array_equal(should_continue(10.0, [0.5, 0.1, 0.0], 2.0), [True, False, False])
    np.testing.assert_array_equal(should_continue(10.0, 0.2, [1.0, 2.0, 3.0]), [True, False, False])
    np.testing.assert_allclose(continuation_advantage(10.0, 0.2, [1.0, 3.0]), [1.0, -1.0])


@given(w=st.floats(0, 1e4), dq=st.floats(-1, 1), dc=st.floats(-1e4, 1e4))
def test_scalar_and_batch_forms_agree(w: float, dq: float, dc: float) -> None:
    assert should_continue(w, dq, dc) == bool(should_continue(w, [dq], [dc])[0])
    assert continuation_advantage(w, dq, dc) == continuation_advantage(w, [dq], [dc])[0]


@given(
    w=st.floats(0, 1e4),
    y=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    c=st.tuples(st.floats(0, 1e4), st.floats(0, 1e4)),
    paid=st.floats(0, 1e6),
)
def test_sunk_cost_cancels(
    w: float, y: tuple[float, float], c: tuple[float, float], paid: float
) -> None:
    # U_c - U_s with the paid cost in both equals the rule's advantage (Eq. C.6).
    u_continue = w * y[0] - c[0] - paid
    u_stop = w * y[1] - c[1] - paid
    advantage = continuation_advantage(w, [y[0] - y[1]], [c[0] - c[1]])[0]
    assert advantage == pytest.approx(u_continue - u_stop, abs=1e-6 * (1 + paid))


@pytest.mark.parametrize(
    ("w", "dq", "dc", "match"),
    [
        (-1.0, [0.1], [1.0], "answer_value"),
        (1.0, [1.5], [1.0], "expected_dq"),
        (1.0, [math.nan], [1.0], "expected_dq"),
        (1.0, [0.1], [math.nan], "expected_dc"),
        (1.0, [], [], "expected_dq"),
        (1.0, [0.1, 0.2], [1.0], "same length"),
        (math.nan, [0.1], [1.0], "answer_value"),
        (1.0, 1.5, 1.0, "expected_dq"),
        (1.0, 0.1, math.inf, "expected_dc"),
        (1.0, [[0.1]], [1.0], "expected_dq must be a number or a 1-D array"),
        (1.0, 0.1, [], "expected_dc"),
    ],
)
def test_rejects(w: float, dq: object, dc: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        should_continue(w, dq, dc)  # type: ignore[call-overload]
