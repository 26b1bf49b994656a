"""Online evaluation: the scheduler re-plans at every true window under a forecast.

At true window ``k`` the scheduler knows the windows seen so far, including the current
one ``[l_k, d_k]``, asks its forecaster for ``N`` sampled calendars after ``d_k``, and each
policy decides in the C++ core (:class:`~learnsched.calendar.ForecastDecision`): ``window``
needs no forecast; ``costed_window`` gates Window by the mean priced Window plan;
``rollout`` scores every feasible action by ``R(a) + mean_i V_i^pi0(s')`` (Eq. 11);
``mean_dp`` by ``R(a) + mean_i V_i*(s')`` (Eq. D.2 per sample: each sample's own optimum,
averaged, an optimistic score). The action is then taken on the true
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
from .._checks import FloatArray, integer
from ..plan import Step, Steps
from ..scenario import Scenario
from ..solver import ActionKind, Model, Policy, core_policy
from .decision import (
    FORECAST_NAMES,
    FORECAST_POLICIES,
    ForecastDecision,
    SampleTables,
    packed_tables,
)
from .forecast import Calendar, ExactForecaster, Forecaster, before, calendar
from .summary import PolicySummary, differences, preload

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
ONLINE_POLICIES = (*(FORECAST_NAMES[p] for p in FORECAST_POLICIES), CLAIRVOYANT)
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
        integer("samples", self.samples, low=1, high=_core.forecast.MAX_SAMPLES)
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
    steps: Sequence[Step]


def _fixed_tables(case: OnlineCase, threads: int) -> SampleTables | None:
    """Tables of the forecaster's fixed samples, built once for every window, or None."""
    fixed = case.forecaster.fixed_packed(case.samples)
    if fixed is None:
        return None
    return packed_tables(case.scenario, before(fixed, case.until_s), FORECAST_POLICIES, threads)


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


_WAIT = int(_core.finite.ActionKind.WAIT)


def _plan_outcome(plan: _core.finite.Plan, two_path: bool) -> PolicyOutcome:
    """A plan from the core as an outcome (its steps read lazily)."""
    steps = Steps(plan, two_path)
    columns = steps.columns()
    return PolicyOutcome(
        value=plan.value,
        handoffs=int(np.count_nonzero(columns["kind"] != _WAIT)),
        checkpoints=int(np.count_nonzero(columns["checkpoint"])),
        steps=steps,
    )


def _run_fixed(cases: Sequence[OnlineCase], threads: int) -> list[dict[str, PolicyOutcome]]:
    """Cases whose forecasts are fixed, run in the core on threads over the cases."""
    jobs = []
    for case in cases:
        fixed = case.forecaster.fixed_packed(case.samples)
        assert fixed is not None
        windows, offsets = before(fixed, case.until_s)
        jobs.append((case.scenario.to_core(), windows, offsets))
    policies = [core_policy(p) for p in FORECAST_POLICIES]
    plans = _core.forecast.run_online(jobs, policies, threads)
    out = []
    for case, case_plans in zip(cases, plans, strict=True):
        two_path = case.scenario.costs.cold_recovery_s is not None
        out.append(
            {
                n: _plan_outcome(p, two_path)
                for n, p in zip(ONLINE_POLICIES, case_plans, strict=True)
            }
        )
    return out


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
    out = {FORECAST_NAMES[p]: _outcome(steps[p]) for p in FORECAST_POLICIES}
    plan = Model(scenario).solve(Policy.DP)
    out[CLAIRVOYANT] = _outcome(list(plan.steps))
    return out


@dataclass(frozen=True)
class OnlineResult:
    """An online evaluation: per policy summaries and every calendar's outcomes."""

    policies: dict[str, PolicySummary]
    outcomes: tuple[dict[str, PolicyOutcome], ...]

    def to_json(self) -> dict[str, Any]:
        """``{"policies": {NAME: {...}}, "differences": [...]}`` as ``learnsched online
        --json`` prints it (differences paired by calendar)."""
        return {
            "policies": {name: s.to_json() for name, s in self.policies.items()},
            "differences": [d.to_json() for d in differences(self.policies)],
        }


def _one_seed(
    cases: Sequence[OnlineCase], seed: int, threads: int, fixed: dict[int, dict[str, PolicyOutcome]]
) -> tuple[dict[str, PolicyOutcome], ...]:
    return tuple(
        fixed[i] if i in fixed else run_calendar(case, np.random.default_rng([seed, i]), threads)
        for i, case in enumerate(cases)
    )


def evaluate_online(
    cases: Sequence[OnlineCase],
    seed: int = 0,
    threads: int = 1,
    seeds: Sequence[int] | None = None,
) -> OnlineResult:
    """Run every policy online over every case (true calendar).

    Cases whose forecast is fixed (the exact forecast, a SPEC's samples) run wholly in the
    core, on ``threads`` threads over the cases (once: no seed changes them); the others
    re-sample at every window, with ``threads`` threads over each decision's samples.

    Parameters
    ----------
    cases
        The true calendars with their forecasters (at least one).
    seed
        Seed of the forecasts: calendar ``i`` draws from ``default_rng([seed, i])``, so the
        result depends only on the seed, never on ``threads``.
    threads
        Threads (see above).
    seeds
        Several seeds instead of ``seed``: the summaries hold one row per seed, the
        outcomes are the first seed's.
    """
    if not cases:
        raise ValueError("cases must hold at least one true calendar")
    chosen = (
        [integer("seed", seed, low=0)]
        if seeds is None
        else [integer("seeds", s, low=0) for s in seeds]
    )
    if not chosen:
        raise ValueError("seeds must list at least one seed")
    threads = integer("threads", threads, low=1)
    # With threads to spare, the summary's statistics load while the core runs.
    loading = preload() if threads > 1 else None
    index = [i for i, c in enumerate(cases) if c.forecaster.fixed_packed(c.samples) is not None]
    fixed = dict(zip(index, _run_fixed([cases[i] for i in index], threads), strict=True))
    runs = [_one_seed(cases, s, threads, fixed) for s in chosen]
    if loading is not None:
        loading.join()
    best = np.array([[o[CLAIRVOYANT].value for o in run] for run in runs])
    zeros = np.zeros(best.shape)

    def matrix(name: str, field: str) -> FloatArray:
        return np.array([[getattr(o[name], field) for o in run] for run in runs], dtype=np.float64)

    policies = {}
    for name in ONLINE_POLICIES:
        values = matrix(name, "value")
        policies[name] = PolicySummary(
            values_by_seed=values,
            regrets_by_seed=best - values,
            handoffs_by_seed=matrix(name, "handoffs"),
            checkpoints_by_seed=matrix(name, "checkpoints"),
            late_by_seed=zeros,
            lateness_by_seed=zeros,
        )
    return OnlineResult(policies, runs[0])
