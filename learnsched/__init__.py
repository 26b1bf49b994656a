"""learnsched: when should shared GPU time go to self-evolution?

A C++ solver for the LearnSched finite window model: the reference policies (Never,
Window, Static ROI, Costed Window), one-step rollout (LearnSched) and exact DP, with
exact wall-clock handoff costs, plus the paper's 1920-scenario grid; and the investment
economics around a plan (:mod:`learnsched.economics`).
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
from .economics import (
    ALERT_RULES,
    GUIDANCE_LEDGER,
    PAPER_GPU_COSTS,
    PAPER_RECOVERY_S,
    PAPER_WAITING_SCENARIO,
    TABLE_B1,
    AlertDraws,
    AlertExperiment,
    AlertModel,
    GuidanceLedger,
    Ledger,
    Lognormal,
    ReusePath,
    RuleStats,
    UseCosts,
    UtilityLine,
    WaitingComparison,
    accumulated_value,
    alert_losses,
    charged_cost,
    continuation_advantage,
    draw_alerts,
    early_advantage,
    expected_reuse_value,
    incremental_utility,
    lead_time_sweep,
    lognormal_mu,
    paper_economics,
    paper_waiting_example,
    payback_uses,
    plot_alert_experiment,
    return_boundary,
    return_threshold,
    returns_early,
    robust_returns_early,
    run_alert_experiment,
    should_continue,
    simulate_alerts,
    table_b1_utility,
    threshold_sensitivity,
    wait_return_losses,
    waiting_gain,
)
from .grid import CALENDARS, Grid, GridConfig, GridScenario, paper_grid, scenario_by_id
from .plan import COST_FIELDS, CostSplit, Plan, Step
from .scenario import PAPER_COLD, PAPER_WARM, HandoffCosts, InitialState, Scenario
from .solver import ALL_POLICIES, Action, ActionKind, Model, Policy, solve, solve_all
from .summary import PAPER_FIGURES, GridSummary, summarize

__version__ = "0.1.0"

__all__ = [
    "ALERT_RULES",
    "ALL_POLICIES",
    "CALENDARS",
    "COST_FIELDS",
    "GUIDANCE_LEDGER",
    "PAPER_COLD",
    "PAPER_FIGURES",
    "PAPER_GPU_COSTS",
    "PAPER_RECOVERY_S",
    "PAPER_WAITING_SCENARIO",
    "PAPER_WARM",
    "TABLE_B1",
    "Action",
    "ActionKind",
    "AlertDraws",
    "AlertExperiment",
    "AlertModel",
    "BatchResult",
    "CostSplit",
    "Grid",
    "GridConfig",
    "GridScenario",
    "GridSummary",
    "GuidanceLedger",
    "HandoffCosts",
    "InitialState",
    "Ledger",
    "Lognormal",
    "Model",
    "Plan",
    "Policy",
    "ReusePath",
    "RuleStats",
    "Scenario",
    "Step",
    "UseCosts",
    "UtilityLine",
    "WaitingComparison",
    "__version__",
    "accumulated_value",
    "alert_losses",
    "charged_cost",
    "continuation_advantage",
    "draw_alerts",
    "early_advantage",
    "expected_reuse_value",
    "incremental_utility",
    "lead_time_sweep",
    "lognormal_mu",
    "paper_economics",
    "paper_grid",
    "paper_waiting_example",
    "payback_uses",
    "plot_alert_experiment",
    "return_boundary",
    "return_threshold",
    "returns_early",
    "robust_returns_early",
    "run_alert_experiment",
    "scenario_by_id",
    "should_continue",
    "simulate_alerts",
    "solve",
    "solve_all",
    "solve_batch",
    "summarize",
    "table_b1_utility",
    "threshold_sensitivity",
    "wait_return_losses",
    "waiting_gain",
]
