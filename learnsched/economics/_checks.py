"""Array checks shared by the economics modules (scalars: :mod:`learnsched._checks`)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray


def array(
    name: str,
    values: npt.ArrayLike,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    allow_inf: bool = False,
) -> FloatArray:
    """A non-empty 1-D float array with every entry in ``[low, high]``.

    ``allow_inf`` admits ``+inf`` entries (unfinished completion slots); NaN never passes.
    """
    try:
        data = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of numbers, got {values!r}") from err
    if data.ndim != 1 or data.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {data.shape}")
    if np.isnan(data).any():
        raise ValueError(f"{name} must not contain NaN, got {data.tolist()!r}")
    if not allow_inf and not np.isfinite(data).all():
        raise ValueError(f"{name} must be finite, got {data.tolist()!r}")
    bad = (data < low) | (data > high)
    if bad.any():
        first = float(data[np.argmax(bad)])
        raise ValueError(f"{name} must lie in [{low}, {high}], got {first!r}")
    return data


def same_length(**arrays: FloatArray) -> int:
    """The common length of ``arrays``; ``ValueError`` naming them when they differ."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name}={n}" for name, n in lengths.items())
        raise ValueError(f"arrays must have the same length, got {listed}")
    return next(iter(lengths.values()))


def values(
    name: str, data: npt.ArrayLike, *, low: float = -math.inf, high: float = math.inf
) -> FloatArray:
    """A finite float array of any shape (a scalar gives a 0-d array), entries in ``[low, high]``."""
    try:
        out = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number or an array of numbers, got {data!r}") from err
    if out.size == 0:
        raise ValueError(f"{name} must not be empty, got {data!r}")
    if not np.isfinite(out).all():
        raise ValueError(f"{name} must be finite (no NaN or inf), got {data!r}")
    bad = (out < low) | (out > high)
    if bad.any():
        raise ValueError(f"{name} must lie in [{low}, {high}], got {float(out[bad].flat[0])!r}")
    return out


def broadcastable(**arrays: FloatArray) -> None:
    """``ValueError`` naming ``arrays`` and their shapes when numpy cannot broadcast them."""
    try:
        np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        listed = ", ".join(f"{name}={a.shape}" for name, a in arrays.items())
        raise ValueError(f"arrays must broadcast together, got shapes {listed}") from None
