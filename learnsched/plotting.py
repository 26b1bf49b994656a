"""Figures like the paper's Fig. 4: plan timelines (c) and grid aggregates (a, b)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ._figures import pyplot, save_figure
from .plan import Plan
from .scenario import Recovery, Scenario
from .summary import GridSummary

__all__ = ["plot_grid_summary", "plot_plans"]

# One colour per kind of time in a segment, in timeline order.
PHASE_COLOURS = {
    "load": "#8c6bb1",
    "work": "#2b8cbe",
    "save": "#fdae61",
    "return": "#d7301f",
}


def plot_plans(
    plans: Mapping[str, Plan], scenario: Scenario, path: str | os.PathLike[str], title: str = ""
) -> None:
    """Draw each plan as a timeline of load, work, save and return over the idle windows.

    Parameters
    ----------
    plans
        Plans keyed by policy name, drawn top to bottom.
    scenario
        The scenario they solve (its windows are shaded).
    path
        Output image; the format follows the suffix (``.png``, ``.svg``, ``.pdf``).
    title
        Figure title.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 0.8 + 0.6 * len(plans)))
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
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=6, fontsize=8)
    ax.set_title(title)
    save_figure(fig, path)


def plot_grid_summary(summary: GridSummary, path: str | os.PathLike[str]) -> None:
    """Mean DP gap per policy (symlog, Fig. 4a) and strict Rollout wins per calendar (Fig. 4b)."""
    plt = pyplot()
    fig, (gaps, wins) = plt.subplots(1, 2, figsize=(11, 3.8))
    names = list(summary.mean_gap)
    gaps.barh(names, [summary.mean_gap[n] for n in names], color="#2b8cbe")
    gaps.set_xscale("symlog", linthresh=1.0)
    gaps.invert_yaxis()
    gaps.set_xlabel("mean gap to DP (s-eq.)")
    gaps.set_title(f"(a) mean DP gap over {summary.scenarios} scenarios")
    for y, n in enumerate(names):
        gaps.text(summary.mean_gap[n], y, f" {summary.mean_gap[n]:.3f}", va="center", fontsize=8)

    calendars = list(dict.fromkeys(k.split("/")[0] for k in summary.wins_by_calendar))
    for offset, recovery in ((-0.2, Recovery.WARM), (0.2, Recovery.COLD)):
        counts = [summary.wins_by_calendar.get(f"{c}/{recovery}", 0) for c in calendars]
        wins.bar([i + offset for i in range(len(calendars))], counts, width=0.4, label=recovery)
    wins.set_xticks(range(len(calendars)), [c.replace("_", "-") for c in calendars], rotation=20)
    wins.set_ylabel("strict wins over Costed Window")
    wins.set_title(f"(b) {summary.wins} wins / {summary.ties} ties / {summary.losses} losses")
    wins.legend()
    save_figure(fig, path)
