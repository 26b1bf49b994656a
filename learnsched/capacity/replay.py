"""Trace replay through a fluid single-resource model (paper Sections 3.3, 4.4, 6.2).

Foreground requests share one resource with background evolution. Every control period
the background holds a constant share of the service rate, chosen by a policy (a static
share, or AIMD fed the arrival rate and the queue pressure), and an admission rule may
keep it off for that period. The foreground is a work-conserving FIFO fluid queue on
what is left; the replay reports background progress, deadline misses and bad requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _capacity
from .._checks import FloatArray, nonnegative, positive
from .admission import CountThresholdAdmission, WorkBudgetAdmission
from .aimd import AIMDConfig
from .feasibility import check_types
from .rates import RateProfile
from .risk import RunRisk
from .traces import Trace

__all__ = ["MAX_PERIODS", "ReplayResult", "replay"]

MAX_PERIODS = 10_000_000
"""Most control periods one replay may run (80 MB of per-period shares)."""

_NO_ADMISSION, _WORK_BUDGET, _COUNT_THRESHOLD = 0, 1, 2


@dataclass(frozen=True, eq=False)
class ReplayResult:
    """What a replay observed.

    Parameters
    ----------
    finish
        Completion time per request, seconds; ``inf`` if unfinished when the replay ends
        (at the last deadline, so such a request is late anyway).
    shares
        Background share used in each control period (0 where admission refused).
    start_s, period_s
        Start of the first control period and the period length, seconds.
    background_progress
        Service the background received, work units.
    deadline_misses
        Requests that finished after their deadline.
    """

    finish: FloatArray
    shares: FloatArray
    start_s: float
    period_s: float
    background_progress: float
    deadline_misses: int

    @property
    def duration_s(self) -> float:
        """Length of the replay, seconds."""
        return self.period_s * int(self.shares.shape[0])

    @property
    def background_rate(self) -> float:
        """Mean background progress, work units per second."""
        return self.background_progress / self.duration_s

    @property
    def risk(self) -> RunRisk:
        """Bad requests of the run: the fluid model never fails a request, so bad = late."""
        return RunRisk(requests=self.finish.shape[0], failures=0, late=self.deadline_misses)


def _admission_rule(
    admission: WorkBudgetAdmission | CountThresholdAdmission | None,
) -> tuple[int, float]:
    if admission is None:
        return _NO_ADMISSION, math.inf
    if isinstance(admission, WorkBudgetAdmission):
        return _WORK_BUDGET, admission.budget
    if isinstance(admission, CountThresholdAdmission):
        return _COUNT_THRESHOLD, float(admission.threshold)
    raise TypeError(
        "admission must be WorkBudgetAdmission, CountThresholdAdmission or None, "
        f"got {type(admission).__name__}"
    )


def _static_replay(
    trace: Trace,
    capacity: RateProfile,
    share: float,
    start_s: float,
    period_s: float,
    periods: int,
) -> tuple[FloatArray, FloatArray, float]:
    """The replay under a constant background ``share`` and no admission rule, in closed
    form, for any rate profile: ``(finish, shares, background_progress)``.

    The foreground is then a FIFO queue on ``(1 - share) * c(v)``. In service terms
    (``G``, the profile's cumulative service) request ``i`` completes at
    ``F_i = max(F_{i-1}, G(a_i)) + w_i / (1 - share)``, i.e. with ``S`` the cumulative
    sums of ``w / (1 - share)``, ``F_i = S_i + max_{k <= i} (G(a_k) - S_{k-1})``: one
    ``np.maximum.accumulate`` instead of the kernel's walk through every period and
    arrival. It finishes at the earliest time with ``G(t) >= F_i`` (not before its
    arrival), or never if ``F_i`` exceeds the service by the replay's end.

    Shares and progress are the kernel's bit for bit (progress is the same sequential
    sum). Finish times differ by rounding only: the sums ``S`` carry up to ``n eps`` of
    their size, the kernel's remaining work up to ``eps`` of ``G`` and of ``c * t`` per
    period and arrival it spans; as service, the two agree to within
    ``8 (n + periods + 2) eps (max |G| + sum(w) / (1 - share) + max c * max |t|)``
    (``eps = 2^-52``, tested). That worst case, for a million requests over seven hours
    at 45 work/s, is 1e-2 work (0.2 ms); deadline verdicts can differ only for requests
    finishing that close to their deadline.
    """
    # As the kernel: t = start + k * period
    starts: FloatArray = start_s + np.arange(periods, dtype=np.float64) * period_s
    ends: FloatArray = starts + period_s
    gained = share * (capacity.cumulative_at(ends) - capacity.cumulative_at(starts))
    progress = float(np.cumsum(gained)[-1])  # cumsum: the kernel's sequential sum
    shares = np.full(periods, share)
    keep = 1.0 - share
    if not keep > 0.0:  # with share 1 nothing is served and nothing finishes
        return np.full(len(trace), np.inf), shares, progress
    through = np.cumsum(trace.work / keep)
    ready = capacity.cumulative_at(trace.arrival)
    ready[1:] -= through[:-1]  # G(a_k) - S_{k-1}
    done = np.maximum.accumulate(ready, out=ready)
    done += through  # F_i
    finish = capacity.time_of(done)
    np.maximum(finish, trace.arrival, out=finish)
    np.minimum(finish, ends[-1], out=finish)
    finish[done > capacity.cumulative_at(ends[-1:])[0]] = np.inf  # unfinished at the end
    return finish, shares, progress


def replay(
    trace: Trace,
    capacity: RateProfile,
    policy: AIMDConfig | float,
    admission: WorkBudgetAdmission | CountThresholdAdmission | None = None,
    stage_estimate: float = 0.0,
    period_s: float = 0.1,
    rate_window_s: float = 1.0,
) -> ReplayResult:
    """Replay ``trace`` beside background evolution and report service and progress.

    Parameters
    ----------
    trace
        Requests in arrival order; with ``admission`` it needs token columns, whose
        estimates (``L_max + 0.0625 P``) count as in-flight work until completion.
    capacity
        Full service rate ``c(v)`` of the resource, work per second.
    policy
        A static share in ``[0, 1]`` or an :class:`AIMDConfig`, updated at the start of
        each period from the arrival rate over the last ``rate_window_s`` and the
        backlog's drain time at the full rate.
    admission
        Rule admitting the background stage each period (Section 4.4): a work budget
        (in-flight estimates plus ``stage_estimate`` within the budget) or a count
        threshold (admitted while the requests in flight, before the stage, number at
        most the threshold; 0 runs the stage only when the queue is empty). Only its
        budget or threshold is read; its tickets are untouched.
    stage_estimate
        Estimated work of the background stage, tokens.
    period_s
        Control period, seconds.
    rate_window_s
        Window over which the arrival rate is measured, seconds.

    Raises
    ------
    ValueError
        Bad arguments, a trace without token columns under admission, or more than
        :data:`MAX_PERIODS` periods from the first arrival to the last deadline.
    """
    check_types(trace, capacity)
    config = policy if isinstance(policy, AIMDConfig) else AIMDConfig.static(policy)
    kind, limit = _admission_rule(admission)
    # The kernel reads estimates only under a work budget; any n values serve otherwise.
    estimate = trace.estimated_work() if admission is not None else trace.work
    stage = nonnegative("stage_estimate", stage_estimate)
    period_s = positive("period_s", period_s)
    rate_window_s = positive("rate_window_s", rate_window_s)
    start_s = float(trace.arrival[0])
    span = float(trace.deadline.max()) - start_s
    periods = max(1, math.ceil(span / period_s))
    if periods > MAX_PERIODS:
        raise ValueError(
            f"period_s = {period_s!r} gives {periods} control periods over {span:g} s; "
            f"at most {MAX_PERIODS} are allowed"
        )
    # A static share with no admission rule has a closed form. It beats the kernel only
    # at a constant rate (with many rate segments the kernel's segment cursors cost it
    # little: docs/performance.md), and it rounds a little more: it is used at a constant
    # rate only.
    if admission is None and config.min_share == config.max_share and capacity.rates.size == 1:
        finish, shares, progress = _static_replay(
            trace, capacity, config.min_share, start_s, period_s, periods
        )
    else:
        finish = np.full(len(trace), np.inf)
        shares = np.empty(periods)
        progress = _capacity.replay(
            trace.arrival,
            trace.work,
            estimate,
            capacity.starts,
            capacity.rates,
            capacity.cumulative,
            start_s,
            period_s,
            rate_window_s,
            config.initial_share,
            config.step,
            config.factor,
            config.min_share,
            config.max_share,
            config.burst_rate,
            config.pressure_limit_s,
            kind,
            limit,
            stage,
            finish,
            shares,
        )
    finish.flags.writeable = False
    shares.flags.writeable = False
    return ReplayResult(
        finish=finish,
        shares=shares,
        start_s=start_s,
        period_s=period_s,
        background_progress=progress,
        deadline_misses=int(np.count_nonzero(finish > trace.deadline)),
    )
