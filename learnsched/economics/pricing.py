"""Common pricing of answers and resources (Eq. 9, Eq. 14, Appendix B).

Costs are in one resource unit ``m`` (tokens here); a timely correct answer is worth ``W``
in ``m`` per answer. The paper's Table B.1 tool ledgers and Fig. 12(b) guidance ledger ship
as data below, and every reported figure is derived from them by the functions here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from .._checks import integer, nonnegative, number, positive
from .._sum import ordered_sum
from ._decimal import exact, rounded

__all__ = [
    "GUIDANCE_LEDGER",
    "TABLE_B1",
    "GuidanceLedger",
    "Ledger",
    "UtilityLine",
    "charged_cost",
    "incremental_utility",
    "table_b1_utility",
]

T = TypeVar("T")


def charged_cost(base: float, extra: float, build: float, validate: float) -> float:
    """All charged model-call cost ``C_all`` of one policy (Eq. 14).

    Parameters
    ----------
    base, extra, build, validate
        Actual service, extra generation, construction and validation costs (>= 0), one
        unit. Failed builds, unpublished candidates and unused calls are included by the
        caller; absent base calls are not.
    """
    parts = {"base": base, "extra": extra, "build": build, "validate": validate}
    # Eq. 14: C_all = C_base + C_extra + C_build + C_validate
    return ordered_sum(nonnegative(name, value) for name, value in parts.items())


@dataclass(frozen=True)
class Ledger:
    """One policy's aggregate ledger on one demand pattern.

    Parameters
    ----------
    cost
        Total charged cost (Eq. 14), resource units (>= 0).
    timely_correct
        Answers that were both correct and on time.
    requests
        Requests served.
    """

    cost: float
    timely_correct: int
    requests: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "cost", nonnegative("cost", self.cost))
        for name in ("timely_correct", "requests"):
            object.__setattr__(self, name, integer(name, getattr(self, name)))
        if self.timely_correct > self.requests:
            raise ValueError(
                f"timely_correct must be <= requests={self.requests}, got {self.timely_correct}"
            )

    def utility(self, answer_value: float) -> float:
        """``U(W) = W*Q - C`` in resource units (Eq. B.1's terms)."""
        return nonnegative("answer_value", answer_value) * self.timely_correct - self.cost


@dataclass(frozen=True)
class UtilityLine:
    """Incremental utility ``dU(W) = W*dQ - dC`` of a policy P over a policy Q (Eq. 9).

    Parameters
    ----------
    dq
        Extra timely correct answers ``Q_P - Q_Q``.
    dc
        Extra charged cost ``C_P - C_Q``, resource units.
    """

    dq: float
    dc: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "dq", number("dq", self.dq))
        object.__setattr__(self, "dc", number("dc", self.dc))

    def at(self, answer_value: float) -> float:
        """``dU(W)`` at answer value ``W >= 0`` (resource units per answer)."""
        return nonnegative("answer_value", answer_value) * self.dq - self.dc  # Eq. 9

    @property
    def breakeven_value(self) -> float | None:
        """The ``W`` where ``dU(W) = 0`` (equality is a tie), or ``None`` when ``dQ = 0``.

        With ``dQ > 0``, P is strictly better iff ``W`` exceeds it; with ``dQ < 0`` iff
        ``W`` is below it.
        """
        return None if self.dq == 0 else self.dc / self.dq

    def describe(self) -> str:
        """The line as the paper prints it: ``W - 3124``, ``-1660``, ``-W - 5``, ``2W + 1``.

        A unit slope prints as ``W`` or ``-W``, a zero term is left out (``0`` when both
        are), and integral numbers print without a decimal point.
        """
        if self.dq == 0:
            return _plain(-self.dc)
        slope = {1.0: "W", -1.0: "-W"}.get(self.dq, f"{_plain(self.dq)}W")
        if self.dc == 0:
            return slope
        sign = "-" if self.dc > 0 else "+"
        return f"{slope} {sign} {_plain(abs(self.dc))}"


def _plain(value: float) -> str:
    """``value`` as written by hand: ``3124``, ``-0.5``, ``0`` (never ``-0`` or ``1e+06``)."""
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def incremental_utility(better: Ledger, baseline: Ledger) -> UtilityLine:
    """``dU_{P,Q}(W) = W(Q_P - Q_Q) - (C_P - C_Q)`` for P = ``better`` over Q = ``baseline``.

    Both ledgers must cover the same requests (Eq. B.1 compares policies on one pattern).
    """
    if better.requests != baseline.requests:
        raise ValueError(
            f"baseline.requests must equal better.requests={better.requests}, "
            f"got {baseline.requests}"
        )
    # Eq. B.1: the W*Q and C terms separate by linearity
    return UtilityLine(
        dq=better.timely_correct - baseline.timely_correct, dc=better.cost - baseline.cost
    )


