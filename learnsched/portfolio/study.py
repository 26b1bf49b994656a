"""The portfolio study (docs/portfolio.md): 24 candidates on the shipped Azure trace and on
App. C.2-style synthetic demand, every policy against running them one by one.

Synthetic demand follows App. C.2's four shapes (stable, single-burst, recurrent,
decaying) in five-minute slots over 24 hours on 4 GPUs. Demand is counted in GPUs' worth
of serving: slot ``k`` needs ``n_k = clip(ceil(d_k), 1, G)`` GPUs, GPUs ``n_k .. G-1`` are
idle, and each idle slot of a GPU is one window, decided on its own as App. C.2's
simulator decides each slot (capacity must be back by the slot's end). 24 candidates are
drawn per seed (tools, guidance and adapters: their work, base benefit rate and
half-life); a candidate's benefit rate follows demand slot by slot and decays with the
artifact's age (Eq. C.7); the budget is 12 GPU-hours. On the trace, one GPU's idle
windows (cold return path) are shared by 24 candidates drawn like the paper grid's. Each
seed is one draw; intervals are Student-t 95% over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._checks import FloatArray, integer
from .._renamed import module_aliases
from ..scenario import PAPER_COLD, PAPER_WARM, HandoffCosts
from .model import Portfolio, PortfolioCandidate, PortfolioModel, PortfolioPolicy

__all__ = [
    "DEMANDS",
    "PORTFOLIO_STUDY_POLICIES",
    "PolicyStats",
    "Setting",
    "StudyResult",
    "demand",
    "idle_calendars",
    "run_study",
    "study_settings",
    "synthetic_portfolio",
    "trace_portfolio",
]

DEMANDS = ("stable", "single_burst", "recurrent", "decaying")
"""App. C.2's demand shapes."""

PORTFOLIO_STUDY_POLICIES: tuple[PortfolioPolicy, ...] = (
    PortfolioPolicy.SEQUENTIAL,
    PortfolioPolicy.DENSITY,
    PortfolioPolicy.EARLIEST,
    PortfolioPolicy.COSTED_WINDOW,
    PortfolioPolicy.ROLLOUT,
)
"""The policies App. C.2's portfolio study compares (all but the exact ``dp``)."""
BASELINE = PortfolioPolicy.SEQUENTIAL

HOUR_S = 3600.0
SLOT_S = 300.0  # App. C.2's five-minute slots
DAY_SLOTS = 288
GPUS = 4
CANDIDATES = 24
BUDGET_GPU_S = 12 * HOUR_S  # App. C.2's 12 GPU-hours
QUANTUM_S = 60.0
# (kind, work in minutes: low, high): tools and guidance are short, adapters long.
KINDS = (("tool", 5, 20), ("guidance", 10, 40), ("adapter", 60, 180))


def demand(shape: str, rng: np.random.Generator, gpus: int = GPUS) -> FloatArray:
    """Serving demand per five-minute slot over 24 hours, in GPUs' worth.

    ``stable`` hovers at half the fleet; ``single_burst`` has one three-hour burst at a
    random time; ``recurrent`` peaks every six hours; ``decaying`` starts near the full
    fleet and decays with an eight-hour time constant. Every slot adds Gaussian noise of
    0.25 GPUs, and demand stays in ``[0, gpus]``.
    """
    t = np.arange(DAY_SLOTS) * SLOT_S / HOUR_S  # hours
    half = gpus / 2
    level: FloatArray
    if shape == "stable":
        level = np.full(DAY_SLOTS, half)
    elif shape == "single_burst":
        start = rng.uniform(6.0, 16.0)
        level = 0.3 * gpus + 0.6 * gpus * ((t >= start) & (t < start + 3.0)).astype(np.float64)
    elif shape == "recurrent":
        level = half + 0.32 * gpus * np.sin(2 * np.pi * t / 6.0 + rng.uniform(0, 2 * np.pi))
    elif shape == "decaying":
        level = 0.15 * gpus + 0.75 * gpus * np.exp(-t / 8.0)
    else:
        raise ValueError(f"shape must be one of {', '.join(DEMANDS)}, got {shape!r}")
    return np.clip(level + rng.normal(0.0, 0.25, DAY_SLOTS), 0.0, gpus)


def idle_calendars(
    load: FloatArray, gpus: int = GPUS
) -> tuple[tuple[tuple[float, float], ...], ...]:
    """Each GPU's idle windows, seconds: GPU ``g`` serves slot ``k`` while
    ``g < clip(ceil(load[k]), 1, gpus)``; every slot it is idle is one window, decided on
    its own as App. C.2's simulator decides each slot (capacity back by the slot's end)."""
    needed = np.clip(np.ceil(load), 1, gpus).astype(int)
    return tuple(
        tuple((k * SLOT_S, (k + 1) * SLOT_S) for k in range(len(needed)) if needed[k] <= g)
        for g in range(gpus)
    )


