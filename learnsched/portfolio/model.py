"""Portfolios: several finite-model candidates sharing the idle windows of several GPUs.

A :class:`Portfolio` is validated when it is built (``ValueError`` naming the field and
value; :class:`StateSpaceError`, also a ``ValueError``, when it is too large) and
round-trips through the SPEC of ``learnsched portfolio``. The rules are those of the C++
core (``csrc/learnsched/portfolio/portfolio.hpp``) and of ``docs/portfolio.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .. import _core
from .._checks import indexed, integer, real
from .._json import exact_keys
from .._renamed import module_aliases
from ..benefit import BenefitRate, schedule_of
from ..job import JOB_FIELDS, Job
from ..plan import ACTION_NAMES, CostSplit
from ..scenario import HandoffCosts, InitialState, window_pairs

__all__ = [
    "DEFAULT_POLICIES",
    "Portfolio",
    "PortfolioCandidate",
    "PortfolioModel",
    "PortfolioPlan",
    "PortfolioPolicy",
    "PortfolioStep",
    "StateSpaceError",
    "solve_portfolio",
]

StateSpaceError = _core.portfolio.StateSpaceError
"""A portfolio, or its DP, larger than the core's limits (a ``ValueError``)."""

CANDIDATE_KEYS = ("name", *JOB_FIELDS)
OPTIONAL_CANDIDATE_KEYS = ("half_life_s",)
RETURN_KEYS = ("recovery_s", "residency_rate")
TWO_PATH_RETURN_KEYS = ("warm_recovery_s", "cold_recovery_s", "residency_rate")
OPTIONAL_SPEC_KEYS = ("budget_gpu_s", "policies")


class PortfolioPolicy(str, Enum):
    """How the GPUs' windows are shared out among the candidates (docs/portfolio.md)."""

    SEQUENTIAL = "sequential"
    """One by one in list (arrival) order, each planned by the one-candidate Rollout."""
    DENSITY = "density"
    """Greedy: the candidate whose remaining work earns most per second of it first."""
    EARLIEST = "earliest"
    """Greedy: the candidate whose Window plan publishes first."""
    COSTED_WINDOW = "costed_window"
    """The reference pi0: the candidate whose priced Window plan is worth most."""
    ROLLOUT = "rollout"
    """One-step rollout over the portfolio Costed Window (Eq. 11): never worth less."""
    DP = "dp"
    """The exact optimum over the portfolio's states (Eq. D.2), for small portfolios."""

    @classmethod
    def parse(cls, value: str | PortfolioPolicy) -> PortfolioPolicy:
        """The policy named ``value``; ``ValueError`` listing the names otherwise."""
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise ValueError(f"policy must be one of {names}, got {value!r}") from None


DEFAULT_POLICIES: tuple[PortfolioPolicy, ...] = tuple(
    p for p in PortfolioPolicy if p is not PortfolioPolicy.DP
)
"""Every policy but ``dp``, which is exact but only for small portfolios: ask for it by name."""

_CORE_POLICY = {p: getattr(_core.portfolio.PortfolioPolicy, p.name) for p in PortfolioPolicy}
_POLICY_OF_CORE = {core: p for p, core in _CORE_POLICY.items()}


def parse_policies(
    policies: str | Iterable[str | PortfolioPolicy] | None,
) -> tuple[PortfolioPolicy, ...]:
    """One name, an iterable of names, or ``None`` (:data:`DEFAULT_POLICIES`)."""
    if policies is None:
        return DEFAULT_POLICIES
    if isinstance(policies, str):
        return (PortfolioPolicy.parse(policies),)
    if not isinstance(policies, Iterable):
        raise TypeError(f"policies must be a policy name or an iterable of them, got {policies!r}")
    parsed = tuple(indexed("policies", policies, PortfolioPolicy.parse))
    if not parsed:
        raise ValueError("policies must name at least one policy")
    return tuple(dict.fromkeys(parsed))


