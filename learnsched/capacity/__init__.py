"""Capacity control: what evolution may borrow from serving, and when it must give it back.

Deadline feasibility of a FIFO fluid queue (Eq. 6), lendable capacity and return
deadlines (Eqs. 7-8), work-based admission (Section 4.4), an arrival-aware AIMD
background share, trace replay, and service-risk accounting (Appendix A.1-A.2). The array
kernels are Cython (``learnsched._capacity``); this package validates and converts.
"""

from __future__ import annotations

from .admission import (
    GUIDANCE_BUDGET,
    PROMPT_WEIGHT,
    TOOL_BUDGET,
    CountThresholdAdmission,
    Ticket,
    WorkBudgetAdmission,
    estimate_work,
)
from .aimd import AIMDConfig, AIMDController, next_share
from .feasibility import DEFAULT_TOLERANCE, Feasibility, check_feasibility
from .lending import (
    DEFAULT_RESOLUTION,
    ReturnDeadline,
    ReturnPath,
    lend,
    max_share,
    max_share_schedule,
    return_deadline,
)
from .rates import RateProfile
from .replay import MAX_PERIODS, ReplayResult, replay
from .risk import (
    RiskSummary,
    RunRisk,
    empirical_tail,
    normalized_latency,
    run_risk,
    summarize_risk,
)
from .traces import (
    TOKEN_COLUMNS,
    TRACE_COLUMNS,
    Trace,
    burst_trace,
    read_rate_csv,
    read_trace_csv,
    write_trace_csv,
)

__all__ = [
    "DEFAULT_RESOLUTION",
    "DEFAULT_TOLERANCE",
    "GUIDANCE_BUDGET",
    "MAX_PERIODS",
    "PROMPT_WEIGHT",
    "TOKEN_COLUMNS",
    "TOOL_BUDGET",
    "TRACE_COLUMNS",
    "AIMDConfig",
    "AIMDController",
    "CountThresholdAdmission",
    "Feasibility",
    "RateProfile",
    "ReplayResult",
    "ReturnDeadline",
    "ReturnPath",
    "RiskSummary",
    "RunRisk",
    "Ticket",
    "Trace",
    "WorkBudgetAdmission",
    "burst_trace",
    "check_feasibility",
    "empirical_tail",
    "estimate_work",
    "lend",
    "max_share",
    "max_share_schedule",
    "next_share",
    "normalized_latency",
    "read_rate_csv",
    "read_trace_csv",
    "replay",
    "return_deadline",
    "run_risk",
    "summarize_risk",
    "write_trace_csv",
]
