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
21.08 against 8.74 and 22.16 over ten seeds of 10^6 alerts); :mod:`.alert_calibration`
fits the unpublished recovery inputs to the printed bars.
"""

from __future__ import annotations

import sys
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
    "MAX_ALERTS",
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
        index: npt.NDArray[np.intp] = np.minimum(
            (self.recovery_quantile * data.size).astype(np.intp), data.size - 1
        )
        return data[index]


MAX_ALERTS = 10_000_000
"""Most alerts one sample may draw: the draws and their losses take ~200 bytes an alert
(2 GB at the limit; the paper's experiment draws 10**6 per seed)."""


def draw_alerts(
    n_alerts: int, seed: int, model: AlertModel | None = None, lead_s: float | None = None
) -> AlertDraws:
    """Sample ``n_alerts`` alerts with ``numpy.random.default_rng(seed)``.

    ``lead_s`` fixes every lead time (Fig. 10(b)); the other draws are unchanged by it.
    """
    n = integer("n_alerts", n_alerts, low=1, high=MAX_ALERTS)
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
    return _alert_losses(SeedTerms(draws, samples_by_engine(recovery_samples), model), realised)


@dataclass(frozen=True)
class _Waiting:
    """One engine's terms that the lead time does not enter, s-eq. per alert.

    ``reactive`` and ``no_scaling`` are the expected losses of returning at onset and of
    no scaling (0 on a false alarm); ``wait`` is the one the engine's own estimate waits
    with, and ``best_wait`` the cheaper of the two on each burst alert.
    """

    samples: FloatArray
    ordered: FloatArray
    prefix: FloatArray
    reactive: FloatArray
    no_scaling: FloatArray
    wait: FloatArray
    best_wait: FloatArray


class SeedTerms:
    """One seed's draws with the terms every rule and lead time shares, computed once.

    A lead time enters only early return's loss and the selective rule's threshold, so
    Fig. 10(b)'s sweep reuses everything here. Per-alert terms of a burst are computed on
    the burst alerts alone (``burst`` indexes them) and scattered into full arrays: the
    same values as ``np.where(event, ...)``, at a fraction of the cost of a branch per
    alert on a random mask.

    Parameters
    ----------
    draws
        One seed's alerts (:func:`draw_alerts`).
    by_engine
        Recovery samples per engine, seconds (:func:`samples_by_engine`).
    model
        The alert model.
    """

    def __init__(
        self, draws: AlertDraws, by_engine: Mapping[str, FloatArray], model: AlertModel
    ) -> None:
        self.draws = draws
        self.model = model
        self.burst = np.flatnonzero(draws.event)
        self.duration_s = draws.duration_s[self.burst]
        self.pooled = np.concatenate(list(by_engine.values()))
        self.shared_reacts = model.reactive_waits(self.pooled)
        self.engines = {engine: self._waiting(samples) for engine, samples in by_engine.items()}

    def _on_bursts(self, values: FloatArray, otherwise: float) -> FloatArray:
        """``values`` (one per burst alert) at the burst alerts, ``otherwise`` elsewhere."""
        out = np.full(self.draws.event.size, otherwise)
        out[self.burst] = values
        return out

    def _waiting(self, samples: FloatArray) -> _Waiting:
        model = self.model
        ordered = np.sort(samples)
        prefix = np.concatenate(([0.0], np.cumsum(ordered)))
        rate = model.overflow_rate.mean
        onset = _mean_excess(ordered, prefix, 0.0, self.duration_s)  # E_R[min(D, R)]
        reactive = model.handoff_loss + rate * onset
        no_scaling = rate * self.duration_s
        full_reactive = self._on_bursts(reactive, 0.0)
        full_no_scaling = self._on_bursts(no_scaling, 0.0)
        return _Waiting(
            samples=samples,
            ordered=ordered,
            prefix=prefix,
            reactive=full_reactive,
            no_scaling=full_no_scaling,
            wait=full_reactive if model.reactive_waits(samples) else full_no_scaling,
            best_wait=np.minimum(reactive, no_scaling),
        )

    def early(self, waiting: _Waiting, lead_s: FloatArray | float) -> tuple[FloatArray, FloatArray]:
        """Expected loss of early return per alert, and on the burst alerts alone, s-eq.

        ``lead_s`` is the lead time of each burst alert or one for all, seconds:
        ``h + E[r]*E_R[min(D, (R - L)^+)]`` under a burst, ``h`` on a false alarm.
        """
        model = self.model
        late = _mean_excess(waiting.ordered, waiting.prefix, lead_s, self.duration_s)
        late *= model.overflow_rate.mean
        late += model.handoff_loss
        return self._on_bursts(late, model.handoff_loss), late

    def oracle(self, waiting: _Waiting, early_bursts: FloatArray) -> FloatArray:
        """The oracle's expected loss: the cheapest action under a burst, 0 otherwise
        (:func:`_oracle` with ``expected`` as ``actual``, whose choice then costs the
        minimum of the three)."""
        return self._on_bursts(np.minimum(early_bursts, waiting.best_wait), 0.0)

    def fixed_lead(
        self,
        waiting: _Waiting,
        lead_s: float,
        own_threshold: FloatArray,
        shared_thresholds: list[FloatArray],
        shared_wait: FloatArray,
        out: list[FloatArray],
    ) -> None:
        """Per-alert expected losses with every lead time ``lead_s``, written into ``out``:
        early return, the engine's selective rule, the oracle, then the shared rule at each
        of ``shared_thresholds`` (``2 + len(shared_thresholds)`` more arrays of one entry
        per alert).

        The values of :meth:`early`, :func:`_choose` and :meth:`oracle`, computed in
        blocks of ``_BLOCK_ALERTS`` so that the temporaries stay in cache: at a fixed lead
        time the sweep is bound by memory traffic, and this halves it.
        """
        model, confidence = self.model, self.draws.confidence
        h, rate = model.handoff_loss, model.overflow_rate.mean
        early, selective, oracle, *shared = out
        for lo, hi, first, last in self._blocks():
            local = self.burst[first:last] - lo
            late = _mean_excess(
                waiting.ordered, waiting.prefix, lead_s, self.duration_s[first:last]
            )
            late *= rate
            late += h  # the burst alerts' early-return loss
            block = early[lo:hi]
            block.fill(h)
            block[local] = late
            alerts = confidence[lo:hi]
            selective[lo:hi] = np.where(alerts > own_threshold, block, waiting.wait[lo:hi])
            for rule, threshold in zip(shared, shared_thresholds, strict=True):
                rule[lo:hi] = np.where(alerts > threshold, block, shared_wait[lo:hi])
            oracle[lo:hi] = 0.0
            oracle[lo:hi][local] = np.minimum(late, waiting.best_wait[first:last])

    def _blocks(self) -> list[tuple[int, int, int, int]]:
        """``(lo, hi, first, last)`` per block of alerts: alerts ``lo:hi`` hold the burst
        alerts ``first:last``."""
        n = self.draws.event.size
        edges = np.append(np.arange(0, n, _BLOCK_ALERTS), n)
        bursts = np.searchsorted(self.burst, edges)
        return [
            (int(edges[k]), int(edges[k + 1]), int(bursts[k]), int(bursts[k + 1]))
            for k in range(edges.size - 1)
        ]


def _choose(where: npt.NDArray[np.intp], chosen: FloatArray, otherwise: FloatArray) -> FloatArray:
    """``otherwise`` with the entries ``where`` taken from ``chosen``: ``np.where`` by
    index, without its branch per entry on a random mask (4x the cost)."""
    out: FloatArray = otherwise.copy()
    out[where] = chosen[where]
    return out


def _alert_losses(terms: SeedTerms, realised: bool) -> dict[str, dict[str, FloatArray]]:
    """:func:`alert_losses` on the shared terms of a seed's draws."""
    draws, model = terms.draws, terms.model
    grid = _lead_grid(draws.lead_s)
    # The pooled rule's decisions depend only on the draws: price them once for all engines.
    shared_returns = np.flatnonzero(_selective_returns(draws, terms.pooled, model, grid))
    burst_lead = draws.lead_s[terms.burst]
    losses = {}
    for engine, waiting in terms.engines.items():
        early, early_bursts = terms.early(waiting, burst_lead)
        if realised:
            expected = early, waiting.reactive, waiting.no_scaling
            actual = _action_losses(draws, draws.recovery_s(waiting.samples), model)
            early, reactive, no_scaling = actual
            oracle = _oracle(draws.event, expected, actual)
            own_wait = reactive if model.reactive_waits(waiting.samples) else no_scaling
        else:
            reactive, no_scaling, own_wait = waiting.reactive, waiting.no_scaling, waiting.wait
            oracle = terms.oracle(waiting, early_bursts)
        own_returns = np.flatnonzero(_selective_returns(draws, waiting.samples, model, grid))
        shared_wait = reactive if terms.shared_reacts else no_scaling  # realised R differs
        losses[engine] = {
            "no_scaling": no_scaling,
            "reactive": reactive,
            "eager": early,
            "learnsched": _choose(own_returns, early, own_wait),
            "shared": _choose(shared_returns, early, shared_wait),
            "oracle": oracle,
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


# Alerts per block of the fixed-lead sweep: a block's dozen temporaries fit in cache.
_BLOCK_ALERTS = 1 << 17

# Recovery samples up to which counting them beats a binary search per alert (the
# paper's defaults have one per engine).
_FEW_SAMPLES = 4


def _rank(ordered: FloatArray, at: FloatArray | float, side: str) -> npt.NDArray[np.intp]:
    """``np.searchsorted(ordered, at, side)``: the samples ``<= at`` (right) or ``< at``
    (left), counted by comparison when there are at most ``_FEW_SAMPLES``."""
    if ordered.size > _FEW_SAMPLES:
        return np.searchsorted(ordered, at, side=side)  # type: ignore[call-overload, no-any-return]
    below = np.less_equal if side == "right" else np.less
    count: npt.NDArray[np.intp] = below(ordered[0], at).astype(np.intp)
    for sample in ordered[1:]:
        count += below(sample, at)
    return count


def _mean_excess(
    ordered: FloatArray, prefix: FloatArray, start: FloatArray | float, cap: FloatArray
) -> FloatArray:
    """``mean_j min(cap, (R_j - start)^+)`` per alert from sorted samples and prefix sums.

    Samples at or below ``start`` add 0, those at or above ``start + cap`` add ``cap``,
    and the ones between add ``R_j - start``. ``start`` is one per alert or one for all.
    """
    n = ordered.size
    if np.ndim(start) == 0 and start >= ordered[-1]:  # what the formula gives: 0 for every cap
        return np.zeros_like(cap)
    below = _rank(ordered, start, "right")
    above = _rank(ordered, start + cap, "left")
    np.maximum(above, below, out=above)
    # In place, each step the same operation on the same operands as written out:
    # clip((prefix[above] - prefix[below] - (above - below) * start + (n - above) * cap) / n)
    inside = prefix[above]
    inside -= prefix[below]
    inside -= (above - below) * start
    inside += (n - above) * cap
    inside /= n
    return np.clip(inside, 0.0, cap, out=inside)  # clip: rounding only


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
    rate: FloatArray,
    early_missing: FloatArray,
    onset_missing: FloatArray,
    handoff: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Realised losses of early return, reactive return and no scaling from the capacity
    each misses.

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
    return _LeadGrid(points, np.clip(_points_at_most(points, lead) - 1, 0, grid_size - 2))


# Value bins per grid point in _points_at_most, and the most points one bin may hold
# before a binary search per lead is cheaper than stepping through them.
_BINS_PER_POINT = 4
_MOST_PER_BIN = 8


def _points_at_most(points: FloatArray, values: FloatArray) -> npt.NDArray[np.intp]:
    """``np.searchsorted(points, values, side="right")`` for strictly increasing
    ``points`` and ``values`` in ``[points[0], points[-1]]``, without a binary search
    per value (a branch mispredicted at each of its 11 levels for 2048 points).

    Equal-width bins cut the range; ``b(v) = floor((v - points[0]) * scale)`` is monotone
    in ``v`` in floating point too, so every point in an earlier bin than ``v``'s is
    below it and every point in a later one above it: the count is the points before
    ``v``'s bin plus those of its bin up to ``v``, found by stepping through that bin
    (at most ``_MOST_PER_BIN`` points, else the binary search is used).
    """
    bins = _BINS_PER_POINT * points.size
    span = float(points[-1] - points[0])
    if not span > bins / sys.float_info.max:  # bins / span would overflow
        return np.searchsorted(points, values, side="right")
    scale = bins / span

    def bin_of(v: FloatArray) -> npt.NDArray[np.intp]:
        index: npt.NDArray[np.intp] = np.minimum(
            ((v - points[0]) * scale).astype(np.intp), bins - 1
        )
        return index

    point_bins = bin_of(points)
    per_bin = int(np.bincount(point_bins).max())
    if per_bin > _MOST_PER_BIN:
        return np.searchsorted(points, values, side="right")
    before = np.searchsorted(point_bins, np.arange(bins), side="left")  # points in earlier bins
    padded = np.append(points, np.inf)
    count = before[bin_of(values)]
    for _ in range(per_bin):
        count += padded[count] <= values
    return count


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
    # The bracket's ends with their margins, per cell (the same sums as per alert).
    left, right = at_grid[:-1] + _BRACKET_MARGIN, at_grid[1:] - _BRACKET_MARGIN
    returns = confidence > left[grid.cell]  # above p* at the left end
    unsure = np.flatnonzero(~returns & (confidence > right[grid.cell]))
    if unsure.size:
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
    return mean_losses(draw_alerts(n_alerts, seed, model, lead_s), recovery_samples, model)


def mean_losses(
    draws: AlertDraws,
    recovery_samples: Mapping[str, npt.ArrayLike] | None,
    model: AlertModel | None,
) -> dict[str, dict[str, float]]:
    """Mean loss per alert of every rule per engine on given draws, s-eq./alert.

    Parameters
    ----------
    draws
        One seed's alerts (:func:`draw_alerts`).
    recovery_samples, model
        As for :func:`alert_losses` (``None``: :data:`PAPER_RECOVERY_S`, the default model).

    Returns
    -------
    dict[str, dict[str, float]]
        ``means[engine][rule]``: the mean of :func:`alert_losses`' per-alert losses.
    """
    model = AlertModel() if model is None else model
    return seed_means(SeedTerms(draws, samples_by_engine(recovery_samples), model))


def seed_means(terms: SeedTerms) -> dict[str, dict[str, float]]:
    """:func:`mean_losses` from the shared terms of a seed's draws (computed once, for
    callers that also sweep the lead time on them), ``means[engine][rule]``, s-eq./alert."""
    return {
        engine: {rule: float(loss.mean()) for rule, loss in rules.items()}
        for engine, rules in _alert_losses(terms, realised=False).items()
    }


def fixed_lead_means(
    terms: SeedTerms, lead_times_s: FloatArray
) -> dict[str, dict[str, tuple[float, ...]]]:
    """Mean loss per alert of every rule with every lead time set to each of
    ``lead_times_s`` (seconds), the other draws kept: ``sweep[engine][rule]``, s-eq./alert.

    The values of :func:`mean_losses` on the draws with ``lead_s`` replaced, computed
    from the lead-independent ``terms``: reactive return and no scaling do not depend on
    the lead time, and with one lead time for all the selective rule's threshold is one
    number (Eq. C.2). A lead time at or past every recovery sample finds capacity ready
    after any return, so there every term is the one at the last sample: each distinct
    (engine's, pooled) clamped lead time is priced once.
    """
    model = terms.model
    leads = lead_times_s.tolist()

    def threshold(lead: float, samples: FloatArray) -> FloatArray:
        return return_threshold(model.benefit(lead, samples), model.false_alarm_cost)

    pooled_last = float(terms.pooled.max())
    n = terms.draws.event.size
    buffers: list[FloatArray] = []
    sweep = {}
    for engine, waiting in terms.engines.items():
        own_last = float(waiting.ordered[-1])
        shared_wait = waiting.reactive if terms.shared_reacts else waiting.no_scaling
        keys = [(min(lead, own_last), min(lead, pooled_last)) for lead in leads]
        means: dict[tuple[str, float, float], float] = {}
        for own in dict.fromkeys(own for own, _ in keys):
            pooled = list(dict.fromkeys(p for o, p in keys if o == own))
            while len(buffers) < 3 + len(pooled):  # reused: fresh pages cost a fault each
                buffers.append(np.empty(n))
            out = buffers[: 3 + len(pooled)]
            shared = [threshold(p, terms.pooled) for p in pooled]
            terms.fixed_lead(
                waiting, own, threshold(own, waiting.samples), shared, shared_wait, out
            )
            for rule, losses in zip(("eager", "learnsched", "oracle"), out, strict=False):
                means[rule, own, own] = float(losses.mean())
            for p, losses in zip(pooled, out[3:], strict=True):
                means["shared", own, p] = float(losses.mean())
        sweep[engine] = {
            "no_scaling": (float(waiting.no_scaling.mean()),) * len(keys),
            "reactive": (float(waiting.reactive.mean()),) * len(keys),
            "eager": tuple(means["eager", own, own] for own, _ in keys),
            "learnsched": tuple(means["learnsched", own, own] for own, _ in keys),
            "shared": tuple(means["shared", own, p] for own, p in keys),
            "oracle": tuple(means["oracle", own, own] for own, _ in keys),
        }
    return sweep


def return_boundary(
    lead_s: npt.ArrayLike, recovery_samples: npt.ArrayLike, model: AlertModel | None = None
) -> FloatArray:
    """Minimum confidence ``p*(L)`` for returning early at each lead time (Fig. 10(c)).

    Return above the curve, wait at or below it; 1 where early return never helps.
    """
    model = AlertModel() if model is None else model
    return return_threshold(model.benefit(lead_s, recovery_samples), model.false_alarm_cost)


def samples_by_engine(samples: object) -> dict[str, FloatArray]:
    """Checked recovery samples per engine, seconds.

    Parameters
    ----------
    samples
        A mapping of engine name to recovery samples, seconds (each ``>= 0``);
        :data:`PAPER_RECOVERY_S` when ``None``.

    Raises
    ------
    ValueError
        Not a non-empty mapping, or a sample that is not a number ``>= 0`` (named).
    """
    samples = PAPER_RECOVERY_S if samples is None else samples
    if not isinstance(samples, Mapping) or not samples:
        raise ValueError(f"recovery_samples must map engine names to samples, got {samples!r}")
    return {
        str(engine): array(f"recovery_samples[{engine!r}]", s, low=0.0)
        for engine, s in samples.items()
    }
