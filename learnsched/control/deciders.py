"""Every decider of the scheduler: what the control loop asks at each window.

A :class:`Decider` answers a window's action from the windows ahead and the state
``(p, pbar, active)``; a :class:`MoveDecider` also re-decides at every quantum boundary.

- :class:`ModelDecider`: the model's decision (``Model.decide``) on the windows ahead;
- :class:`ForecastDecider`: the current window is known, the future is sampled. At each
  window the loop knows the window it is in (from its calendar source) and the windows it
  has seen so far; the forecaster of :mod:`learnsched.calendar` draws ``N`` sampled
  calendars of what follows, fitted on that live history (plus any history given up
  front), and the core's :class:`~learnsched._core.forecast.ForecastModel` scores the actions
  against the mean over the samples (:class:`learnsched.calendar.decision.ForecastDecision`);
- :class:`CausalForecastDecider`: not even the current gap's end is known: the causal
  policy of ``learnsched online --trace``, the same C++ decision;
- :class:`QueueDecider`: one job of a trainer queue, the portfolio choosing whom each
  window serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from .._checks import integer, nonnegative, positive
from .._renamed import module_aliases
from ..calendar.causal import DEFAULT_GAP_MODEL, CausalRules
from ..capacity import Trace
from ..job import Job
from ..scenario import HandoffCosts, InitialState, Scenario
from ..solver import Action, ActionKind, Model, Policy
from .lookahead import DEFAULT_LOOKAHEAD, Lookahead
from .windows import Window

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self needs Python 3.11

__all__ = [
    "MOVES",
    "RUN_FORECASTS",
    "CausalForecastDecider",
    "Decider",
    "ForecastDecider",
    "ModelDecider",
    "MoveDecider",
    "QueueDecider",
    "SharedWindows",
]


class Decider(Protocol):
    """Chooses a window's action from the windows ahead and the state."""

    def decide(self, windows: list[Window], progress: int, durable: int, active: bool) -> Action:
        """The action for ``windows[0]`` (the current window) in state ``(p, pbar)``."""
        ...


MOVES = ("work", "save", "checkpoint_return", "discard_return", "abandon", "wait")
"""What a :class:`MoveDecider` may answer between quanta."""


@runtime_checkable
class MoveDecider(Decider, Protocol):
    """A :class:`Decider` that re-decides at every quantum boundary of a window, idle or
    lent (the causal policy, :class:`CausalForecastDecider`).

    While the window is idle the loop asks :meth:`next_move` (``lent=False``) at its
    first boundary and then every quantum (``quantum_s`` of the job) after the window's
    planned start, the engine serving meanwhile: ``wait`` (ask again at the next
    boundary) or ``work`` (park the engine and lend now); an arrival ends the idle
    window. Between two quanta of the loan it asks again (``lent=True``) and obeys the
    ``move``: ``work`` (the next quantum), ``save`` (checkpoint, then the next quantum),
    ``checkpoint_return`` (checkpoint and return now), ``discard_return`` or ``abandon``
    (return now, the unsaved work dropped); ``wait`` while lent returns as a discard
    does (an idle parked engine serves nobody). :meth:`Decider.decide` is asked only at
    an early return.
    """

    def next_move(
        self, now_s: float, gap_start_s: float, progress: int, durable: int, lent: bool
    ) -> tuple[str, int, str]:
        """``(plan, quanta, move)`` at ``now_s`` in the gap that began at ``gap_start_s``
        (loop clock, seconds), in state ``(p, pbar)``."""
        ...


class ModelDecider:
    """``Model.decide`` on a scenario built from the windows ahead, look-ahead capped.

    The scenario's first window is what is left of the current one, so a window
    entered late, a calendar that changed and a restarted loop are all planned exactly;
    it holds at most ``lookahead`` windows (:mod:`.lookahead`: 64 by default), so a
    decision costs the same whatever the calendar's length. One model is kept and
    rebuilt in place for each decision (:meth:`~learnsched.Model.rebuild`), with only
    the policy's own tables.

    Parameters
    ----------
    work_quanta, quantum_s
        ``J`` and ``delta`` (seconds).
    costs
        Handoff costs (``t_ret``, ``rho``, ``t_ck``, ``t_ld``).
    benefit_rate, horizon_s
        ``g`` (s-eq./s) and ``H`` on the loop's clock (seconds).
    policy
        The model's policy (LearnSched's rollout by default).
    lookahead
        How many windows (and seconds) a decision plans over.
    """

    def __init__(
        self,
        work_quanta: int,
        quantum_s: float,
        costs: HandoffCosts,
        benefit_rate: float,
        horizon_s: float,
        policy: str | Policy = Policy.ROLLOUT,
        lookahead: Lookahead = DEFAULT_LOOKAHEAD,
    ) -> None:
        self.work_quanta = work_quanta
        self.quantum_s = positive("quantum_s", quantum_s)
        self.costs = costs
        self.benefit_rate = nonnegative("benefit_rate", benefit_rate)
        self.horizon_s = horizon_s
        self.policy = Policy.parse(policy)
        self.lookahead = lookahead
        self._model: Model | None = None

    @classmethod
    def from_job(cls, job: Job, path: HandoffCosts, *args: Any, **options: Any) -> Self:
        """The decider planning ``job`` (its work, benefit, horizon, save and load; its
        initial state is each decision's) returning by ``path``'s return path; ``args`` and
        ``options`` are the class's own, after the job's fields."""
        costs = job.costs(path.recovery_s, path.residency_rate, path.cold_recovery_s)
        rate = nonnegative("benefit_rate", job.benefit_rate)
        return cls(job.work_quanta, job.quantum_s, costs, rate, job.horizon_s, *args, **options)

    def scenario(
        self, windows: Sequence[Window], progress: int, durable: int, active: bool
    ) -> Scenario:
        """The scenario of the capped ``windows`` with the state ``(p, pbar, active)``
        at the first."""
        # Slice first: the calendar may hold thousands of windows, the plan only the cap.
        pairs = [(w.start_s, w.end_s) for w in windows[: self.lookahead.max_windows]]
        left_s = (self.work_quanta - durable) * self.quantum_s
        handoff_s = self.costs.load_s + self.costs.save_s + self.costs.recovery_s
        return Scenario(
            windows=pairs[: self.lookahead.cut(pairs, left_s, handoff_s)],
            work_quanta=self.work_quanta,
            quantum_s=self.quantum_s,
            benefit_rate=self.benefit_rate,
            horizon_s=self.horizon_s,
            costs=self.costs,
            initial=InitialState(progress, durable, active),
        )

    def decide(self, windows: list[Window], progress: int, durable: int, active: bool) -> Action:
        """See :class:`Decider`."""
        scenario = self.scenario(windows, progress, durable, active)
        if self._model is None:
            self._model = Model(scenario, [self.policy])
        else:
            self._model.rebuild(scenario)
        return self._model.decide(0, progress, durable, active, self.policy)


