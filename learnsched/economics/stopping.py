"""Stopping an in-flight computation (Appendix C.3, Eq. C.6).

Compare stopping now with a specified feasible continuation at history ``h``. The cost
already paid, ``C_paid(h)``, is common to both options and cancels, so only the expected
change in eventual correctness and in remaining charged cost matters.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._checks import nonnegative
from ._checks import array, same_length

__all__ = ["continuation_advantage", "should_continue"]


def continuation_advantage(
    answer_value: float, expected_dq: npt.ArrayLike, expected_dc: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """``U_c(h) - U_s(h) = W*E[dQ_h | h] - E[dC_h | h]`` per history (Eq. C.6).

    Parameters
    ----------
    answer_value
        Value ``W >= 0`` of a correct answer, resource units per answer.
    expected_dq
        ``E[Y_c - Y_s | h]`` per history, in [-1, 1] since correctness is 0 or 1.
    expected_dc
        ``E[C_c - C_s | h]`` per history: remaining cost of continuing minus that of
        stopping (including any required capacity return), resource units.

    Returns
    -------
    numpy.ndarray
        The advantage of continuing per history, resource units.
    """
    value = nonnegative("answer_value", answer_value)
    dq = array("expected_dq", expected_dq, low=-1.0, high=1.0)
    dc = array("expected_dc", expected_dc)
    same_length(expected_dq=dq, expected_dc=dc)
    return value * dq - dc  # Eq. C.6: the sunk C_paid(h) cancels


def should_continue(
    answer_value: float, expected_dq: npt.ArrayLike, expected_dc: npt.ArrayLike
) -> npt.NDArray[np.bool_]:
    """Continue iff ``W*E[dQ] > E[dC]``; a tie stops (Eq. C.6). See :func:`continuation_advantage`."""
    return continuation_advantage(answer_value, expected_dq, expected_dc) > 0
