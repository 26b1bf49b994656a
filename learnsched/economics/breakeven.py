"""Break-even of a capability: effective reuse, the latest profitable start, and payback.

Section 3.2 (Eqs. 3-5) values one fixed construction path; Section 6.4 (Fig. 13) counts
the uses needed to pay back a construction cost at a fixed cost per replaced call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._checks import nonnegative, number, positive
from ._checks import array, same_length

__all__ = [
    "PAPER_GPU_COSTS",
    "ReusePath",
    "UseCosts",
    "expected_reuse_value",
    "payback_uses",
]


@dataclass(frozen=True)
class ReusePath:
    """A continuous path that qualifies and publishes a capability (Section 3.2).

    Parameters
    ----------
    arrival_rate
        Rate ``lambda`` of matching requests, requests per second (>= 0).
    use_fraction
        Fraction ``a`` of matching requests that use the artifact, in [0, 1].
    unit_value
        Expected net value ``u`` of one use relative to base service, s-eq. per use
        (any sign: a use that adds work has ``u < 0``).
    horizon_s
        End of demand ``H``, seconds.
    build_s
        Time ``tau_e`` from the start until publication, seconds (>= 0).
    cost
        Remaining construction cost ``C_e`` of the path, s-eq. (> 0).
    """

    arrival_rate: float
    use_fraction: float
    unit_value: float
    horizon_s: float
    build_s: float
    cost: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrival_rate", nonnegative("arrival_rate", self.arrival_rate))
        fraction = nonnegative("use_fraction", self.use_fraction)
        if fraction > 1:
            raise ValueError(f"use_fraction must lie in [0, 1], got {self.use_fraction!r}")
        object.__setattr__(self, "use_fraction", fraction)
        object.__setattr__(self, "unit_value", number("unit_value", self.unit_value))
        object.__setattr__(self, "horizon_s", number("horizon_s", self.horizon_s))
        object.__setattr__(self, "build_s", nonnegative("build_s", self.build_s))
        object.__setattr__(self, "cost", positive("cost", self.cost))

    def uses(self, start_s: float) -> float:
        """Expected uses ``M(t)`` when construction starts at ``start_s`` seconds."""
        # Eq. 3: M(t) = lambda*a*(H - t - tau_e)^+
        remaining = self.horizon_s - number("start_s", start_s) - self.build_s
        return self.arrival_rate * self.use_fraction * max(remaining, 0.0)

    def value(self, start_s: float) -> float:
        """Direct value ``V(t) = M(t)*u - C_e`` of starting at ``start_s``, s-eq. (Eq. 3)."""
        return self.uses(start_s) * self.unit_value - self.cost

    @property
    def value_rate(self) -> float:
        """``lambda*a*u``: value earned per second of remaining use window, s-eq./s."""
        return self.arrival_rate * self.use_fraction * self.unit_value

    def latest_start(self) -> float | None:
        """The deadline ``t_e*`` before which a start has positive direct value, seconds.

        ``None`` when no start can pay back: non-positive unit value or no reuse
        (``lambda*a*u <= 0``), where Eq. 4 does not apply.
        """
        rate = self.value_rate
        if rate <= 0:
            return None
        # Eq. 4: t < t_e* = H - tau_e - C_e/(lambda*a*u); the window must cover build and payback
        return self.horizon_s - self.build_s - self.cost / rate

    def profitable(self, start_s: float) -> bool:
        """Whether starting at ``start_s`` has strictly positive direct value (Eq. 4).

        False without positive reuse value, and at or after the deadline ``t_e*``.
        """
        start = number("start_s", start_s)
        deadline = self.latest_start()
        return deadline is not None and start < deadline


def expected_reuse_value(
    use_probabilities: npt.ArrayLike, use_values: npt.ArrayLike, expected_cost: float
) -> float:
    """Expected direct value under uncertain qualification, publication and use (Eq. 5).

    Parameters
    ----------
    use_probabilities
        ``Pr(Y_i = 1 | I_t)`` per request: qualification, publication and use jointly.
    use_values
        ``E[u_i | Y_i = 1, I_t]`` per request, s-eq.
    expected_cost
        ``E[C_e | I_t]`` over successful and failed construction paths, s-eq. (>= 0).

    Returns
    -------
    float
        ``sum_i Pr(Y_i=1) E[u_i | Y_i=1] - E[C_e]``, s-eq.
    """
    probs = array("use_probabilities", use_probabilities, low=0.0, high=1.0)
    values = array("use_values", use_values)
    same_length(use_probabilities=probs, use_values=values)
    cost = nonnegative("expected_cost", expected_cost)
    # Eq. 5: the joint event keeps the correlation between completion time and later uses
    return float(np.dot(probs, values)) - cost


def payback_uses(construction_cost: float, use_cost: float) -> int:
    """Fewest uses whose avoided cost strictly exceeds the construction cost (Fig. 13).

    Each use replaces one call of cost ``c`` at no additional use cost, so ``n`` uses pay
    back ``C`` iff ``n*c > C``, i.e. ``n = floor(C/c) + 1``; an exact multiple only ties
    and needs one use more. Both costs are taken as the decimals they print as (``0.3`` is
    3/10, not the nearest binary float), and the quotient is exact, so
    ``payback_uses(0.3, 0.1) == 4`` where float division would round ``0.3/0.1`` down.

    Parameters
    ----------
    construction_cost
        Construction (build and validation) cost ``C`` (>= 0), any resource unit.
    use_cost
        Cost ``c`` of one replaced service call (> 0), same unit.
    """
    build = _decimal(nonnegative("construction_cost", construction_cost))
    call = _decimal(positive("use_cost", use_cost))
    return math.floor(build / call) + 1  # Section 6.4: floor(C/c) + 1, in exact arithmetic


def _decimal(value: float) -> Fraction:
    """The exact rational of ``value``'s shortest decimal representation (``repr``)."""
    return Fraction(repr(value))


@dataclass(frozen=True)
class UseCosts:
    """Mean cost of one service call and one construction call of a tool, one resource.

    Parameters
    ----------
    service
        Mean cost of a service call ``c``.
    construction
        Mean cost of a construction call ``C``.
    """

    service: float
    construction: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "service", positive("service", self.service))
        object.__setattr__(self, "construction", nonnegative("construction", self.construction))

    def payback_uses(self) -> int:
        """``floor(C/c) + 1`` uses (Fig. 13)."""
        return payback_uses(self.construction, self.service)


# Section 6.4 / Fig. 13: mean GPU activity per call over 30 profiled calls, milliseconds.
PAPER_GPU_COSTS: dict[str, UseCosts] = {
    "bits": UseCosts(service=76.9, construction=378.3),
    "pyramid": UseCosts(service=53.8, construction=4294.2),
}
