"""NVML probe: the no-GPU path for real, the bindings check, and GPU readings."""

from __future__ import annotations

import sys
import types

import pytest

from learnsched.handoff import NvmlUnavailable, nvml


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
    with pytest.raises(NvmlUnavailable, match="NVML is unavailable: nvmlInit failed"):
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


def test_reason_names_decode_the_bindings_constants() -> None:
    pynvml = pytest.importorskip("pynvml")
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
    with pytest.raises(ValueError, match="device must be an index"):
        nvml.open_device(10_000)
    with pytest.raises(ValueError, match="no GPU with this UUID"):
        nvml.open_device("GPU-00000000-0000-0000-0000-000000000000")
