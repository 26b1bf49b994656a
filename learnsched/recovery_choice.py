"""What choosing the recovery path per return adds over the best fixed path, on the paper's grid.

Each grid scenario appears twice in the paper, once with warm and once with cold recovery.
Here the pair becomes one two-path scenario (:meth:`HandoffCosts.choice`), and the value of
choosing is compared, scenario by scenario, with the better of the two fixed-path values:
for DP, for Rollout, and for the reference Costed Window (pi0), which with two paths follows
the better fixed-path Costed Window from each state, so that Rollout over it is never below
either fixed-path Costed Window (Proposition 1 with a path choice).
The paper prices parked state at 0.01 s-eq. per GiB-second (6.383 GiB, App. D.2); other
prices show when the choice starts to matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ._checks import nonnegative
from .batch import solve_batch
from .grid import CALENDARS, GridScenario, paper_grid
from .scenario import PAPER_COLD, PAPER_WARM, HandoffCosts, Recovery, Scenario

__all__ = [
    "PAPER_PARKED_GIB",
    "RecoveryChoiceRow",
    "recovery_choice_rows",
    "recovery_choice_table",
    "two_path_pairs",
]

PAPER_PARKED_GIB = 6.383  # App. D.2: incremental host PSS of warm recovery, GiB
STRICT_GAIN = 1e-9  # s-eq.: the solver's tie tolerance
# The paper's price, then the prices at which the choice starts to matter.
PRICES = (0.01, 0.1, 0.2, 1.0)


@dataclass(frozen=True)
class RecoveryChoiceRow:
    """One calendar at one residency price.

    Attributes
    ----------
    price
        Residency price of parked state, s-eq. per GiB-second.
    calendar
        Calendar name (Table D.1).
    scenarios
        Two-path scenarios (work x rate x tail x initial state).
    dp_wins
        Scenarios where the optimal value with the choice beats the best fixed path.
    dp_gain_mean, dp_gain_max
        ``V*(both) - max(V*(warm), V*(cold))``, mean and maximum, s-eq.
    costed_window_gain_mean, costed_window_gain_min
        The same for Costed Window (pi0), mean and minimum, s-eq. (``>= 0``: the reference
        with a choice is never worse than either fixed path).
    rollout_gain_mean, rollout_gain_min
        The same for Rollout, mean and minimum, s-eq. (may be negative: Rollout is only
        guaranteed not to lose to its own reference).
    rollout_over_costed_window_min
        ``V^R(both) - max(V^pi0(warm), V^pi0(cold))``, minimum, s-eq. (``>= 0``: Rollout
        with the choice never loses to the better fixed-path Costed Window).
    """

    price: float
    calendar: str
    scenarios: int
    dp_wins: int
    dp_gain_mean: float
    dp_gain_max: float
    costed_window_gain_mean: float
    costed_window_gain_min: float
    rollout_gain_mean: float
    rollout_gain_min: float
    rollout_over_costed_window_min: float


def two_path_pairs(price: float = 0.01) -> list[tuple[GridScenario, GridScenario, Scenario]]:
    """``(warm, cold, both)`` per grid label set: the paper's two scenarios and the one that
    offers both paths, with parked state priced at ``price`` s-eq. per GiB-second."""
    warm = replace(PAPER_WARM, residency_rate=PAPER_PARKED_GIB * nonnegative("price", price))
    grid = paper_grid(costs={Recovery.WARM: warm, Recovery.COLD: PAPER_COLD})
    by_labels: dict[tuple[object, ...], dict[str, GridScenario]] = {}
    for g in grid.scenarios:
        key = (g.calendar, g.work_s, g.benefit_rate, g.tail_s, g.initial_state)
        by_labels.setdefault(key, {})[g.recovery] = g
    return [
        (w, c, w.scenario.with_costs(HandoffCosts.choice(w.scenario.costs, c.scenario.costs)))
        for w, c in ((pair[Recovery.WARM], pair[Recovery.COLD]) for pair in by_labels.values())
    ]


def recovery_choice_rows(
    prices: Sequence[float] = PRICES, threads: int = 1
) -> list[RecoveryChoiceRow]:
    """Per residency price and calendar, what choosing the path adds over the best fixed one.

    Parameters
    ----------
    prices
        Residency prices of parked state, s-eq. per GiB-second (the paper's is 0.01).
    threads
        Solver threads.
    """
    rows = []
    policies = ("dp", "rollout", "costed_window")
    for price in prices:
        pairs = two_path_pairs(price)
        fixed = [g.scenario for w, c, _ in pairs for g in (w, c)]
        chosen = solve_batch([both for _, _, both in pairs], policies, threads)
        single = solve_batch(fixed, policies, threads)
        calendars = np.array([w.calendar for w, _, _ in pairs])
        best = {p: single.column(p).reshape(-1, 2).max(axis=1) for p in policies}
        gains = {p: chosen.column(p) - best[p] for p in policies}
        over = chosen.column("rollout") - best["costed_window"]
        for calendar in CALENDARS:
            mask = calendars == calendar
            dp, cw, ro = (gains[p][mask] for p in ("dp", "costed_window", "rollout"))
            rows.append(
                RecoveryChoiceRow(
                    price=price,
                    calendar=calendar,
                    scenarios=int(mask.sum()),
                    dp_wins=int((dp > STRICT_GAIN).sum()),
                    dp_gain_mean=float(dp.mean()),
                    dp_gain_max=float(dp.max()),
                    costed_window_gain_mean=float(cw.mean()),
                    costed_window_gain_min=float(cw.min()),
                    rollout_gain_mean=float(ro.mean()),
                    rollout_gain_min=float(ro.min()),
                    rollout_over_costed_window_min=float(over[mask].min()),
                )
            )
    return rows


def recovery_choice_table(rows: Sequence[RecoveryChoiceRow]) -> str:
    """The rows as the Markdown table of docs/studies.md (s-eq., 3 decimals)."""
    lines = [
        (
            "| residency price (s-eq./GiB-s) | calendar | scenarios | DP: choice wins "
            "| DP: mean gain | DP: max gain | Costed Window: mean gain | Costed Window: min gain "
            "| Rollout: mean gain | Rollout: min gain | Rollout over fixed-path Costed Window: min |"
        ),
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        numbers = (
            r.dp_gain_mean,
            r.dp_gain_max,
            r.costed_window_gain_mean,
            r.costed_window_gain_min,
            r.rollout_gain_mean,
            r.rollout_gain_min,
            r.rollout_over_costed_window_min,
        )
        shown = " | ".join(_fixed3(x) for x in numbers)
        lines.append(f"| {r.price:g} | {r.calendar} | {r.scenarios} | {r.dp_wins} | {shown} |")
    return "\n".join(lines)


def _fixed3(value: float) -> str:
    """Three decimals; a rounding of zero prints 0.000, never -0.000."""
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text
