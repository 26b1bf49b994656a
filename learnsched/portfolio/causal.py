"""Causal portfolios: the candidates share one GPU serving a request trace, knowing the
arrivals up to now only (docs/portfolio.md, "Causal mode").

The rules are causal scheduling's (:mod:`learnsched.calendar.causal`): FIFO fluid service,
idle gaps whose end is unknown, a decision at every quantum boundary, an arrival forcing
the return (capacity back ``t_ret`` after it), lateness charged at the lateness price.
What a portfolio adds: at every quantum boundary of an idle gap, each unfinished
candidate's own causal decision (its forecast tables, one shared gap forecast) is asked,
and the GPU goes to at most one of them for the gap (one loan per gap); lent, that
candidate's decisions move until it returns. The C++ core is
``csrc/learnsched/portfolio/causal.hpp``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .. import _core
from .._checks import SEED_MAX, integer
from .._renamed import module_aliases
from ..calendar.causal import (
    CAUSAL_POLICIES,
    DEFAULT_GAP_MODEL,
    FORECASTLESS,
    CausalForecast,
    CausalRules,
    CausalTrace,
    core_candidate,
)
from ..calendar.forecast import Forecaster
from ..scenario import HandoffCosts, InitialState, Scenario
from .model import Portfolio, PortfolioCandidate, PortfolioModel, PortfolioPolicy
from .study import PolicyStats, StudyResult

__all__ = [
    "CAUSAL_PORTFOLIO_POLICIES",
    "CAUSAL_SETTINGS",
    "KNOWN_CALENDAR",
    "CausalPolicyStats",
    "CausalPortfolioOutcome",
    "CausalStudyResult",
    "candidate_scenario",
    "causal_draw",
    "known_calendar",
    "run_causal_study",
    "run_portfolio_causal",
    "study_candidates",
]

CAUSAL_PORTFOLIO_POLICIES: tuple[str, ...] = tuple(_core.portfolio.causal_portfolio_policies())
"""How an idle quantum boundary is shared out: ``sequential`` (one candidate at a time in
list order, until it publishes or abandons: the one-candidate scheduler run job by job),
``density`` (among the candidates whose own decision lends now, the one whose remaining
work earns most per second of it), ``gain`` (among them, the largest expected gain of
lending now over waiting, from its forecast)."""
KNOWN_CALENDAR = "known_calendar"
"""The reference that knows every arrival: the portfolio's rollout on the horizon's
calendar ``[g, A]`` (capacity back by each arrival, so never late; a lower bound of what a
clairvoyant portfolio earns)."""


@dataclass(frozen=True)
class CausalPortfolioOutcome:
    """One portfolio policy over one horizon of a trace.

    Attributes
    ----------
    value
        Benefit - cost - lateness price * lateness, s-eq.
    benefit, cost
        s-eq.
    gpu_s
        Seconds the GPU was lent (load, work, save, return), s.
    lateness_s
        Request-seconds past the deadline caused by the loans.
    late_requests, requests
        Requests served late, and served, in the horizon (None for the known calendar).
    handoffs, checkpoints
        Loans and saved checkpoints.
    publish_s
        Per candidate name: publication time, seconds, or None.
    loans
        Per candidate name: gaps lent to it.
    steps
        Every decision: ``(t, candidate, move)``, the time (seconds), the candidate the GPU
        is held for (None: it waits) and the move (:data:`learnsched.calendar.causal.CAUSAL_MOVES`);
        empty for the known calendar (its plan is a :class:`learnsched.portfolio.PortfolioPlan`).
    """

    value: float
    benefit: float
    cost: float
    gpu_s: float
    lateness_s: float
    late_requests: int
    requests: int | None
    handoffs: int
    checkpoints: int
    publish_s: dict[str, float | None]
    loans: dict[str, int]
    steps: tuple[tuple[float, str | None, str], ...] = ()

    @property
    def slo_misses(self) -> float | None:
        """Late requests over the requests served (the bad-request rate of Eq. A.2 with no
        failures); None for the known calendar, which serves no trace."""
        if self.requests is None:
            return None
        return self.late_requests / self.requests if self.requests else 0.0

    def to_json(self) -> dict[str, Any]:
        """``value``, ``publish_s``, ``gpu_s`` (as a portfolio plan's), then ``benefit``,
        ``cost``, ``late_requests``, ``lateness_s``, ``requests``, ``slo_misses``,
        ``handoffs``, ``checkpoints`` and ``loans``."""
        return {
            "value": self.value,
            "publish_s": dict(self.publish_s),
            "gpu_s": self.gpu_s,
            "benefit": self.benefit,
            "cost": self.cost,
            "late_requests": self.late_requests,
            "lateness_s": self.lateness_s,
            "requests": self.requests,
            "slo_misses": self.slo_misses,
            "handoffs": self.handoffs,
            "checkpoints": self.checkpoints,
            "loans": dict(self.loans),
        }


def _check_causal(portfolio: Portfolio) -> None:
    """What causal mode cannot take, named."""
    if portfolio.cold_recovery_s is not None:
        raise ValueError(
            "causal mode has one return path: give recovery_s, not warm_recovery_s and "
            f"cold_recovery_s (cold_recovery_s = {portfolio.cold_recovery_s!r})"
        )
    if portfolio.budget_gpu_s is not None:
        raise ValueError(
            "causal mode has no GPU-second budget (a loan's length is not known when it "
            f"starts): drop budget_gpu_s = {portfolio.budget_gpu_s!r}"
        )
    for i, c in enumerate(portfolio.candidates):
        where = f"candidates[{i}] ({c.name})"
        if c.half_life_s is not None:
            raise ValueError(
                f"{where}: causal mode has no age decay, drop half_life_s = {c.half_life_s!r}"
            )
        if c.initial.active:
            raise ValueError(
                f"{where}: causal mode starts with the GPU serving; initial.active must be false"
            )
        if c.initial.progress != c.initial.durable:
            raise ValueError(
                f"{where}: an idle candidate keeps its durable progress only: "
                f"initial.progress = {c.initial.progress} must equal initial.durable = "
                f"{c.initial.durable}"
            )


def candidate_scenario(candidate: PortfolioCandidate, portfolio: Portfolio) -> Scenario:
    """The candidate as a finite-model scenario with the portfolio's return path (its
    calendar, one placeholder window at the horizon, and its initial state are not used)."""
    end = candidate.horizon_s
    path = HandoffCosts(portfolio.recovery_s, portfolio.residency_rate)
    return replace(candidate.job, initial=InitialState()).scenario(((end, end + 1.0),), path)


def known_calendar(
    trace: CausalTrace, portfolio: Portfolio, from_s: float, to_s: float
) -> CausalPortfolioOutcome:
    """:data:`KNOWN_CALENDAR`: the portfolio's rollout on the calendar ``[g, A]`` of the
    gaps starting in ``[from_s, to_s)``, each long enough for the finest quantum."""
    _check_causal(portfolio)
    quantum = min(c.quantum_s for c in portfolio.candidates)
    windows = trace.windows(from_s, to_s, quantum, portfolio.recovery_s)
    names = [c.name for c in portfolio.candidates]
    if not windows:
        return CausalPortfolioOutcome(
            0.0, 0.0, 0.0, 0.0, 0.0, 0, None, 0, 0, dict.fromkeys(names), dict.fromkeys(names, 0)
        )
    known = Portfolio(
        gpus=(windows,),
        recovery_s=portfolio.recovery_s,
        residency_rate=portfolio.residency_rate,
        candidates=portfolio.candidates,
    )
    plan = PortfolioModel(known, [PortfolioPolicy.ROLLOUT]).solve(PortfolioPolicy.ROLLOUT)
    loans = dict.fromkeys(names, 0)
    for step in plan.steps:
        if step.candidate is not None:
            loans[step.candidate] += 1
    return CausalPortfolioOutcome(
        value=plan.value,
        benefit=plan.benefit,
        cost=plan.cost.total,
        gpu_s=plan.gpu_s,
        lateness_s=0.0,
        late_requests=0,
        requests=None,
        handoffs=sum(loans.values()),
        checkpoints=sum(1 for s in plan.steps if s.checkpoint),
        publish_s=dict(plan.publish_s),
        loans=loans,
    )


def run_portfolio_causal(
    trace: CausalTrace,
    portfolio: Portfolio,
    from_s: float,
    to_s: float,
    forecaster: Forecaster,
    policies: Sequence[str] = CAUSAL_PORTFOLIO_POLICIES,
    *,
    candidate_policy: str = "risk_rollout",
    samples: int = 16,
    seed: int = 0,
    rules: CausalRules | None = None,
) -> dict[str, CausalPortfolioOutcome]:
    """Each portfolio policy (and, if named, :data:`KNOWN_CALENDAR`) over the horizon
    ``[from_s, to_s)`` of ``trace``.

    Parameters
    ----------
    trace
        The true trace (seconds from its first request).
    portfolio
        The candidates and the shared return path (one path, no budget, no age decay, no
        active candidate; its GPUs' windows are not used: the trace's gaps are the windows).
    from_s, to_s
        The gaps beginning in this interval are the decision stages, seconds.
    forecaster
        Fitted at ``from_s`` on the trace before it; draws each candidate's continuations.
    policies
        Names from :data:`CAUSAL_PORTFOLIO_POLICIES`, or :data:`KNOWN_CALENDAR`.
    candidate_policy
        Each candidate's own causal decision (:data:`learnsched.calendar.causal.CAUSAL_POLICIES`;
        default ``risk_rollout``, which prices the risk of a late return: see the study).
    samples
        ``N``: sampled continuations per candidate.
    seed
        Seeds the continuations and the gap draws: every candidate reads the same draws
        (common random numbers; with one candidate, those of
        :func:`learnsched.calendar.causal.run_causal`).
    rules
        Lateness price, risk level and the gap forecast's history.
    """
    _check_causal(portfolio)
    rules = CausalRules() if rules is None else rules
    if candidate_policy not in CAUSAL_POLICIES:
        raise ValueError(
            f"candidate_policy must be one of {', '.join(CAUSAL_POLICIES)}, got "
            f"{candidate_policy!r}"
        )
    for p in policies:
        if p not in (*CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR):
            raise ValueError(
                f"causal portfolio policy must be one of "
                f"{', '.join((*CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR))}, got {p!r}"
            )
    seed = integer("seed", seed, low=0, high=SEED_MAX)
    scenarios = [candidate_scenario(c, portfolio) for c in portfolio.candidates]
    core = [core_candidate(s, rules.lateness_price) for s in scenarios]
    forecasts: list[CausalForecast | None] = []
    if candidate_policy not in FORECASTLESS:
        pool = None
        for scenario in scenarios:
            rng = np.random.default_rng([seed, 0])  # the same draws for every candidate
            forecast = CausalForecast(
                trace, scenario, from_s, forecaster, samples, rng, rules, pool=pool
            )
            pool = forecast.pool
            forecasts.append(forecast)
    else:
        forecasts = [None] * len(scenarios)
    durable = [c.initial.durable for c in portfolio.candidates]
    stream = _core.causal.stream_seed(seed, 0, 0)
    names = [c.name for c in portfolio.candidates]
    out: dict[str, CausalPortfolioOutcome] = {}
    for p in policies:
        if p == KNOWN_CALENDAR:
            out[p] = known_calendar(trace, portfolio, from_s, to_s)
            continue
        r = _core.portfolio.run_portfolio_causal(
            trace.schedule,
            core,
            durable,
            [None if f is None else f.pool for f in forecasts],
            [None if f is None else f.tables for f in forecasts],
            from_s,
            to_s,
            p,
            candidate_policy,
            rules.return_level,
            stream,
        )
        out[p] = CausalPortfolioOutcome(
            value=float(r["value"]),
            benefit=float(r["benefit"]),
            cost=float(r["cost"]),
            gpu_s=float(r["gpu_s"]),
            lateness_s=float(r["lateness_s"]),
            late_requests=int(r["late_requests"]),
            requests=int(r["requests"]),
            handoffs=int(r["handoffs"]),
            checkpoints=int(r["checkpoints"]),
            publish_s={
                n: None if math.isnan(t) else float(t)
                for n, t in zip(names, r["publish_s"], strict=True)
            },
            loans=dict(zip(names, (int(k) for k in r["loans"]), strict=True)),
            steps=tuple(
                (float(t), None if c < 0 else names[c], str(m))
                for t, c, m in zip(
                    r["steps"]["t"], r["steps"]["candidate"], r["steps"]["move"], strict=True
                )
            ),
        )
    return out


# --- the causal study -------------------------------------------------------------------------

CAUSAL_SETTINGS = ("azure_causal", "azure_causal_warm")
"""The causal study's settings: the shipped trace with the paper's cold or warm return path."""
STUDY_CANDIDATE_POLICY = "risk_rollout"
"""Each candidate's own decision in the study (see the docs for rollout's numbers)."""
CAUSAL_STUDY_POLICIES: tuple[str, ...] = (*CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR)
"""The causal study's portfolio policies, and the rollout on the known calendar."""
HORIZON_S = 600.0
WARMUP_S = 600.0
TAIL_S = 480.0
CANDIDATES = 24
SAMPLES = 16