@dataclass(frozen=True)
class PortfolioCandidate:
    """One self-evolution job of a portfolio: a :class:`~learnsched.job.Job` with a name
    and an optional age decay (the fields of a ``solve`` scenario, save and load included).

    Parameters
    ----------
    name
        A unique, non-empty name (the key of its publication time in results).
    work_quanta
        Construction and validation work ``J`` in quanta.
    quantum_s
        Length of one quantum ``delta``, seconds.
    benefit_rate
        Benefit rate ``g`` after publication, s-eq. per second, until ``horizon_s``: a
        constant, or a schedule of ``(start_s, rate)`` pieces (:mod:`learnsched.benefit`).
    horizon_s
        End of the benefit stream ``H``, seconds.
    save_s, load_s
        Its checkpoint save and load, seconds.
    initial
        Where it stands when the first window opens; an active candidate is running on a
        GPU (the i-th active candidate on the i-th GPU).
    half_life_s
        Age decay of its benefit (Eq. C.7): an artifact ``a`` seconds old earns
        ``g * 2**(-a / half_life_s)`` per second, seconds; ``None`` (default): no decay, the
        finite model's ``g * (H - t_p)^+``.

    Attributes
    ----------
    job
        The job of these fields (:meth:`from_job` builds a candidate from one).
    """

    name: str
    work_quanta: int
    quantum_s: float
    benefit_rate: BenefitRate
    horizon_s: float
    save_s: float = 0.0
    load_s: float = 0.0
    initial: InitialState = field(default_factory=InitialState)
    half_life_s: float | None = None
    job: Job = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Types only (the job's conversions): every range is the core's check, with the
        # candidate's name.
        put = object.__setattr__
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {self.name!r}")
        job = Job.of_fields(self)
        for name in JOB_FIELDS:
            put(self, name, getattr(job, name))
        put(self, "job", job)
        if self.half_life_s is not None:
            put(self, "half_life_s", real("half_life_s", self.half_life_s))

    @classmethod
    def from_job(cls, name: str, job: Job, half_life_s: float | None = None) -> PortfolioCandidate:
        """The candidate ``name`` planning ``job`` (``half_life_s``: see the class)."""
        return cls(
            name,
            job.work_quanta,
            job.quantum_s,
            job.benefit_rate,
            job.horizon_s,
            job.save_s,
            job.load_s,
            job.initial,
            half_life_s,
        )

    def to_core(self) -> _core.portfolio.PortfolioCandidate:
        """The core's candidate."""
        rate, pieces = schedule_of(self.benefit_rate)
        return _core.portfolio.PortfolioCandidate(
            self.name,
            self.work_quanta,
            self.quantum_s,
            rate,
            self.horizon_s,
            self.save_s,
            self.load_s,
            self.half_life_s,
            self.initial.to_core(),
            pieces,
        )

    def to_json(self) -> dict[str, Any]:
        """The SPEC's candidate object (``half_life_s`` only when set)."""
        out: dict[str, Any] = {"name": self.name, **self.job.to_json()}
        if self.half_life_s is not None:
            out["half_life_s"] = self.half_life_s
        return out

    @classmethod
    def from_json(cls, obj: object) -> PortfolioCandidate:
        """The candidate of a SPEC's ``candidates`` entry (every key of :meth:`to_json`)."""
        try:
            if not isinstance(obj, Mapping):
                raise TypeError(f"a candidate must be a JSON object, got {type(obj).__name__}")
            keys = CANDIDATE_KEYS + tuple(k for k in OPTIONAL_CANDIDATE_KEYS if k in obj)
            data = exact_keys("candidate", obj, keys)
            return cls.from_job(data["name"], Job.from_json(data), data.get("half_life_s"))
        except TypeError as err:  # JSON input: a wrong type is a bad value
            raise ValueError(str(err)) from err


Windows = tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Portfolio:
    """Candidates sharing the idle windows of one or more GPUs (docs/portfolio.md).

    Parameters
    ----------
    gpus
        One calendar of sorted, non-overlapping idle windows ``(start, end)`` per GPU,
        seconds (repeat a calendar for GPUs that share it).
    recovery_s
        The serving engine's return path ``t_ret``, seconds (the warm one if two).
    residency_rate
        Price of parked serving state on the warm path, s-eq. per second.
    candidates
        The candidates, in arrival order.
    cold_recovery_s
        When given, every return chooses warm or this cold path (no residency), seconds.
    budget_gpu_s
        At most this many GPU-seconds of segments in all (load, work, save and return
        time; App. C.2's budget); ``None``: unbounded.
    """

    gpus: tuple[Windows, ...]
    recovery_s: float
    residency_rate: float
    candidates: tuple[PortfolioCandidate, ...]
    cold_recovery_s: float | None = None
    budget_gpu_s: float | None = None
    _core_portfolio: _core.portfolio.Portfolio = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        gpus: object = self.gpus  # callers may pass anything
        if isinstance(gpus, (str, bytes)) or not isinstance(gpus, Sequence):
            raise TypeError(f"gpus must be a list of calendars, got {gpus!r}")
        put(self, "gpus", tuple(_indexed_windows(gpus)))
        for name in ("recovery_s", "residency_rate"):
            put(self, name, real(name, getattr(self, name)))
        for name in ("cold_recovery_s", "budget_gpu_s"):
            if getattr(self, name) is not None:
                put(self, name, real(name, getattr(self, name)))
        candidates: object = self.candidates
        if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Sequence):
            raise TypeError(f"candidates must be a list of PortfolioCandidate, got {candidates!r}")
        put(self, "candidates", tuple(candidates))
        for i, c in enumerate(self.candidates):
            if not isinstance(c, PortfolioCandidate):
                raise TypeError(
                    f"candidates[{i}] must be a PortfolioCandidate, got {type(c).__name__}"
                )
        core = _core.portfolio.Portfolio(
            [list(w) for w in self.gpus],
            _core.portfolio.SharedReturn(self.recovery_s, self.residency_rate, self.cold_recovery_s),
            self.budget_gpu_s,
            [c.to_core() for c in self.candidates],
        )
        _core.portfolio.validate_portfolio(core)  # names the field and value (StateSpaceError if too big)
        put(self, "_core_portfolio", core)

    @classmethod
    def on_windows(
        cls,
        windows: object,
        costs: HandoffCosts,
        candidates: Sequence[PortfolioCandidate],
        budget_gpu_s: float | None = None,
        gpus: int = 1,
    ) -> Portfolio:
        """``gpus`` GPUs sharing one calendar, returning by ``costs``' path(s) (its save and
        load costs are not used: each candidate has its own)."""
        calendar = window_pairs(windows)
        count = integer("gpus", gpus, low=1)
        return cls(
            gpus=(calendar,) * count,
            recovery_s=costs.recovery_s,
            residency_rate=costs.residency_rate,
            candidates=tuple(candidates),
            cold_recovery_s=costs.cold_recovery_s,
            budget_gpu_s=budget_gpu_s,
        )

    def to_core(self) -> _core.portfolio.Portfolio:
        """The core's validated portfolio."""
        return self._core_portfolio

    def to_json(
        self, policies: str | Iterable[str | PortfolioPolicy] | None = None
    ) -> dict[str, Any]:
        """The SPEC of ``learnsched portfolio`` (``"windows"`` for one GPU; ``"policies"``
        only when given)."""
        out: dict[str, Any] = {}
        if len(self.gpus) == 1:
            out["windows"] = [list(w) for w in self.gpus[0]]
        else:
            out["gpus"] = [{"windows": [list(w) for w in g]} for g in self.gpus]
        if self.cold_recovery_s is None:
            out["recovery_s"] = self.recovery_s
        else:
            out["warm_recovery_s"] = self.recovery_s
            out["cold_recovery_s"] = self.cold_recovery_s
        out["residency_rate"] = self.residency_rate
        if self.budget_gpu_s is not None:
            out["budget_gpu_s"] = self.budget_gpu_s
        if policies is not None:
            out["policies"] = [p.value for p in parse_policies(policies)]
        out["candidates"] = [c.to_json() for c in self.candidates]
        return out

    @classmethod
    def from_json(cls, obj: object) -> tuple[Portfolio, tuple[PortfolioPolicy, ...]]:
        """The portfolio and policies of a parsed SPEC (docs/portfolio.md, "SPEC").

        Raises
        ------
        ValueError
            Missing or unknown keys, or a bad value: the message names the field.
        """
        try:
            return _from_json(obj)
        except TypeError as err:  # JSON input: a wrong type is a bad value
            raise ValueError(str(err)) from err


