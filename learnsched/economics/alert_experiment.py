"""The Fig. 10 experiment over the alert loss model of :mod:`.alerts`: seeds, ranges, sweep.

Every rule runs on the same alerts per seed (paired); the per-seed means give the ranges of
Fig. 10(a), fixed lead times its panel (b), and the return boundary its panel (c).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from .._checks import integer
from ._checks import array, values
from .alerts import (
    ALERT_RULES,
    AlertModel,
    SeedTerms,
    draw_alerts,
    fixed_lead_means,
    return_boundary,
    samples_by_engine,
    seed_means,
    simulate_alerts,
)

__all__ = [
    "PAPER_FIG10",
    "AlertExperiment",
    "RuleStats",
    "fig10_table",
    "lead_time_sweep",
    "run_alert_experiment",
]

# Section 6.3 and App. C.2: mean loss per alert, s-eq., of the rules the text names
# (no scaling has none: the paper prints no loss for it).
PAPER_FIG10: dict[str, dict[str, float]] = {
    "vllm": {
        "reactive": 28.16,
        "eager": 15.76,
        "learnsched": 14.61,
        "shared": 14.63,
        "oracle": 8.74,
    },
    "sglang": {
        "reactive": 42.48,
        "eager": 30.21,
        "learnsched": 28.87,
        "shared": 28.90,
        "oracle": 22.16,
    },
}


@dataclass(frozen=True)
class RuleStats:
    """Mean loss per alert of one rule on one engine across seeds, s-eq./alert.

    Attributes
    ----------
    mean
        Mean of the per-seed means.
    low, high
        Percentiles of the per-seed means (the range shown in Fig. 10(a)).
    per_seed
        Each seed's mean loss per alert.
    """

    mean: float
    low: float
    high: float
    per_seed: tuple[float, ...]


@dataclass(frozen=True)
class AlertExperiment:
    """Results of :func:`run_alert_experiment`.

    Attributes
    ----------
    n_alerts
        Alerts per seed.
    seeds
        The seeds, in order.
    percentiles
        The (low, high) percentiles of seed means reported as ranges.
    stats
        ``stats[engine][rule]``.
    lead_times_s
        Lead times of the boundary and of the sweep, seconds.
    boundary
        ``boundary[engine]``: ``p*(L)`` at each lead time (Fig. 10(c)).
    sweep
        ``sweep[engine][rule]``: mean loss per alert at each fixed lead time, first seed
        (Fig. 10(b)).
    """

    n_alerts: int
    seeds: tuple[int, ...]
    percentiles: tuple[float, float]
    stats: dict[str, dict[str, RuleStats]]
    lead_times_s: tuple[float, ...]
    boundary: dict[str, tuple[float, ...]]
    sweep: dict[str, dict[str, tuple[float, ...]]]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: every number in s-eq./alert, seconds, or probability."""
        return {
            "n_alerts": self.n_alerts,
            "seeds": list(self.seeds),
            "percentiles": list(self.percentiles),
            "loss_per_alert": {
                engine: {
                    rule: {
                        "mean": s.mean,
                        "low": s.low,
                        "high": s.high,
                        "per_seed": list(s.per_seed),
                    }
                    for rule, s in rules.items()
                }
                for engine, rules in self.stats.items()
            },
            "lead_times_s": list(self.lead_times_s),
            "return_boundary": {engine: list(p) for engine, p in self.boundary.items()},
            "lead_time_sweep": {
                engine: {rule: list(v) for rule, v in rules.items()}
                for engine, rules in self.sweep.items()
            },
        }


# Fig. 10(b) shows seven lead times on a 0-120 s axis without listing them; use even steps.
DEFAULT_LEAD_TIMES_S = (0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0)


MAX_SEEDS = 10_000
"""Most seeds one experiment may run (each keeps a few means; a seed costs a sample's time)."""


def seed_tuple(name: str, seeds: Iterable[int]) -> tuple[int, ...]:
    """``seeds`` as a tuple of 1 to :data:`MAX_SEEDS` integers, read no further than that
    (``range(2**31)`` is refused, not iterated); errors name ``name``."""
    seed_list = tuple(integer(name, s) for s in islice(seeds, MAX_SEEDS + 1))
    if len(seed_list) > MAX_SEEDS:
        raise ValueError(f"{name} must name at most {MAX_SEEDS} seeds, got more")
    if not seed_list:
        raise ValueError(f"{name} must name at least one seed, got none")
    return seed_list


