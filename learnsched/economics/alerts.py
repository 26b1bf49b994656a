"""The synthetic alert experiment of Fig. 10 (Appendix C.2): when to return capacity early.

Loss model
----------
Each alert is raised at time 0 while capacity is lent to evolution. It carries a confidence
``p ~ Beta(2, 2)``; a burst follows with probability ``p`` (event ``E``), starts at the lead
time ``L`` and lasts ``D``; while capacity is missing during the burst, requests overflow
at rate ``r`` per second. ``D``, ``L`` and ``r`` are lognormal with Table C.1's means and
log-space s.d.; a return takes the recovery time ``R``, drawn uniformly from the engine's
measured samples. ``r`` and ``R`` are independent of each other and of ``(p, E, D, L)``.
One overflow-loss unit costs one s-eq. and every handoff costs ``h`` (13.84 s-eq.).
The actions' losses, in s-eq., are

* early return at the alert: ``h + r*min(D, (R - L)^+)`` under ``E`` (capacity is ready at
  ``R``, the burst starts at ``L``); ``h`` on a false alarm, so ``C_f = h``;
* reactive return at burst onset: ``h + r*min(D, R)`` under ``E``, 0 otherwise;
* no scaling: ``r*D`` under ``E``, 0 otherwise.

The paper says waiting takes the better feasible continuation of reactive scaling and no
scaling under the information then available; here that information is the model itself
(the burst has begun, its ``D``, ``r`` and ``R`` are not yet known), so a rule's waiting
branch is whichever of the two has the lower expected loss under its recovery estimate.

Rules, all on the same draws (paired):

* ``no_scaling``: never return; ride out every burst without the lent capacity. Fig. 10's
  caption counts six rules while its text names five (reactive, eager, LearnSched, shared,
  oracle); the one further return policy the text defines for this decision is no scaling
  (App. C.1: waiting continues with "reactive scaling [or] no scaling"; Section 6.3 and
  Fig. 8 measure no scaling beside reactive and advance-notice scaling), so it is the sixth;
  the paper prints no loss for it;
* ``reactive``: always wait and return at burst onset;
* ``eager``: always return at the alert;
* ``learnsched``: the selective rule of Eq. C.2, ``p*B(L) > (1 - p)*C_f``, with ``B(L)``
  the expected loss avoided under ``E`` given ``L``, priced with the engine's own
  recovery samples;
* ``shared``: the same rule priced with the samples of every engine pooled;
* ``oracle``: knows ``E`` and the actual duration ``D`` (App. C.2), not ``r`` or ``R``, and
  takes the action with the least expected loss given ``(E, D, L)``: 0 (wait) on a false
  alarm, ``min(h + E[r]*E_R[min(D, (R - L)^+)], h + E[r]*E_R[min(D, R)], E[r]*D)`` under
  ``E``, the expectation over ``R`` taken on the engine's own samples.

Scoring. Each rule is scored by its loss per alert *given the oracle's information*
``(p, L, E, D)``, i.e. with ``r`` and ``R`` integrated out (``r`` enters linearly, so
``E[r*X] = E[r]*E[X]``; ``R`` is averaged over the samples exactly). This is the realised
loss averaged over the independent ``r`` and ``R`` (a Rao-Blackwellised estimate with the
same expectation and lower variance), and it makes the oracle a lower bound alert by alert:
every rule decides from ``(p, L)`` and the recovery samples alone, so it picks one of the
three actions whose conditional losses the oracle minimises over. Hence the oracle's mean
is at most every rule's on every seed, with any recovery samples.

``alert_losses(..., realised=True)`` scores the realised ``r`` and ``R`` instead (engines
share one recovery quantile per alert). The oracle then still decides without ``r`` and
``R`` and may lose more than a rule on a single alert, but not in expectation: its
decision minimises ``E[loss | p, L, E, D]``, information that contains every rule's, so
``E[oracle] = E[min_a E[loss_a | p, L, E, D]] <= E[loss_rule]``.

The paper publishes neither its per-run recovery samples nor its failed-wait samples; the
default samples are its reported means, 34.7 s for vLLM (reactive capacity ready 34.7 s
after burst onset, Section 6.3) and 69.988 s for cold SGLang (App. D.2), and failed waits
are not modelled. With these defaults the rules rank as in Fig. 10(a), each mean within
1.4 s-eq./alert of the paper's: all lie 0.5-1.4 below it (oracle 7.99 and
21.08 against 8.74 and 22.16 over ten seeds of 10^6 alerts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray, integer, positive
from ..scenario import PAPER_COLD
from ._checks import array, values
from .early_return import return_threshold
from .lognormal import Lognormal

__all__ = [
    "ALERT_RULES",
    "PAPER_RECOVERY_S",
    "AlertDraws",
    "AlertModel",
    "alert_losses",
    "draw_alerts",
    "return_boundary",
    "simulate_alerts",
]

ALERT_RULES = ("no_scaling", "reactive", "eager", "learnsched", "shared", "oracle")

# Lead times x recovery samples priced per block when computing B(L): bounds the memory.
_BLOCK_ELEMENTS = 1 << 16
# Lead times at which the selective rule prices B(L) before bracketing the other alerts.
_GRID_SIZE = 2048
# Confidence margin beyond rounding error of p*(L) (~1e-13) inside which an alert is
# priced at its own lead time rather than decided from its grid cell's bracket.
_BRACKET_MARGIN = 1e-9

# Section 6.3 (vLLM whole-GPU handoff) and App. D.2 (SGLang cold recovery), seconds.
PAPER_RECOVERY_S: dict[str, tuple[float, ...]] = {
    "vllm": (34.7,),
    "sglang": (PAPER_COLD.recovery_s,),
}


@dataclass(frozen=True)
class AlertModel:
    """Distributions and prices of the synthetic alerts (Appendix C.2, Table C.1).

    Parameters
    ----------
    duration_s
        Burst duration ``D``, seconds.
    lead_s
        Warning lead time ``L`` from alert to burst onset, seconds.
    overflow_rate
        Overflow rate ``r`` while capacity is missing, overflow-loss units (s-eq.) per second.
    handoff_loss
        Loss ``h`` of one handoff, s-eq. (> 0); also the false-alarm cost ``C_f``.
    confidence_alpha, confidence_beta
        Shape parameters of the Beta distribution of the alert confidence ``p``.
    """

    duration_s: Lognormal = field(default_factory=lambda: Lognormal(90.0, 0.65))
    lead_s: Lognormal = field(default_factory=lambda: Lognormal(45.0, 0.35))
    overflow_rate: Lognormal = field(default_factory=lambda: Lognormal(1.2, 0.50))
    handoff_loss: float = 13.84
    confidence_alpha: float = 2.0
    confidence_beta: float = 2.0

    def __post_init__(self) -> None:
        for name in ("duration_s", "lead_s", "overflow_rate"):
            if not isinstance(getattr(self, name), Lognormal):
                raise TypeError(f"{name} must be a Lognormal, got {getattr(self, name)!r}")
        for name in ("handoff_loss", "confidence_alpha", "confidence_beta"):
            object.__setattr__(self, name, positive(name, getattr(self, name)))

    @property
    def false_alarm_cost(self) -> float:
        """``C_f``: a false alarm wastes one handoff, s-eq."""
        return self.handoff_loss

    def burst_losses(
        self, lead_s: npt.ArrayLike, recovery_samples: npt.ArrayLike
    ) -> tuple[FloatArray, FloatArray]:
        """Conditional mean losses ``(C_w, C_a(L))`` under a true burst, per lead time.

        Expectations are over ``D``, ``r`` (independent lognormals) and ``R`` (uniform over
        ``recovery_samples``); ``C_w`` is the better of reactive return and no scaling.
        Memory stays bounded for any number of lead times and samples.
        """
        lead = values("lead_s", lead_s, low=0.0)
        samples = array("recovery_samples", recovery_samples, low=0.0)
        wait = min(self._reactive_loss(samples), self._no_scaling_loss)
        missing = self._expected_missing(lead, samples)
        return np.full_like(lead, wait), self.handoff_loss + self.overflow_rate.mean * missing

    def benefit(self, lead_s: npt.ArrayLike, recovery_samples: npt.ArrayLike) -> FloatArray:
        """``B(L) = C_w - C_a(L)``: the loss avoided by returning at the alert, s-eq."""
        wait, early = self.burst_losses(lead_s, recovery_samples)
        return wait - early

    def _expected_missing(self, lead: FloatArray, samples: FloatArray) -> FloatArray:
        """``E_R E_D[min(D, (R - L)^+)]`` per lead time: capacity missing after onset, s.

        Priced once per distinct lead time, in blocks of at most ``_BLOCK_ELEMENTS``
        (lead time, sample) pairs. Each row is the same arithmetic as in one
        (lead times x samples) array, so the result is identical, without its memory.
        """
        distinct, inverse = np.unique(lead, return_inverse=True)
        out = np.empty(distinct.size)
        rows = max(1, _BLOCK_ELEMENTS // samples.size)
        for start in range(0, distinct.size, rows):
            block = distinct[start : start + rows]
            late = np.maximum(samples - block[:, np.newaxis], 0.0)  # (R - L)^+ per sample
            out[start : start + rows] = self.duration_s.expected_min(late).mean(axis=-1)
        return out[inverse.ravel()].reshape(lead.shape)

    def reactive_waits(self, recovery_samples: npt.ArrayLike) -> bool:
        """Whether waiting continues with reactive return (else no scaling) under the estimate.

        Ties go to reactive return.
        """
        samples = array("recovery_samples", recovery_samples, low=0.0)
        return self._reactive_loss(samples) <= self._no_scaling_loss

    def _reactive_loss(self, samples: FloatArray) -> float:
        """``h + E[r]*E[min(D, R)]``: expected loss of returning at burst onset, s-eq."""
        missing = float(self.duration_s.expected_min(samples).mean())
        return self.handoff_loss + self.overflow_rate.mean * missing

    @property
    def _no_scaling_loss(self) -> float:
        """``E[r]*E[D]``: expected loss of riding out the burst without capacity, s-eq."""
        return self.overflow_rate.mean * self.duration_s.mean


@dataclass(frozen=True)
class AlertDraws:
    """One seed's sampled alerts, shared by every rule and engine (arrays of equal length).

    ``recovery_quantile`` is uniform on [0, 1); engine ``e`` uses sample
    ``floor(u * n_e)`` of its own list, so engines share one draw per alert. It and
    ``overflow_rate`` are scored only by ``alert_losses(..., realised=True)``.
    """

    confidence: FloatArray
    event: npt.NDArray[np.bool_]
    duration_s: FloatArray
    lead_s: FloatArray
    overflow_rate: FloatArray
    recovery_quantile: FloatArray

    def recovery_s(self, samples: npt.ArrayLike) -> FloatArray:
        """Realised recovery time per alert from an engine's samples, seconds."""
        data = array("recovery_samples", samples, low=0.0)
        index = np.minimum((self.recovery_quantile * data.size).astype(np.intp), data.size - 1)
        return data[index]


