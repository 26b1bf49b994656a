"""Scalar argument checks shared by every module: each error names the argument and value.

A value of the wrong type raises ``TypeError``; a number out of range ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

__all__ = [
    "SEED_MAX",
    "FloatArray",
    "at_least",
    "bool_vector",
    "bounded",
    "float64_vector",
    "fraction",
    "indexed",
    "int32_vector",
    "integer",
    "nonnegative",
    "number",
    "positive",
    "real",
]

FloatArray = npt.NDArray[np.float64]
T = TypeVar("T")


def _is_integer(value: object) -> bool:
    """An int or numpy integer, not a bool (a flag) nor a numpy timedelta64 (a duration
    with a unit, which numpy files under the integers)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.timedelta64))


def real(name: str, value: object) -> float:
    """``value`` as a float, inf and NaN included (numpy scalars accepted, bools rejected)."""
    if type(value) is float:  # the common case, ahead of the costlier isinstance tests
        return value
    if not (_is_integer(value) or isinstance(value, (float, np.floating))):
        raise TypeError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an integer beyond any double
        shown = _short(value) if isinstance(value, int) else repr(value)
        raise ValueError(f"{name} must be finite, got {shown}") from None


def number(name: str, value: object) -> float:
    """``value`` as a finite float (numpy scalars accepted, bools rejected)."""
    result = real(name, value)
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


SEED_MAX = 2**64 - 1
"""The largest seed of the C++ decision streams (a uint64): beyond it pybind11 refuses
the call with its signature, which names nothing."""


