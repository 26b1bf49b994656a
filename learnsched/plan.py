"""Plans: what a policy does in each window, when it publishes, and what it costs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from numpy.typing import NDArray

from . import _core
from ._lazy import LazyTuple
from ._sum import ordered_sum
from .scenario import Recovery

__all__ = ["COST_FIELDS", "CostSplit", "Plan", "Step", "Steps"]

# The cost causes in the core's column order (solve_batch's cost[..., i]).
COST_FIELDS: tuple[str, ...] = tuple(_core.finite.cost_fields())
# Action names by the core's ActionKind value (the plan columns' "kind": 0, 1, ...).
_KINDS = sorted(_core.finite.ActionKind.__members__.values(), key=int)
ACTION_NAMES: tuple[str, ...] = tuple(_core.finite.Action(kind).name for kind in _KINDS)
if [int(kind) for kind in _KINDS] != list(range(len(_KINDS))):  # pragma: no cover - build mismatch
    raise ImportError("the core's ActionKind values are not 0, 1, ...: rebuild the extension")


def _optional(seconds: float) -> float | None:
    return None if math.isnan(seconds) else seconds


@dataclass(frozen=True)
class CostSplit:
    """Cost in s-eq. by cause: work, checkpoint save, checkpoint load, recovery, residency."""

    work: float = 0.0
    save: float = 0.0
    load: float = 0.0
    recovery: float = 0.0
    residency: float = 0.0

    @property
    def total(self) -> float:
        """Sum of all causes, s-eq."""
        return ordered_sum(getattr(self, name) for name in COST_FIELDS)  # as the core adds

    @classmethod
    def from_core(cls, cost: _core.finite.CostSplit) -> CostSplit:
        """Copy the core's split."""
        return cls(**{name: getattr(cost, name) for name in COST_FIELDS})

    def to_json(self) -> dict[str, float]:
        """``{"work", "save", "load", "recovery", "residency"}`` in s-eq."""
        return asdict(self)


if tuple(f.name for f in fields(CostSplit)) != COST_FIELDS:  # pragma: no cover - build mismatch
    raise ImportError(f"CostSplit's fields do not match the core's cost causes {COST_FIELDS}")


