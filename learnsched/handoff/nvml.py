"""NVML through the official bindings (``nvidia-ml-py``, module ``pynvml``).

NVML is initialised lazily, once per process, and shut down at exit. Every NVML
failure becomes :class:`NvmlError` naming the call; a missing library, driver or GPU
becomes :class:`NvmlUnavailable`. Values NVML reports as not available or not supported
are ``None``, never a substitute number.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from .._extras import install_hint
from ..serving.errors import DeviceMismatch, NvmlError, NvmlUnavailable
from ..serving.memory import DeviceMemory, GpuProcess

__all__ = [
    "ClockReading",
    "NvmlDevice",
    "device_count",
    "device_for_torch",
    "device_info",
    "device_report",
    "driver_version",
    "open_device",
]

T = TypeVar("T")

# The deprecated ``pynvml`` PyPI package (and copies vendored by other tools) install a
# module of the same name with different signatures; only nvidia-ml-py's file is trusted.
OFFICIAL_DISTRIBUTION = "nvidia-ml-py"
# The first release whose bindings have every call used here: 12.535.x define
# nvmlDeviceGetComputeRunningProcesses_v3 but not the _v2 the fallback needs (read from
# the 12.535.77-12.535.161 and 12.550.52 wheels' pynvml.py). Keep pyproject's pin equal.
MIN_BINDINGS = "12.550.52"
NVML_PSTATE_UNKNOWN = 32
UUID_PREFIXES = ("GPU-", "MIG-")

_lock = threading.Lock()
_module: ModuleType | None = None


def _official_pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError as err:
        raise NvmlUnavailable(
            f"NVML is unavailable: nvidia-ml-py is not installed ({err}); {install_hint('gpu')}"
        ) from err
    module_file = Path(getattr(pynvml, "__file__", "") or "").resolve()
    try:
        files = importlib.metadata.files(OFFICIAL_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    official = {Path(str(f.locate())).resolve() for f in files if f.name == "pynvml.py"}
    if module_file not in official:
        raise NvmlUnavailable(
            f"NVML is unavailable: the pynvml module at {module_file} is not the one from "
            f"{OFFICIAL_DISTRIBUTION} (uninstall the deprecated 'pynvml' package and "
            f"pip install '{OFFICIAL_DISTRIBUTION}>={MIN_BINDINGS}')"
        )
    module: ModuleType = pynvml
    return module


def _shutdown() -> None:
    global _module
    with _lock:
        if _module is not None:
            _module.nvmlShutdown()
            _module = None


def _nvml() -> ModuleType:
    """The initialised official bindings (initialised on first use, shut down at exit)."""
    global _module
    with _lock:
        if _module is not None:
            return _module
        pynvml = _official_pynvml()
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as err:
            hints = {
                pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: (
                    "libnvidia-ml.so.1 was not found, so no NVIDIA driver is installed here"
                ),
                pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA driver is not loaded",
                pynvml.NVML_ERROR_NO_PERMISSION: "no permission to open the GPU devices",
            }
            why = hints.get(err.value, "")
            raise NvmlUnavailable(
                f"NVML is unavailable: nvmlInit failed: {err}" + (f" ({why})" if why else "")
            ) from err
        _module = pynvml
    atexit.register(_shutdown)
    return pynvml


class _FunctionMissing(NvmlError):
    """The installed bindings lack an entry point or struct (bindings older than the call)."""


def _binding(name: str, pynvml: ModuleType | None = None) -> Any:
    """An attribute of the bindings; a missing one counts as NVML's "function not found"."""
    try:
        return getattr(_nvml() if pynvml is None else pynvml, name)
    except AttributeError as err:
        raise _FunctionMissing(f"{name}: not in the installed nvidia-ml-py bindings") from err


def _call(name: str, *args: Any) -> Any:
    pynvml = _nvml()
    function = _binding(name, pynvml)
    try:
        return function(*args)
    except pynvml.NVMLError as err:
        raise NvmlError(f"{name} failed: {err}") from err


def _not_supported(err: NvmlError) -> bool:
    cause = err.__cause__
    pynvml = _nvml()
    return isinstance(cause, pynvml.NVMLError) and cause.value == pynvml.NVML_ERROR_NOT_SUPPORTED


def _function_missing(err: NvmlError) -> bool:
    """Whether the driver or the bindings lack the entry point or struct version."""
    if isinstance(err, _FunctionMissing):
        return True
    cause = err.__cause__
    pynvml = _nvml()
    return isinstance(cause, pynvml.NVMLError) and cause.value in (
        pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    )


def _with_fallback(newer: Callable[[], T], older: Callable[[], T]) -> T:
    try:
        return newer()
    except NvmlError as err:
        if not _function_missing(err):
            raise
        return older()