def _indexed_windows(gpus: Sequence[object]) -> list[Windows]:
    out = []
    for g, windows in enumerate(gpus):
        try:
            out.append(window_pairs(windows))
        except (TypeError, ValueError) as err:
            raise type(err)(f"gpus[{g}]: {err}") from None
    return out


def _from_json(obj: object) -> tuple[Portfolio, tuple[PortfolioPolicy, ...]]:
    if not isinstance(obj, Mapping):
        raise TypeError(f"SPEC must be a JSON object, got {type(obj).__name__}")
    calendar = ("windows",) if "windows" in obj else ("gpus",)
    path = TWO_PATH_RETURN_KEYS if "cold_recovery_s" in obj else RETURN_KEYS
    optional = tuple(k for k in OPTIONAL_SPEC_KEYS if k in obj)
    data = exact_keys("SPEC", obj, (*calendar, *path, "candidates", *optional))
    if "gpus" in data:
        gpus = data["gpus"]
        if not isinstance(gpus, list) or not gpus:
            raise TypeError('gpus must be a non-empty list of {"windows": [...]} objects')
        calendars = [
            exact_keys(f"gpus[{g}]", gpu, ("windows",))["windows"] for g, gpu in enumerate(gpus)
        ]
    else:
        calendars = [data["windows"]]
    policies = parse_policies(data.get("policies"))
    candidates = data["candidates"]
    if not isinstance(candidates, list):
        raise TypeError(f"candidates must be a list of candidate objects, got {candidates!r:.60}")
    two_path = "cold_recovery_s" in data
    portfolio = Portfolio(
        gpus=tuple(_indexed_windows(calendars)),
        recovery_s=data["warm_recovery_s" if two_path else "recovery_s"],
        residency_rate=data["residency_rate"],
        candidates=tuple(indexed("candidates", candidates, PortfolioCandidate.from_json)),
        cold_recovery_s=data["cold_recovery_s"] if two_path else None,
        budget_gpu_s=data.get("budget_gpu_s"),
    )
    return portfolio, policies


