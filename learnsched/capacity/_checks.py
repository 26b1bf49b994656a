"""Array checks shared by the capacity modules (scalars: :mod:`learnsched._checks`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray, float64_vector


def vector(name: str, values: object) -> FloatArray:
    """A one-dimensional, C-contiguous float64 copy of ``values`` (NaN and inf allowed),
    converted only when no value changes (see :func:`learnsched._checks.float64_vector`)."""
    array = float64_vector(name, values)
    return array.copy() if array is values else array


def float_array(name: str, values: object) -> FloatArray:
    """A finite, one-dimensional, C-contiguous float64 copy of ``values``."""
    array = vector(name, values)
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


def deadlines_after_arrivals(arrival: FloatArray, deadline: FloatArray) -> None:
    """Reject the first request whose deadline is before its arrival, naming both."""
    early = first_index(deadline < arrival)
    if early is not None:
        raise ValueError(
            f"deadline[{early}] = {float(deadline[early])!r} is before "
            f"arrival[{early}] = {float(arrival[early])!r}"
        )