def draw_alerts(
    n_alerts: int, seed: int, model: AlertModel | None = None, lead_s: float | None = None
) -> AlertDraws:
    """Sample ``n_alerts`` alerts with ``numpy.random.default_rng(seed)``.

    ``lead_s`` fixes every lead time (Fig. 10(b)); the other draws are unchanged by it.
    """
    n = integer("n_alerts", n_alerts, low=1)
    model = AlertModel() if model is None else model
    rng = np.random.default_rng(integer("seed", seed))
    confidence = rng.beta(model.confidence_alpha, model.confidence_beta, n)
    event = rng.random(n) < confidence  # Bernoulli(p): a burst follows with probability p
    duration = model.duration_s.sample(rng, n)
    lead = model.lead_s.sample(rng, n)
    if lead_s is not None:
        lead = np.full(n, float(values("lead_s", lead_s, low=0.0)))
    overflow = model.overflow_rate.sample(rng, n)
    quantile = rng.random(n)
    return AlertDraws(confidence, event, duration, lead, overflow, quantile)


def alert_losses(
    draws: AlertDraws,
    recovery_samples: Mapping[str, npt.ArrayLike] | None = None,
    model: AlertModel | None = None,
    *,
    realised: bool = False,
) -> dict[str, dict[str, FloatArray]]:
    """Loss per alert of every rule in :data:`ALERT_RULES` per engine, s-eq.

    See the module docstring for the loss model and the scoring.

    Parameters
    ----------
    draws
        The sampled alerts, shared by every engine and rule.
    recovery_samples
        Measured recovery times per engine, seconds: an engine's
        samples set its realised ``R`` and its ``learnsched`` estimate; all of them
        pooled set the ``shared`` estimate. :data:`PAPER_RECOVERY_S` by default.
    model
        Distributions and prices (Table C.1 by default).
    realised
        Score the drawn ``r`` and ``R`` instead of integrating them out. The oracle is
        then a lower bound in expectation only, not alert by alert.

    Returns
    -------
    dict
        ``losses[engine][rule]``, one loss per alert.
    """
    model = AlertModel() if model is None else model
    by_engine = _samples_by_engine(recovery_samples)
    pooled = np.concatenate(list(by_engine.values()))
    grid = _lead_grid(draws.lead_s)
    # The pooled rule's decisions depend only on the draws: price them once for all engines.
    shared_returns = _selective_returns(draws, pooled, model, grid)
    shared_reacts = model.reactive_waits(pooled)
    losses = {}
    for engine, samples in by_engine.items():
        expected = _expected_action_losses(draws, samples, model)
        actual = _action_losses(draws, draws.recovery_s(samples), model) if realised else expected
        early, reactive, no_scaling = actual
        own_returns = _selective_returns(draws, samples, model, grid)
        own_wait = reactive if model.reactive_waits(samples) else no_scaling
        shared_wait = reactive if shared_reacts else no_scaling  # realised R differs by engine
        losses[engine] = {
            "no_scaling": no_scaling,
            "reactive": reactive,
            "eager": early,
            "learnsched": np.where(own_returns, early, own_wait),
            "shared": np.where(shared_returns, early, shared_wait),
            "oracle": _oracle(draws.event, expected, actual),
        }
    return losses