def _optional(seconds: float) -> float | None:
    return None if math.isnan(seconds) else seconds


@dataclass(frozen=True)
class PortfolioStep:
    """One stage: which GPU's window, which candidate (``None``: it went to serving), what it did.

    Attributes
    ----------
    stage, gpu, window
        The stage index, its GPU and the GPU's window index.
    start_s
        The window's start, seconds.
    candidate
        The candidate's name, or ``None`` for a wait.
    action, quanta, checkpoint, cold
        The finite-model action (``"wait"``, ``"publish"``, ``"advance"`` ...), quanta run,
        whether it saved a checkpoint and returned by the cold path.
    publish_s, ready_s
        Publication time (or ``None``) and when capacity was ready again (``None`` for a
        wait), seconds.
    gpu_s
        GPU-seconds the segment held the GPU.
    benefit
        What its publication earns, s-eq.
    cost
        Its cost split, s-eq.
    """

    stage: int
    gpu: int
    window: int
    start_s: float
    candidate: str | None
    action: str
    quanta: int
    checkpoint: bool
    cold: bool
    publish_s: float | None
    ready_s: float | None
    gpu_s: float
    benefit: float
    cost: CostSplit

    def to_json(self) -> dict[str, Any]:
        """Every attribute, the cost split as an object."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "cost"}
        out["cost"] = self.cost.to_json()
        return out


@dataclass(frozen=True)
class PortfolioPlan:
    """A policy's plan: every stage from the first window to the last.

    Attributes
    ----------
    policy
        Policy name.
    value
        Every publication's benefit minus every segment's cost, s-eq.
    benefit
        The benefits, s-eq.
    gpu_s
        GPU-seconds of every segment (what a budget counts).
    publish_s
        Publication time per candidate name, seconds (``None``: not published).
    cost
        The cost split, s-eq.
    steps
        One :class:`PortfolioStep` per stage.
    """

    policy: str
    value: float
    benefit: float
    gpu_s: float
    publish_s: dict[str, float | None]
    cost: CostSplit
    steps: tuple[PortfolioStep, ...]

    @classmethod
    def from_core(cls, plan: _core.portfolio.PortfolioPlan, portfolio: Portfolio) -> PortfolioPlan:
        """Copy the core's plan of ``portfolio``."""
        names = [c.name for c in portfolio.candidates]
        steps = []
        for step in plan.steps:
            seg = step.segment
            steps.append(
                PortfolioStep(
                    stage=step.stage,
                    gpu=step.gpu,
                    window=seg.window,
                    start_s=seg.start_s,
                    candidate=None if step.candidate < 0 else names[step.candidate],
                    action=ACTION_NAMES[int(seg.action.kind)],
                    quanta=seg.action.quanta,
                    checkpoint=seg.action.checkpoint,
                    cold=seg.action.cold,
                    publish_s=_optional(seg.publish_s),
                    ready_s=_optional(seg.ready_s),
                    gpu_s=step.gpu_s,
                    benefit=seg.benefit,
                    cost=CostSplit.from_core(seg.cost),
                )
            )
        return cls(
            policy=_POLICY_OF_CORE[plan.policy].value,
            value=plan.value,
            benefit=plan.benefit,
            gpu_s=plan.gpu_s,
            publish_s={n: _optional(t) for n, t in zip(names, plan.publish_s, strict=True)},
            cost=CostSplit.from_core(plan.cost),
            steps=tuple(steps),
        )

    def to_json(self) -> dict[str, Any]:
        """``{"value", "publish_s", "gpu_s"}``: what ``learnsched portfolio --json`` prints."""
        return {"value": self.value, "publish_s": dict(self.publish_s), "gpu_s": self.gpu_s}