RUN_FORECASTS = ("empirical", "exact", "causal")
"""What ``learnsched run --forecast`` decides under. ``empirical``: a renewal model fitted
on the windows seen; ``exact``: the calendar (both :class:`ForecastDecider`); ``causal``:
the causal policy, fitted on a request history (:class:`CausalForecastDecider`)."""
EMPIRICAL, EXACT, CAUSAL = RUN_FORECASTS


class ForecastDecider(ModelDecider):
    """A :class:`Decider` that sees the future only through sampled calendars.

    Parameters
    ----------
    work_quanta, quantum_s, costs, benefit_rate, horizon_s
        As for :class:`ModelDecider`.
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
        forecaster: str = EMPIRICAL,
        samples: int = 64,
        history: Sequence[Window] = (),
        truth: Sequence[Window] = (),
        policy: str | Policy = Policy.ROLLOUT,
        seed: int = 0,
        future_windows: int = 20,
    ) -> None:
        from ..calendar.decision import FORECAST_POLICIES
        from ..calendar.forecast import EmpiricalForecaster, ExactForecaster, Forecaster

        if forecaster not in (EMPIRICAL, EXACT):
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
            ExactForecaster(pairs) if forecaster == EXACT else EmpiricalForecaster()
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
        """See :class:`Decider`; ``windows[1:]`` are not used (they are forecast)."""
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
    (:class:`MoveDecider`), and so runs the studied policy. :meth:`decide` is the
    :class:`Decider` of a window-at-a-time loop: at a window's start it maps the
    same decision to a finite-model action (the window's end is not read), and at an
    early return (``active``) it chooses how to return.

    Parameters
    ----------
    work_quanta, quantum_s, costs, benefit_rate, horizon_s
        As for :class:`ModelDecider` (``costs``: one return path).
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
        forecaster: str = DEFAULT_GAP_MODEL,
        rules: CausalRules | None = None,
        rate: float = 1.0,
        seed: int = 0,
    ) -> None:
        from ..calendar.causal import CausalDecider, CausalForecast, CausalTrace
        from ..calendar.study import make_forecaster

        super().__init__(work_quanta, quantum_s, costs, benefit_rate, horizon_s, Policy.ROLLOUT)
        self.rules = CausalRules() if rules is None else rules
        # The history on the loop's clock: its last arrival at 0, every record closed.
        end = float(history.arrival[-1])
        shifted = Trace(history.arrival - end, history.work, history.deadline - end)
        trace = CausalTrace(shifted, rate)
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
        """See :class:`Decider`: the causal decision at ``windows[0]``'s start,
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


class SharedWindows(Protocol):
    """What a :class:`QueueDecider` asks of the queue whose jobs share the windows
    (:class:`~learnsched.control.queue.TrainerQueue`)."""

    handover_end: float
    """The end of the window last handed over to another job, seconds (queue clock)."""

    def decide(
        self, windows: list[Any], running: int, progress: int, durable: int, active: bool
    ) -> tuple[int | None, Any]:
        """The job the current window goes to (``None``: serving) and its action."""
        ...

    def hand_over(self, job: int, window_end_s: float) -> None:
        """Give the window that ends at ``window_end_s`` to job ``job``."""
        ...


class QueueDecider:
    """The :class:`Decider` of job ``index`` in a
    :class:`~learnsched.control.queue.TrainerQueue`:
    the portfolio's rollout decision on the windows ahead, that job's action when the
    window is its own; a wait (and the loop stopped, for the job named) otherwise."""

    def __init__(self, queue: SharedWindows, index: int) -> None:
        self.queue = queue
        self.index = index

    def decide(self, windows: list[Any], progress: int, durable: int, active: bool) -> Any:
        """See :class:`Decider`."""
        choice, action = self.queue.decide(windows, self.index, progress, durable, active)
        if choice == self.index:
            return action
        # A window is handed over once: the job it went to keeps it (its trainer's start-up
        # took some of it, which may tip the portfolio back), so no window ping-pongs.
        if choice is not None and self.queue.handover_end != windows[0].end_s:
            self.queue.hand_over(choice, windows[0].end_s)
        return Action(ActionKind.WAIT)


__getattr__ = module_aliases(__name__, globals(), {"FORECASTERS": "RUN_FORECASTS"})
