"""Host and CUDA-event timers keep the first run apart."""

from __future__ import annotations

import time

import pytest

from learnsched.handoff import Timing, time_device, time_host


def test_host_timer_separates_the_first_run() -> None:
    delays = iter([0.03, 0.002, 0.002, 0.002, 0.002])
    timing = time_host(lambda: time.sleep(next(delays)), 5)
    assert timing.clock == "host"
    assert timing.first_ms >= 30
    assert len(timing.warm_ms) == 4
    assert 2 <= timing.median_ms < 30
    assert timing.clocks_start is None


def test_statistics() -> None:
    timing = Timing(first_ms=9.0, warm_ms=tuple(float(i) for i in range(1, 21)), clock="host")
    assert timing.median_ms == 10.5
    assert timing.p95_ms == 19.0
    assert timing.mean_ms == 10.5


def test_runs_must_include_a_warm_run() -> None:
    with pytest.raises(ValueError, match="runs must be >= 2, got 1"):
        time_host(lambda: None, 1)


def test_device_timer_needs_cuda() -> None:
    pytest.importorskip("torch", reason="needs torch (learnsched[gpu])")
    with pytest.raises(ValueError, match="cuda_device must be a CUDA device"):
        time_device(lambda: None, 2, cuda_device="cpu")


@pytest.mark.gpu
def test_event_timing_matches_the_wall_clock() -> None:
    torch = pytest.importorskip("torch", reason="needs torch (learnsched[gpu])")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    x = torch.randn(2048, 2048, device="cuda")
    events = time_device(lambda: x @ x, 5, cuda_device="cuda")

    def synced() -> None:
        x @ x
        torch.cuda.synchronize()

    wall = time_host(synced, 5)
    assert events.clock == "cuda-event"
    assert 0 < events.median_ms <= wall.median_ms * 1.5