@dataclass(frozen=True)
class Step:
    """One window of a plan.

    Attributes
    ----------
    window
        Window index ``k``.
    action
        ``wait``, ``abandon``, ``checkpoint_return``, ``discard_return``, ``publish`` or
        ``advance``.
    quanta
        Quanta run in this window.
    checkpoint
        Whether the segment saves a checkpoint before returning.
    start_s
        Window start ``l_k``, seconds (every segment starts there).
    publish_s
        Publication time ``t_p`` in seconds, or ``None``.
    ready_s
        When serving capacity is ready again, seconds (``None`` for a wait); never after
        the window's end (Eq. 10).
    cost
        This step's cost split, s-eq.
    benefit
        ``Phi(t_p)`` in s-eq. if this step publishes, else 0.
    progress, durable
        Completed and durable quanta at the next window.
    path
        ``"warm"`` or ``"cold"``: the recovery path this step returned by, in a scenario
        offering both; ``None`` for a wait or when the scenario offers one path.
    """

    window: int
    action: str
    quanta: int
    checkpoint: bool
    start_s: float
    publish_s: float | None
    ready_s: float | None
    cost: CostSplit
    benefit: float
    progress: int
    durable: int
    path: Recovery | None = None

    @property
    def value(self) -> float:
        """Benefit minus cost of this step, s-eq."""
        return self.benefit - self.cost.total

    @classmethod
    def from_core(cls, seg: _core.finite.Segment, two_path: bool = False) -> Step:
        """Copy one of the core's segments (``two_path``: its scenario offers both paths)."""
        returned = two_path and seg.action.kind != _core.finite.ActionKind.WAIT
        return cls(
            window=seg.window,
            action=seg.action.name,
            quanta=seg.action.quanta,
            checkpoint=seg.action.checkpoint,
            start_s=seg.start_s,
            publish_s=_optional(seg.publish_s),
            ready_s=_optional(seg.ready_s),
            cost=CostSplit.from_core(seg.cost),
            benefit=seg.benefit,
            progress=seg.next.progress,
            durable=seg.next.durable,
            path=(Recovery.COLD if seg.action.cold else Recovery.WARM) if returned else None,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON object of this step (seconds, quanta, s-eq.)."""
        out = asdict(self)
        out["cost"] = self.cost.to_json()
        return out


STEP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Step))
_WAIT = ACTION_NAMES.index("wait")


Columns = dict[str, NDArray[Any]]
"""``_core.finite.Plan.columns()``: one array per segment field."""


class Steps(LazyTuple[Step]):
    """A plan's steps, read from the core's plan as columns when first needed; each
    :class:`Step` is made on first use.

    A long plan costs about its C++ walk to return: nothing per step is converted until a
    step is read, and :meth:`to_json` reads the columns without building any. It behaves
    as the tuple of its steps (:class:`~learnsched._lazy.LazyTuple`).

    Parameters
    ----------
    source
        The core's plan, or its ``Columns``.
    two_path
        Whether the scenario offers both recovery paths (steps then name theirs).
    """

    __slots__ = ("_rows", "_source", "_two_path")

    def __init__(self, source: _core.finite.Plan | Columns, two_path: bool = False) -> None:
        super().__init__(len(source["window"]) if isinstance(source, dict) else source.step_count)
        self._source = source
        self._two_path = two_path
        self._rows: list[tuple[Any, ...]] | None = None

    def columns(self) -> Columns:
        """The steps as arrays (``_core.finite.Plan.columns()``), converted once."""
        if not isinstance(self._source, dict):
            self._source = self._source.columns()  # the core's plan is no longer needed
        return self._source

    def _fields(self) -> list[tuple[Any, ...]]:
        """Every step's field values in :class:`Step`'s order, cost as a 5-tuple of s-eq."""
        if self._rows is None:
            c = self.columns()
            kinds = c["kind"].tolist()
            if self._two_path:  # a wait returns by no path
                cold = c["cold"].tolist()
                paths: list[Recovery | None] = [
                    None if k == _WAIT else Recovery.COLD if x else Recovery.WARM
                    for k, x in zip(kinds, cold, strict=True)
                ]
            else:
                paths = [None] * len(kinds)
            publish = [_optional(t) for t in c["publish_s"].tolist()]
            ready = [_optional(t) for t in c["ready_s"].tolist()]
            self._rows = list(
                zip(
                    c["window"].tolist(),
                    [ACTION_NAMES[k] for k in kinds],
                    c["quanta"].tolist(),
                    c["checkpoint"].tolist(),
                    c["start_s"].tolist(),
                    publish,
                    ready,
                    map(tuple, c["cost"].tolist()),
                    c["benefit"].tolist(),
                    c["progress"].tolist(),
                    c["durable"].tolist(),
                    paths,
                    strict=True,
                )
            )
        return self._rows

    def _make(self, index: int) -> Step:
        w, action, quanta, checkpoint, start, publish, ready, cost, *rest = self._fields()[index]
        benefit, progress, durable, path = rest
        return Step(
            w,
            action,
            quanta,
            checkpoint,
            start,
            publish,
            ready,
            CostSplit(*cost),
            benefit,
            progress,
            durable,
            path,
        )

    def __reduce__(self) -> tuple[type[Steps], tuple[Columns, bool]]:
        return (type(self), (self.columns(), self._two_path))  # the core's plan does not pickle

    def to_json(self) -> list[dict[str, Any]]:
        """Every step's :meth:`Step.to_json`, read from the columns."""
        out = []
        for row in self._fields():
            step = dict(zip(STEP_FIELDS, row, strict=True))
            step["cost"] = dict(zip(COST_FIELDS, row[7], strict=True))
            out.append(step)
        return out


@dataclass(frozen=True)
class Plan:
    """A policy's plan from the initial state until it publishes, abandons or runs out of windows.

    Attributes
    ----------
    policy
        Policy name.
    value
        Net value, benefit minus every cost paid, s-eq.
    benefit
        ``Phi(t_p) = g*(H - t_p)^+`` if published, else 0, s-eq.
    publish_s
        Publication time in seconds, or ``None``.
    cost
        Total cost split, s-eq.
    steps
        One :class:`Step` per window visited: a tuple, or :class:`Steps` (which behaves
        as one) for a plan from the core.
    """

    policy: str
    value: float
    benefit: float
    publish_s: float | None
    cost: CostSplit
    steps: Sequence[Step]

    @classmethod
    def from_core(cls, plan: _core.finite.Plan, two_path: bool = False) -> Plan:
        """Copy the core's plan (``two_path``: its scenario offers both recovery paths)."""
        return cls(
            policy=_core.finite.policy_name(plan.policy),
            value=plan.value,
            benefit=plan.benefit,
            publish_s=_optional(plan.publish_s),
            cost=CostSplit.from_core(plan.cost),
            steps=Steps(plan, two_path),
        )

    def to_json(self) -> dict[str, Any]:
        """``{"value", "benefit", "publish_s", "cost", "steps"}`` as ``learnsched solve`` prints."""
        return {
            "value": self.value,
            "benefit": self.benefit,
            "publish_s": self.publish_s,
            "cost": self.cost.to_json(),
            "steps": (
                self.steps.to_json()
                if isinstance(self.steps, Steps)
                else [step.to_json() for step in self.steps]
            ),
        }
