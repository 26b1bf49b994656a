"""learnsched: when should shared GPU time go to self-evolution?

A C++ solver for the LearnSched finite window model: the reference policies (Never,
Window, Static ROI, Costed Window), one-step rollout (LearnSched) and exact DP, with
exact wall-clock handoff costs, plus the paper's 1920-scenario grid.
"""

from __future__ import annotations

try:
    from . import _core  # noqa: F401  (fail early, with a build hint)
except ImportError as err:  # pragma: no cover - only without a built extension
    raise ImportError(
        "learnsched's C++ core (learnsched._core) is not built. Install the package with "
        "`pip install .` (or `pip install -e .` for development) from the source tree."
    ) from err

from .batch import BatchResult, solve_batch
from .grid import CALENDARS, Grid, GridConfig, GridScenario, paper_grid, scenario_by_id
from .plan import COST_FIELDS, CostSplit, Plan, Step
from .scenario import PAPER_COLD, PAPER_WARM, HandoffCosts, InitialState, Scenario
from .solver import ALL_POLICIES, Action, ActionKind, Model, Policy, solve, solve_all
from .summary import PAPER_FIGURES, GridSummary, summarize

__version__ = "0.1.0"

__all__ = [
    "ALL_POLICIES",
    "CALENDARS",
    "COST_FIELDS",
    "PAPER_COLD",
    "PAPER_FIGURES",
    "PAPER_WARM",
    "Action",
    "ActionKind",
    "BatchResult",
    "CostSplit",
    "Grid",
    "GridConfig",
    "GridScenario",
    "GridSummary",
    "HandoffCosts",
    "InitialState",
    "Model",
    "Plan",
    "Policy",
    "Scenario",
    "Step",
    "__version__",
    "paper_grid",
    "scenario_by_id",
    "solve",
    "solve_all",
    "solve_batch",
    "summarize",
]
