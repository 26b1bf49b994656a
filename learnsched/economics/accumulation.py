"""Benefit accumulation over slots after publication (Appendix C.4, Eq. C.7)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray
from ._checks import array

__all__ = ["accumulated_value"]


def accumulated_value(
    completion_slots: npt.ArrayLike, benefits: npt.ArrayLike, costs: npt.ArrayLike
) -> FloatArray:
    """Cumulative net value ``G(K)`` for every slot ``K`` (Eq. C.7).

    A candidate earns its benefit only in slots strictly after its completion slot, and
    every charged cost counts, including the cost of candidates that never finish.

    Parameters
    ----------
    completion_slots
        Completion slot ``k_j`` per candidate: a non-negative integer, or ``inf`` when
        the candidate is unfinished (it is then never credited).
    benefits
        ``b[j, k]``: candidate ``j``'s simulated benefit in slot ``k``, shape
        ``(candidates, slots)``, value units.
    costs
        ``c[k]``: the cost charged in slot ``k`` (>= 0), one per slot, value units.

    Returns
    -------
    numpy.ndarray
        ``G(0), ..., G(slots - 1)``, with ``G(-1) = 0`` implied.
    """
    done = array("completion_slots", completion_slots, low=0.0, allow_inf=True)
    finite = done[np.isfinite(done)]
    if (finite != np.floor(finite)).any():
        raise ValueError(f"completion_slots must be integers or inf, got {done.tolist()!r}")
    charged = array("costs", costs, low=0.0)
    try:
        gains = np.asarray(benefits, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"benefits must be a 2-D array of numbers, got {benefits!r}") from err
    if gains.shape != (done.size, charged.size):
        raise ValueError(
            f"benefits must have shape (len(completion_slots), len(costs)) = "
            f"{(done.size, charged.size)}, got {gains.shape}"
        )
    if not np.isfinite(gains).all():
        raise ValueError("benefits must be finite (no NaN or inf)")
    slots = np.arange(charged.size)
    credited = slots[np.newaxis, :] > done[:, np.newaxis]  # 1{k > k_j}; never for k_j = inf
    # Eq. C.7: G(K) = sum_{k<=K} [sum_j 1{k > k_j} b_{j,k} - c_k]
    return np.cumsum(np.where(credited, gains, 0.0).sum(axis=0) - charged)
