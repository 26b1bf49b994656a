"""Arithmetic on the paper's printed decimals, rounded once (no binary float noise).

The economics figures combine numbers the paper prints in decimal (8589.471, 0.561,
325.047748). Each float's shortest repr is that decimal; :func:`exact` reads it as an
exact fraction, so a formula computes the decimal answer exactly and :func:`rounded`
rounds it once to the nearest double: 8589.471 / 0.561 gives 15311.0, where binary
division gives 15310.999999999998.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["exact", "rounded"]


def exact(value: float) -> Fraction:
    """The decimal a float prints as (its shortest repr), exactly."""
    return Fraction(repr(float(value)))


def rounded(value: Fraction) -> float:
    """The nearest double to an exact value (Python rounds a Fraction correctly); beyond
    the largest double, an infinity of its sign, as IEEE rounding gives (``float()`` of
    such a Fraction raises ``OverflowError``; callers that need a finite result check)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
