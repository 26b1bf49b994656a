"""Argument checks shared by the capacity modules: each error names the argument and value."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def number(name: str, value: object) -> float:
    """``value`` as a finite float; ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {result!r}")
    return result


def integer(name: str, value: object, low: int) -> int:
    """An integer (not a bool) ``>= low``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {int(value)!r}")
    return int(value)


def at_least(name: str, value: object, low: float) -> float:
    """A finite number ``>= low``."""
    result = number(name, value)
    if result < low:
        raise ValueError(f"{name} must be >= {low:g}, got {result!r}")
    return result


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


def float_array(name: str, values: object) -> FloatArray:
    """A finite, one-dimensional, C-contiguous float64 copy of ``values``."""
    try:
        array = np.array(values, dtype=np.float64, order="C")
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a sequence of numbers: {err}") from err
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name}[{bad[0]}] must be finite, got {array[bad[0]]!r}")
    return array


def nonnegative_array(name: str, values: object) -> FloatArray:
    """:func:`float_array` with every entry ``>= 0``."""
    array = float_array(name, values)
    negative = first_index(array < 0)
    if negative is not None:
        raise ValueError(f"{name}[{negative}] must be >= 0, got {float(array[negative])!r}")
    return array


def first_index(mask: npt.NDArray[np.bool_]) -> int | None:
    """The first index where ``mask`` holds, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def same_length(name: str, array: FloatArray, reference_name: str, length: int) -> None:
    """Reject ``array`` unless it has ``length`` entries."""
    if array.shape[0] != length:
        raise ValueError(f"{name} has {array.shape[0]} entries but {reference_name} has {length}")
