"""Release confirmation polls device memory until the release is really seen."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from learnsched.handoff import open_device, wait_for_release
from learnsched.serving import DeviceMemory, GpuProcess, NvmlUnavailable

GIB = 2**30


class ScriptedDevice:
    """A device whose memory is freed ``after_s`` seconds after creation (a test double)."""

    def __init__(self, after_s: float, pid: int = 4242, per_process: bool = True) -> None:
        self.freed = threading.Event()
        self.pid = pid
        self.per_process = per_process
        threading.Timer(after_s, self.freed.set).start()

    def memory(self) -> DeviceMemory:
        used = 1 * GIB if self.freed.is_set() else 9 * GIB
        return DeviceMemory(
            total=80 * GIB, reserved=GIB, used=used, free=79 * GIB - used, version=2
        )

    def processes(self) -> list[GpuProcess]:
        if self.freed.is_set():
            return []
        return [GpuProcess(self.pid, 8 * GIB if self.per_process else None)]


def test_free_rise_is_seen_with_its_resolution() -> None:
    since = time.perf_counter_ns()  # before the device: its timer starts when it is built
    device = ScriptedDevice(after_s=0.1)
    result = wait_for_release(device, free_rise_bytes=8 * GIB, since_ns=since, poll_s=0.01)
    assert result.condition == "free-rose"
    assert 0.1 <= result.latency_s < 1.0
    assert 0 < result.resolution_s < 0.1
    assert result.memory.used == GIB


def test_process_gone() -> None:
    result = wait_for_release(ScriptedDevice(after_s=0.05), pid=4242, poll_s=0.01)
    assert result.condition == "process-gone"
    assert result.polls >= 2


def test_engine_tree_is_watched_as_a_whole() -> None:
    result = wait_for_release(ScriptedDevice(after_s=0.05), pid=[1, 4242], poll_s=0.01)
    assert result.condition == "process-gone"


def test_pid_never_listed_is_refused_not_reported_released() -> None:
    # A container's PID, or a wrong one: NVML never lists it, so "gone" would be a lie.
    with pytest.raises(ValueError, match=r"pid 999 is not among the compute processes .*4242"):
        wait_for_release(ScriptedDevice(after_s=5), pid=999, poll_s=0.01)
    with pytest.raises(ValueError, match="pid 4242 is not among"):
        wait_for_release(ScriptedDevice(after_s=5), pid=4242, baseline_processes=[], poll_s=0.01)


def test_release_acknowledged_before_memory_is_freed() -> None:
    acknowledged = time.perf_counter_ns()  # the pause call has answered; nothing freed yet
    device = ScriptedDevice(after_s=0.15)  # its timer starts now, after the clock was read
    result = wait_for_release(
        device, pid=4242, floor_bytes=2 * GIB, since_ns=acknowledged, poll_s=0.01
    )
    assert result.condition == "process-gone"
    assert result.latency_s >= 0.15
    assert result.seen_ns - acknowledged == pytest.approx(result.latency_s * 1e9)


def test_floor_counts_as_released() -> None:
    class Shrinking(ScriptedDevice):
        def processes(self) -> list[GpuProcess]:
            return [GpuProcess(self.pid, GIB if self.freed.is_set() else 8 * GIB)]

    result = wait_for_release(Shrinking(after_s=0.05), pid=4242, floor_bytes=2 * GIB, poll_s=0.01)
    assert result.condition == "process-below-floor"


def test_floor_needs_per_process_memory() -> None:
    device = ScriptedDevice(after_s=5, per_process=False)
    with pytest.raises(ValueError, match="does not report per-process memory"):
        wait_for_release(device, pid=4242, floor_bytes=GIB, poll_s=0.01)


def test_timeout() -> None:
    with pytest.raises(TimeoutError, match=r"device memory release: not seen within 0\.05 s"):
        wait_for_release(ScriptedDevice(after_s=5), pid=4242, timeout_s=0.05, poll_s=0.01)


def test_bad_arguments_are_named() -> None:
    device = ScriptedDevice(after_s=0)
    with pytest.raises(ValueError, match="give pid"):
        wait_for_release(device)
    with pytest.raises(ValueError, match="floor_bytes needs pid"):
        wait_for_release(device, floor_bytes=1, free_rise_bytes=1)
    with pytest.raises(ValueError, match="free_rise_bytes must be >= 1, got -1"):
        wait_for_release(device, free_rise_bytes=-1)
    # A rise of 0 holds at the first poll: a pause would be reported as a release.
    with pytest.raises(ValueError, match="free_rise_bytes must be >= 1, got 0"):
        wait_for_release(device, free_rise_bytes=0)
    with pytest.raises(ValueError, match=r"since_ns .* in the future"):
        wait_for_release(device, free_rise_bytes=1, since_ns=time.perf_counter_ns() + 10**9)


# Holds 1 GiB on the GPU until its stdin closes, then exits.
HOLDER = (
    "import sys, torch; b = torch.ones(2**30, dtype=torch.uint8, device='cuda'); "
    "torch.cuda.synchronize(); print('held', flush=True); sys.stdin.read()"
)


@pytest.mark.gpu
def test_real_release_after_a_child_exits(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="needs torch (learnsched[gpu])")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    try:
        device = open_device(0)
    except NvmlUnavailable as err:
        pytest.skip(str(err))
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,  # outside the source tree, which would shadow the installed package
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        assert child.stdout.readline() == "held\n"
        baseline = device.memory().free
        since = time.perf_counter_ns()
        child.stdin.close()
        result = wait_for_release(
            device,
            free_rise_bytes=GIB // 2,
            baseline_free_bytes=baseline,
            since_ns=since,
            timeout_s=30,
            poll_s=0.01,
        )
        assert result.condition == "free-rose"
        assert result.latency_s > 0
    finally:
        child.wait(timeout=30)
        child.stdout.close()
