"""Per-point aggregates of a sweep: mean value per policy and Rollout against Costed Window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._checks import FloatArray
from ..solver import Policy
from ..summary import tied
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


def _group_means(
    values: FloatArray, starts: NDArray[np.int64], counts: NDArray[np.int64]
) -> FloatArray:
    """Per point, the mean of its ``counts[p]`` rows of ``values`` from ``starts[p]`` on, as
    ``np.mean`` of those rows would give it, NaN for none: the points with as many rows are
    gathered into one (points, rows) array whose mean along its rows sums each point's
    values pairwise in row order, as the mean of one point's column does."""
    means = np.full((len(counts), values.shape[1]), np.nan)
    for count in np.unique(counts[counts > 0]).tolist():
        group = np.flatnonzero(counts == count)
        index = starts[group][:, None] + np.arange(count)
        for j in range(values.shape[1]):
            means[group, j] = values[:, j][index].mean(axis=1)
    return means


def summarize_points(
    spec: SweepSpec, points: tuple[Point, ...], rows: Rows
) -> tuple[PointSummary, ...]:
    """One :class:`PointSummary` per point of a finished sweep, in point order.

    O(rows): each aggregate is computed over every point at once, since a pass over every
    row per point would take time quadratic in the sweep's size.
    """
    n_points = len(points)
    solved = np.fromiter((not e for e in rows.error), dtype=bool, count=len(rows))
    scenarios = np.bincount(rows.point, minlength=n_points)
    solved_point = rows.point[solved]  # point-major: each point's solved rows in one run
    solved_counts = np.bincount(solved_point, minlength=n_points)
    starts = np.cumsum(solved_counts) - solved_counts
    compact = rows.value[solved]
    means = _group_means(compact, starts, solved_counts).tolist()
    names = [p.value for p in spec.policies]
    versus: list[tuple[int, int, int]] | None = None
    if Policy.ROLLOUT in spec.policies and Policy.COSTED_WINDOW in spec.policies:
        rollout = compact[:, spec.policies.index(Policy.ROLLOUT)]
        costed = compact[:, spec.policies.index(Policy.COSTED_WINDOW)]
        tie = tied(rollout, costed)
        counted = [
            np.bincount(solved_point[mask], minlength=n_points).tolist()
            for mask in (~tie & (rollout > costed), tie, ~tie & (rollout < costed))
        ]
        versus = list(zip(*counted, strict=True))
    none: tuple[int | None, int | None, int | None] = (None, None, None)
    return tuple(
        PointSummary(
            point=i,
            params=point,
            scenarios=total,
            invalid=total - count,
            mean_value=dict(zip(names, mean, strict=True)) if count else dict.fromkeys(names),
            wins=(versus[i] if versus is not None else none)[0],
            ties=(versus[i] if versus is not None else none)[1],
            losses=(versus[i] if versus is not None else none)[2],
        )
        for i, (point, total, count, mean) in enumerate(
            zip(points, scenarios.tolist(), solved_counts.tolist(), means, strict=True)
        )
    )
