"""Waiting value: publish later at lower cost, or now at higher cost (Section 4.3, Eq. 13)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from .._checks import nonnegative, number, positive
from ..grid import scenario_by_id
from ..plan import Plan
from ..solver import Policy, solve
from ._decimal import exact, rounded

__all__ = ["PAPER_WAITING_SCENARIO", "WaitingComparison", "paper_waiting_example", "waiting_gain"]

# Fig. 4(c): fresh 30 s of work, g = 0.25, back-loaded calendar, H = 1020 s, cold recovery.
PAPER_WAITING_SCENARIO = "S0348"


def waiting_gain(
    cost_now: float,
    cost_wait: float,
    publish_now_s: float,
    publish_wait_s: float,
    benefit_rate: float,
) -> float:
    """``V_wait - V_now`` for two plans publishing the same artifact before ``H`` (Eq. 13).

    Parameters
    ----------
    cost_now, cost_wait
        Remaining costs ``C1`` (immediate plan) and ``C2`` (delayed plan), s-eq. (>= 0).
    publish_now_s, publish_wait_s
        Publication times ``t1 <= t2``, seconds.
    benefit_rate
        Benefit rate ``g > 0`` after publication, s-eq. per second.

    Returns
    -------
    float
        Net gain of waiting, s-eq.: the cost saved minus the benefit lost to delay.
    """
    return WaitingComparison(cost_now, cost_wait, publish_now_s, publish_wait_s, benefit_rate).gain


@dataclass(frozen=True)
class WaitingComparison:
    """An immediate and a delayed plan for the same artifact (Eq. 13); see :func:`waiting_gain`."""

    cost_now: float
    cost_wait: float
    publish_now_s: float
    publish_wait_s: float
    benefit_rate: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "cost_now", nonnegative("cost_now", self.cost_now))
        object.__setattr__(self, "cost_wait", nonnegative("cost_wait", self.cost_wait))
        now = number("publish_now_s", self.publish_now_s)
        later = number("publish_wait_s", self.publish_wait_s)
        if later < now:
            raise ValueError(
                f"publish_wait_s must be >= publish_now_s={now!r}, got {self.publish_wait_s!r}"
            )
        object.__setattr__(self, "publish_now_s", now)
        object.__setattr__(self, "publish_wait_s", later)
        object.__setattr__(self, "benefit_rate", positive("benefit_rate", self.benefit_rate))
        if not (math.isfinite(later - now) and math.isfinite(self.gain)):  # finite inputs, inf gain
            raise ValueError(
                f"benefit_rate x (publish_wait_s - publish_now_s) = {self.benefit_rate!r} x "
                f"({later!r} - {now!r}) overflows a double"
            )

    # Each from the inputs' printed decimals, rounded once (economics._decimal):
    # 0.25 * (330 - 325.047748) is 1.238063, not 1.2380629999999968.

    @property
    def cost_saving(self) -> float:
        """``C1 - C2``: execution and handoff cost avoided by waiting, s-eq."""
        return rounded(self._cost_saving)

    @property
    def benefit_lost(self) -> float:
        """``g*(t2 - t1)``: benefit forgone while waiting, s-eq."""
        return rounded(self._benefit_lost)

    @property
    def gain(self) -> float:
        """``V_wait - V_now``, s-eq."""
        return rounded(self._cost_saving - self._benefit_lost)  # Eq. 13

    @property
    def _cost_saving(self) -> Fraction:
        return exact(self.cost_now) - exact(self.cost_wait)

    @property
    def _benefit_lost(self) -> Fraction:
        return exact(self.benefit_rate) * (exact(self.publish_wait_s) - exact(self.publish_now_s))

    @classmethod
    def from_plans(cls, now: Plan, wait: Plan, benefit_rate: float) -> WaitingComparison:
        """Compare two solver plans that both publish; ``ValueError`` if either does not."""
        if now.publish_s is None:
            raise ValueError(f"now plan ({now.policy}) must publish, got no publish time")
        if wait.publish_s is None:
            raise ValueError(f"wait plan ({wait.policy}) must publish, got no publish time")
        return cls(now.cost.total, wait.cost.total, now.publish_s, wait.publish_s, benefit_rate)


def paper_waiting_example() -> WaitingComparison:
    """Section 6.1's worked example, solved afresh: Costed Window (now) versus rollout (wait).

    Scenario ``S0348`` of the paper grid; Costed Window publishes at 325.048 s for 170.092
    s-eq., rollout waits and publishes at 330 s for 99.988 s-eq.
    """
    grid_scenario = scenario_by_id(PAPER_WAITING_SCENARIO)
    scenario = grid_scenario.scenario
    now = solve(scenario, Policy.COSTED_WINDOW)
    wait = solve(scenario, Policy.ROLLOUT)
    rate = scenario.benefit_rate
    assert isinstance(rate, float)  # Eq. 13's fixed rate: the grid's rates are constant
    return WaitingComparison.from_plans(now, wait, rate)
