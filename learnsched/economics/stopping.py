"""Stopping an in-flight computation (Appendix C.3, Eq. C.6).

Compare stopping now with a specified feasible continuation at history ``h``. The cost
already paid, ``C_paid(h)``, is common to both options and cancels, so only the expected
change in eventual correctness and in remaining charged cost matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray, nonnegative
from ._checks import same_length, values

__all__ = ["continuation_advantage", "should_continue"]


# One entry per history (a 1-D array or a list). The overloads keep a number apart from a
# batch, so a number's result is typed float and a batch's an array, with no overlap.
Batch = Sequence[float] | npt.NDArray[Any]


@overload
def continuation_advantage(
    answer_value: float, expected_dq: float, expected_dc: float
) -> float: ...
@overload
def continuation_advantage(
    answer_value: float, expected_dq: Batch, expected_dc: float | Batch
) -> FloatArray: ...
@overload
def continuation_advantage(
    answer_value: float, expected_dq: float, expected_dc: Batch
) -> FloatArray: ...
def continuation_advantage(
    answer_value: float, expected_dq: npt.ArrayLike, expected_dc: npt.ArrayLike
) -> float | FloatArray:
    """``U_c(h) - U_s(h) = W*E[dQ_h | h] - E[dC_h | h]`` for one history or a batch (Eq. C.6).

    Parameters
    ----------
    answer_value
        Value ``W >= 0`` of a correct answer, resource units per answer.
    expected_dq
        ``E[Y_c - Y_s | h]``, in [-1, 1] since correctness is 0 or 1: a number, or a
        non-empty 1-D array with one entry per history.
    expected_dc
        ``E[C_c - C_s | h]``: remaining cost of continuing minus that of stopping
        (including any required capacity return), resource units; a number or a 1-D
        array. Two arrays must have the same length; a number applies to every history.

    Returns
    -------
    float or numpy.ndarray
        The advantage of continuing, resource units: a float when both ``expected_dq``
        and ``expected_dc`` are numbers, else one entry per history.
    """
    advantage = _advantage(answer_value, expected_dq, expected_dc)
    return float(advantage) if advantage.ndim == 0 else advantage


@overload
def should_continue(answer_value: float, expected_dq: float, expected_dc: float) -> bool: ...
@overload
def should_continue(
    answer_value: float, expected_dq: Batch, expected_dc: float | Batch
) -> npt.NDArray[np.bool_]: ...
@overload
def should_continue(
    answer_value: float, expected_dq: float, expected_dc: Batch
) -> npt.NDArray[np.bool_]: ...
def should_continue(
    answer_value: float, expected_dq: npt.ArrayLike, expected_dc: npt.ArrayLike
) -> bool | npt.NDArray[np.bool_]:
    """Continue iff ``W*E[dQ] > E[dC]``; a tie stops (Eq. C.6).

    A bool for one history (numbers), a boolean array for a batch; see
    :func:`continuation_advantage` for the arguments.
    """
    continues = _advantage(answer_value, expected_dq, expected_dc) > 0
    return bool(continues) if continues.ndim == 0 else continues


def _advantage(
    answer_value: float, expected_dq: npt.ArrayLike, expected_dc: npt.ArrayLike
) -> FloatArray:
    """Eq. C.6 as a 0-d (one history) or 1-D (a batch) array, arguments checked."""
    value = nonnegative("answer_value", answer_value)
    dq = _per_history("expected_dq", expected_dq, low=-1.0, high=1.0)
    dc = _per_history("expected_dc", expected_dc)
    if dq.ndim and dc.ndim:
        same_length(expected_dq=dq, expected_dc=dc)
    return value * dq - dc  # Eq. C.6: the sunk C_paid(h) cancels


def _per_history(name: str, data: npt.ArrayLike, **bounds: float) -> FloatArray:
    """A finite number (0-d) or non-empty 1-D array with entries in the given bounds."""
    out = values(name, data, **bounds)
    if out.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-D array, got shape {out.shape}")
    return out
