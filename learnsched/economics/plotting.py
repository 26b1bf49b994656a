"""Fig. 10 style panels for the alert experiment; matplotlib is imported only when drawing."""

from __future__ import annotations

import os

from .._figures import pyplot, save_figure
from .alert_experiment import AlertExperiment
from .alerts import ALERT_RULES

__all__ = ["plot_alert_experiment"]

RULE_LABELS = {
    "no_scaling": "No scaling",
    "reactive": "Reactive",
    "eager": "Eager",
    "shared": "Shared",
    "learnsched": "LearnSched",
    "oracle": "Oracle",
}


def plot_alert_experiment(result: AlertExperiment, path: str | os.PathLike[str]) -> None:
    """Draw (a) mean loss per rule with seed ranges, (b) loss against lead time, (c) p*(L).

    Parameters
    ----------
    result
        Output of :func:`~learnsched.economics.run_alert_experiment`.
    path
        Output image, written atomically; the format follows the suffix (``.png`` ...).

    Raises
    ------
    MissingExtra
        matplotlib is not installed.
    """
    plt = pyplot()
    fig, (losses, lead, boundary) = plt.subplots(1, 3, figsize=(13, 3.8))
    engines = list(result.stats)
    height = 0.8 / len(engines)
    for i, engine in enumerate(engines):
        stats = [result.stats[engine][rule] for rule in ALERT_RULES]
        rows = [r + (i - (len(engines) - 1) / 2) * height for r in range(len(ALERT_RULES))]
        errors = [[s.mean - s.low for s in stats], [s.high - s.mean for s in stats]]
        losses.barh(rows, [s.mean for s in stats], height, xerr=errors, label=engine)
        line = lead.plot(result.lead_times_s, result.sweep[engine]["learnsched"], label=engine)
        lead.plot(
            result.lead_times_s,
            result.sweep[engine]["reactive"],
            ls="--",
            color=line[0].get_color(),
        )
        boundary.plot(result.lead_times_s, result.boundary[engine], label=engine)
    losses.set_yticks(range(len(ALERT_RULES)), [RULE_LABELS[r] for r in ALERT_RULES])
    losses.set_xlabel("Loss/alert (s-eq.)")
    losses.set_title(f"(a) Paired losses, {len(result.seeds)} seed(s)")
    lead.set_xlabel("Lead time (s)")
    lead.set_ylabel("Loss/alert (s-eq.)")
    lead.set_title("(b) Solid: LearnSched; dashed: reactive")
    boundary.set_xlabel("Lead time (s)")
    boundary.set_ylabel("Min. confidence p*")
    boundary.set_ylim(0, 1.05)
    boundary.set_title("(c) Return above curve, wait below")
    for ax in (losses, lead, boundary):
        ax.legend(fontsize="small")
    fig.tight_layout()
    save_figure(fig, path)
