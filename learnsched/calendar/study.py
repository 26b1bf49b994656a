"""Studies over a real trace: the online policies against clairvoyance, over horizons and
seeds, with paired confidence intervals.

The trace is cut into consecutive horizons of ``horizon_s`` after a warm-up of
``warmup_s`` (non-overlapping, each wholly inside the trace); each starts a fresh candidate
whose benefit horizon ends ``tail_s`` after it. Every policy runs on every horizon with
every seed (the seeds vary the forecast draws only), and differences between policies are
paired by horizon (:mod:`learnsched.calendar.summary`).

* **causal** (the default, :func:`causal_study`): the scheduler knows the arrivals up to
  now; the forecasters are fitted at each horizon's start on the trace before it.
* **known window** (:func:`known_window_study`, the paper's setting): every policy knows
  the current idle window's end; windows come from :func:`idle_windows` and the forecaster
  sees the windows before the horizon plus those of the horizon observed so far.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from .. import _core
from .._checks import FloatArray, integer, nonnegative, positive
from .._renamed import module_aliases
from ..job import Job
from ..scenario import HandoffCosts, Scenario
from .causal import (
    CAUSAL_MOVES,
    CAUSAL_PLANS,
    CAUSAL_POLICIES,
    CLAIRVOYANT,
    DEFAULT_GAP_MODEL,
    GAP_MODELS,
    CausalForecast,
    CausalOutcome,
    CausalRules,
    CausalTrace,
    clairvoyant,
    core_candidate,
)
from .forecast import EmpiricalForecaster, Forecaster, MeanForecaster, RepeatForecaster
from .online import ONLINE_POLICIES, OnlineCase, evaluate_online
from .summary import Difference, PolicySummary, Verdict, differences, verdicts
from .synth import DAY_S
from .windows import IdleWindows

__all__ = [
    "MAX_HORIZONS",
    "GapRoom",
    "StudyCandidate",
    "StudyResult",
    "StudySettings",
    "TraceStudy",
    "causal_study",
    "horizon_starts",
    "known_window_study",
    "make_forecaster",
]

Sink = Callable[[list[dict[str, Any]]], None]
"""Receives every decision of one horizon as ``--steps`` objects."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class StudyCandidate:
    """The work planned in every horizon (the paper's LoRA-like defaults).

    Attributes
    ----------
    work_quanta, quantum_s
        ``J`` quanta of ``delta`` seconds.
    benefit_rate
        ``g``, s-eq./s.
    tail_s
        The benefit horizon ends this long after the horizon, s.
    costs
        Handoff costs (its recovery is the return path).
    job
        The job of these fields, its ``horizon_s`` counted from each horizon's end (the
        tail), its save and load those of ``costs``.
    """

    work_quanta: int
    quantum_s: float
    benefit_rate: float
    tail_s: float
    costs: HandoffCosts
    job: Job = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        integer("work_quanta", self.work_quanta, low=1)
        positive("quantum_s", self.quantum_s)
        nonnegative("benefit_rate", self.benefit_rate)
        nonnegative("tail_s", self.tail_s)
        job = Job(
            self.work_quanta,
            self.quantum_s,
            self.benefit_rate,
            self.tail_s,
            self.costs.save_s,
            self.costs.load_s,
        )
        object.__setattr__(self, "job", job)

    def scenario(self, end_s: float, windows: Sequence[tuple[float, float]] = ()) -> Scenario:
        """The candidate over a horizon ending at ``end_s`` (benefit until ``end_s +
        tail_s``), on ``windows`` (a placeholder where only the candidate is read)."""
        return Scenario(
            tuple(windows) or ((end_s, end_s + 1.0),),
            self.work_quanta,
            self.quantum_s,
            self.benefit_rate,
            end_s + self.tail_s,
            self.costs,
        )


