"""Lendable capacity and return deadlines (paper Sections 3.3-3.4, Eqs. 6-8).

Evolution may borrow only capacity it can return before service needs it: a background
share ``s(v)`` leaves ``c_cap(v) = (1 - s(v)) c(v)`` to the queue, and every deadline of
the trace must stay feasible under it (Eq. 6). All searches bisect on that test, which is
monotone: lending more, or returning later, never adds service capacity.

Every search returns the lower end of its final bisection bracket, a value that passed
the deadline test (:func:`check_feasibility` with the caller's ``tolerance``). That test
accepts slack down to ``-tolerance * sum(work)``, so with ``tolerance > 0`` a result can
lie slightly beyond the exact-arithmetic boundary (by at most that much work over the
lent service: for one request of 2 work due in 3 s at rate 1, the default tolerance
gives 0.3333333340 for the exact 1/3); pass ``tolerance=0`` for a result that is
feasible in exact arithmetic up to floating-point rounding.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import _capacity
from .._checks import FloatArray, fraction, nonnegative, positive
from ._checks import first_index, float_array, same_length
from .feasibility import DEFAULT_TOLERANCE, absolute_tolerance, check_types, scan
from .rates import RateProfile, require_rates
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
            object.__setattr__(self, name, nonnegative(name, getattr(self, name)))

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
    require_rates(capacity)
    if np.ndim(shares) == 0:
        return _lent(capacity, fraction("share", shares))
    per_segment = float_array("shares", shares)
    same_length("shares", per_segment, "capacity.starts", capacity.starts.shape[0])
    outside = first_index((per_segment < 0) | (per_segment > 1))
    if outside is not None:
        raise ValueError(
            f"shares[{outside}] must be in [0, 1], got {float(per_segment[outside])!r}"
        )
    return _lent(capacity, per_segment)


def _lent(capacity: RateProfile, shares: FloatArray | float) -> RateProfile:
    """:func:`lend` for shares already in ``[0, 1]`` (one, or one per segment), unchecked:
    the bisections below call it at every step."""
    return RateProfile._trusted(capacity.starts, capacity.rates * (1.0 - shares))


def _largest(
    feasible: Callable[[float], bool], low: float, high: float, resolution: float
) -> float:
    """The largest x in [low, high] (within ``resolution``) with ``feasible(x)``.

    ``feasible`` must be monotone (true up to a point), and true at ``low`` (never asked).
    Returns ``high`` if it passes, else the lower end of the final bracket: a value that
    passed (or ``low``), never an untested midpoint, with the bracket's upper end failing.
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


def _checker(trace: Trace, capacity: RateProfile, tolerance: float) -> _Checker | None:
    """The Eq. 6 test of ``trace``, or None if ``capacity`` misses deadlines unlent."""
    check = _Checker(trace, capacity, tolerance)
    return check if check(capacity) else None


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
        Width of the final bisection bracket. The result passes the deadline test with
        ``tolerance``, and the result plus ``resolution`` fails it (unless the result is
        1). With ``tolerance > 0`` the result may exceed the exact-arithmetic maximum by
        up to ``tolerance * sum(work)`` over the lent service (see the module docstring).

    Returns
    -------
    float or None
        The share in ``[0, 1]``, or None if deadlines are missed even without lending.
    """
    resolution = positive("resolution", resolution)
    feasible = _checker(trace, capacity, tolerance)
    if feasible is None:
        return None
    return _largest(lambda share: feasible(_lent(capacity, share)), 0.0, 1.0, resolution)


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

    Each Eq. 6 pair ``(k, i)`` is linear in segment j's share ``s_j`` and touched by it
    only if ``[a_k, d_i]`` overlaps the segment, so segment j needs only: requests that
    arrived before it but are due inside or after it (each a direct bound on ``s_j``),
    a bisection over the requests arriving inside it, and one precomputed minimum for
    everything after it. That is O(n log m) setup plus O(n_j log m) per bisection step
    for the n_j requests arriving in segment j: a million requests over 100 segments
    take about a second.

    Parameters
    ----------
    trace, capacity, tolerance, resolution
        As for :func:`max_share`; each share passes the deadline test given the earlier
        ones, and that share plus ``resolution`` fails it (unless the share is 1).

    Returns
    -------
    numpy.ndarray or None
        One share per segment, or None if deadlines are missed even without lending.
    """
    resolution = positive("resolution", resolution)
    check = _checker(trace, capacity, tolerance)
    if check is None:
        return None
    shares = _Schedule(check, capacity).solve(resolution)
    # The split tests round differently from one full scan; should the whole schedule
    # fail that scan by a rounding error, lend less everywhere until it passes (all
    # zeros passed above, so this ends).
    cut = resolution
    while not check(_lent(capacity, shares)):
        shares = np.maximum(shares - cut, 0.0)
        cut *= 2.0
    return shares


_ROUNDING = 64 * float(np.finfo(np.float64).eps)
"""Relative rounding allowance between the split tests and one full Eq. 6 scan."""