def integer(name: str, value: object, low: int | None = 0, high: int | None = None) -> int:
    """An integer (numpy integers accepted; bools and timedelta64 rejected) in
    ``[low, high]`` (None: open), as a Python int."""
    if not _is_integer(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    result = int(cast("int | np.integer[Any]", value))
    if low is not None and result < low:
        raise ValueError(f"{name} must be >= {low}, got {_short(result)}")
    if high is not None and result > high:
        raise ValueError(f"{name} must be <= {high}, got {_short(result)}")
    return result


def bounded(name: str, size: int, limit: int) -> int:
    """``size`` when it is at most ``limit``: checked before allocating anything whose size
    multiplies (samples x states, points x scenarios, windows x quanta, rows).

    Raises
    ------
    ValueError
        ``"NAME = SIZE exceeds the limit of LIMIT"``, e.g. ``"sweep rows: points x base
        scenarios = 4000 x 1920 = 7680000 exceeds the limit of 4194304"``.
    """
    if size > limit:
        raise ValueError(f"{name} = {_short(size)} exceeds the limit of {limit}")
    return size


def indexed(name: str, items: Iterable[object], parse: Callable[[Any], T]) -> list[T]:
    """``parse`` of every item; a ``ValueError`` is re-raised as ``name[i]: message``."""
    parsed = []
    for i, item in enumerate(items):
        try:
            parsed.append(parse(item))
        except ValueError as err:
            raise ValueError(f"{name}[{i}]: {err}") from None
    return parsed


def _short(value: int) -> str:
    """An integer for a message: huge ones by their digit count (``str`` of an int above
    4300 digits raises in Python 3.11+)."""
    if abs(value) < 10**40:
        return repr(value)
    return f"an integer of {value.bit_length()} bits"


_EXACT_INTEGER = 2**53  # every integer up to this magnitude is a double


def _exact(name: str, value: object) -> float:
    """``real(name, value)``, refusing an integer that a double cannot hold exactly."""
    result = real(name, value)  # beyond any double: "must be finite"
    if _is_integer(value) and abs(int(cast("int", value))) > _EXACT_INTEGER:
        raise ValueError(f"{name} = {int(cast('int', value))} is not exact as a float64 (> 2**53)")
    return result


def _lossless(name: str, array: npt.NDArray[np.generic]) -> FloatArray:
    """``array`` (1-D) as float64 when no value changes; ``TypeError`` or ``ValueError``
    naming ``name`` (and the first bad index) otherwise."""
    kind = array.dtype.kind
    if kind == "f":
        result = np.ascontiguousarray(array, dtype=np.float64)
        changed = np.flatnonzero((result != array) & ~np.isnan(array))
        if changed.size:  # a long double beyond float64
            i = int(changed[0])
            raise ValueError(f"{name}[{i}] = {array[i]!r} does not fit a float64")
        return result
    if kind in "iu":
        # Compared as integers: 2**53 + 1 rounds to 2**53 as a double, so a comparison
        # after the conversion would pass it (and np.abs overflows at int64's minimum).
        ints = cast("npt.NDArray[np.integer[Any]]", array)
        too_big = np.flatnonzero((ints > _EXACT_INTEGER) | (ints < -_EXACT_INTEGER))
        if too_big.size:
            i = int(too_big[0])
            raise ValueError(f"{name}[{i}] = {int(array[i])} is not exact as a float64 (> 2**53)")
        return np.ascontiguousarray(array, dtype=np.float64)
    if kind == "O":  # Python objects: each must be a real number, an integer an exact one
        return np.array([_exact(f"{name}[{i}]", v) for i, v in enumerate(array)], dtype=np.float64)
    raise TypeError(f"{name} must hold real numbers, got an array of dtype {array.dtype}")


def _vector(name: str, values: object, what: str) -> npt.NDArray[Any]:
    """``values`` as a one-dimensional array (not converted yet)."""
    if isinstance(values, (str, bytes, bytearray, memoryview)) or values is None:
        raise TypeError(f"{name} must be a sequence of {what}, got {type(values).__name__}")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be a sequence of {what}: {err}") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    return array


def float64_vector(name: str, values: object) -> FloatArray:
    """``values`` as a one-dimensional, C-contiguous float64 array (NaN and inf kept).

    A float64 C-contiguous array is returned as it is; anything else is converted when
    that changes no value (other float widths, integers up to 2**53, sequences of
    numbers, non-contiguous arrays) and refused otherwise, naming ``name``: ``TypeError``
    for bools, durations, complex numbers, strings or non-numbers, ``ValueError`` for a
    wrong shape or a value float64 cannot hold.
    """
    if isinstance(values, (list, tuple)):
        flags = [i for i, v in enumerate(values) if isinstance(v, (bool, np.bool_))]
        if flags:
            raise TypeError(f"{name}[{flags[0]}] must be a number, got {values[flags[0]]!r}")
    array = _vector(name, values, "numbers")
    if array.dtype == np.float64 and array.flags.c_contiguous:
        return array
    return _lossless(name, array)


_INT32 = np.iinfo(np.int32)


def int32_vector(name: str, values: object) -> npt.NDArray[np.int32]:
    """``values`` as a one-dimensional, C-contiguous int32 array (returned as it is when it
    already is one): any integer dtype whose values fit; ``TypeError`` for bools, floats or
    non-integers, ``ValueError`` for a wrong shape or (naming the index) a value beyond int32."""
    array = _vector(name, values, "integers")
    if array.size == 0:  # np.asarray([]) is float64: an empty column of any type is empty
        return np.zeros(0, dtype=np.int32)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got an array of dtype {array.dtype}")
    if array.dtype.itemsize >= 4 and array.dtype != np.int32:
        outside = np.flatnonzero((array < _INT32.min) | (array > _INT32.max))
        if outside.size:
            i = int(outside[0])
            raise ValueError(f"{name}[{i}] = {int(array[i])} does not fit a C int (int32)")
    return np.ascontiguousarray(array, dtype=np.int32)


def bool_vector(name: str, values: object) -> npt.NDArray[np.bool_]:
    """``values`` as a one-dimensional, C-contiguous bool array; ``TypeError`` unless it holds
    bools (numbers are not flags), ``ValueError`` for a wrong shape."""
    array = _vector(name, values, "bools")
    if array.size == 0:
        return np.zeros(0, dtype=np.bool_)
    if array.dtype.kind != "b":
        raise TypeError(f"{name} must hold bools (True/False), got an array of dtype {array.dtype}")
    return np.ascontiguousarray(array)