@dataclass(frozen=True)
class StudySettings:
    """How a study runs.

    Attributes
    ----------
    horizon_s, warmup_s
        Horizon length and the history before the first one, seconds.
    samples
        The forecast sizes ``N`` to compare.
    seeds
        Forecast seeds (``K`` of them).
    forecaster
        ``empirical``, ``repeat`` or ``mean`` (:data:`~learnsched.calendar.causal.GAP_MODELS`).
    rules
        Lateness price, risk level and the gap forecast's history (causal mode).
    history_s
        Known-window mode: fit the forecaster on this much recent history only (None: all).
    threads
        Threads over the runs of a horizon, and over the horizons' clairvoyants, gap pools
        and calibration (the result does not depend on it).
    """

    horizon_s: float = 600.0
    warmup_s: float = 600.0
    samples: tuple[int, ...] = (64,)
    seeds: tuple[int, ...] = (0,)
    forecaster: str = DEFAULT_GAP_MODEL
    rules: CausalRules = field(default_factory=CausalRules)
    history_s: float | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        positive("horizon_s", self.horizon_s)
        nonnegative("warmup_s", self.warmup_s)
        if not self.samples:
            raise ValueError("samples must list at least one N")
        for n in self.samples:
            integer("samples", n, low=1, high=_core.forecast.MAX_SAMPLES)
        if not self.seeds:
            raise ValueError("seeds must list at least one seed")
        for s in self.seeds:
            integer("seeds", s, low=0)
        if self.forecaster not in GAP_MODELS:
            raise ValueError(
                f"forecaster must be one of {', '.join(GAP_MODELS)}, got {self.forecaster!r}"
            )
        integer("threads", self.threads, low=1)


def make_forecaster(name: str, history_s: float | None = None) -> Forecaster:
    """The forecaster called ``name`` (one of :data:`~learnsched.calendar.causal.GAP_MODELS`:
    its ``gap_model``)."""
    if name == "empirical":
        return EmpiricalForecaster(history_s)
    if name == "repeat":
        return RepeatForecaster()
    if name == "mean":
        return MeanForecaster(history_s)
    raise ValueError(f"forecaster must be one of {', '.join(GAP_MODELS)}, got {name!r}")


MAX_HORIZONS = 100_000
"""The most horizons one study runs (each solves its clairvoyant and every policy)."""


def horizon_starts(span_s: float, warmup_s: float, horizon_s: float) -> list[float]:
    """Starts of the consecutive horizons after ``warmup_s`` that end inside the trace.

    Raises
    ------
    ValueError
        If none fits, or more than :data:`MAX_HORIZONS` would (checked before they are
        listed: ``horizon_s = 1e-300`` would ask for 10^303).
    """
    room = span_s - warmup_s
    if span_s > warmup_s and room / horizon_s > MAX_HORIZONS:  # a float: it may be inf
        raise ValueError(
            f"{room / horizon_s:.3g} horizons of horizon_s = {horizon_s:g} s after a warm-up "
            f"of warmup_s = {warmup_s:g} s in the trace's {span_s:g} s exceed the limit of "
            f"{MAX_HORIZONS}"
        )
    count = math.floor(room / horizon_s) if span_s > warmup_s else 0
    starts = [warmup_s + h * horizon_s for h in range(max(0, count))]
    starts = [t for t in starts if t + horizon_s <= span_s]
    if not starts:
        raise ValueError(
            f"no horizon of horizon_s = {horizon_s:g} s after a warm-up of warmup_s = "
            f"{warmup_s:g} s fits the trace's {span_s:g} s"
        )
    return starts


@dataclass(frozen=True)
class StudyResult:
    """Every policy at one forecast size: summaries, paired differences and, where never
    lending is among the policies, each one's verdict against it.

    Attributes
    ----------
    horizon_s
        The horizons' length, s: with it each policy's value and GPU time lent are also
        given per day (a day of such horizons, back to back).
    """

    policies: dict[str, PolicySummary]
    differences: tuple[Difference, ...]
    horizon_s: float | None = None

    @property
    def verdicts(self) -> dict[str, Verdict]:
        """Per policy: does lending pay against never lending, at 95%?"""
        return verdicts(self.differences)

    def to_json(self) -> dict[str, Any]:
        """``{"policies": {NAME: {...}}, "differences": [...], "verdicts": {NAME: {...}}}``;
        with ``horizon_s``, each policy also holds ``value_per_day`` (s-eq.) and
        ``gpu_hours_per_day`` (hours lent; null where not counted)."""
        policies = {name: s.to_json() for name, s in self.policies.items()}
        if self.horizon_s is not None:
            per_day = DAY_S / self.horizon_s
            for row in policies.values():
                row["value_per_day"] = row["mean_value"] * per_day
                lent = row["lent_s"]
                row["gpu_hours_per_day"] = None if lent is None else lent * per_day / 3600.0
        return {
            "policies": policies,
            "differences": [d.to_json() for d in self.differences],
            "verdicts": {name: v.to_json() for name, v in self.verdicts.items()},
        }