def _oracle(
    burst: npt.NDArray[np.bool_],
    expected: tuple[FloatArray, FloatArray, FloatArray],
    actual: tuple[FloatArray, FloatArray, FloatArray],
) -> FloatArray:
    """The oracle's loss: the action with the least loss given ``(E, D, L)``, scored as given.

    ``expected`` and ``actual`` are (early, reactive, no scaling); on a false alarm the
    oracle waits and loses nothing.
    """
    early_e, reactive_e, none_e = expected
    early, reactive, no_scaling = actual
    early_best = early_e <= np.minimum(reactive_e, none_e)
    choice = np.where(early_best, early, np.where(reactive_e <= none_e, reactive, no_scaling))
    return np.where(burst, choice, 0.0)


def _expected_action_losses(
    draws: AlertDraws, samples: FloatArray, model: AlertModel
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Losses of early return, reactive return and no scaling given ``(E, D, L)``, per alert.

    ``r`` and ``R`` are integrated out: ``E[r]`` times the capacity missing, averaged
    exactly over the samples in ``O(log n_samples)`` per alert.
    """
    d = draws.duration_s
    ordered = np.sort(samples)
    prefix = np.concatenate(([0.0], np.cumsum(ordered)))
    late = _mean_excess(ordered, prefix, draws.lead_s, d)  # E_R[min(D, (R - L)^+)]
    onset = _mean_excess(ordered, prefix, np.zeros_like(d), d)  # E_R[min(D, R)]
    return _burst_losses(draws, model.overflow_rate.mean, late, onset, model.handoff_loss)


def _mean_excess(
    ordered: FloatArray, prefix: FloatArray, start: FloatArray, cap: FloatArray
) -> FloatArray:
    """``mean_j min(cap, (R_j - start)^+)`` per alert from sorted samples and prefix sums.

    Samples at or below ``start`` add 0, those at or above ``start + cap`` add ``cap``,
    and the ones between add ``R_j - start``.
    """
    n = ordered.size
    below = np.searchsorted(ordered, start, side="right")
    above = np.maximum(np.searchsorted(ordered, start + cap, side="left"), below)
    inside = prefix[above] - prefix[below] - (above - below) * start
    return np.clip((inside + (n - above) * cap) / n, 0.0, cap)  # clip: rounding only


def _action_losses(
    draws: AlertDraws, recovery: FloatArray, model: AlertModel
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Realised losses of early return, reactive return and no scaling, per alert."""
    d = draws.duration_s
    late = np.maximum(recovery - draws.lead_s, 0.0)  # capacity still missing after onset
    early_missing, onset_missing = np.minimum(d, late), np.minimum(d, recovery)
    return _burst_losses(
        draws, draws.overflow_rate, early_missing, onset_missing, model.handoff_loss
    )


def _burst_losses(
    draws: AlertDraws,
    rate: float | FloatArray,
    early_missing: FloatArray,
    onset_missing: FloatArray,
    handoff: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Losses of early return, reactive return and no scaling from the capacity each misses.

    ``early_missing`` and ``onset_missing`` are the seconds of burst without capacity after
    returning at the alert and at onset; a false alarm costs early return one handoff.
    """
    burst = draws.event
    early = np.where(burst, handoff + rate * early_missing, handoff)
    reactive = np.where(burst, handoff + rate * onset_missing, 0.0)
    no_scaling = np.where(burst, rate * draws.duration_s, 0.0)
    return early, reactive, no_scaling


@dataclass(frozen=True)
class _LeadGrid:
    """Lead times at which the selective rule prices ``B(L)``, shared by every rule.

    ``cell[i]`` is the grid interval ``[points[c], points[c + 1]]`` holding alert ``i``'s
    lead time; ``cell`` is None when ``points`` holds every distinct lead time.
    """

    points: FloatArray
    cell: npt.NDArray[np.intp] | None


def _lead_grid(lead: FloatArray, grid_size: int = _GRID_SIZE) -> _LeadGrid:
    """At most ``grid_size`` (>= 2) lead times spread over the alerts' quantiles."""
    distinct = np.unique(lead)
    if distinct.size <= grid_size:
        return _LeadGrid(distinct, None)
    points = distinct[np.linspace(0, distinct.size - 1, grid_size).round().astype(np.intp)]
    cell = np.clip(np.searchsorted(points, lead, side="right") - 1, 0, grid_size - 2)
    return _LeadGrid(points, cell)


def _selective_returns(
    draws: AlertDraws, samples: FloatArray, model: AlertModel, grid: _LeadGrid
) -> npt.NDArray[np.bool_]:
    """Decisions of the Eq. C.2 rule priced with ``samples``: return iff ``p > p*(L)``.

    Pricing ``B(L)`` costs one lognormal partial expectation per recovery sample, so it is
    not done per alert. ``B(L)`` never falls as ``L`` grows (``(R - L)^+`` shrinks), so
    ``p*(L)`` never rises: priced at the ``grid`` points, each alert's cell brackets its
    threshold. An alert whose confidence clears the bracket by more than
    ``_BRACKET_MARGIN`` (far above the rounding of ``p*``) is decided from it; only the
    few inside are priced at their own ``L``. The decisions are those of pricing every
    alert, in ``O(grid * samples)`` time on top of the grid's ``O(n log n)``.
    """
    lead, confidence, c_f = draws.lead_s, draws.confidence, model.false_alarm_cost
    if grid.cell is None:  # few lead times (e.g. Fig. 10(b)'s fixed L): price each
        # Eq. C.2: ties and B(L) <= 0 keep waiting (the threshold is then 1)
        return confidence > return_threshold(model.benefit(lead, samples), c_f)
    at_grid = return_threshold(model.benefit(grid.points, samples), c_f)
    returns = confidence > at_grid[grid.cell] + _BRACKET_MARGIN  # above p* at the left end
    unsure = ~returns & (confidence > at_grid[grid.cell + 1] - _BRACKET_MARGIN)
    if unsure.any():
        exact = return_threshold(model.benefit(lead[unsure], samples), c_f)
        returns[unsure] = confidence[unsure] > exact
    return returns


def simulate_alerts(
    n_alerts: int,
    seed: int,
    recovery_samples: Mapping[str, npt.ArrayLike] | None = None,
    model: AlertModel | None = None,
    lead_s: float | None = None,
) -> dict[str, dict[str, float]]:
    """Mean loss per alert of every rule per engine for one seed, s-eq./alert.

    ``lead_s`` fixes every lead time (Fig. 10(b)); see :func:`alert_losses` for the rest.
    """
    return _mean_losses(draw_alerts(n_alerts, seed, model, lead_s), recovery_samples, model)


def _mean_losses(
    draws: AlertDraws,
    recovery_samples: Mapping[str, npt.ArrayLike] | None,
    model: AlertModel | None,
) -> dict[str, dict[str, float]]:
    """``mean_losses[engine][rule]`` of :func:`alert_losses` on ``draws``, s-eq./alert."""
    return {
        engine: {rule: float(loss.mean()) for rule, loss in rules.items()}
        for engine, rules in alert_losses(draws, recovery_samples, model).items()
    }


def return_boundary(
    lead_s: npt.ArrayLike, recovery_samples: npt.ArrayLike, model: AlertModel | None = None
) -> FloatArray:
    """Minimum confidence ``p*(L)`` for returning early at each lead time (Fig. 10(c)).

    Return above the curve, wait at or below it; 1 where early return never helps.
    """
    model = AlertModel() if model is None else model
    return return_threshold(model.benefit(lead_s, recovery_samples), model.false_alarm_cost)


def _samples_by_engine(samples: object) -> dict[str, FloatArray]:
    """Checked recovery samples per engine; :data:`PAPER_RECOVERY_S` when ``samples`` is None."""
    samples = PAPER_RECOVERY_S if samples is None else samples
    if not isinstance(samples, Mapping) or not samples:
        raise ValueError(f"recovery_samples must map engine names to samples, got {samples!r}")
    return {
        str(engine): array(f"recovery_samples[{engine!r}]", s, low=0.0)
        for engine, s in samples.items()
    }
