"""Deciding under a forecast: the current window is known, the future is sampled.

At each window the loop knows the window it is in (from its calendar source) and the
windows it has seen so far; the forecaster of :mod:`learnsched.calendar` draws ``N``
sampled calendars of what follows, fitted on that live history (plus any history given
up front), and the core's :class:`~learnsched._core.ForecastModel` scores the actions
against the mean over the samples (:func:`learnsched.calendar.decide_under_forecast`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._checks import integer
from ..scenario import HandoffCosts
from ..solver import Action, Policy
from .loop import ModelDecider
from .windows import Window

__all__ = ["FORECASTERS", "ForecastDecider"]

FORECASTERS = ("empirical", "exact")
"""``empirical``: a renewal model fitted on the windows seen; ``exact``: the calendar."""


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

        if forecaster not in FORECASTERS:
            raise ValueError(
                f"forecast must be one of {', '.join(FORECASTERS)}, got {forecaster!r}"
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
        futures: Any = [future[: self.future_windows] for future in sampled]
        scenario = self.scenario([current], progress, durable, active)
        decision = ForecastDecision(scenario, pair, futures, [self.policy])
        return decision.decide(progress, durable, active, self.policy)