class _Schedule:
    """The segment-by-segment search of :func:`max_share_schedule`.

    For segment j on ``[starts[j], ends[j])`` and a trial share ``s``, with earlier shares
    fixed and later ones zero, the Eq. 6 slack of request i is unchanged if ``d_i <=
    starts[j]`` (indices below ``reach[j]``), falls linearly in ``s`` for the requests
    arriving by ``starts[j]`` (indices ``[reach[j], entering[j])``: the running minimum over
    their ``k`` does not depend on ``s``), needs a scan for the requests arriving inside
    (``[entering[j], leaving[j])``), and for everyone after is ``G_full(d_i) - W_i`` less
    the service lent so far plus the running minimum at ``leaving[j]``.
    """

    def __init__(self, check: _Checker, capacity: RateProfile) -> None:
        trace = check.trace
        self.check = check
        self.capacity = capacity
        self.arrival, self.work, self.deadline = trace.arrival, trace.work, trace.deadline
        starts = capacity.starts
        self.ends = np.append(starts[1:], np.inf)
        through = np.cumsum(self.work)  # W_i, summed in the kernels' order
        self.ahead = np.concatenate(([0.0], through[:-1]))  # W_{i-1}
        reach = np.maximum.accumulate(self.deadline)
        self.reach = np.searchsorted(reach, starts, side="right")  # first d_i > starts[j]
        self.entering = np.searchsorted(self.arrival, starts, side="right")
        self.reach[0] = self.entering[0] = 0  # the first rate also holds before starts[0]
        self.leaving = np.searchsorted(self.arrival, self.ends, side="left")
        # min over i' >= i of G_full(d_i') - W_i': the requests after a segment.
        after = capacity.cumulative_at(self.deadline) - through
        self.after = np.minimum.accumulate(after[::-1])[::-1]
        self.slack = check.slack

    def solve(self, resolution: float) -> FloatArray:
        shares = np.zeros(self.capacity.starts.shape[0])
        settled, best_settled = 0, math.inf  # min of W_{k-1} - G(a_k) over k < settled
        for j in range(shares.shape[0]):
            fixed = _lent(self.capacity, shares)  # shares[j:] are still zero
            reach = int(self.reach[j])
            if reach > settled:  # these arrived and were due before segment j: final now
                k = slice(settled, reach)
                g = fixed.cumulative_at(self.arrival[k])
                best_settled = min(best_settled, float(np.min(self.ahead[k] - g)))
                settled = reach
            upper, best_entering = self._straddling(j, fixed, best_settled)
            shares[j] = _largest(self._test(j, shares, best_entering), 0.0, upper, resolution)
        return shares

    def _straddling(self, j: int, fixed: RateProfile, best: float) -> tuple[float, float]:
        """The bound on share j from requests arriving by ``starts[j]`` and due after it,
        and the running minimum after them."""
        lo, hi = int(self.reach[j]), int(self.entering[j])
        if hi <= lo:
            return 1.0, best
        k = slice(lo, hi)
        slack = self.slack[k]
        best = _capacity.scan_window(
            self.arrival[k],
            self.work[k],
            self.deadline[k],
            fixed.starts,
            fixed.rates,
            fixed.cumulative,
            float(self.ahead[lo]),
            best,
            slack,
        )
        start = float(self.capacity.starts[j])
        lent = self.capacity.rates[j] * np.clip(self.deadline[k] - start, 0.0, self.ends[j] - start)
        touched = lent > 0
        if not touched.any():
            return 1.0, best
        # Eq. 6, linear in s_j: slack_i - s_j * lent_i >= -tolerance. The full scan adds
        # up G(d_i), W_i and the running minimum in its own order; keep clear of its
        # rounding error so that the bound passes that scan too.
        g = np.abs(fixed.cumulative_at(self.deadline[k]))
        through = self.ahead[k] + self.work[k]
        margin = _ROUNDING * (2.0 * g + 2.0 * through + np.abs(slack))
        room = slack + self.check.tolerance - margin
        bound = float(np.min(room[touched] / lent[touched]))
        return min(max(bound, 0.0), 1.0), best

    def _test(self, j: int, shares: FloatArray, best: float) -> Callable[[float], bool]:
        lo, hi = int(self.entering[j]), int(self.leaving[j])
        n = self.arrival.shape[0]
        k = slice(lo, hi)
        before = float(self.ahead[lo]) if lo < n else 0.0
        tolerance = self.check.tolerance

        def feasible(share: float) -> bool:
            shares[j] = share
            trial = _lent(self.capacity, shares)
            end = best
            if hi > lo:
                slack = self.slack[k]
                end = _capacity.scan_window(
                    self.arrival[k],
                    self.work[k],
                    self.deadline[k],
                    trial.starts,
                    trial.rates,
                    trial.cumulative,
                    before,
                    best,
                    slack,
                )
                if float(slack.min()) < -tolerance:
                    return False
            if hi < n:  # later times lose all service lent up to ends[j]
                lent = float(self.capacity.cumulative[j + 1] - trial.cumulative[j + 1])
                after = float(self.after[hi])
                margin = _ROUNDING * (abs(end) + abs(after) + abs(lent))  # as above
                return end + after - lent >= -tolerance + margin
            return True

        return feasible


def _lent_until(capacity: RateProfile, share: float, ready_by_s: float) -> RateProfile:
    """``capacity`` with ``share`` lent before ``ready_by_s`` and everything after it."""
    starts = np.union1d(capacity.starts, [ready_by_s])
    keep = np.where(starts < ready_by_s, 1.0 - share, 1.0)
    return RateProfile(starts, capacity.rates[capacity.segment_of(starts)] * keep)


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
    feasible = _checker(trace, capacity, tolerance)
    if feasible is None:
        return None
    first = float(min(capacity.starts[0], trace.arrival[0]))
    last = float(trace.deadline.max())
    ready_by = _largest(
        lambda t_b: feasible(_lent_until(capacity, share, t_b)), first, last, resolution
    )
    if ready_by >= last:  # lending through the last deadline harms no request
        ready_by = math.inf
    return ReturnDeadline(ready_by_s=ready_by, reclaim_by_s=path.reclaim_by(ready_by))
