"""A bounded look-ahead: each decision plans over the next windows only.

Planning over the whole calendar costs O(K*J) per decision (K windows ahead, J quanta):
a day's calendar of 6000 windows with J = 3000 passes the core's table limit, and 600
windows already cost tens of milliseconds. The loop plans over at most
:attr:`Lookahead.windows` windows (64 by default), and none that starts more than
:attr:`Lookahead.seconds` after now (no limit by default): a decision then costs the
same whatever the calendar's length. The cap only matters for what it cuts: a plan
that would reach beyond the cap sees no windows there (it may wait or abandon where
the full calendar would advance), and the cut is re-planned window by window as the
cap moves on.

:func:`capped_value` measures what a cap costs: the value the policy realises when it
re-plans at every window over the capped calendar, each action taken on the true one
(Eq. 10 holds on the truth), beside the value it realises with the full calendar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._checks import integer, nonnegative, positive
from ..calendar import ForecastDecision
from ..scenario import Scenario
from ..solver import ActionKind, Model, Policy

__all__ = ["DEFAULT_LOOKAHEAD", "Lookahead", "capped_value"]


@dataclass(frozen=True)
class Lookahead:
    """How far a decision looks.

    Parameters
    ----------
    windows
        Plan over this many windows (the current one included) ...
    cover
        ... or more, while the windows planned over hold less lendable time than
        ``cover`` times the work left (so a job can always see where it would finish;
        0: never extend).
    max_windows
        Never more than this many: a decision costs at most O(``max_windows`` * J).
    seconds
        None that starts more than this long after the current one starts, seconds
        (``math.inf``: no limit).
    """

    windows: int = 64
    cover: float = 2.0
    max_windows: int = 1024
    seconds: float = math.inf

    def __post_init__(self) -> None:
        integer("windows", self.windows, low=1)
        nonnegative("cover", self.cover)
        integer("max_windows", self.max_windows, low=self.windows)
        if self.seconds != math.inf:
            positive("seconds", self.seconds)

    def cut(
        self,
        ahead: Sequence[tuple[float, float]],
        work_left_s: float = 0.0,
        handoff_s: float = 0.0,
    ) -> int:
        """How many of ``ahead`` (sorted windows, the current first) a decision plans
        over, with ``work_left_s`` seconds of the job's work left and ``handoff_s``
        seconds of each window's own that no work can use (load, save and return)."""
        count = min(len(ahead), self.windows)
        need = self.cover * work_left_s
        held = 0.0
        for start, end in ahead[:count]:  # the usable time already planned over
            held += max(end - start - handoff_s, 0.0)
        limit = min(len(ahead), self.max_windows)
        while count < limit and held < need:
            start, end = ahead[count]
            held += max(end - start - handoff_s, 0.0)
            count += 1
        if count and self.seconds != math.inf:
            last = ahead[0][0] + self.seconds
            while count > 1 and ahead[count - 1][0] > last:
                count -= 1
        return count


DEFAULT_LOOKAHEAD = Lookahead()
"""64 windows, more while they hold less than twice the work left, at most 1024: the
control loop's default."""


def capped_value(scenario: Scenario, policy: str | Policy, lookahead: Lookahead) -> float:
    """The value (s-eq.) ``policy`` realises on ``scenario`` re-planning at every window
    over the ``lookahead``-capped calendar, each action taken on the true calendar.

    With a cap that cuts nothing it is ``solve(scenario, policy).value`` (the policies
    are consistent: re-planning over the full calendar repeats the plan).
    """
    chosen = Policy.parse(policy)
    windows = scenario.windows
    state = scenario.initial.to_core()
    value = 0.0
    for k, window in enumerate(windows):
        left_s = (scenario.work_quanta - state.durable) * scenario.quantum_s
        count = lookahead.cut(windows[k:], left_s, _handoff_s(scenario))
        future = [tuple(windows[k + 1 : k + count])]
        decision = ForecastDecision(scenario, window, future, [chosen])
        action = decision.decide(state.progress, state.durable, state.active, chosen)
        segment = decision.take(state.progress, state.durable, state.active, action)
        value += segment.benefit - segment.cost.total  # in window order, as solve sums
        if action.kind in (ActionKind.PUBLISH, ActionKind.ABANDON):
            break
        state = segment.next
    return value


def _handoff_s(scenario: Scenario) -> float:
    """What a lent window spends on handoffs (load, save, return), seconds."""
    costs = scenario.costs
    return costs.load_s + costs.save_s + costs.recovery_s


def full_value(scenario: Scenario, policy: str | Policy) -> float:
    """``policy``'s value with the whole calendar known (the cap's baseline), s-eq."""
    return Model(scenario, [Policy.parse(policy)]).solve(policy).value
