"""Which unpublished inputs would reproduce Fig. 10's printed bars? A calibration harness.

The paper prices its alert experiment with per-run readiness and failed-wait samples it
does not publish; the package uses the reported mean recovery per engine (34.7 s vLLM,
69.988 s SGLang) and lands 0.5-1.4 s-eq./alert below every printed bar
(:mod:`.alert_experiment`). Here those unknown samples are a family of recovery
distributions with free parameters per engine, fitted by least squares to the five
printed means per engine (reactive, eager, LearnSched, shared, oracle), and reported with
their residuals:

* ``offset``: one recovery time per engine, the reported mean plus an offset ``delta``
  (seconds): failed waits and slow samples that lengthen the average return;
* ``offset_spread``: 64 samples of a lognormal with mean ``reported + delta`` and
  log-space s.d. ``sigma``: the same, with spread around that mean.

Every evaluation reuses one set of draws per seed (common random numbers), so the
objective is a smooth, deterministic function of the parameters. Spread does not lower
every loss: the reactive loss ``h + r*E[min(D, R)]`` is concave in ``R`` (spread lowers
it), but early return's ``min(D, (R - L)^+)`` is convex where ``R`` is near ``L``, so
spread raises the eager, LearnSched, shared and oracle losses (tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from .._checks import FloatArray, bounded, integer, nonnegative, number
from .alert_experiment import PAPER_FIG10, seed_tuple
from .alerts import (
    MAX_ALERTS,
    PAPER_RECOVERY_S,
    AlertDraws,
    AlertModel,
    draw_alerts,
    mean_losses,
)

__all__ = [
    "FAMILIES",
    "FITTED_RULES",
    "AlertCalibration",
    "calibrate_alerts",
    "calibrated_means",
    "calibration_table",
    "recovery_samples",
]

FAMILIES = ("offset", "offset_spread")
"""The recovery families: one time per engine, or a lognormal spread around it."""
FITTED_RULES = ("reactive", "eager", "learnsched", "shared", "oracle")
"""The rules with a printed loss (no scaling has none)."""
SPREAD_SAMPLES = 64  # quantile points of a spread distribution
# Nelder-Mead stops when the simplex is this small (seconds and log-space s.d.) and the
# objective this flat (squared s-eq.): far below the seed noise of the bars.
_X_TOLERANCE = 1e-3
_F_TOLERANCE = 1e-6
_MAX_EVALUATIONS = 400


def recovery_samples(mean_s: float, offset_s: float = 0.0, spread: float = 0.0) -> tuple[float, ...]:
    """An engine's recovery samples: ``mean_s + offset_s``, spread by a lognormal.

    Parameters
    ----------
    mean_s
        The reported mean recovery, seconds.
    offset_s
        Added to it, seconds (the total must stay > 0).
    spread
        Log-space s.d. of a lognormal with that mean (0: one sample); its
        ``SPREAD_SAMPLES`` mid-quantiles, scaled to the exact mean.
    """
    total = number("mean_s", mean_s) + number("offset_s", offset_s)
    if total <= 0:
        raise ValueError(f"mean_s + offset_s must be > 0 s, got {total!r}")
    sigma = nonnegative("spread", spread)
    if sigma == 0.0:
        return (total,)
    z = np.array([NormalDist().inv_cdf((i + 0.5) / SPREAD_SAMPLES) for i in range(SPREAD_SAMPLES)])
    x = np.exp(sigma * z)
    return tuple(float(v) for v in total * x / x.mean())


def _samples(family: str, params: Sequence[float]) -> dict[str, tuple[float, ...]]:
    """Each engine's samples for a family's parameter vector (engines in PAPER_FIG10 order)."""
    engines = list(PAPER_FIG10)
    width = 1 if family == "offset" else 2
    out = {}
    for i, engine in enumerate(engines):
        offset = params[i * width]
        spread = abs(params[i * width + 1]) if width == 2 else 0.0
        out[engine] = recovery_samples(PAPER_RECOVERY_S[engine][0], offset, spread)
    return out


def _parameters(family: str, params: Sequence[float]) -> dict[str, dict[str, float]]:
    width = 1 if family == "offset" else 2
    out = {}
    for i, engine in enumerate(PAPER_FIG10):
        entry = {"offset_s": float(params[i * width])}
        if width == 2:
            entry["spread"] = abs(float(params[i * width + 1]))
        out[engine] = entry
    return out


def _seed_means(
    draws: Sequence[AlertDraws], samples: Mapping[str, Sequence[float]], model: AlertModel
) -> list[dict[str, dict[str, float]]]:
    return [mean_losses(d, samples, model) for d in draws]


def calibrated_means(
    draws: Sequence[AlertDraws],
    samples: Mapping[str, Sequence[float]],
    model: AlertModel | None = None,
) -> dict[str, dict[str, float]]:
    """Mean loss per alert of every fitted rule per engine over ``draws``, s-eq./alert.

    ``draws`` are the seeds' alerts (:func:`~.alerts.draw_alerts`), shared by every call, so
    that means at different ``samples`` differ only by the samples.
    """
    model = AlertModel() if model is None else model
    return _over_seeds(_seed_means(draws, samples, model), np.mean)


def _over_seeds(
    per_seed: Sequence[Mapping[str, Mapping[str, float]]], statistic: Any
) -> dict[str, dict[str, Any]]:
    """``statistic`` of each engine's and rule's per-seed means."""
    return {
        engine: {
            rule: statistic([m[engine][rule] for m in per_seed]) for rule in FITTED_RULES
        }
        for engine in per_seed[0]
    }


def _residuals(means: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    return {
        engine: {rule: means[engine][rule] - PAPER_FIG10[engine][rule] for rule in FITTED_RULES}
        for engine in PAPER_FIG10
    }


@dataclass(frozen=True)
class AlertCalibration:
    """Fitted recovery parameters and what they give beside Fig. 10's printed means.

    Attributes
    ----------
    family
        ``"offset"`` or ``"offset_spread"`` (:data:`FAMILIES`).
    fit_alerts, fit_seeds
        Alerts per seed and seeds of the fit.
    alerts, seeds
        Alerts per seed and seeds of the evaluation at the fitted parameters.
    parameters
        ``parameters[engine]``: ``offset_s`` (seconds) and, for ``offset_spread``,
        ``spread`` (log-space s.d.).
    means
        ``means[engine][rule]`` at the fitted parameters, s-eq./alert (evaluation seeds).
    ranges
        ``ranges[engine][rule]``: (5th, 95th) percentile of the per-seed means.
    unfitted
        The same means with the reported means alone (offset 0, no spread).
    evaluations
        Objective evaluations the fit took.
    """

    family: str
    fit_alerts: int
    fit_seeds: tuple[int, ...]
    alerts: int
    seeds: tuple[int, ...]
    parameters: dict[str, dict[str, float]]
    means: dict[str, dict[str, float]]
    ranges: dict[str, dict[str, tuple[float, float]]]
    unfitted: dict[str, dict[str, float]]
    evaluations: int

    @property
    def residuals(self) -> dict[str, dict[str, float]]:
        """``means - paper`` per engine and rule, s-eq./alert."""
        return _residuals(self.means)

    @property
    def rms(self) -> float:
        """Root mean square of every residual, s-eq./alert."""
        values = [r for rules in self.residuals.values() for r in rules.values()]
        return float(np.sqrt(np.mean(np.square(values))))

    @property
    def max_abs_residual(self) -> float:
        """The largest ``|means - paper|``, s-eq./alert."""
        return max(abs(r) for rules in self.residuals.values() for r in rules.values())

    @property
    def within_seed_ranges(self) -> bool:
        """Whether every printed mean lies in its rule's 5-95% range of seed means."""
        return all(
            low <= PAPER_FIG10[engine][rule] <= high
            for engine, rules in self.ranges.items()
            for rule, (low, high) in rules.items()
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: seconds, log-space s.d., s-eq./alert."""
        return {
            "family": self.family,
            "fit": {"alerts": self.fit_alerts, "seeds": list(self.fit_seeds)},
            "evaluation": {"alerts": self.alerts, "seeds": list(self.seeds)},
            "parameters": self.parameters,
            "evaluations": self.evaluations,
            "loss_per_alert": {
                engine: {
                    rule: {
                        "paper": PAPER_FIG10[engine][rule],
                        "fitted": self.means[engine][rule],
                        "residual": self.residuals[engine][rule],
                        "seed_range": list(self.ranges[engine][rule]),
                        "unfitted": self.unfitted[engine][rule],
                    }
                    for rule in FITTED_RULES
                }
                for engine in self.means
            },
            "rms": self.rms,
            "max_abs_residual": self.max_abs_residual,
            "within_seed_ranges": self.within_seed_ranges,
        }


def _fit(
    family: str, draws: Sequence[AlertDraws], model: AlertModel
) -> tuple[FloatArray, int]:
    """Least squares over the printed means (Nelder-Mead from the reported means)."""
    from scipy.optimize import minimize  # only here: the alert experiment imports no scipy

    width = 1 if family == "offset" else 2

    def objective(x: FloatArray) -> float:
        try:
            samples = _samples(family, x.tolist())
        except ValueError:  # a recovery time <= 0: outside the family
            return float("inf")
        res = _residuals(calibrated_means(draws, samples, model))
        return float(sum(r * r for rules in res.values() for r in rules.values()))

    x0 = np.zeros(width * len(PAPER_FIG10))
    steps = np.tile([1.0, 0.1][:width], len(PAPER_FIG10))  # 1 s of offset, 0.1 of spread
    simplex = np.vstack([x0, x0 + np.diag(steps)])
    result = minimize(
        objective,
        x0,
        method="Nelder-Mead",
        options={
            "initial_simplex": simplex,
            "xatol": _X_TOLERANCE,
            "fatol": _F_TOLERANCE,
            "maxfev": _MAX_EVALUATIONS,
        },
    )
    return np.asarray(result.x, dtype=np.float64), int(result.nfev)


def held_alerts(names: str, n_alerts: int, seeds: int) -> int:
    """``n_alerts * seeds``, at most :data:`~.alerts.MAX_ALERTS`: every seed's alerts are
    held at once (the fit re-scores them at each evaluation). ``names`` name the two
    sizes in the error (``"alerts x seeds"``, or the CLI's flags)."""
    return bounded(f"alerts held, {names} = {n_alerts} x {seeds}", n_alerts * seeds, MAX_ALERTS)


def calibrate_alerts(
    family: str = "offset",
    fit_alerts: int = 200_000,
    fit_seeds: Iterable[int] = range(4),
    alerts: int = 1_000_000,
    seeds: Iterable[int] = range(10),
    model: AlertModel | None = None,
) -> AlertCalibration:
    """Fit a recovery family's parameters per engine to Fig. 10's printed means.

    Parameters
    ----------
    family
        ``"offset"`` (one offset per engine, seconds) or ``"offset_spread"`` (an offset and
        a lognormal log-space s.d. per engine).
    fit_alerts, fit_seeds
        Alerts per seed and seeds the least-squares fit runs on.
    alerts, seeds
        Alerts per seed and seeds of the evaluation at the fitted parameters (the paper's
        scale by default: 10^6 alerts, ten seeds).
    model
        Distributions and prices (Table C.1 by default).

    Returns
    -------
    AlertCalibration
        The fitted parameters, the means they give, their seed ranges and residuals.

    Raises
    ------
    ValueError
        More than 10,000 seeds (``alert_experiment.MAX_SEEDS``) in either phase, or more
        than :data:`~.alerts.MAX_ALERTS` alerts in all (alerts x seeds: every seed's
        draws are held at once); checked before any alert is drawn.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    model = AlertModel() if model is None else model
    fit_list = seed_tuple("fit_seeds", fit_seeds)
    seed_list = seed_tuple("seeds", seeds)
    fit_n = integer("fit_alerts", fit_alerts, low=1, high=MAX_ALERTS)
    n = integer("alerts", alerts, low=1, high=MAX_ALERTS)
    held_alerts("fit_alerts x fit_seeds", fit_n, len(fit_list))
    held_alerts("alerts x seeds", n, len(seed_list))
    fit_draws = [draw_alerts(fit_n, s, model) for s in fit_list]
    eval_draws = [draw_alerts(n, s, model) for s in seed_list]
    x, evaluations = _fit(family, fit_draws, model)
    samples = _samples(family, x.tolist())
    per_seed = _seed_means(eval_draws, samples, model)

    def seed_range(values: list[float]) -> tuple[float, float]:
        low, high = np.percentile(values, [5.0, 95.0])
        return float(low), float(high)

    return AlertCalibration(
        family=family,
        fit_alerts=fit_draws[0].event.size,
        fit_seeds=fit_list,
        alerts=eval_draws[0].event.size,
        seeds=seed_list,
        parameters=_parameters(family, x.tolist()),
        means=_over_seeds(per_seed, lambda v: float(np.mean(v))),
        ranges=_over_seeds(per_seed, seed_range),
        unfitted=calibrated_means(eval_draws, dict(PAPER_RECOVERY_S), model),
        evaluations=evaluations,
    )


def calibration_table(result: AlertCalibration) -> str:
    """The fit as the docs' Markdown table (s-eq./alert, seconds)."""
    lines = [
        "| engine | fitted parameters | rule | paper | unfitted | fitted | residual | seed 5-95% |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for engine, params in result.parameters.items():
        shown = ", ".join(
            f"offset {v:+.2f} s" if k == "offset_s" else f"spread {v:.3f}" for k, v in params.items()
        )
        for rule in FITTED_RULES:
            low, high = result.ranges[engine][rule]
            lines.append(
                f"| {engine} | {shown} | {rule} | {PAPER_FIG10[engine][rule]:.2f} | "
                f"{result.unfitted[engine][rule]:.2f} | {result.means[engine][rule]:.2f} | "
                f"{result.residuals[engine][rule]:+.2f} | {low:.2f}-{high:.2f} |"
            )
    return "\n".join(lines)