@dataclass(frozen=True)
class GapRoom:
    """The idle gaps that begin in a study's horizons against one quantum.

    A gap shorter than one quantum ends before any work is done in it, and the causal
    rule returns at its arrival: where no gap is as long, nothing can be lent, and every
    policy, the clairvoyant included, earns 0.

    Attributes
    ----------
    gaps
        Idle gaps beginning in the horizons.
    fitting
        Those at least one quantum long.
    longest_s
        The longest of them, seconds (0 without any).
    quantum_s
        The candidate's quantum, seconds.
    """

    gaps: int
    fitting: int
    longest_s: float
    quantum_s: float

    @classmethod
    def of(cls, trace: CausalTrace, starts: Sequence[float], horizon_s: float,
           quantum_s: float) -> GapRoom:  # fmt: skip
        """The gaps of ``trace`` that begin in the horizons starting at ``starts``."""
        start, arrival, _ = trace.gaps()
        inside = np.zeros(start.shape, dtype=bool)
        for begin in starts:
            inside |= (start >= begin) & (start < begin + horizon_s)
        lengths = (arrival - start)[inside]
        longest = float(lengths.max()) if lengths.size else 0.0
        return cls(int(lengths.size), int(np.sum(lengths >= quantum_s)), longest, quantum_s)

    @property
    def warning(self) -> str | None:
        """Why nothing can be lent, when no gap fits one quantum; else None."""
        if self.fitting:
            return None
        return (
            f"no idle gap of the {self.gaps} in these horizons is as long as one quantum "
            f"(the longest is {self.longest_s:.3g} s, quantum_s = {self.quantum_s:g} s): "
            "nothing can be lent, and every policy earns 0; a shorter --quantum-s or a "
            "sparser trace (one GPU's share of a cluster's) has room"
        )

    def to_json(self) -> dict[str, Any]:
        """``{"gaps", "fitting_one_quantum", "longest_s", "quantum_s", "warning"}``."""
        return {
            "gaps": self.gaps,
            "fitting_one_quantum": self.fitting,
            "longest_s": self.longest_s,
            "quantum_s": self.quantum_s,
            "warning": self.warning,
        }


@dataclass(frozen=True)
class TraceStudy:
    """A study's results per forecast size ``N``, and the forecast calibration."""

    mode: str
    horizons: tuple[float, ...]
    seeds: tuple[int, ...]
    results: dict[int, StudyResult]
    trace: dict[str, Any]
    settings: dict[str, Any]
    calibration: dict[str, dict[str, Any]] | None = None
    gap_room: GapRoom | None = None

    @property
    def calendars(self) -> int:
        """Number of horizons."""
        return len(self.horizons)

    def to_json(self) -> dict[str, Any]:
        """``{"mode", "trace", "settings", "horizons", "seeds", "samples": {N: ...},
        "calibration", "gaps"}`` (``gaps``: :class:`GapRoom`, causal mode; else None)."""
        return {
            "mode": self.mode,
            "trace": self.trace,
            "settings": self.settings,
            "horizons": len(self.horizons),
            "horizon_starts_s": list(self.horizons),
            "seeds": list(self.seeds),
            "samples": {str(n): r.to_json() for n, r in self.results.items()},
            "calibration": self.calibration,
            "gaps": None if self.gap_room is None else self.gap_room.to_json(),
        }


_FIELDS = (
    "values",
    "regrets",
    "handoffs",
    "checkpoints",
    "late_requests",
    "lateness_s",
    "requests",
    "lent_s",
)


