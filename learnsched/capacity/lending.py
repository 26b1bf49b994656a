"""Lendable capacity and return deadlines (paper Sections 3.3-3.4, Eqs. 6-8).

Evolution may borrow only capacity it can return before service needs it: a background
share ``s(v)`` leaves ``c_cap(v) = (1 - s(v)) c(v)`` to the queue, and every deadline of
the trace must stay feasible under it (Eq. 6). All searches bisect on that test, which is
monotone: lending more, or returning later, never adds service capacity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .._checks import FloatArray, at_least, fraction, positive
from ._checks import first_index, float_array, same_length
from .feasibility import DEFAULT_TOLERANCE, absolute_tolerance, check_types, scan
from .profile import RateProfile
from .traces import Trace

__all__ = [
    "DEFAULT_RESOLUTION",
    "ReturnDeadline",
    "ReturnPath",
    "lend",
    "max_share",
    "max_share_schedule",
    "return_deadline",
]

DEFAULT_RESOLUTION = 1e-9
"""Bisection stops when the bracket is this narrow (share, or seconds for return times)."""


@dataclass(frozen=True)
class ReturnPath:
    """The serial return path of lent capacity (Eq. 7), seconds each.

    Parameters
    ----------
    actuation_s
        Command actuation ``tau_act``.
    release_s
        Resource release ``tau_release`` (e.g. device memory freed).
    ready_s
        Runtime readiness ``tau_ready``: 69.99 s cold, 0.487 s warm on the paper's A100.
    """

    actuation_s: float = 0.0
    release_s: float = 0.0
    ready_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("actuation_s", "release_s", "ready_s"):
            object.__setattr__(self, name, at_least(name, getattr(self, name), 0.0))

    @property
    def total_s(self) -> float:
        """``tau_r``, seconds."""
        return self.actuation_s + self.release_s + self.ready_s  # Eq. 7

    def reclaim_by(self, ready_by_s: float) -> float:
        """The latest reclaim command ``t_reclaim`` for capacity ready at ``ready_by_s``, s."""
        return ready_by_s - self.total_s  # Eq. 8: t_reclaim <= t_b - tau_r


@dataclass(frozen=True)
class ReturnDeadline:
    """When lent capacity must be back (:func:`return_deadline`), seconds.

    Parameters
    ----------
    ready_by_s
        ``t_b``: the latest time serving capacity may be ready again (``inf``: never
        needed for this trace).
    reclaim_by_s
        ``t_reclaim = t_b - tau_r``: the latest time to issue the return (Eq. 8).
    """

    ready_by_s: float
    reclaim_by_s: float


def lend(capacity: RateProfile, shares: Sequence[float] | FloatArray | float) -> RateProfile:
    """The service rate left to the queue, ``(1 - s) c``, with one share per segment.

    Parameters
    ----------
    capacity
        Baseline service rate ``c(v)``.
    shares
        Background share in ``[0, 1]``: one number, or one per segment of ``capacity``.
    """
    if not isinstance(capacity, RateProfile):
        raise TypeError(f"capacity must be a RateProfile, got {type(capacity).__name__}")
    if np.ndim(shares) == 0:
        return capacity.scaled(1.0 - fraction("share", shares))
    per_segment = float_array("shares", shares)
    same_length("shares", per_segment, "capacity.starts", capacity.starts.shape[0])
    outside = first_index((per_segment < 0) | (per_segment > 1))
    if outside is not None:
        raise ValueError(
            f"shares[{outside}] must be in [0, 1], got {float(per_segment[outside])!r}"
        )
    return capacity.scaled(1.0 - per_segment)


def _largest(
    feasible: Callable[[float], bool], low: float, high: float, resolution: float
) -> float:
    """The largest x in [low, high] (within ``resolution``) with ``feasible(x)``.

    ``feasible`` must be monotone (true up to a point), and true at ``low``.
    """
    if feasible(high):
        return high
    while high - low > resolution:
        mid = 0.5 * (low + high)
        if not low < mid < high:  # the bracket is down to adjacent floats
            break
        if feasible(mid):
            low = mid
        else:
            high = mid
    return low


class _Checker:
    """Eq. 6 for one trace, reusing one slack buffer across the many bisection steps."""

    def __init__(self, trace: Trace, capacity: RateProfile, tolerance: float) -> None:
        check_types(trace, capacity)
        self.trace = trace
        self.tolerance = absolute_tolerance(trace, tolerance)
        self.slack = np.empty(len(trace))

    def __call__(self, capacity: RateProfile) -> bool:
        return scan(self.trace, capacity, self.tolerance, self.slack) is None


def max_share(
    trace: Trace,
    capacity: RateProfile,
    tolerance: float = DEFAULT_TOLERANCE,
    resolution: float = DEFAULT_RESOLUTION,
) -> float | None:
    """The largest constant background share that keeps every deadline feasible.

    Parameters
    ----------
    trace
        Requests in arrival order.
    capacity
        Baseline service rate ``c(v)``, work per second.
    tolerance
        Relative slack tolerance of the deadline test (see ``check_feasibility``).
    resolution
        Width of the final bisection bracket; the result is feasible, at most this much
        below the true maximum.

    Returns
    -------
    float or None
        The share in ``[0, 1]``, or None if deadlines are missed even without lending.
    """
    resolution = positive("resolution", resolution)
    feasible = _Checker(trace, capacity, tolerance)
    if not feasible(capacity):
        return None
    return _largest(lambda share: feasible(lend(capacity, share)), 0.0, 1.0, resolution)


def max_share_schedule(
    trace: Trace,
    capacity: RateProfile,
    tolerance: float = DEFAULT_TOLERANCE,
    resolution: float = DEFAULT_RESOLUTION,
) -> FloatArray | None:
    """The largest share per segment of ``capacity``, earliest segment first.

    Each segment takes the largest share that stays feasible given the shares already
    fixed for earlier segments and none lent later: capacity is borrowed as early as it
    can still be returned. The schedule is feasible as a whole. Split a segment (repeat
    its rate at a new start) to get finer intervals.

    Parameters
    ----------
    trace, capacity, tolerance, resolution
        As for :func:`max_share`.

    Returns
    -------
    numpy.ndarray or None
        One share per segment, or None if deadlines are missed even without lending.
    """
    resolution = positive("resolution", resolution)
    feasible = _Checker(trace, capacity, tolerance)
    if not feasible(capacity):
        return None
    shares = np.zeros(capacity.starts.shape[0])

    def with_share(j: int) -> Callable[[float], bool]:
        def test(share: float) -> bool:
            shares[j] = share
            return feasible(lend(capacity, shares))

        return test

    for j in range(shares.shape[0]):
        shares[j] = _largest(with_share(j), 0.0, 1.0, resolution)
    return shares


def _lent_until(capacity: RateProfile, share: float, ready_by_s: float) -> RateProfile:
    """``capacity`` with ``share`` lent before ``ready_by_s`` and everything after it."""
    starts = np.union1d(capacity.starts, [ready_by_s])
    segment = np.maximum(np.searchsorted(capacity.starts, starts, side="right") - 1, 0)
    keep = np.where(starts < ready_by_s, 1.0 - share, 1.0)
    return RateProfile(starts, capacity.rates[segment] * keep)


def return_deadline(
    trace: Trace,
    capacity: RateProfile,
    share: float,
    path: ReturnPath | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    resolution: float = DEFAULT_RESOLUTION,
) -> ReturnDeadline | None:
    """When capacity lent at ``share`` must be ready again, and when to reclaim it.

    ``t_b`` is the latest time at which ending the loan keeps every deadline of ``trace``
    feasible (Eq. 6); the return must start ``tau_r`` earlier (Eqs. 7-8).

    Parameters
    ----------
    trace, capacity, tolerance
        As for :func:`max_share`.
    share
        Background share lent from the start until ``t_b``, in ``[0, 1]``.
    path
        The return path (default: instantaneous).
    resolution
        Width of the final bisection bracket, seconds; ``t_b`` errs early.

    Returns
    -------
    ReturnDeadline or None
        None if deadlines are missed even without lending.
    """
    share = fraction("share", share)
    resolution = positive("resolution", resolution)
    path = ReturnPath() if path is None else path
    feasible = _Checker(trace, capacity, tolerance)
    if not feasible(capacity):
        return None
    first = float(min(capacity.starts[0], trace.arrival[0]))
    last = float(trace.deadline.max())
    ready_by = _largest(
        lambda t_b: feasible(_lent_until(capacity, share, t_b)), first, last, resolution
    )
    if ready_by >= last:  # lending through the last deadline harms no request
        ready_by = math.inf
    return ReturnDeadline(ready_by_s=ready_by, reclaim_by_s=path.reclaim_by(ready_by))
