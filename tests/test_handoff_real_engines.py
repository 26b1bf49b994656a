"""The recovery probe against the engines' real behaviours (the simulated engine's knobs).

Each case is one way a real vLLM or SGLang would have let the probe record a wrong
recovery: it must refuse up front or fail loudly (non-zero exit, one line naming the
cause), and a failed recovery is still recorded, as failed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from learnsched.cli import main
from learnsched.handoff import measure_warm_recovery
from learnsched.serving import ServingEndpoint, read_ledger
from learnsched.serving.errors import EngineBusy, RecoveryFailed, ServerConfigError
from learnsched.testing import EngineProcess
from learnsched.testing.device import SimulatedDeviceReader

from engine_support import engine

MIB = 2**20
QUICK = ("--warm-runs=1", "--parked-s=0.01", "--poll-ms=10", "--timeout-s=20")


def probe(url: str, dialect: str, *options: str) -> int:
    return main(["probe", "recovery", f"--engine={dialect}", f"--url={url}", *QUICK, *options])


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_resume_that_lost_the_weights_is_recorded_as_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vLLM reports nothing about a backup: only the answer shows the weights are gone.
    ledger = tmp_path / "handoffs.jsonl"
    with engine("vllm", weights_backup=False) as sim:
        assert probe(sim.url, "vllm", f"--ledger={ledger}") == 1
        line = one_line(capsys)
    assert line.startswith("learnsched probe recovery: error: ")
    assert "weights not restored: the first request after the resume answered" in line
    (record,) = read_ledger(ledger)
    assert record.kind == "warm-recovery-failed"
    assert record.failure is not None
    assert record.failure.startswith("weights not restored")


def test_sglang_without_the_weights_backup_is_refused_before_parking(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with engine("sglang", weights_backup=False) as sim:
        assert probe(sim.url, "sglang") == 1
        assert "restart it with --enable-weights-cpu-backup" in one_line(capsys)
        assert SimulatedDeviceReader(sim.url).state()["sleeping_tags"] == []  # untouched
        # A reload step, or leaving the weights in place, makes the park honest.
        assert probe(sim.url, "sglang", "--reload", "--json") == 0
        capsys.readouterr()
        assert probe(sim.url, "sglang", "--tags", "kv_cache") == 0


def test_vllm_reloads_exactly_when_level_2_discards_the_weights(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Level 2 reloads on every return (the weights were discarded; a resume without
    the reload answers from garbage and fails the same-model check); level 1 keeps
    them, so a reload there would only add its time and is refused."""
    with engine("vllm") as sim:
        assert probe(sim.url, "vllm", "--level=2") == 0
        assert probe(sim.url, "vllm", "--level=2", "--reload") == 0
        assert probe(sim.url, "vllm", "--level=1", "--reload") == 2
        assert "a level-1 sleep keeps the weights in host memory" in one_line(capsys)


@contextmanager
def busy(sim: EngineProcess, dialect: str) -> Iterator[None]:
    """One long request running on ``sim`` for the duration."""
    endpoint = ServingEndpoint(sim.url, dialect)
    worker = threading.Thread(target=endpoint.generate, args=(200, 30))
    worker.start()
    deadline = time.monotonic() + 5
    while SimulatedDeviceReader(sim.url).state()["running"] == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        yield
    finally:
        worker.join()


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_busy_engine_is_not_parked(dialect: str, capsys: pytest.CaptureFixture[str]) -> None:
    with engine(dialect, token_s=0.02) as sim, busy(sim, dialect):
        assert probe(sim.url, dialect, "--idle-wait-s=0.2") == 1
        line = one_line(capsys)
        assert "is not idle (1 running" in line
        assert SimulatedDeviceReader(sim.url).state()["sleeping_tags"] == []


@pytest.mark.parametrize(
    ("dialect", "flag"), [("sglang", "--enable-memory-saver"), ("vllm", "--enable-sleep-mode")]
)
def test_a_server_without_memory_saver_is_refused(
    dialect: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with engine(dialect, memory_saver=False) as sim:
        start = time.monotonic()
        assert probe(sim.url, dialect) == 1
        assert time.monotonic() - start < 10  # not a release timeout
        assert f"restart it with {flag}" in one_line(capsys)


def test_a_tagged_vllm_park_finishes_within_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    with engine("vllm") as sim:
        start = time.monotonic()
        assert probe(sim.url, "vllm", "--tags", "weights", "--json") == 0
        assert time.monotonic() - start < 10
        assert SimulatedDeviceReader(sim.url).state()["sleeping_tags"] == []  # all awake


def test_warm_readiness_does_not_wait_for_a_slow_health() -> None:
    with engine("sglang", slow_health_s=2.0) as sim:
        run = measure_warm_recovery(
            ServingEndpoint(sim.url, "sglang"), parked_s=0, timeout_s=20, poll_s=0.01
        )
    assert "health_200" not in run.stamps_ns
    assert run.ready_s < 1.0  # SGLang's /health alone would take 2 s here


def test_a_tagged_release_is_confirmed_against_its_tags_memory() -> None:
    with engine("sglang", weights_mib=64, kv_mib=16) as sim:
        endpoint = ServingEndpoint(sim.url, "sglang")
        device = SimulatedDeviceReader(sim.url)
        run = measure_warm_recovery(
            endpoint, tags=["kv_cache"], pid=sim.pid, device=device, parked_s=0, poll_s=0.01
        )
        # Half of the engine's 82 MiB (the whole-release rule) would never free here.
        assert run.release in ("free-rose", "process-below-floor")
        awake, parked = run.device_bytes("awake"), run.device_bytes("parked")
        assert awake is not None
        assert parked is not None
        assert awake - parked == 16 * MIB


def test_failures_before_the_park_touch_nothing() -> None:
    with engine("sglang", memory_saver=False) as sim:
        endpoint = ServingEndpoint(sim.url, "sglang")
        with pytest.raises(ServerConfigError):
            measure_warm_recovery(endpoint, parked_s=0, poll_s=0.01)
    with engine("vllm", token_s=0.02) as sim, busy(sim, "vllm"):
        with pytest.raises(EngineBusy):
            measure_warm_recovery(
                ServingEndpoint(sim.url, "vllm"), idle_wait_s=0.1, parked_s=0, poll_s=0.01
            )
        assert SimulatedDeviceReader(sim.url).state()["sleeping_tags"] == []


def test_recovery_failed_carries_the_run() -> None:
    with engine("vllm", weights_backup=False) as sim, pytest.raises(RecoveryFailed) as caught:
        measure_warm_recovery(ServingEndpoint(sim.url, "vllm"), parked_s=0, poll_s=0.01)
    run = caught.value.run
    assert run.failure.startswith("weights not restored")  # type: ignore[attr-defined]
    assert run.to_record().kind == "warm-recovery-failed"  # type: ignore[attr-defined]


def test_unknown_tags_are_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert probe("http://127.0.0.1:1", "sglang", "--tags", "lora") == 2
    assert "tags must be among weights, kv_cache, got ['lora']" in one_line(capsys)