def _summaries(
    names: Sequence[str], data: dict[str, dict[str, FloatArray]], with_requests: bool
) -> dict[str, PolicySummary]:
    """Per policy: its matrices (requests and lent seconds only ``with_requests``: a
    causal study's)."""
    return {
        name: PolicySummary(
            values_by_seed=data[name]["values"],
            regrets_by_seed=data[name]["regrets"],
            handoffs_by_seed=data[name]["handoffs"],
            checkpoints_by_seed=data[name]["checkpoints"],
            late_by_seed=data[name]["late_requests"],
            lateness_by_seed=data[name]["lateness_s"],
            requests_by_seed=data[name]["requests"] if with_requests else None,
            lent_by_seed=data[name]["lent_s"] if with_requests else None,
        )
        for name in names
    }


def _empty(names: Sequence[str], seeds: int, cases: int) -> dict[str, dict[str, FloatArray]]:
    return {n: {f: np.zeros((seeds, cases)) for f in _FIELDS} for n in names}


def _settings_json(settings: StudySettings, candidate: StudyCandidate) -> dict[str, Any]:
    rules = settings.rules
    return {
        "horizon_s": settings.horizon_s,
        "warmup_s": settings.warmup_s,
        "forecaster": settings.forecaster,
        "lateness_price": rules.lateness_price,
        "return_level": rules.return_level,
        "gap_history_s": rules.history_s,
        "close_s": rules.close_s,
        "work_quanta": candidate.work_quanta,
        "quantum_s": candidate.quantum_s,
        "benefit_rate": candidate.benefit_rate,
        "tail_s": candidate.tail_s,
        "recovery_s": candidate.costs.recovery_s,
        "return_s": candidate.costs.recovery_s,  # its deprecated key, for one release
        "save_s": candidate.costs.save_s,
        "load_s": candidate.costs.load_s,
        "residency_rate": candidate.costs.residency_rate,
    }


def _state(progress: int, durable: int, lent: bool, age: float) -> dict[str, Any]:
    return {"progress": progress, "durable": durable, "lent": lent, "gap_age_s": age}


def _causal_steps(
    h: int, start: float, seed: int, policy: str, steps: dict[str, npt.NDArray[Any]]
) -> list[dict[str, Any]]:
    t = steps["t"].tolist()
    gap = steps["gap_start"].tolist()
    rows = zip(
        t,
        gap,
        steps["progress"].tolist(),
        steps["durable"].tolist(),
        steps["lent"].tolist(),
        steps["plan"].tolist(),
        steps["quanta"].tolist(),
        steps["move"].tolist(),
        steps["reward"].tolist(),
        steps["late_requests"].tolist(),
        strict=True,
    )
    return [
        {
            "horizon": h,
            "horizon_start_s": start,
            "t": ti,
            "seed": seed,
            "policy": policy,
            "state": _state(p, d, bool(lent), ti - g),
            "action": {"plan": CAUSAL_PLANS[plan], "quanta": q, "move": CAUSAL_MOVES[move]},
            "reward": r,
            "late_requests": late,
        }
        for ti, g, p, d, lent, plan, q, move, r, late in rows
    ]


def _plan_steps(
    h: int, start: float, seed: int, policy: str, steps: Sequence[Any]
) -> list[dict[str, Any]]:
    """A finite-model plan's steps (one per window) as ``--steps`` objects."""
    out = []
    progress = durable = 0
    for step in steps:
        out.append(
            {
                "horizon": h,
                "horizon_start_s": start,
                "t": step.start_s,
                "seed": seed,
                "policy": policy,
                "state": {"progress": progress, "durable": durable, "window": step.window},
                "action": {
                    "plan": step.action,
                    "quanta": step.quanta,
                    "checkpoint": step.checkpoint,
                },
                "reward": step.value,
                "late_requests": 0,
            }
        )
        progress, durable = step.progress, step.durable
    return out