# Table B.1: historical token totals and revised timely-correct counts per demand pattern.
TABLE_B1: dict[str, dict[str, Ledger]] = {
    "sustained": {
        "never": Ledger(cost=72351, timely_correct=53, requests=192),
        "window": Ledger(cost=24294, timely_correct=164, requests=192),
        "learnsched": Ledger(cost=23447, timely_correct=171, requests=192),
    },
    "stopped": {
        "window": Ledger(cost=16418, timely_correct=30, requests=48),
        "learnsched": Ledger(cost=16380, timely_correct=34, requests=48),
        "calendar": Ledger(cost=13256, timely_correct=33, requests=48),
    },
    "sparse": {
        "window": Ledger(cost=7648, timely_correct=4, requests=8),
        "learnsched": Ledger(cost=4624, timely_correct=5, requests=8),
        "calendar": Ledger(cost=2964, timely_correct=5, requests=8),
    },
}


def table_b1_utility(demand: str, better: str, baseline: str) -> UtilityLine:
    """Incremental utility between two Table B.1 policies on one demand pattern."""
    ledgers = _lookup("demand", demand, TABLE_B1)
    return incremental_utility(
        _lookup("better", better, ledgers), _lookup("baseline", baseline, ledgers)
    )


def _lookup(name: str, key: str, table: Mapping[str, T]) -> T:
    if key not in table:
        raise ValueError(f"{name} must be one of {', '.join(table)}, got {key!r}")
    return table[key]


@dataclass(frozen=True)
class GuidanceLedger:
    """A conditional cost ledger with a service-price coefficient (Appendix B.2).

    Parameters
    ----------
    construction_saving
        Aggregate construction and validation saving ``S_b``, resource units.
    scaled_service_cost
        Additional service cost as reported, already multiplied by ``alpha0``.
    alpha0
        The service-price coefficient the report used (> 0).
    dq
        Timely-correct differences per block.
    """

    construction_saving: float
    scaled_service_cost: float
    alpha0: float
    dq: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "construction_saving", number("construction_saving", self.construction_saving)
        )
        object.__setattr__(
            self, "scaled_service_cost", number("scaled_service_cost", self.scaled_service_cost)
        )
        object.__setattr__(self, "alpha0", positive("alpha0", self.alpha0))
        if not self.dq:
            raise ValueError(f"dq must be a non-empty sequence of integers, got {self.dq!r}")
        object.__setattr__(self, "dq", tuple(integer("dq", q, low=None) for q in self.dq))

    @property
    def service_cost(self) -> float:
        """Unscaled additional service cost ``D_s = scaled / alpha0`` (Eq. B.3), from the
        printed decimals: 8589.471 / 0.561 = 15311 exactly."""
        return rounded(exact(self.scaled_service_cost) / exact(self.alpha0))

    @property
    def total_dq(self) -> int:
        """Aggregate extra timely correct answers ``sum_j dQ_j``."""
        return sum(self.dq)

    def saving(self, alpha: float) -> float:
        """Net saving ``S(alpha) = S_b - alpha*D_s`` at coefficient ``alpha >= 0`` (Eq. B.3)."""
        a = exact(nonnegative("alpha", alpha))
        return rounded(exact(self.construction_saving) - a * exact(self.service_cost))

    def service_offset(self, alpha: float) -> float:
        """Fraction of the construction saving that service cost offsets at ``alpha``."""
        a = exact(nonnegative("alpha", alpha))
        return rounded(a * exact(self.service_cost) / exact(self.construction_saving))

    def utility(self, answer_value: float, alpha: float) -> float:
        """``dU(W, alpha) = W*sum_j dQ_j + S(alpha)`` (Eq. B.4)."""
        return nonnegative("answer_value", answer_value) * self.total_dq + self.saving(alpha)

    def alpha_boundary(self, answer_value: float) -> float:
        """The ``alpha`` below which ``dU(W, alpha) > 0``; equality is a tie (Eq. B.5).

        Requires ``D_s > 0`` so that dividing keeps the inequality's direction.
        """
        if self.service_cost <= 0:
            raise ValueError(f"service cost D_s must be > 0, got {self.service_cost!r}")
        value = nonnegative("answer_value", answer_value)
        # Eq. B.5: dU > 0 <=> alpha < (S_b + W*sum dQ) / D_s
        total = exact(self.construction_saving) + exact(value) * self.total_dq
        return rounded(total / exact(self.service_cost))


# Appendix B.2 / Fig. 12(b): five SGLang blocks, LearnSched minus Eager, tokens.
GUIDANCE_LEDGER = GuidanceLedger(
    construction_saving=30420, scaled_service_cost=8589.471, alpha0=0.561, dq=(0, 1, 2, 0, 1)
)
