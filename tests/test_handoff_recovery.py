"""Recovery measurement against a local fake engine, in both dialects."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from test_handoff_fake_engine import SCRIPT, FakeEngine, HostBackedDevice, free_port

from learnsched.handoff import (
    HandoffProbeError,
    ServingEndpoint,
    launch_engine,
    measure_warm_recovery,
)
from learnsched.handoff.endpoint import HttpStatusError

MIB = 2**20
TIB = 2**40
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
    # No device to watch: the release is recorded as unconfirmed, never invented.
    assert run.release.startswith("unconfirmed: no device")
    assert "release_confirmed" not in run.stamps_ns
    assert run.release_s is None
    assert run.device_basis is None
    assert 0.15 <= run.resume_s <= run.ready_s
    record = run.to_record()
    assert record.kind == "warm-recovery"
    assert record.readiness_s == run.ready_s
    assert record.host_before == run.host["awake"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_cold_start_waits_for_a_real_request(engine: str, tmp_path: Path) -> None:
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
    with launch_engine(command, endpoint, timeout_s=20, poll_s=0.01, cwd=tmp_path) as (
        process,
        run,
    ):
        assert process.poll() is None
        assert in_order(run.stamps_ns, COLD_ORDER)
        assert run.ready_s >= 0.4
        assert run.interval_s("port_open", "health_200") >= 0.15
        assert run.host["ready"].pss > 0
    assert process.returncode is not None  # stopped on exit


# Starts a worker in its own process group, then exits before serving.
LEAVES_A_WORKER = (
    "import subprocess, sys\n"
    "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "open(sys.argv[1], 'w').write(str(worker.pid))\n"
    "raise SystemExit(4)\n"
)


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for its new parent counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def test_engine_that_exits_is_reported_and_its_workers_stopped(tmp_path: Path) -> None:
    port = free_port()
    endpoint = ServingEndpoint(f"http://127.0.0.1:{port}", "sglang")
    pid_file = tmp_path / "worker.pid"
    command = [sys.executable, "-c", LEAVES_A_WORKER, str(pid_file)]
    with (
        pytest.raises(HandoffProbeError, match="exited with status 4"),
        launch_engine(command, endpoint, timeout_s=20, poll_s=0.01, cwd=tmp_path, grace_s=5),
    ):
        pass
    worker = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(worker), "the engine's worker outlived it"


def test_release_acknowledged_before_memory_is_freed() -> None:
    options = ["--device-mib", "64", "--free-delay", "0.4"]
    with FakeEngine("sglang", *options) as fake:
        run = measure_warm_recovery(
            ServingEndpoint(fake.url, "sglang"),
            pid=fake.pid,
            device=HostBackedDevice(fake.pid),
            parked_s=0,
            max_tokens=2,
            timeout_s=10,
            poll_s=0.01,
        )
    assert run.release in ("free-rose", "process-below-floor")
    # The answer came at once; the memory went 0.4 s later, and that is what is measured.
    assert run.interval_s("release_sent", "release_ack") < 0.3
    assert run.interval_s("release_sent", "release_confirmed") >= 0.4
    assert run.release_s is not None
    assert run.release_s >= 0.4
    assert run.device_basis == "engine-processes"
    awake, parked = run.device_bytes("awake"), run.device_bytes("parked")
    assert awake is not None
    assert parked is not None
    assert awake - parked >= 48 * MIB  # parked memory read after the release, not before
    assert run.stamps_ns["memory_back"] >= run.stamps_ns["resume_sent"]
    assert run.resume_s <= run.ready_s


def test_engine_hidden_from_the_device_needs_release_bytes() -> None:
    options = ["--device-mib", "64", "--free-delay", "0.2"]
    with FakeEngine("vllm", *options) as fake:
        endpoint = ServingEndpoint(fake.url, "vllm")
        hidden = HostBackedDevice(fake.pid, listed=False)  # another PID namespace
        common = {"pid": fake.pid, "device": hidden, "parked_s": 0, "timeout_s": 10}
        unconfirmed = measure_warm_recovery(endpoint, poll_s=0.01, **common)  # type: ignore[arg-type]
        confirmed = measure_warm_recovery(
            endpoint,
            release_bytes=48 * MIB,
            poll_s=0.01,
            **common,  # type: ignore[arg-type]
        )
    assert unconfirmed.release.startswith("unconfirmed: the device does not list")
    assert "release_confirmed" not in unconfirmed.stamps_ns
    assert unconfirmed.device_basis == "device-occupied"
    assert confirmed.release == "free-rose"
    assert confirmed.interval_s("release_sent", "release_confirmed") >= 0.2


def test_failure_while_parked_resumes_the_engine() -> None:
    with FakeEngine("sglang", "--device-mib", "8") as fake:
        endpoint = ServingEndpoint(fake.url, "sglang")
        with pytest.raises(TimeoutError, match="device memory release"):
            measure_warm_recovery(
                endpoint,
                pid=fake.pid,
                device=HostBackedDevice(fake.pid),
                release_bytes=TIB,  # never freed: the confirmation times out
                parked_s=0,
                timeout_s=0.5,
                poll_s=0.01,
            )
        endpoint.generate(2, timeout_s=5)  # serving again: resumed after the failure


def test_failed_resume_after_a_failure_is_reported() -> None:
    with (
        FakeEngine("sglang", "--resume-status", "500") as fake,
        pytest.raises(HandoffProbeError, match=r"may still be parked: .*answered 500"),
    ):
        measure_warm_recovery(
            ServingEndpoint(fake.url, "sglang"),
            pid=fake.pid,
            device=HostBackedDevice(fake.pid),
            release_bytes=TIB,
            parked_s=0,
            timeout_s=0.5,
            poll_s=0.01,
        )


def _launch_fake(tmp_path: Path, *options: str) -> tuple[list[str], ServingEndpoint]:
    port = free_port()
    command = [sys.executable, str(SCRIPT), "--engine", "sglang", "--port", str(port), *options]
    return command, ServingEndpoint(f"http://127.0.0.1:{port}", "sglang")


def test_permanent_client_error_fails_fast(tmp_path: Path) -> None:
    command, endpoint = _launch_fake(tmp_path, "--generate-status", "400")
    start = time.monotonic()
    with (
        pytest.raises(HttpStatusError, match="answered 400") as caught,
        launch_engine(command, endpoint, timeout_s=20, poll_s=0.01, cwd=tmp_path),
    ):
        pass
    assert caught.value.status == 400
    assert time.monotonic() - start < 10  # not retried until the 20 s deadline


def test_timeout_names_the_last_error(tmp_path: Path) -> None:
    command, endpoint = _launch_fake(tmp_path, "--generate-status", "503")
    with (
        pytest.raises(TimeoutError, match=r"not ready within 2 s; last error: .*answered 503"),
        launch_engine(command, endpoint, timeout_s=2, poll_s=0.01, cwd=tmp_path),
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
    with pytest.raises(ValueError, match="level must be 1 or 2"):
        measure_warm_recovery(endpoint, level=3)
    with pytest.raises(ValueError, match=r"poll_s must be within 0\.01-0\.05 s"):
        measure_warm_recovery(endpoint, poll_s=0.2)
    with pytest.raises(ValueError, match="release_bytes must be >= 1, got 0"):
        measure_warm_recovery(endpoint, release_bytes=0)
