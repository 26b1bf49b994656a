"""The figure of a sweep: the first swept field against mean value per policy, and wins."""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._figures import pyplot, save_figure
from .summary import PointSummary

__all__ = ["plot_sweep"]


def _series(summaries: Sequence[PointSummary], field: str) -> dict[str, list[PointSummary]]:
    """Points grouped by the values of every other swept field, each sorted along ``field``."""
    groups: dict[str, list[PointSummary]] = {}
    for s in summaries:
        rest = ", ".join(f"{k}={v:g}" for k, v in s.params if k != field)
        groups.setdefault(rest, []).append(s)
    for points in groups.values():
        points.sort(key=lambda s: dict(s.params)[field])
    return groups


def plot_sweep(summaries: Sequence[PointSummary], path: str | os.PathLike[str]) -> None:
    """Mean value per policy (left) and Rollout's wins over Costed Window (right) along
    the first swept field; other swept fields give one line each.

    Parameters
    ----------
    summaries
        Per-point aggregates of a sweep that varies at least one field.
    path
        Output image; the format follows the suffix (``.png``, ``.svg``, ``.pdf``).

    Raises
    ------
    ValueError
        Nothing is swept, or matplotlib is not installed.
    """
    if not summaries or not summaries[0].params:
        raise ValueError("--plot needs a SPEC that varies at least one field")
    field = summaries[0].params[0][0]
    plt = pyplot()
    fig, (values, wins) = plt.subplots(1, 2, figsize=(11, 4))
    for rest, points in _series(summaries, field).items():
        x = [dict(s.params)[field] for s in points]
        suffix = f" ({rest})" if rest else ""
        for policy in points[0].mean_value:
            y = [s.mean_value[policy] for s in points]
            values.plot(
                x, [float("nan") if v is None else v for v in y], marker="o", label=policy + suffix
            )
        if points[0].wins is not None:
            wins.plot(x, [s.wins for s in points], marker="o", label="wins" + suffix)
        if any(s.invalid for s in points):
            wins.plot(
                x, [s.invalid for s in points], marker="x", linestyle="--", label="invalid" + suffix
            )
    values.set_xlabel(field)
    values.set_ylabel("mean value (s-eq.)")
    values.set_title("mean value per policy")
    values.legend(fontsize=7)
    wins.set_xlabel(field)
    wins.set_ylabel("scenarios")
    wins.set_title("Rollout strict wins over Costed Window")
    if wins.get_legend_handles_labels()[0]:
        wins.legend(fontsize=7)
    save_figure(fig, path)
