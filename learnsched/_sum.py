"""Float sums with a defined rounding: left to right, as ``a + b + c`` and the C++ core add.

Python 3.12 made the built-in ``sum()`` of floats compensated (Neumaier summation), so it
does not round as the core does and its last bit depends on the Python version: S0083's
plan total sums to 30.511444235160006 with it on 3.12, against the core's
30.511444235160013. Every float total the package claims exact, or equal across Python
versions, is an :func:`ordered_sum`.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ordered_sum"]


def ordered_sum(values: Iterable[float]) -> float:
    """``((v0 + v1) + v2) + ...`` in IEEE double arithmetic; ``0.0`` for no values."""
    total = 0.0
    for value in values:
        total += value
    return total
