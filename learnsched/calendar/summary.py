"""Per-policy summaries of online evaluations over cases (true calendars or horizons) and
seeds, and paired confidence intervals of policy differences.

A case is one true calendar (a SPEC entry) or one horizon of a trace; every policy runs on
every case with every seed. A policy's value on a case is its mean over the seeds, and
intervals are over cases (Student t, 95%): seeds of one case share its calendar, so they
are not independent draws. Differences are paired by case: ``d_c = mean_s(V_a - V_b)``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "BASELINE",
    "Difference",
    "PolicySummary",
    "Verdict",
    "differences",
    "t_interval",
    "verdicts",
]

Matrix = npt.NDArray[np.float64]


def preload() -> threading.Thread:
    """Import the Student t functions (``scipy.special``, about 0.2-0.7 s of one core) on
    a thread of their own, so that the import runs beside the core's threads (which
    release the GIL) instead of after them; join it before summarising."""
    thread = threading.Thread(target=_import_t, name="learnsched-preload-t", daemon=True)
    thread.start()
    return thread


def _import_t() -> None:
    import scipy.special  # noqa: F401  (what _t_quantile and _p_value import)


def _t_quantile(dof: int) -> float:
    from scipy.special import stdtrit  # Student t quantile; scipy.stats loads far more

    return float(stdtrit(dof, 0.975))


def t_interval(values: Sequence[float] | npt.NDArray[np.float64]) -> tuple[float, float] | None:
    """The 95% Student-t interval of the mean of ``values`` (None for fewer than two)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 2:
        return None
    mean = float(np.mean(x))
    half = _t_quantile(n - 1) * float(np.std(x, ddof=1)) / math.sqrt(n)
    return (mean - half, mean + half)


def _p_value(x: npt.NDArray[np.float64]) -> float | None:
    """Two-sided p-value of a one-sample t test of mean 0 (None for fewer than two)."""
    n = x.size
    if n < 2:
        return None
    sd = float(np.std(x, ddof=1))
    mean = float(np.mean(x))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    from scipy.special import stdtr

    t = mean / (sd / math.sqrt(n))
    return float(2.0 * stdtr(n - 1, -abs(t)))


@dataclass(frozen=True, eq=False)
class PolicySummary:
    """One policy over every case and seed: matrices of shape (seeds, cases).

    Attributes
    ----------
    values_by_seed
        Realised value, s-eq. (net of the lateness charge in causal mode).
    regrets_by_seed
        ``clairvoyant`` minus this policy, s-eq.
    handoffs_by_seed, checkpoints_by_seed
        Loans and saved checkpoints.
    late_by_seed, lateness_by_seed
        Requests served after their deadline and their request-seconds past it (0 when
        window ends are known: every return is in time).
    requests_by_seed
        Requests served per case (None without a request trace).
    lent_by_seed
        Seconds the GPU was lent per case (None where the evaluation does not count them).
    """

    values_by_seed: Matrix
    regrets_by_seed: Matrix
    handoffs_by_seed: Matrix
    checkpoints_by_seed: Matrix
    late_by_seed: Matrix
    lateness_by_seed: Matrix
    requests_by_seed: Matrix | None = None
    lent_by_seed: Matrix | None = None

    @property
    def values(self) -> tuple[float, ...]:
        """Value per case, the mean over the seeds, s-eq."""
        return tuple(self.case_values.tolist())

    @property
    def regrets(self) -> tuple[float, ...]:
        """Regret per case, the mean over the seeds, s-eq."""
        return tuple(np.mean(self.regrets_by_seed, axis=0).tolist())

    @property
    def case_values(self) -> Matrix:
        """Value per case as an array, s-eq."""
        return np.asarray(np.mean(self.values_by_seed, axis=0), dtype=np.float64)

    @property
    def mean_value(self) -> float:
        """Mean realised value, s-eq."""
        return float(np.mean(self.values_by_seed))

    @property
    def ci95(self) -> tuple[float, float] | None:
        """95% interval of the mean value over cases (None for one case), s-eq."""
        return t_interval(self.case_values)

    @property
    def mean_regret(self) -> float:
        """Mean regret to ``clairvoyant``, s-eq."""
        return float(np.mean(self.regrets_by_seed))

    @property
    def slo_misses(self) -> float | None:
        """Late requests over all requests served, pooled over cases and seeds (the
        bad-request rate of Eq. A.2 with no failures); None without requests."""
        if self.requests_by_seed is None:
            return None
        total = float(np.sum(self.requests_by_seed))
        return float(np.sum(self.late_by_seed)) / total if total > 0 else 0.0

    @property
    def lent_s(self) -> float | None:
        """Mean seconds lent per case (None where not counted)."""
        return None if self.lent_by_seed is None else float(np.mean(self.lent_by_seed))

    def to_json(self) -> dict[str, Any]:
        """``values`` (per case), ``values_by_seed``, ``mean_value``, ``ci95``,
        ``mean_regret``, ``late_requests`` and ``lateness_s`` (means per case),
        ``slo_misses`` (pooled fraction, or null), ``handoffs``, ``checkpoints`` (means),
        ``lent_s`` (mean seconds lent per case, or null)."""
        ci = self.ci95
        return {
            "values": self.case_values.tolist(),
            "values_by_seed": self.values_by_seed.tolist(),
            "mean_value": self.mean_value,
            "ci95": None if ci is None else list(ci),
            "mean_regret": self.mean_regret,
            "late_requests": float(np.mean(self.late_by_seed)),
            "lateness_s": float(np.mean(self.lateness_by_seed)),
            "slo_misses": self.slo_misses,
            "handoffs": float(np.mean(self.handoffs_by_seed)),
            "checkpoints": float(np.mean(self.checkpoints_by_seed)),
            "lent_s": self.lent_s,
        }


