"""The aggregate table of the paper's Section 6.1 / Table D.2 / Fig. 4(a, b)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import _core
from .batch import BatchResult
from .grid import CALENDARS, Grid
from .solver import ALL_POLICIES, Policy

__all__ = ["PAPER_FIGURES", "GridSummary", "summarize"]

# Published figures (Section 6.1, Table D.2, Fig. 4), keyed like GridSummary.to_json().
PAPER_FIGURES: dict[str, dict[str, Any]] = {
    "5s": {
        "scenarios": 1920,
        "mean_gap": {
            "never": 488.54,
            "window": 40.122,
            "static_roi": 28.819,
            "costed_window": 5.369,
            "rollout": 0.246,
        },
        "mean_value": {"costed_window": 465.547, "rollout": 470.670},
        "rollout_vs_costed_window": {"wins": 91, "ties": 1829, "losses": 0},
        "wins_by_calendar": {"back_loaded/cold": 71, "alternating/cold": 20},
        "rollout_equals_dp": 1907,
        "max_rollout_gap": 124.836,
    },
    "1s-fresh": {
        "scenarios": 480,
        "mean_gap": {"costed_window": 5.869, "rollout": 0.0},
        "rollout_vs_costed_window": {"wins": 27, "ties": 453, "losses": 0},
    },
}


def tied(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Which pairs of ``a`` and ``b`` tie by the core's rule (equal up to rounding noise).

    Parameters
    ----------
    a, b
        Values of two policies on the same scenarios, s-eq.

    Returns
    -------
    NDArray[np.bool_]
        ``True`` where ``a[i]`` and ``b[i]`` tie.
    """
    return np.asarray(_core.finite.ties(a, b), dtype=np.bool_)


@dataclass(frozen=True)
class GridSummary:
    """Aggregates of a solved grid; values and gaps in s-eq.

    Attributes
    ----------
    scenarios
        Number of scenarios.
    config_hash
        :attr:`GridConfig.hash` of the grid solved.
    mean_value
        Mean net value per policy (all six).
    mean_gap
        Mean gap ``V* - V^pi`` per policy (all but DP).
    wins, ties, losses
        Rollout against Costed Window, scenario by scenario.
    wins_by_calendar
        Strict wins keyed ``"<calendar>/<recovery>"`` (160 scenarios each; Fig. 4b).
    rollout_equals_dp
        Scenarios where Rollout attains ``V*``.
    max_rollout_gap
        Largest ``V* - V^rollout``.
    never_negative_initial_states
        Initial states of the scenarios where Never ends below zero.
    """

    scenarios: int
    config_hash: str
    mean_value: dict[str, float]
    mean_gap: dict[str, float]
    wins: int
    ties: int
    losses: int
    wins_by_calendar: dict[str, int]
    rollout_equals_dp: int
    max_rollout_gap: float
    never_negative_initial_states: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The JSON object printed by ``learnsched grid --json``."""
        return {
            "scenarios": self.scenarios,
            "config_hash": self.config_hash,
            "mean_gap": self.mean_gap,
            "mean_value": self.mean_value,
            "rollout_vs_costed_window": {
                "wins": self.wins,
                "ties": self.ties,
                "losses": self.losses,
            },
            "wins_by_calendar": self.wins_by_calendar,
            "rollout_equals_dp": self.rollout_equals_dp,
            "max_rollout_gap": self.max_rollout_gap,
            "never_negative_initial_states": list(self.never_negative_initial_states),
        }


def summarize(grid: Grid, result: BatchResult) -> GridSummary:
    """Aggregate a grid solved by :func:`~learnsched.solve_batch` under all six policies.

    Raises
    ------
    ValueError
        If ``result`` does not hold every policy or does not match the grid's size.
    """
    missing = [p.value for p in ALL_POLICIES if p not in result.policies]
    if missing:
        raise ValueError(f"result lacks policies {', '.join(missing)}")
    if result.value.shape[0] != len(grid):
        raise ValueError(f"result has {result.value.shape[0]} rows for a grid of {len(grid)}")
    dp, rollout, costed = (
        result.column(p) for p in (Policy.DP, Policy.ROLLOUT, Policy.COSTED_WINDOW)
    )
    tie = tied(rollout, costed)
    win = ~tie & (rollout > costed)
    # Labels read as columns: no GridScenario is built (summarizing costs ~0.1 of the solve).
    calendars, recoveries = grid.scenarios.column("calendar"), grid.scenarios.column("recovery")
    initial_states = grid.scenarios.column("initial_state")
    wins_by_calendar = {f"{cal}/{rec}": 0 for cal in CALENDARS for rec in grid.config.recoveries}
    for i in np.flatnonzero(win).tolist():
        wins_by_calendar[f"{calendars[i]}/{recoveries[i].value}"] += 1
    never = result.column(Policy.NEVER)
    return GridSummary(
        scenarios=len(grid),
        config_hash=grid.config.hash,
        mean_value={p.value: float(result.column(p).mean()) for p in ALL_POLICIES},
        mean_gap={
            p.value: float((dp - result.column(p)).mean())
            for p in ALL_POLICIES
            if p is not Policy.DP
        },
        wins=int(win.sum()),
        ties=int(tie.sum()),
        losses=int((~tie & (rollout < costed)).sum()),
        wins_by_calendar=wins_by_calendar,
        rollout_equals_dp=int(tied(rollout, dp).sum()),
        max_rollout_gap=float((dp - rollout).max()),
        never_negative_initial_states=tuple(
            sorted({initial_states[i] for i in np.flatnonzero(never < 0).tolist()})
        ),
    )
