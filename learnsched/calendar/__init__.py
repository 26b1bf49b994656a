"""Scheduling when the calendar is not known.

Idle windows and their return deadlines from real request traces
(:func:`idle_windows`, Eqs. 6-8), forecasters that draw sampled future calendars from
what has been observed (:class:`EmpiricalForecaster`, :class:`ExactForecaster`,
:class:`SampleForecaster`), and the online evaluation of the policies that decide under
a forecast in the C++ core, against the clairvoyant DP (:func:`evaluate_online`).
"""

from __future__ import annotations

from .decision import FORECAST_POLICIES, ForecastDecision, SampleTables, sample_tables
from .forecast import (
    Calendar,
    EmpiricalForecaster,
    ExactForecaster,
    Forecaster,
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
    "DEFAULT_MIN_USEFUL_S",
    "FORECAST_POLICIES",
    "ONLINE_POLICIES",
    "Calendar",
    "EmpiricalForecaster",
    "ExactForecaster",
    "ForecastDecision",
    "Forecaster",
    "IdleWindow",
    "IdleWindows",
    "OnlineCase",
    "OnlineResult",
    "PolicyOutcome",
    "PolicySummary",
    "SampleForecaster",
    "SampleTables",
    "ServiceModel",
    "TokenTrace",
    "calendar",
    "evaluate_online",
    "frontier",
    "idle_windows",
    "load_trace",
    "read_azure_trace",
    "run_calendar",
    "sample_tables",
]