@dataclass(frozen=True)
class Difference:
    """``a - b`` paired by case.

    Attributes
    ----------
    a, b
        The policies.
    mean
        Mean difference in value per case, s-eq.
    ci95
        Its 95% Student-t interval over cases (None for one case).
    p_value
        Two-sided paired t test of no difference (None for one case).
    holm
        Significant at 5% after Holm's correction over every pair of the evaluation.
    """

    a: str
    b: str
    mean: float
    ci95: tuple[float, float] | None
    p_value: float | None
    holm: bool

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0 (uncorrected for the number of pairs)."""
        return self.ci95 is not None and (self.ci95[0] > 0 or self.ci95[1] < 0)

    def to_json(self) -> dict[str, Any]:
        """``{"a", "b", "mean", "ci95", "significant", "p_value", "holm_significant"}``."""
        return {
            "a": self.a,
            "b": self.b,
            "mean": self.mean,
            "ci95": None if self.ci95 is None else list(self.ci95),
            "significant": self.significant,
            "p_value": self.p_value,
            "holm_significant": self.holm,
        }


def differences(policies: dict[str, PolicySummary]) -> list[Difference]:
    """Every pair ``a - b`` (``a`` before ``b`` in ``policies``' order), paired by case,
    with Holm's step-down correction at 5% over all pairs."""
    names = list(policies)
    rows: list[tuple[str, str, npt.NDArray[np.float64]]] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            d = np.mean(policies[a].values_by_seed - policies[b].values_by_seed, axis=0)
            rows.append((a, b, np.asarray(d, dtype=np.float64)))
    p = [_p_value(d) for _, _, d in rows]
    holm = [False] * len(rows)
    ranked = sorted((v, i) for i, v in enumerate(p) if v is not None)
    for rank, (value, i) in enumerate(ranked):
        if value > 0.05 / (len(ranked) - rank):
            break  # step-down: every larger p-value stays not significant
        holm[i] = True
    return [
        Difference(a, b, float(np.mean(d)), t_interval(d), p[k], holm[k])
        for k, (a, b, d) in enumerate(rows)
    ]


BASELINE = "never"
"""The policy every verdict is paired against: never lending."""


@dataclass(frozen=True)
class Verdict:
    """Whether lending as ``policy`` pays, against never lending, at 95%.

    Attributes
    ----------
    policy
        The policy judged.
    mean, ci95
        Its value minus never's, per case, and the paired 95% interval, s-eq.
    """

    policy: str
    mean: float
    ci95: tuple[float, float] | None

    @property
    def says(self) -> str:
        """``lending pays`` (the interval is above 0), ``lending does not pay`` (below)
        or ``cannot tell at 95%`` (it holds 0, or there is one case)."""
        if self.ci95 is not None and self.ci95[0] > 0:
            return "lending pays"
        if self.ci95 is not None and self.ci95[1] < 0:
            return "lending does not pay"
        return "cannot tell at 95%"

    def to_json(self) -> dict[str, Any]:
        """``{"verdict", "mean", "ci95"}``."""
        return {
            "verdict": self.says,
            "mean": self.mean,
            "ci95": None if self.ci95 is None else list(self.ci95),
        }


def verdicts(rows: Sequence[Difference]) -> dict[str, Verdict]:
    """Per policy paired with :data:`BASELINE` in ``rows``: its verdict (none without
    the baseline)."""
    out = {}
    for d in rows:
        if BASELINE not in (d.a, d.b) or d.a == d.b:
            continue
        if d.b == BASELINE:
            out[d.a] = Verdict(d.a, d.mean, d.ci95)
        else:  # never - policy: flipped (0.0 - x: no negative zero)
            ci = None if d.ci95 is None else (0.0 - d.ci95[1], 0.0 - d.ci95[0])
            out[d.b] = Verdict(d.b, 0.0 - d.mean, ci)
    return out
