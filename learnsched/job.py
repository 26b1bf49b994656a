"""The job: one self-evolution candidate's work, benefit and checkpoint costs.

A :class:`Job` is what every model plans with, in the paper's quantities (Section 4.1):
``J`` quanta of ``delta`` seconds, a benefit rate ``g`` until the horizon ``H``, its
checkpoint save and load, and where it stands when the first window opens. The return
path (``recovery_s``, the residency price) belongs to the serving engine, not to the job:
:meth:`Job.costs` joins the two into the :class:`~learnsched.scenario.HandoffCosts` of a
finite-model :class:`~learnsched.scenario.Scenario`, and :meth:`Job.scenario` builds that
scenario on a calendar. The portfolio's candidate, the calendar study's candidate and the
trainer queue's job each hold a job beside their own fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._checks import integer, real
from ._json import exact_keys
from .benefit import BenefitRate, benefit_rate, rate_json
from .scenario import C_INT_MAX, INITIAL_KEYS, HandoffCosts, InitialState, Scenario

__all__ = ["JOB_FIELDS", "Job"]

JOB_FIELDS = (
    "work_quanta",
    "quantum_s",
    "benefit_rate",
    "horizon_s",
    "save_s",
    "load_s",
    "initial",
)
"""A job's fields, in order: also its JSON keys (:meth:`Job.to_json`)."""


def initial_json(initial: InitialState) -> dict[str, Any]:
    """The ``initial`` JSON object of a state (quanta, quanta, bool)."""
    return {"progress": initial.progress, "durable": initial.durable, "active": initial.active}


@dataclass(frozen=True)
class Job:
    """One self-evolution job: the work, benefit and checkpoint costs a model plans with.

    Only the types are converted here (``TypeError`` naming the field); the ranges are
    checked by the model that plans the job, which names the job where it has a name.

    Parameters
    ----------
    work_quanta
        Construction and validation work ``J``, quanta.
    quantum_s
        Length of one quantum ``delta``, seconds.
    benefit_rate
        Benefit rate ``g`` after publication until ``horizon_s``, s-eq. per second: a
        number, or a piecewise-constant schedule of ``(start_s, rate)`` pieces
        (:mod:`learnsched.benefit`).
    horizon_s
        End of the benefit stream ``H``, seconds: publishing at ``t`` earns the integral
        of the rate from ``t`` to ``H``, ``g*(H - t)^+`` for a constant rate.
    save_s
        Checkpoint save ``t_ck``, seconds.
    load_s
        Checkpoint load ``t_ld`` when resuming from durable progress, seconds.
    initial
        Where the job stands when the first window opens (progress and durable progress,
        quanta; whether it is running).
    """

    work_quanta: int
    quantum_s: float
    benefit_rate: BenefitRate
    horizon_s: float
    save_s: float = 0.0
    load_s: float = 0.0
    initial: InitialState = field(default_factory=InitialState)

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "work_quanta", integer("work_quanta", self.work_quanta, -C_INT_MAX, C_INT_MAX))
        put(self, "benefit_rate", benefit_rate(self.benefit_rate))
        for name in ("quantum_s", "horizon_s", "save_s", "load_s"):
            put(self, name, real(name, getattr(self, name)))
        if not isinstance(self.initial, InitialState):
            raise TypeError(f"initial must be InitialState, got {type(self.initial).__name__}")

    @classmethod
    def of_fields(cls, holder: object) -> Job:
        """The job of an object that carries the job's fields under their names (a
        portfolio candidate, a queued job): :data:`JOB_FIELDS`, a missing ``initial``
        being no progress."""
        return cls(**{name: getattr(holder, name) for name in JOB_FIELDS if hasattr(holder, name)})

    @classmethod
    def of(cls, scenario: Scenario) -> Job:
        """The job a finite-model scenario plans (its costs' save and load)."""
        return cls(
            scenario.work_quanta,
            scenario.quantum_s,
            scenario.benefit_rate,
            scenario.horizon_s,
            scenario.costs.save_s,
            scenario.costs.load_s,
            scenario.initial,
        )

    def costs(
        self,
        recovery_s: float,
        residency_rate: float = 0.0,
        cold_recovery_s: float | None = None,
    ) -> HandoffCosts:
        """The handoff costs of this job on a return path.

        Parameters
        ----------
        recovery_s
            The return path until serving capacity is ready again ``t_ret`` (the warm
            one if two), seconds.
        residency_rate
            Price of parked serving state ``rho``, s-eq. per second.
        cold_recovery_s
            When given, every return chooses warm or this cold path, seconds.
        """
        return HandoffCosts(recovery_s, residency_rate, self.save_s, self.load_s, cold_recovery_s)

    def scenario(self, windows: Sequence[tuple[float, float]], path: HandoffCosts) -> Scenario:
        """The finite-model scenario of this job on ``windows`` (``(start, end)`` pairs,
        seconds), returning by ``path``'s return path (its save and load are the job's)."""
        return Scenario(
            windows,
            self.work_quanta,
            self.quantum_s,
            self.benefit_rate,
            self.horizon_s,
            self.costs(path.recovery_s, path.residency_rate, path.cold_recovery_s),
            self.initial,
        )

    def to_json(self) -> dict[str, Any]:
        """The job's keys of a JSON object (:data:`JOB_FIELDS`: seconds, quanta, s-eq./s)."""
        return {
            "work_quanta": self.work_quanta,
            "quantum_s": self.quantum_s,
            "benefit_rate": rate_json(self.benefit_rate),
            "horizon_s": self.horizon_s,
            "save_s": self.save_s,
            "load_s": self.load_s,
            "initial": initial_json(self.initial),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        """The job named by the :data:`JOB_FIELDS` of a JSON object (other keys are the
        caller's to check); ``ValueError`` for a missing or unknown ``initial`` key."""
        initial = exact_keys("initial", data["initial"], INITIAL_KEYS)
        return cls(
            data["work_quanta"],
            data["quantum_s"],
            data["benefit_rate"],
            data["horizon_s"],
            data["save_s"],
            data["load_s"],
            InitialState(initial["progress"], initial["durable"], initial["active"]),
        )
