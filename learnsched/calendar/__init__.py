"""Scheduling when the calendar is not known.

Idle windows and their return deadlines from real request traces
(:func:`idle_windows`, Eqs. 6-8), forecasters that draw sampled future calendars from
what has been observed (:class:`EmpiricalForecaster`, the baselines
:class:`RepeatForecaster` and :class:`MeanForecaster`, :class:`ExactForecaster`,
:class:`SampleForecaster`), the online evaluation of the policies that decide under a
forecast in the C++ core against the clairvoyant DP (:func:`evaluate_online`), and causal
scheduling on a trace, where not even the current idle gap's end is known
(:class:`CausalTrace`, :func:`run_causal`, :class:`CausalDecider`; studies in
:mod:`learnsched.calendar.study`).
"""

from __future__ import annotations

from .causal import (
    CAUSAL_POLICIES,
    CausalDecider,
    CausalForecast,
    CausalOutcome,
    CausalRules,
    CausalTrace,
    calendar_dp,
    clairvoyant,
    run_causal,
)
from .decision import FORECAST_POLICIES, ForecastDecision, SampleTables, sample_tables
from .forecast import (
    Calendar,
    EmpiricalForecaster,
    ExactForecaster,
    Forecaster,
    MeanForecaster,
    RepeatForecaster,
    SampleForecaster,
    calendar,
    frontier,
)
from .online import (
    ONLINE_POLICIES,
    OnlineCase,
    OnlineResult,
    PolicyOutcome,
    PolicySummary,
    evaluate_online,
    run_calendar,
)
from .traces import (
    AZURE_COLUMNS,
    AZURE_TRACE,
    ServiceModel,
    TokenTrace,
    load_trace,
    read_azure_trace,
)
from .windows import DEFAULT_MIN_USEFUL_S, IdleWindow, IdleWindows, idle_windows

__all__ = [
    "AZURE_COLUMNS",
    "AZURE_TRACE",
    "CAUSAL_POLICIES",
    "DEFAULT_MIN_USEFUL_S",
    "FORECAST_POLICIES",
    "ONLINE_POLICIES",
    "Calendar",
    "CausalDecider",
    "CausalForecast",
    "CausalOutcome",
    "CausalRules",
    "CausalTrace",
    "EmpiricalForecaster",
    "ExactForecaster",
    "ForecastDecision",
    "Forecaster",
    "IdleWindow",
    "IdleWindows",
    "MeanForecaster",
    "OnlineCase",
    "OnlineResult",
    "PolicyOutcome",
    "PolicySummary",
    "RepeatForecaster",
    "SampleForecaster",
    "SampleTables",
    "ServiceModel",
    "TokenTrace",
    "calendar",
    "calendar_dp",
    "clairvoyant",
    "evaluate_online",
    "frontier",
    "idle_windows",
    "load_trace",
    "read_azure_trace",
    "run_calendar",
    "run_causal",
    "sample_tables",
]
