"""Idle windows a trace can lend to evolution, with their return deadlines (Eqs. 6-8).

The queue empties at some time ``g`` (every earlier request served). From ``g`` the GPU
may be lent whole, as long as every deadline stays feasible once capacity is back
(Eq. 6): :func:`learnsched.capacity.return_deadline` gives the latest ready time ``t_b``
and, for a return path of ``tau_r`` seconds (Eq. 7), the latest reclaim
``t_reclaim = t_b - tau_r`` (Eq. 8). The window ``[g, t_b]`` is kept if it leaves at least
``min_useful_s`` seconds of work before the reclaim; the queued requests are then served
from ``t_b`` and the next window opens when the queue empties again. A scenario plans on
``[g, t_b]``: its ``recovery_s`` is the return path, so Eq. 10 makes every segment reclaim
by ``t_reclaim``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import _capacity
from .._checks import positive
from .._sum import ordered_sum
from ..capacity import (
    DEFAULT_RESOLUTION,
    DEFAULT_TOLERANCE,
    RateProfile,
    ReturnPath,
    Trace,
    check_feasibility,
)

__all__ = ["DEFAULT_MIN_USEFUL_S", "IdleWindow", "IdleWindows", "idle_windows"]

DEFAULT_MIN_USEFUL_S = 10.0
"""Shortest useful work time before the reclaim, seconds."""


@dataclass(frozen=True)
class IdleWindow:
    """One lendable window, seconds.

    Attributes
    ----------
    start_s
        When the queue empties and the GPU may be lent (``l_k``).
    ready_by_s
        The return deadline: serving capacity ready again (``t_b``, the scenario's ``d_k``).
    reclaim_by_s
        The latest reclaim command, ``t_b - tau_r`` (Eq. 8).
    """

    start_s: float
    ready_by_s: float
    reclaim_by_s: float

    @property
    def useful_s(self) -> float:
        """Seconds of work before the reclaim."""
        return self.reclaim_by_s - self.start_s


@dataclass(frozen=True)
class IdleWindows:
    """The windows of one trace and what they were derived with."""

    windows: tuple[IdleWindow, ...]
    path: ReturnPath
    rate: float
    min_useful_s: float
    requests: int
    span_s: float

    def pairs(self) -> list[tuple[float, float]]:
        """``(start, return deadline)`` per window: a scenario's ``windows`` as they are."""
        return [(w.start_s, w.ready_by_s) for w in self.windows]

    def to_json(self) -> dict[str, Any]:
        """``{"windows": [[start, ready_by], ...], ...}``: the ``windows`` key drops into a
        ``learnsched solve`` scenario (with ``recovery_s`` = ``return_path_s``)."""
        return {
            "windows": [list(p) for p in self.pairs()],
            "reclaim_by": [w.reclaim_by_s for w in self.windows],
            "return_path_s": self.path.total_s,
            "min_useful_s": self.min_useful_s,
            "rate": self.rate,
            "requests": self.requests,
            "span_s": self.span_s,
            "idle_s": ordered_sum(w.ready_by_s - w.start_s for w in self.windows),
        }


def idle_windows(
    trace: Trace,
    rate: float = 1.0,
    path: ReturnPath | None = None,
    min_useful_s: float = DEFAULT_MIN_USEFUL_S,
) -> IdleWindows:
    """The lendable idle windows of ``trace`` served at ``rate`` (see the module docstring).

    Parameters
    ----------
    trace
        Requests in arrival order (work units, seconds).
    rate
        Service rate of the GPU, work units per second.
    path
        The return path (Eq. 7); instantaneous by default.
    min_useful_s
        Keep a window only if it leaves this many seconds before the reclaim, s (> 0).

    Raises
    ------
    ValueError
        If the trace misses deadlines even when nothing is lent.
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a Trace, got {type(trace).__name__}")
    rate = positive("rate", rate)
    path = ReturnPath() if path is None else path
    min_useful_s = positive("min_useful_s", min_useful_s)
    unlent = check_feasibility(trace, RateProfile.constant(rate))
    if not unlent.feasible:
        i = unlent.first_violation
        raise ValueError(
            f"the trace misses deadline[{i}] = {float(trace.deadline[i])!r} even with nothing "
            "lent (raise the rate or the latency budget)"
        )
    # The walk over the trace in the kernel: the same windows as return_deadline from each
    # queue-empty instant (the same bisection, each test bit for bit Eq. 6), reading only
    # the requests a loan delays: O(n log n) where a scan per test was quadratic.
    starts, ready_by, failed = _capacity.idle_window_bounds(
        trace.arrival,
        trace.work,
        trace.deadline,
        rate,
        path.total_s,
        min_useful_s,
        DEFAULT_RESOLUTION,
        DEFAULT_TOLERANCE,
    )
    if failed >= 0:  # earlier loans ended in time for these requests: a rounding slip
        raise ValueError(f"requests from arrival[{failed}] miss deadlines even unlent")
    windows = tuple(
        IdleWindow(start, ready, path.reclaim_by(ready))
        for start, ready in zip(starts, ready_by, strict=True)
    )
    span = float(trace.arrival[-1] - trace.arrival[0])
    return IdleWindows(windows, path, rate, min_useful_s, len(trace), span)
