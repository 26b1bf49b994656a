"""Realised value per policy against the number of forecast samples (matplotlib)."""

from __future__ import annotations

import os

from .._figures import pyplot, save_figure
from .study import TraceStudy

__all__ = ["plot_trace_study"]


def plot_trace_study(study: TraceStudy, path: str | os.PathLike[str], title: str = "") -> None:
    """Mean realised value (with its 95% CI) of every online policy against N."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    ns = sorted(study.results)
    for name in study.results[ns[0]].policies:
        summaries = [study.results[n].policies[name] for n in ns]
        means = [s.mean_value for s in summaries]
        lows = [m - (s.ci95[0] if s.ci95 else m) for m, s in zip(means, summaries, strict=True)]
        highs = [(s.ci95[1] if s.ci95 else m) - m for m, s in zip(means, summaries, strict=True)]
        style = "--" if name == "clairvoyant" else "-"
        ax.errorbar(
            ns, means, yerr=[lows, highs], label=name, linestyle=style, marker="o", capsize=3
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("forecast samples N")
    ax.set_ylabel("mean realised value (s-eq.)")
    ax.set_title(title or f"{study.calendars} rolling horizons")
    ax.legend()
    save_figure(fig, path)
