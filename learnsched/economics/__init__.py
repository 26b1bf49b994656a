"""Investment economics around the plan: is a capability worth building, by when, at what
price, should a computation stop, and should capacity return early under an alert.

Pure Python over numpy and scipy, one module per concept, each formula tagged with the
paper's equation number. ``learnsched econ`` (:mod:`learnsched.cli.econ`) fronts it.
"""

from __future__ import annotations

from .accumulation import accumulated_value
from .alert_experiment import AlertExperiment, RuleStats, lead_time_sweep, run_alert_experiment
from .alerts import (
    ALERT_RULES,
    PAPER_RECOVERY_S,
    AlertDraws,
    AlertModel,
    alert_losses,
    draw_alerts,
    return_boundary,
    simulate_alerts,
)
from .breakeven import PAPER_GPU_COSTS, ReusePath, UseCosts, expected_reuse_value, payback_uses
from .early_return import (
    early_advantage,
    return_threshold,
    returns_early,
    robust_returns_early,
    threshold_sensitivity,
    wait_return_losses,
)
from .lognormal import Lognormal, lognormal_mu
from .paper import paper_economics
from .plotting import plot_alert_experiment
from .pricing import (
    GUIDANCE_LEDGER,
    TABLE_B1,
    GuidanceLedger,
    Ledger,
    UtilityLine,
    charged_cost,
    incremental_utility,
    table_b1_utility,
)
from .stopping import continuation_advantage, should_continue
from .waiting import (
    PAPER_WAITING_SCENARIO,
    WaitingComparison,
    paper_waiting_example,
    waiting_gain,
)

__all__ = [
    "ALERT_RULES",
    "GUIDANCE_LEDGER",
    "PAPER_GPU_COSTS",
    "PAPER_RECOVERY_S",
    "PAPER_WAITING_SCENARIO",
    "TABLE_B1",
    "AlertDraws",
    "AlertExperiment",
    "AlertModel",
    "GuidanceLedger",
    "Ledger",
    "Lognormal",
    "ReusePath",
    "RuleStats",
    "UseCosts",
    "UtilityLine",
    "WaitingComparison",
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
    "paper_waiting_example",
    "payback_uses",
    "plot_alert_experiment",
    "return_boundary",
    "return_threshold",
    "returns_early",
    "robust_returns_early",
    "run_alert_experiment",
    "should_continue",
    "simulate_alerts",
    "table_b1_utility",
    "threshold_sensitivity",
    "wait_return_losses",
    "waiting_gain",
]