class PortfolioModel:
    """A validated portfolio prepared for its policies.

    Building it costs O(sum of K_g * J_c) (every candidate's Window-plan tables on every
    GPU); ``sequential`` also builds the one-candidate Rollout model of each. A ``rollout`` decision
    follows the reference from each choice's successor: O(choices x stages x candidates).

    Parameters
    ----------
    portfolio
        The portfolio.
    policies
        The policies it will be asked about (default :data:`DEFAULT_POLICIES`).
    """

    __slots__ = ("_model", "_policies", "_portfolio")

    def __init__(
        self,
        portfolio: Portfolio,
        policies: str | Iterable[str | PortfolioPolicy] | None = None,
    ) -> None:
        if not isinstance(portfolio, Portfolio):
            raise TypeError(f"portfolio must be a Portfolio, got {type(portfolio).__name__}")
        self._portfolio = portfolio
        self._policies = parse_policies(policies)
        self._model = _core.portfolio.PortfolioModel(
            portfolio.to_core(), [_CORE_POLICY[p] for p in self._policies]
        )

    @property
    def portfolio(self) -> Portfolio:
        """The portfolio this model was prepared for."""
        return self._portfolio

    @property
    def policies(self) -> tuple[PortfolioPolicy, ...]:
        """The policies it was prepared for."""
        return self._policies

    @property
    def stage_count(self) -> int:
        """Number of stages: every GPU's windows together."""
        return int(self._model.stage_count)

    def solve(self, policy: str | PortfolioPolicy) -> PortfolioPlan:
        """The policy's plan from the initial state.

        Raises
        ------
        ValueError
            An unknown policy, or ``sequential`` when the model was prepared without it;
            :class:`StateSpaceError` when ``dp`` is too large.
        """
        core = self._model.solve(_CORE_POLICY[PortfolioPolicy.parse(policy)])
        return PortfolioPlan.from_core(core, self._portfolio)

    def solve_all(self) -> dict[str, PortfolioPlan]:
        """Every prepared policy's plan, by name."""
        return {p.value: self.solve(p) for p in self._policies}

    def initial_state(self) -> _core.portfolio.PortfolioState:
        """The state at the first stage."""
        return self._model.initial_state()

    def decide(
        self, state: _core.portfolio.PortfolioState, policy: str | PortfolioPolicy = PortfolioPolicy.ROLLOUT
    ) -> _core.portfolio.PortfolioAction:
        """The policy's action in ``state``: ``candidate`` (its index; -1 gives the window to
        serving) and the finite-model ``action`` it takes in the stage's window."""
        return self._model.decide(state, _CORE_POLICY[PortfolioPolicy.parse(policy)])

    def step(
        self, state: _core.portfolio.PortfolioState, action: _core.portfolio.PortfolioAction
    ) -> tuple[_core.portfolio.PortfolioStep, _core.portfolio.PortfolioState]:
        """What a feasible ``action`` does from ``state``, and the next state."""
        step, state = self._model.step(state, action)
        return step, state

    def reference_value(self, state: _core.portfolio.PortfolioState) -> float:
        """V^pi0: the value of following the portfolio Costed Window from ``state``, s-eq."""
        return float(self._model.reference_value(state))

    def optimal_value(self, state: _core.portfolio.PortfolioState) -> float:
        """V*: the DP's value of ``state`` (Eq. D.2), s-eq.; :class:`StateSpaceError` if too large."""
        return float(self._model.optimal_value(state))


def solve_portfolio(
    portfolio: Portfolio, policies: str | Iterable[str | PortfolioPolicy] | None = None
) -> dict[str, PortfolioPlan]:
    """Every policy's plan of ``portfolio`` by name (default :data:`DEFAULT_POLICIES`).

    Examples
    --------
    >>> import learnsched as ls
    >>> from learnsched.portfolio import PortfolioCandidate, Portfolio, solve_portfolio
    >>> jobs = [PortfolioCandidate("tool", 6, 5.0, 0.25, 1020.0),
    ...         PortfolioCandidate("lora", 12, 5.0, 0.5, 1020.0)]
    >>> p = Portfolio.on_windows([(0, 80), (100, 180), (200, 280), (300, 540)], ls.PAPER_WARM, jobs)
    >>> plans = solve_portfolio(p, ["costed_window", "rollout"])
    >>> plans["rollout"].value >= plans["costed_window"].value
    True
    """
    return PortfolioModel(portfolio, policies).solve_all()


__getattr__ = module_aliases(__name__, globals(), {"Candidate": "PortfolioCandidate"})