def _supported(read: Callable[[], T]) -> T | None:
    try:
        return read()
    except NvmlError as err:
        if _not_supported(err):
            return None
        raise


def driver_version() -> str:
    """The NVIDIA driver version string."""
    return str(_call("nvmlSystemGetDriverVersion"))


@dataclass(frozen=True)
class ClockReading:
    """GPU clocks and what holds them back, at one instant.

    Parameters
    ----------
    sm_mhz, memory_mhz
        Current SM and memory clocks, MHz (``None`` if not supported).
    event_reasons
        Names of the active clock event (throttle) reasons, e.g. ``("SwPowerCap",)``;
        ``None`` if not supported.
    pstate
        Performance state ``P0``..``P15`` as an integer; ``None`` if unknown.
    """

    sm_mhz: int | None
    memory_mhz: int | None
    event_reasons: tuple[str, ...] | None
    pstate: int | None


def reason_names(mask: int, pynvml: ModuleType) -> tuple[str, ...]:
    """Names of the bits set in a clock event reasons mask, from the bindings' constants.

    Bits the bindings do not name are reported in hexadecimal rather than dropped.
    """
    prefix = "nvmlClocksEventReason"
    if not hasattr(pynvml, prefix + "GpuIdle"):  # bindings older than the rename
        prefix = "nvmlClocksThrottleReason"
    names: dict[int, str] = {}
    for attr in sorted(dir(pynvml)):
        value = getattr(pynvml, attr)
        single_bit = isinstance(value, int) and value > 0 and value & (value - 1) == 0
        # Deprecated aliases share a bit with the current name; keep the first seen.
        if attr.startswith(prefix) and single_bit and attr != prefix + "UserDefinedClocks":
            names.setdefault(value, attr[len(prefix) :])
    known = [names[bit] for bit in sorted(names) if mask & bit]
    unknown = mask & ~sum(names)
    return (*known, f"0x{unknown:x}") if unknown else tuple(known)


class NvmlDevice:
    """One GPU, addressed by index or UUID.

    Parameters
    ----------
    handle
        The NVML device handle.
    """

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.uuid = str(_call("nvmlDeviceGetUUID", handle))
        self.name = str(_call("nvmlDeviceGetName", handle))
        index = _supported(lambda: _call("nvmlDeviceGetIndex", handle))  # None where unsupported
        self.index = None if index is None else int(index)

    def __repr__(self) -> str:
        return f"NvmlDevice(index={self.index}, uuid={self.uuid!r}, name={self.name!r})"

    def memory(self) -> DeviceMemory:
        """Device memory, from the v2 struct (v1 on drivers or bindings without it)."""

        def v2() -> DeviceMemory:
            version = _binding("nvmlMemory_v2")
            m = _call("nvmlDeviceGetMemoryInfo", self._handle, version)
            return DeviceMemory(int(m.total), int(m.reserved), int(m.used), int(m.free), 2)

        def v1() -> DeviceMemory:
            m = _call("nvmlDeviceGetMemoryInfo", self._handle)
            return DeviceMemory(int(m.total), None, int(m.used), int(m.free), 1)

        return _with_fallback(v2, v1)

    def processes(self) -> list[GpuProcess]:
        """Compute processes on the device (v3 query; v2 on drivers without the v3 entry)."""
        infos = _with_fallback(
            lambda: _call("nvmlDeviceGetComputeRunningProcesses_v3", self._handle),
            lambda: _call("nvmlDeviceGetComputeRunningProcesses_v2", self._handle),
        )
        # The bindings turn NVML_VALUE_NOT_AVAILABLE into None already.
        return [
            GpuProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
            for p in infos
        ]

    def utilisation(self) -> tuple[int, int] | None:
        """GPU and memory-controller utilisation over NVML's last sample period, percent."""
        rates = _supported(lambda: _call("nvmlDeviceGetUtilizationRates", self._handle))
        return None if rates is None else (int(rates.gpu), int(rates.memory))

    def clocks(self) -> ClockReading:
        """SM and memory clocks, active clock event reasons and the performance state."""
        pynvml = _nvml()
        sm = _supported(
            lambda: _call("nvmlDeviceGetClockInfo", self._handle, _binding("NVML_CLOCK_SM"))
        )
        mem = _supported(
            lambda: _call("nvmlDeviceGetClockInfo", self._handle, _binding("NVML_CLOCK_MEM"))
        )
        mask = _supported(
            lambda: _with_fallback(
                lambda: _call("nvmlDeviceGetCurrentClocksEventReasons", self._handle),
                lambda: _call("nvmlDeviceGetCurrentClocksThrottleReasons", self._handle),
            )
        )
        pstate = _supported(lambda: _call("nvmlDeviceGetPerformanceState", self._handle))
        return ClockReading(
            sm_mhz=None if sm is None else int(sm),
            memory_mhz=None if mem is None else int(mem),
            event_reasons=None if mask is None else reason_names(int(mask), pynvml),
            pstate=None if pstate is None or pstate == NVML_PSTATE_UNKNOWN else int(pstate),
        )


