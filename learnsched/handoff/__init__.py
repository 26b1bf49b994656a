"""Handoff probes: measure the costs the solver plans with, on your own GPU.

Thin layers over NVML (:mod:`.nvml`), CUDA events and host clocks (:mod:`.timing`),
safetensors/PEFT (:mod:`.lora`), ``/proc`` (:mod:`.host_memory`) and the serving
engines' HTTP APIs (:mod:`.endpoint`, one dialect per engine in :mod:`.engines`), with
readiness (:mod:`.readiness`), cold starts (:mod:`.cold_start`) and warm recovery
(:mod:`.recovery`) measured as :class:`~.phases.RecoveryRun`, plus release confirmation
(:mod:`.release`), pollable waits (:mod:`.waits`), the handoff ledger (:mod:`.ledger`)
and the cost profile the solver reads (:mod:`.profile`; :meth:`CostProfile.from_lora`
and :meth:`CostProfile.from_recoveries` build one from measurements). torch,
safetensors, peft and nvidia-ml-py are imported only by the functions that need them
(``pip install 'learnsched[gpu]'``).
"""

from __future__ import annotations

from .cold_start import launch_engine
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
from .host_memory import HostMemory, PhaseSample, PhaseSampler, process_tree, read_host_memory
from .ledger import HandoffLedger, HandoffRecord, TornRecordWarning, read_ledger
from .lora import (
    BASE_SHAPES,
    BaseShape,
    LoraBenchmark,
    adapter_from_peft,
    apply_adapter,
    benchmark_lora,
    check_device,
    default_device,
    load_adapter,
    read_adapter,
    save_adapter,
    synthesise_adapter,
    target_gpu,
)
from .nvml import (
    ClockReading,
    DeviceMemory,
    GpuProcess,
    NvmlDevice,
    device_for_torch,
    device_info,
    device_report,
    driver_version,
    open_device,
)
from .phases import RecoveryRun
from .profile import (
    PAPER_PROFILE,
    PAPER_RESIDENCY_PRICE,
    QUANTITIES,
    CostProfile,
    Measurement,
    load_cost_profile,
)
from .recovery import measure_warm_recovery
from .release import ReleaseResult, wait_for_release
from .timing import Timing, time_device, time_host
from .waits import AckDelays, ControlSignal, measure_ack_delay, poll_until, pollable_sleep

__all__ = [
    "BASE_SHAPES",
    "ENGINES",
    "PAPER_PROFILE",
    "PAPER_RESIDENCY_PRICE",
    "QUANTITIES",
    "REGISTRY",
    "AckDelays",
    "BaseShape",
    "ClockReading",
    "ControlSignal",
    "CostProfile",
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
    "LoraBenchmark",
    "Measurement",
    "NvmlDevice",
    "NvmlError",
    "NvmlUnavailable",
    "PhaseSample",
    "PhaseSampler",
    "RecoveryFailed",
    "RecoveryRun",
    "ReleaseResult",
    "ServerConfigError",
    "ServingEndpoint",
    "Timing",
    "TornRecordWarning",
    "adapter_from_peft",
    "apply_adapter",
    "benchmark_lora",
    "check_device",
    "default_device",
    "device_for_torch",
    "device_info",
    "device_report",
    "driver_version",
    "launch_engine",
    "load_adapter",
    "load_cost_profile",
    "measure_ack_delay",
    "measure_warm_recovery",
    "open_device",
    "poll_until",
    "pollable_sleep",
    "process_tree",
    "read_adapter",
    "read_host_memory",
    "read_ledger",
    "save_adapter",
    "synthesise_adapter",
    "target_gpu",
    "time_device",
    "time_host",
    "wait_for_release",
]
