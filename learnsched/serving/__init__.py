"""Serving: learnsched's HTTP client of the serving engines, and what it records.

The engine's HTTP API (:mod:`.endpoint`, one dialect per engine in :mod:`.engines`,
with the park and resume actions every caller uses), readiness by a real request
(:mod:`.readiness`), the checks before a park (:mod:`.preflight`), bounded polling
(:mod:`.polling`), the handoff ledger (:mod:`.ledger`) with the memory readings it
records (:mod:`.memory`), and the one exception family (:mod:`.errors`). The probes
(:mod:`learnsched.handoff`), the gate and the control loop stand on it.
"""

from __future__ import annotations

from .endpoint import Generation, HttpStatusError, ServingEndpoint
from .engines import ENGINES, REGISTRY, Engine
from .errors import (
    EngineBusy,
    GpuExtraMissing,
    HandoffProbeError,
    NvmlError,
    NvmlUnavailable,
    RecoveryFailed,
    ServerConfigError,
)
from .ledger import HandoffLedger, HandoffRecord, TornRecordWarning, read_ledger
from .memory import DeviceMemory, GpuProcess, HostMemory
from .polling import poll_until

__all__ = [
    "ENGINES",
    "REGISTRY",
    "DeviceMemory",
    "Engine",
    "EngineBusy",
    "Generation",
    "GpuExtraMissing",
    "GpuProcess",
    "HandoffLedger",
    "HandoffProbeError",
    "HandoffRecord",
    "HostMemory",
    "HttpStatusError",
    "NvmlError",
    "NvmlUnavailable",
    "RecoveryFailed",
    "ServerConfigError",
    "ServingEndpoint",
    "TornRecordWarning",
    "poll_until",
    "read_ledger",
]
