"""Scalar argument checks shared by every module: each error names the argument and value.

A value of the wrong type raises ``TypeError``; a number out of range ``ValueError``.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["FloatArray", "at_least", "fraction", "integer", "nonnegative", "number", "positive"]

FloatArray = npt.NDArray[np.float64]


def number(name: str, value: object) -> float:
    """``value`` as a finite float (numpy scalars accepted, bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        result = float(value)
    except OverflowError:  # an integer beyond any double
        raise ValueError(f"{name} must be finite, got {value!r:.40}...") from None
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {result!r}")
    return result


def at_least(name: str, value: object, low: float) -> float:
    """A finite number ``>= low``."""
    result = number(name, value)
    if result < low:
        raise ValueError(f"{name} must be >= {low:g}, got {result!r}")
    return result


def nonnegative(name: str, value: object) -> float:
    """A finite number ``>= 0``."""
    return at_least(name, value, 0.0)


def positive(name: str, value: object) -> float:
    """A finite number ``> 0``."""
    result = number(name, value)
    if result <= 0:
        raise ValueError(f"{name} must be > 0, got {result!r}")
    return result


def fraction(name: str, value: object) -> float:
    """A finite number in ``[0, 1]``."""
    result = number(name, value)
    if not 0.0 <= result <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {result!r}")
    return result


def integer(name: str, value: object, low: int | None = 0, high: int | None = None) -> int:
    """An integer (numpy integers accepted, bools rejected) in ``[low, high]`` (None: open)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {int(value)!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {int(value)!r}")
    return int(value)
