"""Deadline feasibility of a FIFO fluid queue under a service-rate profile (Eq. 6).

An initially empty, work-conserving FIFO fluid queue meets every deadline iff
``sum_{j=k..i} w_j <= integral_{a_k}^{d_i} c_cap`` for every ``k <= i`` (Section 3.3).
The scan checks all pairs in O(n + m) for n requests and m rate segments: requests come
sorted by arrival, so each one's segments are found by cursors that move forward
(O(n log m) at worst, when deadlines jump back and forth).

Precision: each request's slack is measured from its own arrival (the service on
``[a_i, d_i]`` minus ``w_i``, plus the backlog carried from earlier requests), so rounding
is a few ulps of those quantities and of the cumulative service at rate changes between
them, never of the absolute time: results hold at epoch seconds and beyond, down to the
resolution of the times themselves (at 1e16 s a double's spacing is 2 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _capacity
from .._checks import FloatArray, nonnegative
from .rates import RateProfile, require_rates
from .traces import Trace

__all__ = ["DEFAULT_TOLERANCE", "Feasibility", "check_feasibility"]

DEFAULT_TOLERANCE = 1e-9
"""Relative tolerance of the deadline test, as a fraction of the trace's total work."""


@dataclass(frozen=True, eq=False)
class Feasibility:
    """The outcome of :func:`check_feasibility`.

    Parameters
    ----------
    slack
        Per request ``i``: ``min_{k <= i} (integral_{a_k}^{d_i} c_cap - sum_{j=k..i} w_j)``,
        work units; negative where request ``i`` misses its deadline.
    first_violation
        Index of the first request that misses its deadline, or None.
    tolerance
        Absolute tolerance the test used, work units: slack down to ``-tolerance`` is met.
    """

    slack: FloatArray
    first_violation: int | None
    tolerance: float

    @property
    def feasible(self) -> bool:
        """Whether every request meets its deadline."""
        return self.first_violation is None

    @property
    def min_slack(self) -> float:
        """The smallest slack over all requests, work units."""
        return float(self.slack.min())

    @property
    def violations(self) -> int:
        """Number of requests that miss their deadline (slack below ``-tolerance``)."""
        return int(np.count_nonzero(self.slack < -self.tolerance))


def check_types(trace: object, capacity: object) -> None:
    """``TypeError`` unless ``trace`` is a :class:`Trace` and ``capacity`` a RateProfile."""
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a Trace, got {type(trace).__name__}")
    require_rates(capacity)


def absolute_tolerance(trace: Trace, tolerance: float) -> float:
    """The absolute tolerance of the deadline test, work units."""
    # A finite float >= 0 (the default) is what nonnegative returns: skip its chain of
    # calls, which a scan of a few hundred requests pays on every call.
    if type(tolerance) is not float or not 0.0 <= tolerance < math.inf:
        tolerance = nonnegative("tolerance", tolerance)
    return tolerance * float(trace.work.sum())


def scan(
    trace: Trace, capacity: RateProfile, absolute_tolerance: float, slack: FloatArray
) -> int | None:
    """Eq. 6 over validated inputs, filling ``slack``; the first violation or None."""
    first = _capacity.feasibility_scan(
        trace.arrival,
        trace.work,
        trace.deadline,
        capacity.starts,
        capacity.rates,
        capacity.cumulative,
        absolute_tolerance,
        slack,
    )
    return None if first < 0 else first


def check_feasibility(
    trace: Trace, capacity: RateProfile, tolerance: float = DEFAULT_TOLERANCE
) -> Feasibility:
    """Check every deadline of ``trace`` under the service rate ``capacity`` (Eq. 6).

    Parameters
    ----------
    trace
        Requests in arrival order (validated on construction).
    capacity
        Service rate left to the queue, ``c_cap(v)``: baseline minus what is lent.
    tolerance
        Slack down to ``-tolerance * sum(work)`` still counts as met, so floating-point
        rounding in long traces does not flag an exact fit.

    Returns
    -------
    Feasibility
        Per-request slack and the first violating request.
    """
    check_types(trace, capacity)
    slack = np.empty(len(trace))
    absolute = absolute_tolerance(trace, tolerance)
    first = scan(trace, capacity, absolute, slack)
    slack.flags.writeable = False
    return Feasibility(slack, first, absolute)
