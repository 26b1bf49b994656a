"""Online evaluation: the scheduler re-plans at every true window under a forecast.

At true window ``k`` the scheduler knows the windows seen so far, including the current
one ``[l_k, d_k]``, asks its forecaster for ``N`` sampled calendars after ``d_k``, and each
policy decides in the C++ core (:class:`~learnsched.calendar.ForecastDecision`): ``window``
needs no forecast; ``costed_window`` gates Window by the mean priced Window plan;
``rollout`` scores every feasible action by ``R(a) + mean_i V_i^pi0(s')`` (Eq. 11);
``dp`` by ``R(a) + mean_i V_i*(s')`` (Eq. D.2). The action is then taken on the true
window, so Eq. 10 always holds on the truth. ``clairvoyant`` is the exact DP on the true
calendar, the information bound: its advantage over a policy is that policy's regret,
the value of calendar information.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import _core
from .._checks import integer
from ..plan import Step
from ..scenario import Scenario
from ..solver import ActionKind, Model, Policy
from .decision import FORECAST_POLICIES, ForecastDecision, SampleTables, sample_tables
from .forecast import Calendar, ExactForecaster, Forecaster, calendar

__all__ = [
    "ONLINE_POLICIES",
    "OnlineCase",
    "OnlineResult",
    "PolicyOutcome",
    "PolicySummary",
    "evaluate_online",
    "run_calendar",
]

CLAIRVOYANT = "clairvoyant"
ONLINE_POLICIES = (*(p.value for p in FORECAST_POLICIES), CLAIRVOYANT)
"""Every policy name of an online evaluation."""


@dataclass(frozen=True)
class OnlineCase:
    """One true calendar and how the scheduler forecasts it.

    Attributes
    ----------
    scenario
        The candidate and the *true* calendar (``scenario.windows``).
    forecaster
        Draws the sampled futures at every window.
    samples
        ``N``, the number of sampled calendars per decision.
    history
        Windows observed before the first true window (e.g. a trace's past), seconds.
    until_s
        The forecast stops before this time (the end of the planning horizon), s.
    """

    scenario: Scenario
    forecaster: Forecaster
    samples: int = 1
    history: Calendar = ()
    until_s: float = math.inf

    def __post_init__(self) -> None:
        if not isinstance(self.scenario, Scenario):
            raise TypeError(f"scenario must be a Scenario, got {type(self.scenario).__name__}")
        if not isinstance(self.forecaster, Forecaster):
            raise TypeError(
                f"forecaster must be a Forecaster, got {type(self.forecaster).__name__}"
            )
        integer("samples", self.samples, low=1, high=_core.MAX_SAMPLES)
        object.__setattr__(self, "history", calendar("history", self.history, allow_empty=True))

    @classmethod
    def exact(cls, scenario: Scenario) -> OnlineCase:
        """The paper's setting: the forecast is the true calendar."""
        return cls(scenario, ExactForecaster(tuple(scenario.windows)), samples=1)


@dataclass(frozen=True)
class PolicyOutcome:
    """One policy on one true calendar.

    Attributes
    ----------
    value
        Realised net value on the true calendar, s-eq.
    handoffs
        Windows in which the GPU was taken from serving and returned.
    checkpoints
        Checkpoints saved.
    steps
        The realised steps, true window indices.
    """

    value: float
    handoffs: int
    checkpoints: int
    steps: tuple[Step, ...]


def _fixed_tables(case: OnlineCase, threads: int) -> SampleTables | None:
    """Tables of the forecaster's fixed samples, built once for every window, or None."""
    fixed = case.forecaster.fixed(case.samples)
    if fixed is None:
        return None
    if math.isfinite(case.until_s):  # as sample() would cut them
        fixed = [tuple(w for w in c if w[0] < case.until_s) for c in fixed]
    return sample_tables(case.scenario, fixed, FORECAST_POLICIES, threads)


def _outcome(steps: list[Step]) -> PolicyOutcome:
    value = 0.0
    for step in steps:  # summed in the order Model.solve sums, so exact mode matches it
        value += step.value
    return PolicyOutcome(
        value=value,
        handoffs=sum(step.action != "wait" for step in steps),
        checkpoints=sum(step.checkpoint for step in steps),
        steps=tuple(steps),
    )


def run_calendar(
    case: OnlineCase, rng: np.random.Generator, threads: int = 1
) -> dict[str, PolicyOutcome]:
    """Every online policy on one true calendar, re-planning at every window.

    Returns
    -------
    dict
        :data:`ONLINE_POLICIES` to their outcome.
    """
    scenario = case.scenario
    states = dict.fromkeys(FORECAST_POLICIES, scenario.initial.to_core())
    steps: dict[Policy, list[Step]] = {p: [] for p in FORECAST_POLICIES}
    live = list(FORECAST_POLICIES)
    tables = _fixed_tables(case, integer("threads", threads, low=1))
    two_path = scenario.costs.cold_recovery_s is not None  # steps name their return path
    for k, window in enumerate(scenario.windows):
        if not live:
            break
        if tables is not None:  # the same samples at every window: rows of one build
            decision = ForecastDecision.from_tables(scenario, window, tables)
        else:
            observed = case.history + tuple(scenario.windows[: k + 1])
            futures = case.forecaster.sample(observed, window[0], case.until_s, case.samples, rng)
            decision = ForecastDecision(scenario, window, futures, live, threads)
        for policy in tuple(live):
            s = states[policy]
            action = decision.decide(s.progress, s.durable, s.active, policy)
            segment = decision.take(s.progress, s.durable, s.active, action)
            steps[policy].append(replace(Step.from_core(segment, two_path), window=k))
            if action.kind in (ActionKind.PUBLISH, ActionKind.ABANDON):
                live.remove(policy)
            else:
                states[policy] = segment.next
    out = {p.value: _outcome(steps[p]) for p in FORECAST_POLICIES}
    plan = Model(scenario).solve(Policy.DP)
    out[CLAIRVOYANT] = _outcome(list(plan.steps))
    return out


@dataclass(frozen=True)
class PolicySummary:
    """One policy over every true calendar of an evaluation.

    Attributes
    ----------
    values
        Realised value per calendar, s-eq.
    regrets
        ``clairvoyant`` minus this policy, per calendar, s-eq. (>= 0).
    handoffs, checkpoints
        Per calendar.
    """

    values: tuple[float, ...]
    regrets: tuple[float, ...]
    handoffs: tuple[int, ...]
    checkpoints: tuple[int, ...]

    @property
    def mean_value(self) -> float:
        """Mean realised value, s-eq."""
        return float(np.mean(self.values))

    @property
    def ci95(self) -> tuple[float, float] | None:
        """95% Student-t confidence interval of the mean value (None for one calendar), s-eq."""
        n = len(self.values)
        if n < 2:
            return None
        from scipy.special import stdtrit  # Student t quantile; scipy.stats loads far more

        half = float(stdtrit(n - 1, 0.975) * np.std(self.values, ddof=1) / math.sqrt(n))
        return (self.mean_value - half, self.mean_value + half)

    @property
    def mean_regret(self) -> float:
        """Mean regret to ``clairvoyant``, s-eq."""
        return float(np.mean(self.regrets))

    def to_json(self) -> dict[str, Any]:
        """``{"values", "mean_value", "ci95", "mean_regret", "handoffs", "checkpoints"}``;
        handoffs and checkpoints are means per calendar."""
        ci = self.ci95
        return {
            "values": list(self.values),
            "mean_value": self.mean_value,
            "ci95": None if ci is None else list(ci),
            "mean_regret": self.mean_regret,
            "handoffs": float(np.mean(self.handoffs)),
            "checkpoints": float(np.mean(self.checkpoints)),
        }


@dataclass(frozen=True)
class OnlineResult:
    """An online evaluation: per policy summaries and every calendar's outcomes."""

    policies: dict[str, PolicySummary]
    outcomes: tuple[dict[str, PolicyOutcome], ...]

    def to_json(self) -> dict[str, Any]:
        """``{"policies": {NAME: {...}}}`` as ``learnsched online --json`` prints it."""
        return {"policies": {name: s.to_json() for name, s in self.policies.items()}}


def evaluate_online(cases: Sequence[OnlineCase], seed: int = 0, threads: int = 1) -> OnlineResult:
    """Run every policy online over every case (true calendar).

    Parameters
    ----------
    cases
        The true calendars with their forecasters (at least one).
    seed
        Seed of the forecasts: calendar ``i`` draws from ``default_rng([seed, i])``, so the
        result depends only on the seed, never on ``threads``.
    threads
        Threads over each decision's samples.
    """
    if not cases:
        raise ValueError("cases must hold at least one true calendar")
    seed = integer("seed", seed, low=0)
    outcomes = tuple(
        run_calendar(case, np.random.default_rng([seed, i]), threads)
        for i, case in enumerate(cases)
    )
    best = [o[CLAIRVOYANT].value for o in outcomes]
    policies = {
        name: PolicySummary(
            values=tuple(o[name].value for o in outcomes),
            regrets=tuple(b - o[name].value for b, o in zip(best, outcomes, strict=True)),
            handoffs=tuple(o[name].handoffs for o in outcomes),
            checkpoints=tuple(o[name].checkpoints for o in outcomes),
        )
        for name in ONLINE_POLICIES
    }
    return OnlineResult(policies, outcomes)
