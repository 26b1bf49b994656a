"""Causal scheduling on a request trace: the scheduler knows the arrivals up to now only.

The rules (the C++ core, ``csrc/learnsched/causal/sim.hpp``, states them in full; the docs
page "Causal scheduling" explains them):

* one GPU serves the trace first come, first served as a fluid queue (Eq. 6);
* when the queue empties an idle gap begins; from then on, at every quantum boundary,
  the scheduler may wait a quantum or lend the GPU (load, then quanta of work), and while
  lent work on, save a checkpoint and go on, checkpoint and return, discard and return,
  or abandon; the last quantum publishes; one loan per gap;
* the next arrival (as the gate sees it) forces an immediate return: what is not
  checkpointed by then is lost, and capacity is ready ``t_ret`` after the arrival; the
  requests are then served late as the fluid queue gives, each late request-second
  costing ``lateness_price`` s-eq.

Policies decide from a forecast: the current gap's remaining length given its age (the
survival of past gaps: the gap pool of a :class:`CausalForecast`) and ``N`` sampled
calendars of what follows, whose finite-model tables score the continuation.
``clairvoyant`` is the exact DP of the same rules on the truth (:func:`clairvoyant`): the
best schedule knowing every arrival.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _core
from .._checks import SEED_MAX, fraction, integer, nonnegative, positive
from .._renamed import renamed_kwargs
from ..capacity import Trace
from ..scenario import HandoffCosts, Scenario
from ..solver import Model, Policy
from .decision import FORECAST_POLICIES, SampleTables, sample_tables
from .forecast import Calendar, Forecaster

__all__ = [
    "CAUSAL_MOVES",
    "CAUSAL_PLANS",
    "CAUSAL_POLICIES",
    "CLAIRVOYANT",
    "DEFAULT_CLOSE_S",
    "DEFAULT_GAP_MODEL",
    "DEFAULT_LATENESS_PRICE",
    "DEFAULT_RETURN_LEVEL",
    "FORECASTLESS",
    "GAP_MODELS",
    "CalendarPlan",
    "CausalDecider",
    "CausalForecast",
    "CausalOutcome",
    "CausalRules",
    "CausalTrace",
    "HorizonTooLong",
    "calendar_dp",
    "clairvoyant",
    "core_candidate",
    "run_causal",
]

CAUSAL_POLICIES: tuple[str, ...] = tuple(_core.causal.causal_policies())
"""The causal policies, in output order (``clairvoyant`` is the bound, not one of them):
never (the baseline every verdict pairs against), window, costed_window, rollout, mean_dp,
risk_rollout."""
FORECASTLESS: tuple[str, ...] = ("never", "window")
"""The causal policies that read no forecast."""
CLAIRVOYANT = "clairvoyant"
CAUSAL_PLANS: tuple[str, ...] = tuple(_core.causal.causal_plans())
"""Plan kinds a causal decision compares (scored to the end of the gap)."""
CAUSAL_MOVES: tuple[str, ...] = tuple(_core.causal.causal_moves())
"""The step a decision takes now: wait, work, save, checkpoint_return, discard_return,
abandon."""
GAP_MODELS: tuple[str, ...] = tuple(_core.causal.gap_models())
"""How the current gap is forecast, and the forecasters a study or a causal decision can
use (``learnsched online --forecaster``, ``portfolio causal --forecaster``): past gaps
longer than its age (the renewal model, the default); the last gaps again; their mean."""
DEFAULT_GAP_MODEL = GAP_MODELS[0]
"""The renewal model."""

DEFAULT_LATENESS_PRICE = 1.0
"""s-eq. per late request-second: one second of one request's lateness costs one second of
the GPU, the unit every cost of the model is priced in (see the docs for the argument)."""
DEFAULT_RETURN_LEVEL = 0.95
"""``risk_rollout`` lends only when the chance of a return in time is at least this."""
DEFAULT_CLOSE_S = 300.0
"""A past gap enters the forecast this long after its end, with the requests that arrived
in that time (its record of what a late return costs), seconds."""


class CausalTrace:
    """A request trace as causal scheduling serves it: FIFO, fluid, at ``rate``.

    Parameters
    ----------
    trace
        Requests in arrival order (work units, seconds).
    rate
        Service rate, work units per second.
    synthetic
        Whether the trace was synthesized (labelled so in every output).

    Raises
    ------
    ValueError
        If the trace misses a deadline even with nothing lent.
    """

    def __init__(self, trace: Trace, rate: float = 1.0, synthetic: bool = False) -> None:
        if not isinstance(trace, Trace):
            raise TypeError(f"trace must be a Trace, got {type(trace).__name__}")
        self.trace = trace
        self.rate = positive("rate", rate)
        self.synthetic = bool(synthetic)
        self.schedule = _core.causal.UnlentSchedule(trace.arrival, trace.work / self.rate, trace.deadline)

    @property
    def span_s(self) -> float:
        """The last request's arrival, seconds (the first arrives at the trace's origin)."""
        return float(self.trace.arrival[-1])

    @property
    def requests(self) -> int:
        """Number of requests."""
        return len(self.trace)

    def gaps(self) -> tuple[npt.NDArray[np.float64], ...]:
        """``(start, arrival, return deadline D)`` of every idle gap, seconds."""
        start, arrival, deadline = self.schedule.gaps()
        return start, arrival, deadline

    @renamed_kwargs(return_s="recovery_s")
    def windows(
        self,
        from_s: float,
        to_s: float,
        quantum_s: float,
        recovery_s: float,
        overlap: bool = False,
    ) -> Calendar:
        """The gaps starting in ``[from_s, to_s)`` as a finite-model calendar, each long
        enough to publish one quantum, seconds: ``[g, A]`` (capacity back by the arrival:
        a plan on it is causally feasible, never late and delays nothing), or with
        ``overlap`` ``[g, min(D, A + t_ret, the next gap's start)]`` (the return may run
        into the arrival while every deadline holds; the delay it causes is not priced).
        ``recovery_s`` is the return path ``t_ret``, seconds (``return_s``: its deprecated
        spelling)."""
        pairs = self.schedule.causal_windows(from_s, to_s, quantum_s, recovery_s, overlap)
        return tuple((float(a), float(b)) for a, b in pairs)

    def to_json(self) -> dict[str, Any]:
        """``{"requests", "span_s", "gaps", "rate", "synthetic"}``."""
        return {
            "requests": self.requests,
            "span_s": self.span_s,
            "gaps": int(self.schedule.gap_count),
            "rate": self.rate,
            "synthetic": self.synthetic,
        }


@dataclass(frozen=True)
class CausalRules:
    """The prices and forecast settings of causal scheduling.

    Attributes
    ----------
    lateness_price
        s-eq. per late request-second (:data:`DEFAULT_LATENESS_PRICE`).
    return_level
        ``risk_rollout``'s least chance of a timely return, in ``[0, 1]``.
    history_s
        Fit the gap forecast on the gaps of the last ``history_s`` seconds (None: all), s.
    close_s
        A past gap enters the forecast ``close_s`` seconds after its end, s.
    repeat_last
        Gaps the ``repeat`` gap model cycles through.
    """

    lateness_price: float = DEFAULT_LATENESS_PRICE
    return_level: float = DEFAULT_RETURN_LEVEL
    history_s: float | None = 3600.0
    close_s: float = DEFAULT_CLOSE_S
    repeat_last: int = 8

    def __post_init__(self) -> None:
        nonnegative("lateness_price", self.lateness_price)
        fraction("return_level", self.return_level)
        if self.history_s is not None:
            positive("history_s", self.history_s)
        nonnegative("close_s", self.close_s)
        integer("repeat_last", self.repeat_last, low=1)


def _one_path(costs: HandoffCosts) -> HandoffCosts:
    if costs.cold_recovery_s is not None:
        raise ValueError(
            "causal scheduling has one return path: give warm or cold costs, not both "
            f"(cold_recovery_s = {costs.cold_recovery_s!r})"
        )
    return costs


def core_candidate(scenario: Scenario, lateness_price: float) -> _core.causal.CausalCandidate:
    """The scenario's candidate (its windows are not used) for the causal core."""
    costs = _one_path(scenario.costs)
    core = scenario.to_core()
    return _core.causal.CausalCandidate(
        core.work_quanta,
        core.quantum_s,
        core.benefit_rate,
        core.horizon_s,
        costs.recovery_s,
        costs.residency_rate,
        costs.save_s,
        costs.load_s,
        nonnegative("lateness_price", lateness_price),
        list(core.benefit_schedule),
    )


class CausalForecast:
    """What a causal decision reads at one moment: the current gap's forecast and the
    tables of ``N`` sampled continuations.

    The gap forecast (:class:`learnsched._core.causal.GapPool`) is fitted at ``now_s`` on past
    gaps only (each enters ``close_s`` after its end); the continuations are the
    forecaster's ``N`` calendars of the causal windows after ``now_s``, fitted on those
    same past gaps' windows.

    Parameters
    ----------
    trace
        The trace (only its past before ``now_s`` is read).
    scenario
        The candidate (work, benefit, costs; one return path).
    now_s
        The moment of the fit (e.g. a horizon's start), seconds.
    forecaster
        Draws the continuations; its ``gap_model`` forecasts the current gap.
    samples
        ``N``.
    rng
        Seeds the continuations.
    rules
        History, close time and the like.
    pool
        A gap pool already fitted at ``now_s`` with these rules and this forecaster's gap
        model, to share (e.g. across seeds); fitted anew if None.
    """

    def __init__(
        self,
        trace: CausalTrace,
        scenario: Scenario,
        now_s: float,
        forecaster: Forecaster,
        samples: int,
        rng: np.random.Generator,
        rules: CausalRules | None = None,
        pool: _core.causal.GapPool | None = None,
    ) -> None:
        rules = CausalRules() if rules is None else rules
        model = forecaster.gap_model
        if model is None:
            raise ValueError(
                f"{type(forecaster).__name__} cannot forecast a gap causally: use the "
                "empirical, repeat or mean forecaster"
            )
        costs = _one_path(scenario.costs)
        history = math.inf if rules.history_s is None else rules.history_s
        self.pool = (
            pool
            if pool is not None
            else _core.causal.GapPool(
                trace.schedule,
                now_s,
                history,
                rules.close_s,
                costs.recovery_s,
                model,
                rules.repeat_last,
            )
        )
        observed = self.pool.windows(scenario.quantum_s, costs.recovery_s)
        history_windows = tuple((float(a), float(b)) for a, b in observed)
        n = integer("samples", samples, low=1, high=_core.forecast.MAX_SAMPLES)
        calendars = forecaster.sample(history_windows, now_s, scenario.horizon_s, n, rng)
        self.tables: SampleTables = sample_tables(scenario, calendars, FORECAST_POLICIES)


@dataclass(frozen=True)
class CausalOutcome:
    """One causal policy over one horizon.

    Attributes
    ----------
    value
        Benefit - cost - lateness price * lateness, s-eq.
    benefit, cost
        s-eq.
    lent_s
        Seconds the GPU was lent (loads, work, saves and returns).
    lateness_s
        Request-seconds past the deadline caused by the loans.
    late_requests
        Requests served after their deadline.
    requests
        Requests served in the horizon (the SLO-miss denominator).
    handoffs, checkpoints
        Loans and saved checkpoints.
    publish_s
        Publication time, seconds, or None.
    steps
        Per decision (columns): ``t``, ``gap_start``, ``progress``, ``durable``, ``lent``,
        ``plan`` (index into :data:`CAUSAL_PLANS`), ``quanta``, ``move`` (into
        :data:`CAUSAL_MOVES`), ``reward``, ``late_requests``, ``lateness_s``.
    """

    value: float
    benefit: float
    cost: float
    lent_s: float
    lateness_s: float
    late_requests: int
    requests: int
    handoffs: int
    checkpoints: int
    publish_s: float | None
    steps: dict[str, npt.NDArray[Any]]

    @classmethod
    def _from_core(cls, out: dict[str, Any]) -> CausalOutcome:
        return cls(
            value=float(out["value"]),
            benefit=float(out["benefit"]),
            cost=float(out["cost"]),
            lent_s=float(out["lent_s"]),
            lateness_s=float(out["lateness_s"]),
            late_requests=int(out["late_requests"]),
            requests=int(out["requests"]),
            handoffs=int(out["handoffs"]),
            checkpoints=int(out["checkpoints"]),
            publish_s=float(out["publish_s"]) if out["published"] else None,
            steps=dict(out["steps"]),
        )


def _policy(name: str) -> str:
    if name not in CAUSAL_POLICIES:
        raise ValueError(f"causal policy must be one of {', '.join(CAUSAL_POLICIES)}, got {name!r}")
    return name


def run_causal(
    trace: CausalTrace,
    scenario: Scenario,
    from_s: float,
    to_s: float,
    policies: Sequence[str],
    forecast: CausalForecast | None,
    seed: int = 0,
    rules: CausalRules | None = None,
    keep_steps: bool = False,
    threads: int = 1,
) -> dict[str, CausalOutcome]:
    """Each causal policy over the horizon ``[from_s, to_s)`` of ``trace``.

    Parameters
    ----------
    trace
        The true trace.
    scenario
        The candidate (its windows are not used); ``horizon_s`` is the benefit horizon.
    from_s, to_s
        The gaps beginning in this interval are the decision stages, seconds.
    policies
        Names from :data:`CAUSAL_POLICIES`.
    forecast
        Needed by every policy but those of :data:`FORECASTLESS` (never, window).
    seed
        Seeds the gap draws (one stream per run, consumed in decision order).
    rules
        The lateness price and the risk level.
    keep_steps
        Keep every decision (:attr:`CausalOutcome.steps`).
    threads
        Threads over the policies (the result does not depend on it).
    """
    rules = CausalRules() if rules is None else rules
    candidate = core_candidate(scenario, rules.lateness_price)
    pool = None if forecast is None else forecast.pool
    tables = None if forecast is None else forecast.tables
    stream = _core.causal.stream_seed(integer("seed", seed, low=0, high=SEED_MAX), 0, 0)
    jobs = [
        _core.causal.CausalJob(
            candidate, from_s, to_s, _policy(p), rules.return_level, pool, tables, stream, keep_steps
        )
        for p in policies
    ]
    outs = _core.causal.run_causal(trace.schedule, jobs, integer("threads", threads, low=1))
    return {p: CausalOutcome._from_core(o) for p, o in zip(policies, outs, strict=True)}


def clairvoyant(
    trace: CausalTrace,
    scenario: Scenario,
    from_s: float,
    to_s: float,
    rules: CausalRules | None = None,
    max_nodes: int = 20_000_000,
) -> CausalOutcome:
    """The best schedule of the horizon knowing the whole trace: the exact DP of causal
    scheduling on the truth (its loans may delay later gaps; it is late only where
    lateness pays at the price), replayed on the trace.

    Raises
    ------
    HorizonTooLong
        Past ``max_nodes`` decision states: the horizon ``[from_s, to_s]`` (seconds) is
        too long to solve exactly (a ``ValueError``: bad input, named, not an internal
        error).
    """
    rules = CausalRules() if rules is None else rules
    candidate = core_candidate(scenario, rules.lateness_price)
    nodes = integer("max_nodes", max_nodes, low=1)
    try:
        out = _core.causal.exact_schedule(trace.schedule, candidate, from_s, to_s, nodes)
    except OverflowError as err:
        raise HorizonTooLong(from_s, to_s, str(err)) from err
    return CausalOutcome._from_core(out)


class HorizonTooLong(ValueError):
    """The horizon ``[from_s, to_s]`` (seconds) is too long for the exact clairvoyant:
    ``reason`` says which size ran out. A command names the flags that made it."""

    def __init__(self, from_s: float, to_s: float, reason: str) -> None:
        super().__init__(f"horizon [{from_s:g}, {to_s:g}] s: {reason}; use a shorter horizon")
        self.from_s, self.to_s, self.reason = from_s, to_s, reason

    def __reduce__(self) -> tuple[type[HorizonTooLong], tuple[float, float, str]]:
        return type(self), (self.from_s, self.to_s, self.reason)


@dataclass(frozen=True)
class CalendarPlan:
    """The finite model's DP on a horizon's gaps as the calendar ``[g, A]`` (a lower bound
    of the clairvoyant: capacity is back by each arrival, so it is never late and delays
    nothing).

    Attributes
    ----------
    value
        s-eq.
    windows
        The calendar ``[g, A]``, seconds.
    steps
        The plan's steps (:class:`learnsched.plan.Step`), window by window.
    """

    value: float
    windows: Calendar
    steps: tuple[Any, ...]


def calendar_dp(trace: CausalTrace, scenario: Scenario, from_s: float, to_s: float) -> CalendarPlan:
    """The exact finite-model DP over the causal calendar of the gaps starting in
    ``[from_s, to_s)`` (:meth:`CausalTrace.windows`)."""
    costs = _one_path(scenario.costs)
    windows = trace.windows(from_s, to_s, scenario.quantum_s, costs.recovery_s)
    if not windows:
        return CalendarPlan(0.0, (), ())
    truth = Scenario(
        windows,
        scenario.work_quanta,
        scenario.quantum_s,
        scenario.benefit_rate,
        scenario.horizon_s,
        costs,
    )
    plan = Model(truth).solve(Policy.DP)
    return CalendarPlan(float(plan.value), windows, tuple(plan.steps))


class CausalDecider:
    """Causal decisions at the quantum boundaries of a live idle gap (a control loop's).

    Parameters
    ----------
    scenario
        The candidate (work, benefit, costs with one return path; windows unused).
    policy
        One of :data:`CAUSAL_POLICIES`.
    forecast
        The forecast the decisions read (refit it as history grows).
    rules
        The lateness price and the risk level.
    seed
        Seeds the gap draws.
    """

    def __init__(
        self,
        scenario: Scenario,
        policy: str,
        forecast: CausalForecast | None,
        rules: CausalRules | None = None,
        seed: int = 0,
    ) -> None:
        rules = CausalRules() if rules is None else rules
        self.policy = _policy(policy)
        if forecast is None and self.policy not in FORECASTLESS:
            raise ValueError(f"policy {policy!r} needs a forecast")
        self._decider = _core.causal.CausalDecider(
            core_candidate(scenario, rules.lateness_price),
            self.policy,
            rules.return_level,
            None if forecast is None else forecast.pool,
            None if forecast is None else forecast.tables,
            _core.causal.stream_seed(integer("seed", seed, low=0, high=SEED_MAX), 0, 0),
        )

    def decide(
        self, now_s: float, gap_start_s: float, progress: int, durable: int, lent: bool
    ) -> tuple[str, int, str]:
        """``(plan, quanta, move)`` at ``now_s`` in the gap that began at ``gap_start_s``.

        ``move`` is what to do now: ``wait`` (a quantum), ``work`` (one quantum; lending
        first if idle), ``save`` (checkpoint and go on), ``checkpoint_return``,
        ``discard_return`` or ``abandon``. An arrival ends the gap: return at once.
        """
        plan, quanta, move = self._decider.decide(now_s, gap_start_s, progress, durable, lent)
        return str(plan), int(quanta), str(move)
