"""Returning capacity early under a burst alert: the two-action model (Appendix C.1).

At an alert with confidence ``p = Pr(E | I)`` and lead time ``L``, waiting loses ``C_w``
under a true burst and nothing otherwise (losses are shifted so that waiting on a false
alarm has mean zero); returning early loses ``C_a(L)`` under a burst and ``C_f > 0`` on a
false alarm. Costs are in s-eq. The functions broadcast over numpy arrays.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray
from ._checks import broadcastable, values

__all__ = [
    "early_advantage",
    "return_threshold",
    "returns_early",
    "robust_returns_early",
    "threshold_sensitivity",
    "wait_return_losses",
]


def wait_return_losses(
    confidence: npt.ArrayLike,
    wait_cost: npt.ArrayLike,
    return_cost: npt.ArrayLike,
    false_alarm_cost: npt.ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """Expected losses ``(Q_w, Q_a)`` of waiting and of returning early (Eq. C.1).

    Parameters
    ----------
    confidence
        Burst probability ``p`` in [0, 1].
    wait_cost
        ``C_w``: mean loss of waiting under a true burst, s-eq.
    return_cost
        ``C_a(L)``: mean loss of returning early under a true burst, s-eq.
    false_alarm_cost
        ``C_f > 0``: mean extra loss of returning early on a false alarm, s-eq.
    """
    p = values("confidence", confidence, low=0.0, high=1.0)
    c_w = values("wait_cost", wait_cost)
    c_a = values("return_cost", return_cost)
    c_f = _false_alarm(false_alarm_cost)
    broadcastable(confidence=p, wait_cost=c_w, return_cost=c_a, false_alarm_cost=c_f)
    # Eq. C.1: Q_w = p*C_w, Q_a = p*C_a(L) + (1 - p)*C_f
    return p * c_w, p * c_a + (1 - p) * c_f


def early_advantage(
    confidence: npt.ArrayLike, benefit: npt.ArrayLike, false_alarm_cost: npt.ArrayLike
) -> FloatArray:
    """``D(p) = Q_w - Q_a = p*B(L) - (1 - p)*C_f``, s-eq. (Eqs. C.2, C.4).

    ``benefit`` is ``B(L) = C_w - C_a(L)``, the loss avoided by acting early on a true burst;
    ``false_alarm_cost`` is ``C_f > 0``.
    """
    p = values("confidence", confidence, low=0.0, high=1.0)
    b = values("benefit", benefit)
    c_f = _false_alarm(false_alarm_cost)
    broadcastable(confidence=p, benefit=b, false_alarm_cost=c_f)
    return p * b - (1 - p) * c_f


def returns_early(
    confidence: npt.ArrayLike, benefit: npt.ArrayLike, false_alarm_cost: npt.ArrayLike
) -> npt.NDArray[np.bool_]:
    """Return early iff it strictly lowers the expected loss: ``p > p*(L)`` (Eq. C.2).

    Ties keep waiting, and ``B(L) <= 0`` never returns early (then ``D(p) <= 0`` on [0, 1]).
    """
    return early_advantage(confidence, benefit, false_alarm_cost) > 0


def return_threshold(benefit: npt.ArrayLike, false_alarm_cost: npt.ArrayLike) -> FloatArray:
    """Confidence threshold ``p*(L) = C_f / (B(L) + C_f)`` (Eq. C.2).

    Lies in (0, 1) for ``B > 0``; where ``B <= 0`` it is 1, which no ``p`` in [0, 1]
    strictly exceeds, matching the rule that early return then never helps.
    """
    b = values("benefit", benefit)
    c_f = _false_alarm(false_alarm_cost)
    broadcastable(benefit=b, false_alarm_cost=c_f)
    positive_b = b > 0
    denominator = np.where(positive_b, b + c_f, 1.0)  # placeholder keeps the division defined
    return np.where(positive_b, c_f / denominator, 1.0)


def threshold_sensitivity(
    benefit: npt.ArrayLike, false_alarm_cost: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Partial derivatives ``(dp*/dB, dp*/dC_f)`` for ``B, C_f > 0`` (Eq. C.3).

    ``dp*/dB = -C_f/(B + C_f)^2 < 0`` and ``dp*/dC_f = B/(B + C_f)^2 > 0``, per s-eq.
    """
    b = _positive("benefit", benefit)
    c_f = _false_alarm(false_alarm_cost)
    broadcastable(benefit=b, false_alarm_cost=c_f)
    square = (b + c_f) ** 2
    return -c_f / square, b / square  # Eq. C.3


def robust_returns_early(
    estimate: npt.ArrayLike,
    benefit: npt.ArrayLike,
    false_alarm_cost: npt.ArrayLike,
    probability_error: float,
) -> npt.NDArray[np.bool_]:
    """Return early only if it helps for every ``p`` with ``|p - p_hat| <= eps_p`` (Eq. C.4).

    The rule is ``D(p_hat) > eps_p*(B + C_f)``, which implies ``D(p) > 0``; where
    ``B <= 0`` it never returns early. Cost-model errors are not covered.

    Parameters
    ----------
    estimate
        Estimated burst probability ``p_hat`` in [0, 1].
    benefit, false_alarm_cost
        ``B(L)`` and ``C_f > 0``, s-eq.
    probability_error
        Bound ``eps_p >= 0`` on ``|p - p_hat|``.
    """
    eps = float(values("probability_error", probability_error, low=0.0))
    b = values("benefit", benefit)
    c_f = _false_alarm(false_alarm_cost)
    broadcastable(benefit=b, false_alarm_cost=c_f)
    margin = eps * (b + c_f)
    # Eq. C.4: D(p) >= D(p_hat) - eps_p*(B + C_f) > 0
    return (b > 0) & (early_advantage(estimate, b, c_f) > margin)


def _false_alarm(false_alarm_cost: npt.ArrayLike) -> FloatArray:
    """``C_f`` checked once for every function: finite and > 0 (App. C.1 requires it)."""
    return _positive("false_alarm_cost", false_alarm_cost)


def _positive(name: str, data: npt.ArrayLike) -> FloatArray:
    """:func:`values` with every entry ``> 0``; the error names the first that is not."""
    out = values(name, data)
    if (out <= 0).any():
        raise ValueError(f"{name} must be > 0, got {float(out[out <= 0].flat[0])!r}")
    return out