@dataclass(frozen=True)
class CausalPolicyStats(PolicyStats):
    """:class:`learnsched.portfolio.study.PolicyStats` with the lateness a draw caused.

    Attributes
    ----------
    late_requests
        Requests served late per draw (summed over its horizons).
    lateness_s
        Their request-seconds past the deadline per draw.
    requests
        Requests served per draw (None for the known calendar).
    """

    late_requests: tuple[int, ...] = ()
    lateness_s: tuple[float, ...] = ()
    requests: tuple[int | None, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """:meth:`PolicyStats.to_json`, the mean ``late_requests`` and ``lateness_s``, and
        ``slo_misses``: late requests over requests served, pooled over the draws (None for
        the known calendar)."""
        served = [r for r in self.requests if r is not None]
        misses = None
        if served and len(served) == len(self.requests):
            total = sum(served)
            misses = sum(self.late_requests) / total if total else 0.0
        return {
            **super().to_json(),
            "mean_late_requests": float(np.mean(self.late_requests)),
            "mean_lateness_s": float(np.mean(self.lateness_s)),
            "slo_misses": misses,
        }


@dataclass(frozen=True)
class CausalStudyResult(StudyResult):
    """:class:`learnsched.portfolio.study.StudyResult` whose tables add the mean late
    requests and late request-seconds per draw."""

    _COLUMNS: ClassVar[tuple[tuple[str, int, str], ...]] = (
        ("setting", 19, "<"),
        *StudyResult._COLUMNS[1:],
        ("late req.", 11, ">"),
        ("late s", 10, ">"),
    )

    def _rows(self) -> list[tuple[str, ...]]:
        late = [
            (f"{j['mean_late_requests']:.1f}", f"{j['mean_lateness_s']:.1f}")
            for policies in self.settings.values()
            for stats in policies.values()
            for j in (stats.to_json(),)
        ]
        return [row + extra for row, extra in zip(super()._rows(), late, strict=True)]


def study_candidates(
    rng: np.random.Generator, end_s: float, costs: HandoffCosts
) -> list[PortfolioCandidate]:
    """24 candidates drawn like the paper grid's (6, 12, 24 or 36 quanta of 5 s; rates 0.1,
    0.25, 0.5, 1 or 2 s-eq./s), their benefit until ``TAIL_S`` after ``end_s``."""
    return [
        PortfolioCandidate(
            name=f"c{i:02d}",
            work_quanta=int(rng.choice([6, 12, 24, 36])),
            quantum_s=5.0,
            benefit_rate=float(rng.choice([0.1, 0.25, 0.5, 1.0, 2.0])),
            horizon_s=end_s + TAIL_S,
            save_s=costs.save_s,
            load_s=costs.load_s,
        )
        for i in range(CANDIDATES)
    ]


def causal_draw(
    trace: CausalTrace,
    costs: HandoffCosts,
    seed: int,
    candidate_policy: str = STUDY_CANDIDATE_POLICY,
    policies: Sequence[str] = CAUSAL_STUDY_POLICIES,
) -> dict[str, list[CausalPortfolioOutcome]]:
    """One draw of the causal study: every horizon of ``HORIZON_S`` after ``WARMUP_S``, each
    with 24 fresh candidates (drawn from ``seed``), every policy, forecasts seeded by
    ``seed`` and the horizon. Per policy, its outcome per horizon."""
    from ..calendar.study import horizon_starts, make_forecaster

    rng = np.random.default_rng([integer("seed", seed, low=0), 11])
    forecaster = make_forecaster(DEFAULT_GAP_MODEL)
    out: dict[str, list[CausalPortfolioOutcome]] = {p: [] for p in policies}
    for h, start in enumerate(horizon_starts(trace.span_s, WARMUP_S, HORIZON_S)):
        end = start + HORIZON_S
        portfolio = Portfolio.on_windows(((start, end),), costs, study_candidates(rng, end, costs))
        runs = run_portfolio_causal(
            trace,
            portfolio,
            start,
            end,
            forecaster,
            policies,
            candidate_policy=candidate_policy,
            samples=SAMPLES,
            seed=seed * 1000 + h,
        )
        for p in policies:
            out[p].append(runs[p])
    return out


def _served(runs: list[CausalPortfolioOutcome]) -> int | None:
    counts = [r.requests for r in runs]
    return None if None in counts else sum(c for c in counts if c is not None)


def run_causal_study(
    seeds: int = 10,
    settings: Sequence[str] = CAUSAL_SETTINGS,
    candidate_policy: str = STUDY_CANDIDATE_POLICY,
) -> CausalStudyResult:
    """Every causal portfolio policy and :data:`KNOWN_CALENDAR` on the shipped Azure trace,
    seeds ``0 .. seeds-1`` (one draw each: candidates and forecast draws), per setting of
    :data:`CAUSAL_SETTINGS`; gains are paired by draw against ``sequential``."""
    from ..calendar import AZURE_TRACE, load_trace
    from ..scenario import PAPER_COLD, PAPER_WARM

    count = integer("seeds", seeds, low=1)
    trace = CausalTrace(load_trace(AZURE_TRACE))
    result: dict[str, dict[str, PolicyStats]] = {}
    for setting in settings:
        if setting not in CAUSAL_SETTINGS:
            raise ValueError(
                f"setting must be one of {', '.join(CAUSAL_SETTINGS)}, got {setting!r}"
            )
        costs = PAPER_WARM if setting.endswith("_warm") else PAPER_COLD
        draws = [causal_draw(trace, costs, s, candidate_policy) for s in range(count)]

        def total(runs: list[CausalPortfolioOutcome], field: str) -> float:
            return math.fsum(float(getattr(r, field)) for r in runs)

        base = [total(d["sequential"], "value") for d in draws]
        result[setting] = {
            p: CausalPolicyStats(
                values=tuple(total(d[p], "value") for d in draws),
                gains=tuple(total(d[p], "value") - b for d, b in zip(draws, base, strict=True)),
                published=tuple(
                    sum(t is not None for r in d[p] for t in r.publish_s.values()) for d in draws
                ),
                gpu_hours=tuple(total(d[p], "gpu_s") / 3600.0 for d in draws),
                late_requests=tuple(int(total(d[p], "late_requests")) for d in draws),
                lateness_s=tuple(total(d[p], "lateness_s") for d in draws),
                requests=tuple(_served(d[p]) for d in draws),
            )
            for p in CAUSAL_STUDY_POLICIES
        }
    return CausalStudyResult(count, result)


__getattr__ = module_aliases(__name__, globals(), {"STUDY_POLICIES": "CAUSAL_STUDY_POLICIES"})
