"""Figures like the paper's Fig. 4: plan timelines (c) and grid aggregates (a, b)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._figures import pyplot, save_figure
from .plan import Plan
from .scenario import Recovery, Scenario
from .solver import Policy
from .summary import GridSummary

__all__ = ["grid_summary_figure", "plans_figure", "plot_grid_summary", "plot_plans"]

# One colour per kind of time in a segment, in timeline order.
PHASE_COLOURS = {
    "load": "#8c6bb1",
    "work": "#2b8cbe",
    "save": "#fdae61",
    "return": "#d7301f",
}


# Fig. 4(c)'s cost bars: work, the return path, and everything else (save, load, residency).
COST_COLOURS = {"Work": "#2b8cbe", "Return": "#d7301f", "Other": "#bdbdbd"}


def plans_figure(plans: Mapping[str, Plan], scenario: Scenario, title: str = "") -> Any:
    """Fig. 4(c): each plan's timeline over the idle windows, and its cost split beside it.

    Parameters
    ----------
    plans
        Plans keyed by policy name, drawn top to bottom.
    scenario
        The scenario they solve (its windows are shaded).
    title
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        Left: load, work, save and return per window (seconds), a star at publication.
        Right: stacked Work / Return / Other (save, load, residency) cost, s-eq.
    """
    plt = pyplot()
    fig, (ax, costs) = plt.subplots(
        1, 2, figsize=(12, 2.0 + 0.6 * len(plans)), gridspec_kw={"width_ratios": [3.2, 1]}
    )
    _draw_timelines(plt, ax, plans, scenario)
    _draw_cost_bars(costs, plans)
    fig.suptitle(f"{title}\n{_headline(plans)}" if _headline(plans) else title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_plans(
    plans: Mapping[str, Plan], scenario: Scenario, path: str | os.PathLike[str], title: str = ""
) -> None:
    """Draw :func:`plans_figure` to ``path`` (format from the suffix: ``.png``, ``.svg`` ...)."""
    save_figure(plans_figure(plans, scenario, title), path)


def _headline(plans: Mapping[str, Plan]) -> str:
    """Fig. 4(c)'s caption line: publication times and Rollout's net gain over Costed Window."""
    if "rollout" not in plans or "costed_window" not in plans:
        return ""
    cw, ro = plans["costed_window"], plans["rollout"]
    times = " -> ".join(
        "never" if p.publish_s is None else f"{p.publish_s:.2f} s" for p in (cw, ro)
    )
    return f"Publish: {times}   Net gain: {ro.value - cw.value:+.2f} s-eq."


def _draw_timelines(plt: Any, ax: Any, plans: Mapping[str, Plan], scenario: Scenario) -> None:
    for row, (_name, plan) in enumerate(plans.items()):
        y = len(plans) - 1 - row
        for start, end in scenario.windows:
            ax.barh(y, end - start, left=start, height=0.8, color="#eeeeee", edgecolor="#bbbbbb")
        for step in plan.steps:
            left = step.start_s
            phases = {
                "load": step.cost.load,
                "work": step.cost.work,
                "save": step.cost.save,
                "return": step.cost.recovery,
            }
            for phase, seconds in phases.items():
                if seconds > 0:
                    ax.barh(y, seconds, left=left, height=0.5, color=PHASE_COLOURS[phase])
                    left += seconds
            if step.publish_s is not None:
                ax.plot([step.publish_s], [y], marker="*", color="black", markersize=12)
    ax.set_yticks(
        range(len(plans)),
        [f"{name}\n{plan.value:.3f} s-eq." for name, plan in reversed(list(plans.items()))],
    )
    ax.set_xlabel("time (s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PHASE_COLOURS.values()]
    labels = list(PHASE_COLOURS)
    handles += [
        plt.Rectangle((0, 0), 1, 1, color="#eeeeee", ec="#bbbbbb"),
        plt.Line2D([], [], marker="*", color="black", linestyle=""),
    ]
    labels += ["idle window", "publish"]
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=6, fontsize=8)


def _draw_cost_bars(ax: Any, plans: Mapping[str, Plan]) -> None:
    totals = [plan.cost.total for plan in plans.values()]
    for row, plan in enumerate(plans.values()):
        y = len(plans) - 1 - row
        c = plan.cost
        parts = {"Work": c.work, "Return": c.recovery, "Other": c.save + c.load + c.residency}
        left = 0.0
        for part, value in parts.items():
            ax.barh(
                y,
                value,
                left=left,
                height=0.5,
                color=COST_COLOURS[part],
                label=part if row == 0 else None,
            )
            left += value
        ax.text(left, y, f" {c.total:.1f}", va="center", fontsize=8)
    ax.set_yticks(range(len(plans)), [""] * len(plans))
    ax.set_ylim(-0.6, len(plans) - 0.4)
    ax.set_xlim(0, 1.35 * max(max(totals), 1e-9))  # room for the totals inside the panel
    ax.set_xlabel("cost (s-eq.)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=3, fontsize=8)


def grid_summary_figure(summary: GridSummary) -> Any:
    """Mean DP gap per policy (symlog, Fig. 4a) and strict Rollout wins per calendar (Fig. 4b).

    As in the paper, panel (a) ends with DP's own row (gap 0) and panel (b) labels every
    calendar and recovery, zeros included. Every value label sits inside its panel: the
    gap axis extends past the largest bar by enough (a factor on the log scale) for it.
    """
    plt = pyplot()
    fig, (gaps, wins) = plt.subplots(1, 2, figsize=(11, 3.8))
    gap = {**summary.mean_gap, Policy.DP.value: 0.0}  # DP's gap to itself
    names = list(gap)
    values = [gap[n] for n in names]
    gaps.barh(names, values, color="#2b8cbe")
    gaps.set_xscale("symlog", linthresh=1.0)
    gaps.set_xlim(0, 12 * max(max(values), 1.0))
    gaps.invert_yaxis()
    gaps.set_xlabel("mean gap to DP (s-eq.)")
    gaps.set_title(f"(a) mean DP gap over {summary.scenarios} scenarios")
    for y, value in enumerate(values):
        gaps.text(value, y, f" {value:.3f}", va="center", fontsize=8)

    calendars = list(dict.fromkeys(k.split("/")[0] for k in summary.wins_by_calendar))
    top = 0
    for offset, recovery in ((-0.2, Recovery.WARM), (0.2, Recovery.COLD)):
        counts = [summary.wins_by_calendar.get(f"{c}/{recovery}", 0) for c in calendars]
        x = [i + offset for i in range(len(calendars))]
        wins.bar(x, counts, width=0.4, label=recovery)
        for xi, count in zip(x, counts, strict=True):  # zeros too, as Fig. 4(b) prints them
            wins.text(xi, count, str(count), ha="center", va="bottom", fontsize=8)
        top = max(top, *counts)
    wins.set_ylim(0, 1.15 * max(top, 1))
    wins.set_xticks(range(len(calendars)), [c.replace("_", "-") for c in calendars], rotation=20)
    wins.set_ylabel("strict wins over Costed Window")
    wins.set_title(f"(b) {summary.wins} wins / {summary.ties} ties / {summary.losses} losses")
    wins.legend()
    fig.tight_layout()
    return fig


def plot_grid_summary(summary: GridSummary, path: str | os.PathLike[str]) -> None:
    """Draw :func:`grid_summary_figure` to ``path`` (format from the suffix)."""
    save_figure(grid_summary_figure(summary), path)