def device_count() -> int:
    """How many GPUs NVML sees."""
    return int(_call("nvmlDeviceGetCount"))


def _parse_device(device: int | str) -> int | str:
    """An index (``int``) or a UUID (``str``); ``ValueError`` names anything else."""
    if isinstance(device, bool) or not isinstance(device, (int, str)):
        raise TypeError(f"device must be an index or a UUID, got {device!r}")
    text = str(device).strip()
    try:
        index = int(text)
    except ValueError:
        if not text.startswith(UUID_PREFIXES):
            raise ValueError(
                f"device must be an index or a UUID ({'... or '.join(UUID_PREFIXES)}...), "
                f"got {device!r}"
            ) from None
        return text
    if index < 0:
        raise ValueError(f"device index must be >= 0, got {device!r}")
    return index


def open_device(device: int | str = 0) -> NvmlDevice:
    """Open a GPU by index (``0``, ``"0"``) or UUID (``"GPU-..."``, ``"MIG-..."``).

    Raises
    ------
    NvmlUnavailable
        NVML cannot be used here, or it sees no GPU.
    ValueError
        The index is negative or out of range, the text is neither an index nor a
        UUID, or no device has that UUID.
    """
    wanted = _parse_device(device)  # before NVML: a bad argument is named on any machine
    count = device_count()
    if count == 0:
        raise NvmlUnavailable("NVML is unavailable: the driver reports no GPU")
    if isinstance(wanted, str):
        try:
            return NvmlDevice(_call("nvmlDeviceGetHandleByUUID", wanted))
        except NvmlError as err:
            raise ValueError(f"device {device!r}: no GPU with this UUID ({err})") from err
    if wanted >= count:
        raise ValueError(f"device index must be in [0, {count}), got {device!r}")
    return NvmlDevice(_call("nvmlDeviceGetHandleByIndex", wanted))


def device_for_torch(index: int, torch_uuid: str) -> NvmlDevice:
    """The NVML device that torch calls ``cuda:index``, matched by UUID.

    torch's indices follow ``CUDA_VISIBLE_DEVICES`` and ``CUDA_DEVICE_ORDER``, NVML's do
    not, so the same number can name two different GPUs; the UUID cannot.

    Parameters
    ----------
    index
        torch's device index (for messages).
    torch_uuid
        ``str(torch.cuda.get_device_properties(index).uuid)``: the RFC 4122 text without
        NVML's ``GPU-``/``MIG-`` prefix (accepted with it too).

    Raises
    ------
    DeviceMismatch
        NVML has no device with that UUID (not bad input: the two see different GPUs).
    """
    text = torch_uuid.strip()
    candidates = [text] if text.startswith(UUID_PREFIXES) else [p + text for p in UUID_PREFIXES]
    for candidate in candidates:
        try:
            return open_device(candidate)
        except ValueError:
            continue
    raise DeviceMismatch(
        f"NVML is unavailable for cuda:{index}: it lists no GPU with torch's UUID {text} "
        f"(NVML sees {device_count()} GPU(s); a MIG slice or a container may hide it)"
    )


def device_info(device: NvmlDevice | None) -> dict[str, str | None] | None:
    """The identity of the GPU a cost profile was measured on (``None`` without one).

    Returns
    -------
    dict or None
        ``{"name": ..., "uuid": ..., "driver": ...}`` (driver: NVML's version string).
    """
    if device is None:
        return None
    return {"name": device.name, "uuid": device.uuid, "driver": driver_version()}


def device_report(device: NvmlDevice) -> dict[str, Any]:
    """One GPU's NVML readings now, as plain JSON.

    Returns
    -------
    dict
        ``index``, ``uuid``, ``name``, ``driver``; ``memory`` (bytes, as
        :class:`DeviceMemory`), ``processes`` (pid, bytes), ``utilisation_percent``
        (``{"gpu", "memory"}`` or ``None``) and ``clocks`` (MHz, as :class:`ClockReading`).
    """
    util = device.utilisation()
    return {
        "index": device.index,
        "uuid": device.uuid,
        "name": device.name,
        "driver": driver_version(),
        "memory": asdict(device.memory()),
        "processes": [asdict(p) for p in device.processes()],
        "utilisation_percent": None if util is None else {"gpu": util[0], "memory": util[1]},
        "clocks": asdict(device.clocks()),
    }
