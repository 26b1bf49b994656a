"""Bounded polling and pollable waits."""

from __future__ import annotations

import threading
import time

import pytest

from learnsched.handoff import ControlSignal, measure_ack_delay, pollable_sleep
from learnsched.serving import poll_until


def test_poll_until_reports_the_seeing_poll() -> None:
    calls = iter([None, None, "ok"])
    seen = poll_until(lambda: next(calls), what="thing", timeout_s=5, poll_s=0.01)
    assert seen.value == "ok"
    assert seen.polls == 3
    assert seen.previous_ns is not None
    assert 0.005 <= (seen.t_ns - seen.previous_ns) / 1e9 < 1.0


def test_poll_until_times_out_naming_what() -> None:
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"release: not seen within 0.1 s \(\d+ polls\)"):
        poll_until(lambda: None, what="release", timeout_s=0.1, poll_s=0.02)
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("timeout_s", {"timeout_s": -1, "poll_s": 0.1}), ("poll_s", {"timeout_s": 1, "poll_s": 0})],
)
def test_poll_until_rejects_bad_bounds(name: str, kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=f"{name} must be > 0"):
        poll_until(lambda: 1, what="x", **kwargs)


def test_pollable_sleep_wakes_at_the_next_slice() -> None:
    signal = ControlSignal()
    threading.Timer(0.05, signal.issue).start()
    start = time.monotonic()
    assert pollable_sleep(5.0, signal, slice_s=0.01) is True
    assert time.monotonic() - start < 1.0


def test_pollable_sleep_runs_full_length_without_a_command() -> None:
    start = time.monotonic()
    assert pollable_sleep(0.05, ControlSignal(), slice_s=0.01) is False
    assert time.monotonic() - start >= 0.05


def test_slices_bound_the_acknowledgment_delay() -> None:
    coarse = measure_ack_delay(step_s=0.08, slice_s=0.08, commands=12, seed=1)
    pollable = measure_ack_delay(step_s=0.08, slice_s=0.005, commands=12, seed=1)
    assert len(pollable.samples_s) == 12
    assert all(s >= 0 for s in pollable.samples_s)
    # The paper's Section 6.3 effect: P95 116.6 -> 51.8 ms. Here the slice is 16x shorter.
    assert pollable.p95_s < coarse.p95_s
    assert pollable.median_s < 0.05


def test_bad_commands_count() -> None:
    with pytest.raises(ValueError, match="commands must be >= 1, got 0"):
        measure_ack_delay(step_s=0.01, slice_s=0.01, commands=0)


def test_an_acknowledgment_before_the_command_does_not_count() -> None:
    # The worker's late acknowledgment of the previous command, landing just after the
    # controller's reset: it must not answer the next command with a negative delay.
    signal = ControlSignal()
    signal.acknowledge()
    signal.issue()
    with pytest.raises(TimeoutError, match="not acknowledged"):
        signal.wait_acknowledged(timeout_s=0.01)
    signal.acknowledge()
    assert signal.wait_acknowledged(timeout_s=1.0) >= 0