def causal_study(
    trace: CausalTrace,
    candidate: StudyCandidate,
    settings: StudySettings,
    steps: Sink | None = None,
    calibrate: bool = True,
) -> TraceStudy:
    """Every causal policy and the clairvoyant over the trace's horizons and seeds.

    Parameters
    ----------
    trace
        The true trace.
    candidate
        The work of every horizon (one return path).
    settings
        Horizons, seeds, forecast sizes and rules.
    steps
        If given, receives each horizon's decisions (``--steps`` objects).
    calibrate
        Also score the gap forecasts (``gap_calibration``).
    """
    rules = settings.rules
    starts = horizon_starts(trace.span_s, settings.warmup_s, settings.horizon_s)
    seeds = settings.seeds
    forecaster = make_forecaster(settings.forecaster, settings.history_s)
    names = (*CAUSAL_POLICIES, CLAIRVOYANT)
    per_n = {n: _empty(names, len(seeds), len(starts)) for n in settings.samples}
    fits = _GapFits(trace, candidate, settings, starts)
    scores: dict[str, list[_Scores]] = {model: [] for model in GAP_MODELS}

    def prepare(h: int) -> tuple[CausalOutcome, _core.causal.GapPool, dict[str, _Scores]]:
        # The horizon's work that no seed changes: its clairvoyant, the forecast's gap
        # pool and the calibration's scores (the forecast's pool scores its own model).
        start, end = starts[h], starts[h] + settings.horizon_s
        best = clairvoyant(trace, candidate.scenario(end), start, end, rules)
        pool = fits.pool(start, settings.forecaster)
        scored = {}
        if calibrate:
            for model in GAP_MODELS:
                fit = pool if model == settings.forecaster else fits.pool(start, model, False)
                scored[model] = fits.scores(h, model, fit)
        return best, pool, scored

    for h, (best, pool, scored) in enumerate(_in_order(prepare, len(starts), settings.threads)):
        for model, score in scored.items():
            scores[model].append(score)
        start = starts[h]
        end = start + settings.horizon_s
        scenario = candidate.scenario(end)
        core = core_candidate(scenario, rules.lateness_price)
        jobs = []
        keys = []
        forecasts = []  # kept alive until the runs are done
        for n in settings.samples:
            for s, seed in enumerate(seeds):
                rng = np.random.default_rng([seed, h, n])
                forecast = CausalForecast(
                    trace, scenario, start, forecaster, n, rng, rules, pool=pool
                )
                forecasts.append(forecast)
                stream = _core.causal.stream_seed(seed, h, 0)
                for policy in CAUSAL_POLICIES:
                    jobs.append(
                        _core.causal.CausalJob(
                            core,
                            start,
                            end,
                            policy,
                            rules.return_level,
                            forecast.pool,
                            forecast.tables,
                            stream,
                            steps is not None,
                        )
                    )
                    keys.append((n, s, policy))
        outs = _core.causal.run_causal(trace.schedule, jobs, settings.threads)
        lines: list[dict[str, Any]] = []
        for (n, s, policy), out in zip(keys, outs, strict=True):
            row = per_n[n][policy]
            row["values"][s, h] = out["value"]
            row["regrets"][s, h] = best.value - out["value"]
            row["handoffs"][s, h] = out["handoffs"]
            row["checkpoints"][s, h] = out["checkpoints"]
            row["late_requests"][s, h] = out["late_requests"]
            row["lateness_s"][s, h] = out["lateness_s"]
            row["requests"][s, h] = out["requests"]
            row["lent_s"][s, h] = out["lent_s"]
            if steps is not None and n == settings.samples[0]:
                lines.extend(_causal_steps(h, start, seeds[s], policy, out["steps"]))
        for n in settings.samples:
            row = per_n[n][CLAIRVOYANT]
            row["values"][:, h] = best.value
            row["handoffs"][:, h] = best.handoffs
            row["checkpoints"][:, h] = best.checkpoints
            row["late_requests"][:, h] = best.late_requests
            row["lateness_s"][:, h] = best.lateness_s
            row["requests"][:, h] = best.requests
            row["lent_s"][:, h] = best.lent_s
        if steps is not None:
            for seed in seeds:
                lines.extend(_causal_steps(h, start, seed, CLAIRVOYANT, best.steps))
            steps(lines)
    results = {}
    for n in settings.samples:
        policies = _summaries(names, per_n[n], with_requests=True)
        results[n] = StudyResult(policies, tuple(differences(policies)), settings.horizon_s)
    calibration = _calibration_table(scores) if calibrate else None
    return TraceStudy(
        "causal",
        tuple(starts),
        seeds,
        results,
        trace.to_json(),
        _settings_json(settings, candidate),
        calibration,
        GapRoom.of(trace, starts, settings.horizon_s, candidate.quantum_s),
    )


