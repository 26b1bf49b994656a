"""The benefit of publishing: a constant rate, or a piecewise-constant schedule over time.

Publishing at ``t_p`` earns ``Phi(t_p)``, the integral of the benefit rate ``g(v)`` from
``t_p`` to the horizon ``H`` (paper Section 3.1), in s-eq. A constant rate ``g`` gives the
finite model's ``g*(H - t_p)^+``; a schedule ``[[t_0, g_0], [t_1, g_1], ...]`` (seconds,
s-eq./s) holds ``g_i`` from ``t_i`` until the next piece starts (the last one until
``H``), and 0 before ``t_0``. The core computes ``Phi`` (``BenefitCurve`` in
``csrc/learnsched/finite/benefit.hpp``); Python only converts the value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import real

__all__ = ["BenefitRate", "BenefitSchedule", "benefit_rate", "benefit_text", "rate_json", "schedule_of"]

BenefitSchedule = tuple[tuple[float, float], ...]
"""``((start_s, rate), ...)``: rate ``g_i`` in s-eq./s from ``start_s`` on."""
BenefitRate = float | Sequence[tuple[float, float]]
"""A constant rate in s-eq./s, or a schedule of ``(start_s, rate)`` pairs (any sequence:
:func:`benefit_rate` makes it a :data:`BenefitSchedule`)."""


def _piece(index: int, pair: object) -> tuple[float, float]:
    if isinstance(pair, np.ndarray):
        pair = pair.tolist()
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise ValueError(f"benefit_rate[{index}] must be a [start_s, rate] pair, got {pair!r}")
    start, rate = pair
    return (real(f"benefit_rate[{index}] start", start), real(f"benefit_rate[{index}] rate", rate))


def benefit_rate(value: object) -> float | BenefitSchedule:
    """``value`` as a float rate or a tuple of ``(start_s, rate)`` float pairs.

    Ranges (finite, rates ``>= 0``, starts strictly increasing) are the core's checks,
    run when the scenario is built.

    Raises
    ------
    TypeError
        Neither a number nor a sequence of pairs of numbers (bools are not numbers).
    ValueError
        An empty schedule, or a piece that is not a ``[start_s, rate]`` pair.
    """
    if type(value) is float:
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (Sequence, np.ndarray)) or isinstance(value, (str, bytes)):
        return real("benefit_rate", value)
    if len(value) == 0:
        raise ValueError(
            "benefit_rate must be a number or a non-empty list of [start_s, rate] pairs"
        )
    return tuple(_piece(i, pair) for i, pair in enumerate(value))


def schedule_of(rate: BenefitRate) -> tuple[float, list[tuple[float, float]]]:
    """The core's two fields: the constant rate (0 with a schedule) and the pieces."""
    if isinstance(rate, (int, float)):
        return rate, []
    return 0.0, list(rate)


def benefit_text(rate: BenefitRate) -> str:
    """``rate`` for people: ``"0.25"`` or ``"1 from 0 s, 0.25 from 300 s"`` (s-eq./s)."""
    if isinstance(rate, (int, float)):
        return f"{rate:g}"
    return ", ".join(f"{g:g} from {t:g} s" for t, g in rate)


def rate_json(rate: BenefitRate) -> float | list[list[float]]:
    """A benefit rate as JSON: the number (s-eq./s), or the schedule's ``[start_s, rate]``
    pairs."""
    return rate if isinstance(rate, (int, float)) else [list(piece) for piece in rate]
