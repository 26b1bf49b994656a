"""Per-point aggregates of a sweep: mean value per policy and Rollout against Costed Window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..solver import Policy
from ..summary import _ties
from .points import Point
from .rows import Rows
from .spec import SweepSpec

__all__ = ["PointSummary", "summarize_points"]


@dataclass(frozen=True)
class PointSummary:
    """Aggregates of one point over its base scenarios; values in s-eq.

    Attributes
    ----------
    point
        Point index.
    params
        The point's ``(field, value)`` pairs.
    scenarios
        Base scenarios at this point (solved and invalid).
    invalid
        Combinations the core rejected (kept in the output with their reason).
    mean_value
        Mean net value per policy over the solved rows (None if none was solved).
    wins, ties, losses
        Rollout against Costed Window over the solved rows, with the core's tie rule;
        None unless both policies were solved.
    """

    point: int
    params: Point
    scenarios: int
    invalid: int
    mean_value: dict[str, float | None]
    wins: int | None
    ties: int | None
    losses: int | None

    def to_json(self) -> dict[str, Any]:
        """The object printed per point by ``learnsched sweep --json``."""
        versus = None
        if self.wins is not None:
            versus = {"wins": self.wins, "ties": self.ties, "losses": self.losses}
        return {
            "point": self.point,
            "params": dict(self.params),
            "scenarios": self.scenarios,
            "invalid": self.invalid,
            "mean_value": self.mean_value,
            "rollout_vs_costed_window": versus,
        }


def _summary(spec: SweepSpec, index: int, point: Point, rows: Rows) -> PointSummary:
    mine = rows.point == index
    solved = mine & np.array([not e for e in rows.error], dtype=bool)
    values = rows.value[solved]
    mean = {
        p.value: (float(values[:, j].mean()) if len(values) else None)
        for j, p in enumerate(spec.policies)
    }
    wins = ties = losses = None
    if Policy.ROLLOUT in spec.policies and Policy.COSTED_WINDOW in spec.policies:
        rollout = values[:, spec.policies.index(Policy.ROLLOUT)]
        costed = values[:, spec.policies.index(Policy.COSTED_WINDOW)]
        tie = _ties(rollout, costed)
        wins = int((~tie & (rollout > costed)).sum())
        ties = int(tie.sum())
        losses = int((~tie & (rollout < costed)).sum())
    return PointSummary(
        point=index,
        params=point,
        scenarios=int(mine.sum()),
        invalid=int((mine & ~solved).sum()),
        mean_value=mean,
        wins=wins,
        ties=ties,
        losses=losses,
    )


def summarize_points(
    spec: SweepSpec, points: tuple[Point, ...], rows: Rows
) -> tuple[PointSummary, ...]:
    """One :class:`PointSummary` per point of a finished sweep, in point order."""
    return tuple(_summary(spec, i, point, rows) for i, point in enumerate(points))