def _in_order(work: Callable[[int], _T], count: int, threads: int) -> Iterator[_T]:
    """``work(0), ..., work(count - 1)`` in order, computed ahead on ``threads`` threads
    (at most two per thread waiting, so little is held at once)."""
    if threads == 1:
        yield from (work(i) for i in range(count))
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="study") as executor:
        ahead: deque[Future[_T]] = deque()
        for i in range(count):
            ahead.append(executor.submit(work, i))
            if len(ahead) > 2 * threads:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()


_Scores = tuple[FloatArray, FloatArray]
"""Randomised PITs and CRPSs (seconds) of one gap model over one horizon's queries."""


class _GapFits:
    """The gap pools of a study's horizons, fitted on one scan of the trace's past gaps,
    and their calibration queries."""

    def __init__(
        self,
        trace: CausalTrace,
        candidate: StudyCandidate,
        settings: StudySettings,
        starts: Sequence[float],
    ) -> None:
        rules = settings.rules
        self.history_s = math.inf if rules.history_s is None else rules.history_s
        self.repeat_last = rules.repeat_last
        self.records = _core.causal.GapRecords(
            trace.schedule,
            starts[0] - self.history_s,
            starts[-1],
            rules.close_s,
            candidate.costs.recovery_s,
            settings.threads,
        )
        self.starts = starts
        self.horizon_s = settings.horizon_s
        self.quantum_s = candidate.quantum_s
        self.seed = settings.seeds[0]
        self.gap_start, self.gap_arrival, _ = trace.gaps()

    def pool(self, now_s: float, model: str, lateness: bool = True) -> _core.causal.GapPool:
        """The ``model`` pool fitted at ``now_s`` (one of the horizons' starts), seconds;
        without ``lateness`` it keeps no slacks (reach 0): the gap's forecast alone, all
        that its scores read."""
        reach = None if lateness else 0.0
        return _core.causal.GapPool(
            self.records, now_s, self.history_s, reach, model, self.repeat_last
        )

    def scores(self, h: int, model: str, pool: _core.causal.GapPool) -> _Scores:
        """Scores of ``pool`` (the ``model`` pool of horizon ``h``) at every decision age of
        a waiting scheduler in every gap that begins in the horizon."""
        t0 = self.starts[h]
        start, arrival = self.gap_start, self.gap_arrival
        inside = (start >= t0) & (start < t0 + self.horizon_s)
        lengths = (arrival - start)[inside]
        if lengths.size == 0:
            return np.zeros(0), np.zeros(0)
        counts = np.floor(lengths / self.quantum_s).astype(np.int64) + 1
        ages = np.repeat(np.zeros(lengths.size), counts)
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        ages += (np.arange(ages.size) - np.repeat(offsets, counts)) * self.quantum_s
        remaining = np.repeat(lengths, counts) - ages
        keep = remaining > 0
        seed = _core.causal.stream_seed(self.seed, h, 1 + GAP_MODELS.index(model))
        pit, score = pool.scores(ages[keep], remaining[keep], seed)
        return pit, score


def _calibration_table(scores: dict[str, list[_Scores]]) -> dict[str, dict[str, Any]]:
    """Per gap model: ``{"queries", "crps_s", "pit_histogram", "pit_mean"}`` over every
    horizon's scores (in horizon order)."""
    out: dict[str, dict[str, Any]] = {}
    for model in GAP_MODELS:
        pit = np.concatenate([p for p, _ in scores[model]] or [np.zeros(0)])
        score = np.concatenate([c for _, c in scores[model]] or [np.zeros(0)])
        histogram = np.histogram(pit, bins=10, range=(0.0, 1.0))[0]
        out[model] = {
            "queries": int(pit.size),
            "crps_s": float(np.mean(score)) if score.size else None,
            "pit_histogram": (histogram / max(1, pit.size)).tolist(),
            "pit_mean": float(np.mean(pit)) if pit.size else None,
        }
    return out


