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
    ],
)
def test_rejects(w: float, dq: list[float], dc: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        should_continue(w, dq, dc)
