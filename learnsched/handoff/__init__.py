"""Handoff probes: measure the costs the solver plans with, on your own GPU.

Thin layers over NVML (:mod:`.nvml`), CUDA events and host clocks (:mod:`.timing`),
safetensors/PEFT (:mod:`.lora`) and ``/proc`` (:mod:`.host_memory`), on the serving
engines' HTTP client (:mod:`learnsched.serving`), with cold starts (:mod:`.cold_start`)
and warm recovery (:mod:`.recovery`) measured as :class:`~.phases.RecoveryRun`, plus
release confirmation (:mod:`.release`), pollable waits (:mod:`.waits`) and the cost
profile the solver reads (:mod:`.profile`; :meth:`CostProfile.from_lora`
and :meth:`CostProfile.from_recoveries` build one from measurements). torch,
safetensors, peft and nvidia-ml-py are imported only by the functions that need them
(``pip install 'learnsched[gpu]'``).
"""

from __future__ import annotations

from .._moved import moved_attribute
from .cold_start import launch_engine
from .host_memory import PhaseSample, PhaseSampler, process_tree, read_host_memory
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
    UnconfirmedRelease,
    load_cost_profile,
)
from .recovery import measure_warm_recovery
from .release import ReleaseResult, wait_for_release
from .timing import Timing, time_device, time_host
from .waits import AckDelays, ControlSignal, measure_ack_delay, pollable_sleep

__all__ = [
    "BASE_SHAPES",
    "PAPER_PROFILE",
    "PAPER_RESIDENCY_PRICE",
    "QUANTITIES",
    "AckDelays",
    "BaseShape",
    "ClockReading",
    "ControlSignal",
    "CostProfile",
    "LoraBenchmark",
    "Measurement",
    "NvmlDevice",
    "PhaseSample",
    "PhaseSampler",
    "RecoveryRun",
    "ReleaseResult",
    "Timing",
    "UnconfirmedRelease",
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
    "pollable_sleep",
    "process_tree",
    "read_adapter",
    "read_host_memory",
    "save_adapter",
    "synthesise_adapter",
    "target_gpu",
    "time_device",
    "time_host",
    "wait_for_release",
]


def __getattr__(name: str) -> object:
    """The names that moved to :mod:`learnsched.serving`, for one release (with a warning)."""
    return moved_attribute(__name__, name)