def _synthetic_candidates(rng: np.random.Generator, load: FloatArray) -> list[PortfolioCandidate]:
    """24 candidates whose benefit follows demand: a candidate of base rate ``u`` earns
    ``u * d_k / mean(d)`` per second in slot ``k`` (its users come with the demand)."""
    shape = load / max(float(np.mean(load)), 1e-9)
    horizon_s = len(load) * SLOT_S
    out = []
    for i in range(CANDIDATES):
        kind, low, high = KINDS[int(rng.integers(len(KINDS)))]
        work_min = int(rng.integers(low, high + 1))
        rate = float(np.exp(rng.normal(math.log(0.15), 0.9)))  # s-eq. per second of use
        half_life_h = float(rng.uniform(4.0, 16.0))
        schedule = tuple((k * SLOT_S, rate * float(shape[k])) for k in range(len(load)))
        out.append(
            PortfolioCandidate(
                name=f"{kind}-{i:02d}",
                work_quanta=work_min,
                quantum_s=QUANTUM_S,
                benefit_rate=schedule,
                horizon_s=horizon_s,
                save_s=PAPER_WARM.save_s,
                load_s=PAPER_WARM.load_s,
                half_life_s=half_life_h * HOUR_S,
            )
        )
    return out


def synthetic_portfolio(shape: str, seed: int) -> Portfolio:
    """One App. C.2-style day: ``shape``'s demand on 4 GPUs, 24 candidates, 12 GPU-hours,
    both return paths offered (the paper's warm and cold)."""
    if shape not in DEMANDS:
        raise ValueError(f"shape must be one of {', '.join(DEMANDS)}, got {shape!r}")
    rng = np.random.default_rng([integer("seed", seed), DEMANDS.index(shape)])
    load = demand(shape, rng)
    lending = tuple(c for c in idle_calendars(load) if c)  # GPU 0 always serves
    costs = HandoffCosts.choice(PAPER_WARM, PAPER_COLD)
    return Portfolio(
        gpus=lending,
        recovery_s=costs.recovery_s,
        residency_rate=costs.residency_rate,
        candidates=tuple(_synthetic_candidates(rng, load)),
        cold_recovery_s=costs.cold_recovery_s,
        budget_gpu_s=BUDGET_GPU_S,
    )


def trace_portfolio(seed: int, tail_s: float = 480.0) -> Portfolio:
    """24 candidates drawn like the paper grid's (30-180 s of work in 5 s quanta, rates
    0.1-2 s-eq./s, the benefit horizon ``tail_s`` after the trace) on the shipped Azure
    trace's idle windows for the paper's cold return path; no budget."""
    from ..calendar import AZURE_TRACE, idle_windows, load_trace
    from ..capacity import ReturnPath

    windows = idle_windows(load_trace(AZURE_TRACE), 1.0, ReturnPath(ready_s=PAPER_COLD.recovery_s))
    rng = np.random.default_rng([integer("seed", seed), 7])
    horizon_s = windows.span_s + tail_s
    candidates = [
        PortfolioCandidate(
            name=f"c{i:02d}",
            work_quanta=int(rng.choice([6, 12, 24, 36])),
            quantum_s=5.0,
            benefit_rate=float(rng.choice([0.1, 0.25, 0.5, 1.0, 2.0])),
            horizon_s=horizon_s,
            save_s=PAPER_COLD.save_s,
            load_s=PAPER_COLD.load_s,
        )
        for i in range(CANDIDATES)
    ]
    return Portfolio.on_windows(windows.pairs(), PAPER_COLD, candidates)


def _ci95(values: Sequence[float]) -> tuple[float, float]:
    from scipy.special import stdtrit  # Student t quantile; scipy.stats loads far more

    n = len(values)
    mean = float(np.mean(values))
    if n < 2:
        return (mean, mean)
    half = float(stdtrit(n - 1, 0.975) * np.std(values, ddof=1) / math.sqrt(n))
    return (mean - half, mean + half)


@dataclass(frozen=True)
class PolicyStats:
    """One policy in one setting, over the seeds.

    Attributes
    ----------
    values
        Plan value per seed, s-eq.
    gains
        Value minus ``sequential``'s per seed, s-eq.
    published
        Candidates published per seed.
    gpu_hours
        GPU-hours of segments per seed.
    """

    values: tuple[float, ...]
    gains: tuple[float, ...]
    published: tuple[int, ...]
    gpu_hours: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        """Means and 95% intervals (``[low, high]``), and the per-seed values."""
        return {
            "mean_value": float(np.mean(self.values)),
            "ci95": list(_ci95(self.values)),
            "mean_gain": float(np.mean(self.gains)),
            "gain_ci95": list(_ci95(self.gains)),
            "mean_published": float(np.mean(self.published)),
            "mean_gpu_hours": float(np.mean(self.gpu_hours)),
            "values": list(self.values),
        }


