"""Recovery measurement against a local fake engine, in both dialects."""

from __future__ import annotations

import sys

import pytest
from test_handoff_fake_engine import SCRIPT, FakeEngine, free_port

from learnsched.handoff import (
    HandoffProbeError,
    ServingEndpoint,
    launch_engine,
    measure_warm_recovery,
)

MIB = 2**20
WARM_ORDER = ["release_sent", "release_ack", "resume_sent", "resume_ack", "health_200"]
COLD_ORDER = ["launched", "port_open", "health_200", "first_token", "request_done"]


def in_order(stamps: dict[str, int], names: list[str]) -> bool:
    return [stamps[n] for n in names] == sorted(stamps[n] for n in names)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_warm_recovery_stamps_and_parked_memory(engine: str) -> None:
    options = ["--resume-delay", "0.15", "--release-delay", "0.05", "--hold-mib", "48"]
    with FakeEngine(engine, *options) as fake:
        run = measure_warm_recovery(
            ServingEndpoint(fake.url, engine),
            tags=["weights", "kv_cache"],
            pid=fake.pid,
            parked_s=0.05,
            max_tokens=4,
            timeout_s=10,
            poll_s=0.01,
        )
    assert run.kind == "warm"
    assert run.engine == engine
    assert in_order(run.stamps_ns, [*WARM_ORDER, "first_token", "request_done"])
    assert run.interval_s("release_sent", "release_ack") >= 0.05
    # Ready only after the resume call returned and a real request completed.
    assert run.ready_s >= 0.15
    assert run.ready_s >= run.interval_s("resume_sent", "resume_ack")
    if engine == "vllm":
        assert run.stamps_ns["asleep_reported"] >= run.stamps_ns["release_ack"]
        assert run.stamps_ns["awake_reported"] >= run.stamps_ns["resume_ack"]
    added = run.host["parked"].pss - run.host["awake"].pss
    assert added >= 40 * MIB
    record = run.to_record()
    assert record.kind == "warm-recovery"
    assert record.readiness_s == run.ready_s
    assert record.host_before == run.host["awake"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_cold_start_waits_for_a_real_request(engine: str) -> None:
    port = free_port()
    command = [
        sys.executable,
        str(SCRIPT),
        "--engine",
        engine,
        "--port",
        str(port),
        "--startup-delay",
        "0.2",
        "--ready-delay",
        "0.2",
    ]
    endpoint = ServingEndpoint(f"http://127.0.0.1:{port}", engine)
    with launch_engine(command, endpoint, timeout_s=20, poll_s=0.01) as (process, run):
        assert process.poll() is None
        assert in_order(run.stamps_ns, COLD_ORDER)
        assert run.ready_s >= 0.4
        assert run.interval_s("port_open", "health_200") >= 0.15
        assert run.host["ready"].pss > 0
    assert process.returncode is not None  # stopped on exit


def test_engine_that_exits_is_reported() -> None:
    port = free_port()
    endpoint = ServingEndpoint(f"http://127.0.0.1:{port}", "sglang")
    command = [sys.executable, "-c", "raise SystemExit(4)"]
    with (
        pytest.raises(HandoffProbeError, match="exited with status 4"),
        launch_engine(command, endpoint, timeout_s=20, poll_s=0.01),
    ):
        pass


def test_unreachable_url_names_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectionError, match=url):
        measure_warm_recovery(ServingEndpoint(url, "vllm"), timeout_s=2, poll_s=0.01)


def test_timeout_is_bounded_and_named() -> None:
    with (
        FakeEngine("sglang", "--resume-delay", "2") as fake,
        pytest.raises(TimeoutError, match=r"no answer in 0\.5 s"),
    ):
        measure_warm_recovery(
            ServingEndpoint(fake.url, "sglang"), parked_s=0, timeout_s=0.5, poll_s=0.01
        )


@pytest.mark.parametrize(
    ("url", "engine", "message"),
    [
        ("http://127.0.0.1:8000", "tgi", "engine must be one of vllm, sglang, got 'tgi'"),
        ("https://127.0.0.1:8000", "vllm", "url must be http://HOST:PORT"),
        ("http://127.0.0.1:8000/v1", "vllm", "url must be http://HOST:PORT"),
        ("http://127.0.0.1:99999", "vllm", "bad port"),
    ],
)
def test_bad_endpoint(url: str, engine: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServingEndpoint(url, engine)


def test_bad_counts_are_named() -> None:
    endpoint = ServingEndpoint("http://127.0.0.1:1", "vllm")
    with pytest.raises(ValueError, match="level must be >= 1, got -1"):
        measure_warm_recovery(endpoint, level=-1)
    with pytest.raises(ValueError, match="pid must be >= 1, got 0"):
        measure_warm_recovery(endpoint, pid=0)
