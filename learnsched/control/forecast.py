"""Deciding under a forecast.

:class:`ForecastDecider`: the current window is known, the future is sampled. At each
window the loop knows the window it is in (from its calendar source) and the windows it
has seen so far; the forecaster of :mod:`learnsched.calendar` draws ``N`` sampled
calendars of what follows, fitted on that live history (plus any history given up front),
and the core's :class:`~learnsched._core.forecast.ForecastModel` scores the actions against the
mean over the samples (:class:`learnsched.calendar.decision.ForecastDecision`).

:class:`CausalForecastDecider`: not even the current gap's end is known: the causal
policy of ``learnsched online --trace``, the same C++ decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .._checks import integer
from ..calendar.causal import CausalRules
from ..capacity import Trace
from ..scenario import HandoffCosts
from ..solver import Action, ActionKind, Policy
from .loop import ModelDecider
from .windows import Window

__all__ = ["FORECASTERS", "CausalForecastDecider", "ForecastDecider"]

FORECASTERS = ("empirical", "exact", "causal")
"""``empirical``: a renewal model fitted on the windows seen; ``exact``: the calendar;
``causal``: the causal policy, fitted on a request history (:class:`CausalForecastDecider`)."""


class ForecastDecider(ModelDecider):
    """A :class:`~.loop.Decider` that sees the future only through sampled calendars.

    Parameters
    ----------
    work_quanta, quantum_s, costs, benefit_rate, horizon_s
        As for :class:`~.loop.ModelDecider`.
    forecaster
        ``"empirical"`` or ``"exact"`` (then ``truth`` is the calendar).
    samples
        ``N`` sampled calendars per decision.
    history
        Windows observed before the loop started (seconds on the loop's clock).
    truth
        The whole calendar, for the ``exact`` forecaster.
    policy
        ``window``, ``costed_window``, ``rollout`` or ``dp`` (under the forecast).
    seed
        Seeds the sampling.
    future_windows
        Windows of each sampled calendar the decision looks at (the first ones after
        the current window): bounds a decision's cost, O(N * future_windows * J).
    """

    def __init__(
        self,
        work_quanta: int,
        quantum_s: float,
        costs: HandoffCosts,
        benefit_rate: float,
        horizon_s: float,
        *,
        forecaster: str = "empirical",
        samples: int = 64,
        history: Sequence[Window] = (),
        truth: Sequence[Window] = (),
        policy: str | Policy = Policy.ROLLOUT,
        seed: int = 0,
        future_windows: int = 20,
    ) -> None:
        from ..calendar.decision import FORECAST_POLICIES
        from ..calendar.forecast import EmpiricalForecaster, ExactForecaster, Forecaster

        if forecaster not in FORECASTERS[:2]:
            raise ValueError(
                f"forecast must be empirical or exact here (causal: CausalForecastDecider), "
                f"got {forecaster!r}"
            )
        super().__init__(work_quanta, quantum_s, costs, benefit_rate, horizon_s, policy)
        if self.policy not in FORECAST_POLICIES:
            names = ", ".join(p.value for p in FORECAST_POLICIES)
            raise ValueError(f"policy under a forecast must be one of {names}, got {policy!r}")
        self.samples = integer("samples", samples, low=1)
        self.future_windows = integer("future_windows", future_windows, low=1)
        self.observed: list[tuple[float, float]] = [(w.start_s, w.end_s) for w in history]
        pairs = tuple((w.start_s, w.end_s) for w in truth)
        self.forecaster: Forecaster = (
            ExactForecaster(pairs) if forecaster == "exact" else EmpiricalForecaster()
        )
        self.rng = np.random.default_rng(seed)

    def _observe(self, window: Window) -> None:
        """Add the current window to the history (once; a trimmed repeat replaces it)."""
        pair = (window.start_s, window.end_s)
        if self.observed and self.observed[-1][1] == pair[1]:
            self.observed[-1] = (self.observed[-1][0], pair[1])
        elif not self.observed or pair[0] >= self.observed[-1][1]:
            self.observed.append(pair)

    def _until(self, observed: Sequence[tuple[float, float]]) -> float:
        """Where sampling may stop: twice the span of ``future_windows`` mean cycles
        seen so far (sampling to the horizon would cost O(H / cycle) per sample)."""
        if len(observed) < 2:
            return self.horizon_s
        cycle = (observed[-1][0] - observed[0][0]) / (len(observed) - 1)
        return min(self.horizon_s, observed[-1][1] + 2.0 * self.future_windows * cycle)

    def decide(self, windows: list[Window], progress: int, durable: int, active: bool) -> Action:
        """See :class:`~.loop.Decider`; ``windows[1:]`` are not used (they are forecast)."""
        from ..calendar.decision import ForecastDecision

        current = windows[0]
        pair = (current.start_s, current.end_s)
        if not active:  # an early return's budget is not an idle window of the calendar
            self._observe(current)
        observed = (*self.observed, pair) if active else tuple(self.observed)
        sampled = self.forecaster.sample(
            observed, current.start_s, self._until(observed), self.samples, self.rng
        )
        futures = [future[: self.future_windows] for future in sampled]
        scenario = self.scenario([current], progress, durable, active)
        decision = ForecastDecision(scenario, pair, futures, [self.policy])
        return decision.decide(progress, durable, active, self.policy)


class CausalForecastDecider(ModelDecider):
    """The causal policy of ``learnsched online --trace``, next to a live engine: the end
    of the current idle gap is not known, only when it began (the queue emptied).

    The forecast is fitted once, on a trace of past requests (the gate's log, or any
    request trace, in the same service model as the study): the survival of its idle
    gaps forecasts the current gap's remaining length given its age, and ``N`` sampled
    calendars of its causal windows give the continuation
    (:class:`learnsched.calendar.causal.CausalForecast`). Times on the loop's clock: the
    history ends at 0.

    Two ways in. :meth:`next_move` is the decision `online` makes at every quantum
    boundary of a gap (wait, work, save, checkpoint and return, discard and return,
    abandon): the control loop asks it at every boundary of a window, idle and lent
    (:class:`~.loop.MoveDecider`), and so runs the studied policy. :meth:`decide` is the
    :class:`~.loop.Decider` of a window-at-a-time loop: at a window's start it maps the
    same decision to a finite-model action (the window's end is not read), and at an
    early return (``active``) it chooses how to return.

    Parameters
    ----------
    work_quanta, quantum_s, costs, benefit_rate, horizon_s
        As for :class:`~.loop.ModelDecider` (``costs``: one return path).
    history
        Past requests, ``arrival`` in seconds before the loop started (any origin: the
        last is taken as the loop's time 0).
    policy
        One of :data:`learnsched.calendar.causal.CAUSAL_POLICIES` (default rollout).
    samples
        ``N``.
    forecaster
        ``empirical`` (default), ``repeat`` or ``mean``.
    rules
        Lateness price, risk level, gap history.
    rate
        Service rate of the history, work units per second.
    seed
        Seeds the forecast and the gap draws.
    """

    def __init__(
        self,
        work_quanta: int,
        quantum_s: float,
        costs: HandoffCosts,
        benefit_rate: float,
        horizon_s: float,
        *,
        history: Trace,
        policy: str = "rollout",
        samples: int = 64,
        forecaster: str = "empirical",
        rules: CausalRules | None = None,
        rate: float = 1.0,
        seed: int = 0,
    ) -> None:
        from ..calendar.causal import CausalDecider, CausalForecast, CausalTrace
        from ..calendar.study import make_forecaster

        super().__init__(work_quanta, quantum_s, costs, benefit_rate, horizon_s, Policy.ROLLOUT)
        self.rules = CausalRules() if rules is None else rules
        self.causal_policy = policy
        # The history on the loop's clock: its last arrival at 0, every record closed.
        end = float(history.arrival[-1])
        shifted = Trace(history.arrival - end, history.work, history.deadline - end)
        trace = CausalTrace(shifted, rate)
        self.fitted_at_s = self.rules.close_s  # every gap of the history has closed here
        candidate = self.scenario([Window(0.0, 1.0)], 0, 0, False)
        self.forecast = CausalForecast(
            trace,
            candidate,
            0.0,
            make_forecaster(forecaster),
            integer("samples", samples, low=1),
            np.random.default_rng(seed),
            replace(self.rules, close_s=0.0),
        )
        self._decider = CausalDecider(candidate, policy, self.forecast, self.rules, seed)

    def next_move(
        self, now_s: float, gap_start_s: float, progress: int, durable: int, lent: bool
    ) -> tuple[str, int, str]:
        """``(plan, quanta, move)`` at ``now_s`` in the gap that began at ``gap_start_s``
        (loop clock, seconds); ``move`` is the step to take now (see
        :meth:`learnsched.calendar.causal.CausalDecider.decide`)."""
        return self._decider.decide(now_s, gap_start_s, progress, durable, lent)

    def decide(self, windows: list[Window], progress: int, durable: int, active: bool) -> Action:
        """See :class:`~.loop.Decider`: the causal decision at ``windows[0]``'s start,
        its end unread. Idle: wait, or lend for the plan (Window's plan and publishing
        as a publication of the rest, an advance as a checkpointed advance). Active (an
        early return): checkpoint and return, discard and return, or abandon."""
        current = windows[0]
        plan, quanta, _ = self.next_move(
            current.start_s, current.start_s, progress, durable, active
        )
        rest = self.work_quanta - (progress if active else durable)
        if active:
            if plan == "abandon":
                return Action(ActionKind.ABANDON)
            if plan == "discard_return" or progress <= durable:
                return Action(ActionKind.DISCARD_RETURN)
            return Action(ActionKind.CHECKPOINT_RETURN, checkpoint=True)
        if plan == "wait":
            return Action(ActionKind.WAIT)
        if plan == "advance":
            return Action(ActionKind.ADVANCE, quanta, checkpoint=True)
        return Action(ActionKind.PUBLISH, rest)