def gap_calibration(
    trace: CausalTrace,
    candidate: StudyCandidate,
    settings: StudySettings,
    starts: Sequence[float],
) -> dict[str, dict[str, Any]]:
    """How well each gap model forecasts the current gap's remaining length.

    At every decision age of a waiting scheduler (0, delta, 2 delta, ... while the gap
    lasts) of every gap that begins in a horizon, the forecast fitted at the horizon's
    start is scored against the true remaining length: the randomised PIT (uniform on
    [0, 1] for a calibrated forecast; a 10-bin histogram) and the CRPS (seconds; lower
    is better). :func:`causal_study` computes the same table beside its runs.

    Returns
    -------
    dict
        Per gap model: ``{"queries", "crps_s", "pit_histogram", "pit_mean"}``.
    """
    fits = _GapFits(trace, candidate, settings, starts)

    def horizon(h: int) -> dict[str, _Scores]:
        return {m: fits.scores(h, m, fits.pool(starts[h], m, False)) for m in GAP_MODELS}

    per_horizon = list(_in_order(horizon, len(starts), settings.threads))
    return _calibration_table({m: [s[m] for s in per_horizon] for m in GAP_MODELS})


def known_window_study(
    windows: IdleWindows,
    candidate: StudyCandidate,
    settings: StudySettings,
    steps: Sink | None = None,
) -> TraceStudy:
    """The paper's setting over the trace's horizons: every policy knows each window's end.

    The true calendar of a horizon is the windows that start in it; the forecaster is
    fitted on the windows before the horizon plus those of the horizon observed so far.
    No request is ever late here (returns are planned by the known ends).
    """
    starts = horizon_starts(windows.span_s, settings.warmup_s, settings.horizon_s)
    pairs = windows.pairs()
    # Horizons without a lendable window are worth 0 to every policy: kept, not run.
    truths = [tuple(w for w in pairs if t <= w[0] < t + settings.horizon_s) for t in starts]
    kept = [h for h, truth in enumerate(truths) if truth]
    if not kept:
        raise ValueError(f"no horizon holds a lendable window ({len(pairs)} windows in all)")
    results = {}
    for n in settings.samples:
        cases = []
        for h in kept:
            end = starts[h] + settings.horizon_s
            history = tuple(w for w in pairs if w[0] < starts[h])
            forecaster = make_forecaster(settings.forecaster, settings.history_s)
            cases.append(
                OnlineCase(candidate.scenario(end, truths[h]), forecaster, n, history, end)
            )
        data = _empty(ONLINE_POLICIES, len(settings.seeds), len(starts))
        for s, seed in enumerate(settings.seeds):
            result = evaluate_online(cases, seed, settings.threads)
            for name in ONLINE_POLICIES:
                summary = result.policies[name]
                data[name]["values"][s, kept] = summary.values_by_seed[0]
                data[name]["regrets"][s, kept] = summary.regrets_by_seed[0]
                data[name]["handoffs"][s, kept] = summary.handoffs_by_seed[0]
                data[name]["checkpoints"][s, kept] = summary.checkpoints_by_seed[0]
            if steps is not None and n == settings.samples[0]:
                for c, h in enumerate(kept):
                    lines: list[dict[str, Any]] = []
                    for name, outcome in result.outcomes[c].items():
                        lines.extend(_plan_steps(h, starts[h], seed, name, outcome.steps))
                    steps(lines)
        policies = _summaries(ONLINE_POLICIES, data, with_requests=False)
        results[n] = StudyResult(policies, tuple(differences(policies)), settings.horizon_s)
    trace_info = {"requests": windows.requests, "span_s": windows.span_s, "windows": len(pairs)}
    return TraceStudy(
        "known_window",
        tuple(starts),
        settings.seeds,
        results,
        trace_info,
        _settings_json(settings, candidate),
    )


__getattr__ = module_aliases(
    __name__, globals(), {"Candidate": "StudyCandidate", "FORECASTERS": "GAP_MODELS"}
)
