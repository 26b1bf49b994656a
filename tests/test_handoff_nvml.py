"""NVML probe: the no-GPU path for real, the bindings check, and GPU readings."""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

from learnsched.handoff import nvml
from learnsched.serving import DeviceMemory, GpuProcess, NvmlUnavailable


def _nvml_works() -> bool:
    try:
        nvml.device_count()
    except NvmlUnavailable:
        return False
    return True


HAS_GPU = _nvml_works()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU with a driver")


@pytest.fixture
def fresh_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the process-wide NVML session so the next call initialises again."""
    monkeypatch.setattr(nvml, "_module", None)


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU; the no-GPU path cannot run")
def test_no_gpu_is_a_clear_error(fresh_nvml: None) -> None:
    # The real path either way: without nvidia-ml-py it is the missing bindings, with them
    # (and no driver) nvmlInit itself that fails.
    if importlib.util.find_spec("pynvml") is None:
        expected = "nvidia-ml-py is not installed"
    else:
        expected = "NVML is unavailable: nvmlInit failed"
    with pytest.raises(NvmlUnavailable, match=expected):
        nvml.open_device(0)


def test_missing_bindings(fresh_nvml: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(NvmlUnavailable, match="nvidia-ml-py is not installed"):
        nvml.open_device(0)


def test_shadowing_module_is_rejected(fresh_nvml: None, monkeypatch: pytest.MonkeyPatch) -> None:
    impostor = types.ModuleType("pynvml")
    impostor.__file__ = "/somewhere/else/pynvml/__init__.py"
    monkeypatch.setitem(sys.modules, "pynvml", impostor)
    with pytest.raises(NvmlUnavailable, match="is not the one from nvidia-ml-py"):
        nvml.open_device(0)


class _OldDriver:
    """The bindings on a driver without the v3 process query and the v2 memory struct."""

    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_FUNCTION_NOT_FOUND = 13
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
    nvmlMemory_v2 = 0x02000028

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(value)
            self.value = value

    @classmethod
    def nvmlDeviceGetMemoryInfo(
        cls, handle: object, version: int | None = None
    ) -> types.SimpleNamespace:
        if version is not None:
            raise cls.NVMLError(cls.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return types.SimpleNamespace(total=80, used=30, free=50)

    @classmethod
    def nvmlDeviceGetComputeRunningProcesses_v3(cls, handle: object) -> list[object]:
        raise cls.NVMLError(cls.NVML_ERROR_FUNCTION_NOT_FOUND)

    @staticmethod
    def nvmlDeviceGetComputeRunningProcesses_v2(handle: object) -> list[types.SimpleNamespace]:
        return [types.SimpleNamespace(pid=7, usedGpuMemory=None)]


def test_entry_points_missing_from_old_drivers_fall_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvml, "_module", _OldDriver)
    device = object.__new__(nvml.NvmlDevice)
    device._handle = "handle"
    assert device.memory() == DeviceMemory(80, None, 30, 50, 1)
    assert device.memory().occupied == 30
    assert device.processes() == [GpuProcess(7, None)]


def test_occupied_is_total_minus_free_under_v1_and_v2() -> None:
    assert DeviceMemory(80, 2, 28, 50, 2).occupied == 30
    assert DeviceMemory(80, None, 30, 50, 1).occupied == 30


def _names_used() -> set[str]:
    """Every bindings attribute the NVML module calls or reads, from its source."""
    source = Path(nvml.__file__).read_text()
    return set(re.findall(r'_(?:call|binding)\(\s*"(\w+)"', source))


def test_installed_bindings_have_every_call_used() -> None:
    # The pin (nvml.MIN_BINDINGS) was chosen by reading each release's pynvml.py; this
    # checks the installed one, including its fallbacks' entry points.
    pynvml = pytest.importorskip("pynvml", reason="needs nvidia-ml-py")
    used = _names_used()
    assert {"nvmlDeviceGetComputeRunningProcesses_v2", "nvmlMemory_v2"} <= used
    assert sorted(n for n in used if not hasattr(pynvml, n)) == []


def test_pin_is_the_minimum_bindings_release() -> None:
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not run from a source tree")
    assert f'"nvidia-ml-py>={nvml.MIN_BINDINGS}"' in pyproject.read_text()


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("-1", "device index must be >= 0, got '-1'"),
        (-2, "device index must be >= 0, got -2"),
        ("gpu0", "device must be an index or a UUID"),
    ],
)
def test_bad_device_arguments_are_named_before_nvml(device: int | str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        nvml.open_device(device)


def test_reason_names_decode_the_bindings_constants() -> None:
    pynvml = pytest.importorskip("pynvml", reason="needs nvidia-ml-py (learnsched[gpu])")
    mask = pynvml.nvmlClocksEventReasonGpuIdle | pynvml.nvmlClocksEventReasonSwPowerCap
    assert nvml.reason_names(mask, pynvml) == ("GpuIdle", "SwPowerCap")
    assert nvml.reason_names(0, pynvml) == ()
    assert nvml.reason_names(1 << 40, pynvml) == ("0x10000000000",)


@pytest.mark.gpu
@needs_gpu
def test_device_readings_are_consistent() -> None:
    device = nvml.open_device(0)
    assert nvml.open_device(device.uuid).index == device.index
    memory = device.memory()
    assert memory.total > 0
    assert memory.used + memory.free + (memory.reserved or 0) <= memory.total
    for process in device.processes():
        assert process.pid > 0
        assert process.used_bytes is None or process.used_bytes >= 0
    clocks = device.clocks()
    assert clocks.sm_mhz is None or clocks.sm_mhz > 0
    assert nvml.driver_version()


@pytest.mark.gpu
@needs_gpu
def test_bad_device_is_named() -> None:
    with pytest.raises(ValueError, match=r"device index must be in \[0, \d+\)"):
        nvml.open_device(10_000)
    with pytest.raises(ValueError, match="no GPU with this UUID"):
        nvml.open_device("GPU-00000000-0000-0000-0000-000000000000")


@pytest.mark.gpu
@needs_gpu
def test_torch_device_is_matched_by_uuid() -> None:
    torch = pytest.importorskip("torch", reason="needs torch (learnsched[gpu])")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    device = nvml.device_for_torch(0, uuid)
    assert device.uuid.endswith(uuid)