@dataclass(frozen=True)
class Setting:
    """A named family of portfolios, one per seed."""

    name: str
    build: Any  # (seed) -> Portfolio


@dataclass(frozen=True)
class StudyResult:
    """Per setting, per policy: :class:`PolicyStats`."""

    seeds: int
    settings: dict[str, dict[str, PolicyStats]]

    def to_json(self) -> dict[str, Any]:
        """``{"seeds", "settings": {NAME: {POLICY: {...}}}}``."""
        return {
            "seeds": self.seeds,
            "settings": {
                s: {p: stats.to_json() for p, stats in policies.items()}
                for s, policies in self.settings.items()
            },
        }

    # (heading, width, alignment) of each column of :meth:`table` and :meth:`markdown`.
    _COLUMNS: ClassVar[tuple[tuple[str, int, str], ...]] = (
        ("setting", 14, "<"),
        ("policy", 15, "<"),
        ("mean value", 12, ">"),
        ("95% CI", 24, ">"),
        ("gain vs sequential", 20, ">"),
        ("95% CI", 24, ">"),
        ("published", 11, ">"),
        ("GPU-h", 8, ">"),
    )

    def _rows(self) -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = []
        for setting, policies in self.settings.items():
            for name, s in policies.items():
                j = s.to_json()
                lo, hi = j["ci95"]
                glo, ghi = j["gain_ci95"]
                rows.append(
                    (
                        setting,
                        name,
                        f"{j['mean_value']:.1f}",
                        f"[{lo:.1f}, {hi:.1f}]",
                        f"{j['mean_gain']:.1f}",
                        f"[{glo:.1f}, {ghi:.1f}]",
                        f"{j['mean_published']:.1f}",
                        f"{j['mean_gpu_hours']:.2f}",
                    )
                )
        return rows

    def table(self) -> str:
        """Mean value with its 95% interval and the mean gain over ``sequential`` with its
        interval, per setting and policy (s-eq.)."""
        cols = self._COLUMNS
        lines = ["".join(f"{h:{a}{w}}" for h, w, a in cols)]
        for row in self._rows():
            lines.append("".join(f"{v:{a}{w}}" for v, (_, w, a) in zip(row, cols, strict=True)))
        return "\n".join(lines)

    def markdown(self) -> str:
        """The table of :meth:`table` in Markdown (docs/portfolio.md's study table)."""
        cols = self._COLUMNS
        lines = [
            "| " + " | ".join(h for h, _, _ in cols) + " |",
            "| " + " | ".join("---" if a == "<" else "---:" for _, _, a in cols) + " |",
        ]
        lines += ["| " + " | ".join(row) + " |" for row in self._rows()]
        return "\n".join(lines)


def study_settings(trace: bool = True, synthetic: bool = True) -> list[Setting]:
    """The study's settings: the Azure trace, then each synthetic demand shape."""
    out = [Setting("azure_trace", trace_portfolio)] if trace else []
    if synthetic:
        out += [
            Setting(shape, lambda seed, s=shape: synthetic_portfolio(s, seed)) for shape in DEMANDS
        ]
    return out


def run_study(
    seeds: int = 10,
    chosen_settings: Sequence[Setting] | None = None,
    policies: Sequence[PortfolioPolicy] = PORTFOLIO_STUDY_POLICIES,
) -> StudyResult:
    """Every policy on every setting for seeds ``0 .. seeds-1``.

    Parameters
    ----------
    seeds
        Number of draws per setting ``K`` (``>= 2`` for an interval).
    chosen_settings
        Default :func:`study_settings`.
    policies
        Must include ``sequential``, the baseline of the gains.
    """
    count = integer("seeds", seeds, low=1)
    chosen = tuple(dict.fromkeys(policies))
    if BASELINE not in chosen:
        raise ValueError("policies must include 'sequential', the baseline of the gains")
    out: dict[str, dict[str, PolicyStats]] = {}
    for setting in study_settings() if chosen_settings is None else chosen_settings:
        runs = []
        for seed in range(count):
            model = PortfolioModel(setting.build(seed), chosen)
            runs.append({p.value: model.solve(p) for p in chosen})
        base = [r[BASELINE.value].value for r in runs]
        out[setting.name] = {
            p.value: PolicyStats(
                values=tuple(r[p.value].value for r in runs),
                gains=tuple(r[p.value].value - b for r, b in zip(runs, base, strict=True)),
                published=tuple(
                    sum(t is not None for t in r[p.value].publish_s.values()) for r in runs
                ),
                gpu_hours=tuple(r[p.value].gpu_s / HOUR_S for r in runs),
            )
            for p in chosen
        }
    return StudyResult(count, out)


__getattr__ = module_aliases(__name__, globals(), {"STUDY_POLICIES": "PORTFOLIO_STUDY_POLICIES"})
