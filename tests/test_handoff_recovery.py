"""Recovery measurement against the simulated engine, in both dialects."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from learnsched.handoff import CostProfile, launch_engine, measure_warm_recovery
from learnsched.serving import HandoffProbeError, ServingEndpoint
from learnsched.serving.endpoint import HttpStatusError
from learnsched.testing import free_port
from learnsched.testing.device import SimulatedDeviceReader

from engine_support import command, engine

MIB = 2**20
TIB = 2**40
WARM_ORDER = ["release_sent", "release_ack", "resume_sent", "resume_ack"]
COLD_ORDER = ["launched", "port_open", "health_200", "first_token", "request_done"]


def in_order(stamps: dict[str, int], names: list[str]) -> bool:
    return [stamps[n] for n in names] == sorted(stamps[n] for n in names)


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_warm_recovery_stamps_and_parked_memory(dialect: str) -> None:
    options = {"resume_s": 0.15, "release_s": 0.05, "weights_mib": 48, "kv_mib": 16}
    with engine(dialect, **options) as sim:
        run = measure_warm_recovery(
            ServingEndpoint(sim.url, dialect),
            tags=["weights", "kv_cache"],
            pid=sim.pid,
            parked_s=0.05,
            max_tokens=4,
            timeout_s=10,
            poll_s=0.01,
        )
    assert run.kind == "warm"
    assert run.engine == dialect
    assert in_order(run.stamps_ns, [*WARM_ORDER, "first_token", "request_done"])
    assert run.interval_s("release_sent", "release_ack") >= 0.05
    # Ready only after the resume call returned and a real request completed.
    assert run.ready_s >= 0.15
    assert run.ready_s >= run.interval_s("resume_sent", "resume_ack")
    if dialect == "vllm":
        assert run.stamps_ns["asleep_reported"] >= run.stamps_ns["release_ack"]
        assert run.stamps_ns["awake_reported"] >= run.stamps_ns["resume_ack"]
    # On cpu the simulated device is host memory: parked, the KV cache's pages are gone
    # but the weights' are not (level 1 / the CPU backup keeps them in host memory).
    dropped = run.host["awake"].pss - run.host["parked"].pss
    assert 12 * MIB <= dropped <= 32 * MIB
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


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_cold_start_waits_for_a_real_request(dialect: str, tmp_path: Path) -> None:
    port = free_port()
    launch = [*command(dialect, port, ready_delay_s=0.2), "--startup-delay", "0.2"]
    endpoint = ServingEndpoint(f"http://127.0.0.1:{port}", dialect)
    with launch_engine(launch, endpoint, timeout_s=20, poll_s=0.01, cwd=tmp_path) as (
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
    with engine("sglang", weights_mib=0, kv_mib=64, free_delay_s=0.8) as sim:
        run = measure_warm_recovery(
            ServingEndpoint(sim.url, "sglang"),
            pid=sim.pid,
            device=SimulatedDeviceReader(sim.url),
            parked_s=0,
            max_tokens=2,
            timeout_s=10,
            poll_s=0.01,
        )
    assert run.release in ("free-rose", "process-below-floor")
    # The answer came at once; the memory went 0.8 s later, and that is what is measured.
    assert run.interval_s("release_sent", "release_ack") < 0.6
    assert run.interval_s("release_sent", "release_confirmed") >= 0.8
    assert run.release_s is not None
    assert run.release_s >= 0.8
    assert run.device_basis == "engine-processes"
    awake, parked = run.device_bytes("awake"), run.device_bytes("parked")
    assert awake is not None
    assert parked is not None
    assert awake - parked >= 48 * MIB  # parked memory read after the release, not before
    assert run.stamps_ns["memory_back"] >= run.stamps_ns["resume_sent"]
    assert run.resume_s <= run.ready_s


def test_engine_hidden_from_the_device_needs_release_bytes() -> None:
    with engine("vllm", weights_mib=0, kv_mib=64, free_delay_s=0.2) as sim:
        endpoint = ServingEndpoint(sim.url, "vllm")
        hidden = SimulatedDeviceReader(sim.url, listed=False)  # another PID namespace
        common = {"pid": sim.pid, "device": hidden, "parked_s": 0, "timeout_s": 10}
        unconfirmed = measure_warm_recovery(endpoint, poll_s=0.01, **common)  # type: ignore[arg-type]
        confirmed = measure_warm_recovery(
            endpoint,
            release_bytes=48 * MIB,
            poll_s=0.01,
            **common,  # type: ignore[arg-type]
        )
    assert unconfirmed.release.startswith("unconfirmed: the device does not list")
    assert any("are not among those the watched GPU lists" in n for n in unconfirmed.notes)
    assert "release_confirmed" not in unconfirmed.stamps_ns
    assert unconfirmed.device_basis == "device-occupied"
    assert confirmed.release == "free-rose"
    assert confirmed.interval_s("release_sent", "release_confirmed") >= 0.2
    # The profile flags what the unconfirmed park measured, and only that.
    assert CostProfile.from_recoveries([confirmed]).unconfirmed() == {}
    flagged = CostProfile.from_recoveries([confirmed, unconfirmed]).unconfirmed()
    assert set(flagged) == {
        "warm_recovery_s", "warm_ready_s", "host_pss_awake_gib", "host_pss_parked_gib",
        "device_parked_gib",
    }  # fmt: skip
    assert flagged["warm_recovery_s"].startswith("1 of 2 parks: the device does not list")


def test_failure_while_parked_resumes_the_engine() -> None:
    with engine("sglang") as sim:
        endpoint = ServingEndpoint(sim.url, "sglang")
        with pytest.raises(
            TimeoutError, match=r"device memory release.*within the release timeout \(0\.5 s\)"
        ):
            measure_warm_recovery(
                endpoint,
                pid=sim.pid,
                device=SimulatedDeviceReader(sim.url),
                release_bytes=TIB,  # never freed: the confirmation times out
                parked_s=0,
                release_timeout_s=0.5,
                poll_s=0.01,
            )
        endpoint.generate(2, timeout_s=5)  # serving again: resumed after the failure


def test_failed_resume_after_a_failure_is_reported() -> None:
    with (
        engine("sglang", resume_status=500) as sim,
        pytest.raises(HandoffProbeError, match=r"may still be parked: .*answered 500"),
    ):
        measure_warm_recovery(
            ServingEndpoint(sim.url, "sglang"),
            pid=sim.pid,
            device=SimulatedDeviceReader(sim.url),
            release_bytes=TIB,
            parked_s=0,
            release_timeout_s=0.5,
            timeout_s=0.5,
            poll_s=0.01,
        )


def _launch_sim(**options: object) -> tuple[list[str], ServingEndpoint]:
    port = free_port()
    return command("sglang", port, **options), ServingEndpoint(f"http://127.0.0.1:{port}", "sglang")


def test_permanent_client_error_fails_fast(tmp_path: Path) -> None:
    launch, endpoint = _launch_sim(generate_status=400)
    start = time.monotonic()
    with (
        pytest.raises(HttpStatusError, match="answered 400") as caught,
        launch_engine(launch, endpoint, timeout_s=20, poll_s=0.01, cwd=tmp_path),
    ):
        pass
    assert caught.value.status == 400
    assert time.monotonic() - start < 10  # not retried until the 20 s deadline


def test_timeout_names_the_last_error(tmp_path: Path) -> None:
    launch, endpoint = _launch_sim(generate_status=503)
    with (
        pytest.raises(TimeoutError, match=r"not ready within 2 s; last error: .*answered 503"),
        launch_engine(launch, endpoint, timeout_s=2, poll_s=0.01, cwd=tmp_path),
    ):
        pass


def test_unreachable_url_names_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectionError, match=url):
        measure_warm_recovery(ServingEndpoint(url, "vllm"), timeout_s=2, poll_s=0.01)


def test_timeout_is_bounded_and_named() -> None:
    with (
        engine("sglang", resume_s=2) as sim,
        pytest.raises(TimeoutError, match=r"no answer in 0\.5 s"),
    ):
        measure_warm_recovery(
            ServingEndpoint(sim.url, "sglang"), parked_s=0, timeout_s=0.5, poll_s=0.01
        )


@pytest.mark.parametrize(
    ("url", "engine", "message"),
    [
        ("http://127.0.0.1:8000", "tgi", "engine must be one of vllm, sglang, got 'tgi'"),
        ("ftp://127.0.0.1:8000", "vllm", "url must be http://HOST:PORT or https://"),
        ("http://127.0.0.1:8000/v1", "vllm", "url must be http://HOST:PORT or https://"),
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