def run_alert_experiment(
    n_alerts: int,
    seeds: Iterable[int],
    recovery_samples: Mapping[str, npt.ArrayLike] | None = None,
    model: AlertModel | None = None,
    percentiles: tuple[float, float] = (5.0, 95.0),
    lead_times_s: Sequence[float] = DEFAULT_LEAD_TIMES_S,
) -> AlertExperiment:
    """Run every rule on ``n_alerts`` paired alerts per seed and engine (Fig. 10).

    Parameters
    ----------
    n_alerts
        Alerts per seed (>= 1).
    seeds
        One or more seeds; each gives an independent, reproducible sample.
    recovery_samples
        Recovery-time samples per engine, seconds; the paper's
        :data:`PAPER_RECOVERY_S` by default.
    model
        Distributions and prices (Table C.1 by default).
    percentiles
        Low and high percentiles of the seed means, in [0, 100].
    lead_times_s
        Lead times for the return boundary and the fixed-lead sweep, seconds.
    """
    model = AlertModel() if model is None else model
    by_engine = samples_by_engine(recovery_samples)
    seed_list = seed_tuple("seeds", seeds)
    bounds = values("percentiles", percentiles, low=0.0, high=100.0)
    if bounds.shape != (2,) or bounds[0] > bounds[1]:
        raise ValueError(f"percentiles must be (low, high) with low <= high, got {percentiles!r}")
    low_q, high_q = float(bounds[0]), float(bounds[1])
    leads = tuple(float(x) for x in array("lead_times_s", lead_times_s, low=0.0))

    # The first seed's terms also serve the sweep, which fixes L on the same draws.
    first = SeedTerms(draw_alerts(n_alerts, seed_list[0], model), by_engine, model)
    per_seed = [seed_means(first)]
    per_seed += [simulate_alerts(n_alerts, seed, by_engine, model) for seed in seed_list[1:]]
    stats = {
        engine: {
            rule: _stats([means[engine][rule] for means in per_seed], low_q, high_q)
            for rule in ALERT_RULES
        }
        for engine in by_engine
    }
    boundary = {
        engine: tuple(float(p) for p in return_boundary(leads, samples, model))
        for engine, samples in by_engine.items()
    }
    sweep = fixed_lead_means(first, np.asarray(leads, dtype=np.float64))
    return AlertExperiment(n_alerts, seed_list, (low_q, high_q), stats, leads, boundary, sweep)


def lead_time_sweep(
    n_alerts: int,
    seed: int,
    lead_times_s: Sequence[float] = DEFAULT_LEAD_TIMES_S,
    recovery_samples: Mapping[str, npt.ArrayLike] | None = None,
    model: AlertModel | None = None,
) -> dict[str, dict[str, tuple[float, ...]]]:
    """Mean loss per alert of every rule with all lead times fixed to each value (Fig. 10(b)).

    Returns ``sweep[engine][rule]``, one mean per lead time, s-eq./alert.
    """
    leads = array("lead_times_s", lead_times_s, low=0.0)
    model = AlertModel() if model is None else model
    # Fixing L leaves the other draws unchanged (draw_alerts): draw once, then set each L.
    draws = draw_alerts(n_alerts, seed, model)
    return fixed_lead_means(SeedTerms(draws, samples_by_engine(recovery_samples), model), leads)


def _stats(per_seed: list[float], low_q: float, high_q: float) -> RuleStats:
    data = np.asarray(per_seed)
    low, high = np.percentile(data, [low_q, high_q])
    return RuleStats(float(data.mean()), float(low), float(high), tuple(per_seed))


def fig10_table(result: AlertExperiment) -> str:
    """Each rule's mean loss per engine beside the paper's, and ours minus the paper's, as
    the Markdown table of docs/studies.md (s-eq./alert; ``-`` where the paper prints none)."""
    lines = [
        "| engine | rule | ours | paper | ours - paper |",
        "|---|---|---:|---:|---:|",
    ]
    for engine, stats in result.stats.items():
        paper = PAPER_FIG10.get(engine, {})
        for rule in ALERT_RULES:
            ours = stats[rule].mean
            printed = paper.get(rule)
            beside = "-" if printed is None else f"{printed:.2f}"
            diff = "-" if printed is None else f"{ours - printed:+.2f}"
            lines.append(f"| {engine} | {rule} | {ours:.2f} | {beside} | {diff} |")
    return "\n".join(lines)
