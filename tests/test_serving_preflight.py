"""Pre-park checks: server flags read from the engine, and idleness from its metrics."""

from __future__ import annotations

import threading
import time

import pytest

from learnsched.serving import ServingEndpoint
from learnsched.serving.preflight import (
    EngineBusy,
    Load,
    ServerConfigError,
    check_server_config,
    metric_sum,
    read_load,
    wait_until_idle,
)
from learnsched.testing import EngineConfig, SimulatedEngine

METRICS = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 2.0
vllm:num_requests_running{model_name="b"} 1.0
vllm:num_requests_running_total{model_name="a"} 9.0
vllm:num_requests_waiting{model_name="a"} 0.0
"""


def test_metric_sum_adds_label_sets_and_ignores_longer_names() -> None:
    assert metric_sum(METRICS, "vllm:num_requests_running") == 3.0
    assert metric_sum(METRICS, "vllm:num_requests_waiting") == 0.0
    assert metric_sum(METRICS, "sglang:num_queue_reqs") is None


def sim(dialect: str, **options: object) -> SimulatedEngine:
    settings = {"token_s": 0.0, **options}
    return SimulatedEngine(EngineConfig(dialect, **settings))  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_well_configured_server_passes(dialect: str) -> None:
    with sim(dialect) as engine:
        endpoint = ServingEndpoint(engine.url, dialect)
        assert check_server_config(endpoint, timeout_s=5) == []
        assert read_load(endpoint, 5) == Load(0, 0)


@pytest.mark.parametrize(
    ("dialect", "flag"), [("vllm", "--enable-sleep-mode"), ("sglang", "--enable-memory-saver")]
)
def test_no_memory_saver_is_refused_naming_the_flag(dialect: str, flag: str) -> None:
    with (
        sim(dialect, memory_saver=False) as engine,
        pytest.raises(ServerConfigError, match=f"restart it with {flag}"),
    ):
        check_server_config(ServingEndpoint(engine.url, dialect), timeout_s=5)


def test_sglang_without_weights_backup() -> None:
    with sim("sglang", weights_backup=False) as engine:
        endpoint = ServingEndpoint(engine.url, "sglang")
        with pytest.raises(ServerConfigError, match="--enable-weights-cpu-backup"):
            check_server_config(endpoint, timeout_s=5)
        # Releasing only the KV cache, or reloading afterwards, is fine.
        assert check_server_config(endpoint, tags=["kv_cache"], timeout_s=5) == []
        assert check_server_config(endpoint, reload=True, timeout_s=5) == []


def test_busy_engine_is_waited_for_then_refused() -> None:
    with sim("sglang", token_s=0.02, max_running=1) as engine:
        endpoint = ServingEndpoint(engine.url, "sglang")
        worker = threading.Thread(target=endpoint.generate, args=(30, 10))
        worker.start()
        deadline = time.monotonic() + 5
        while read_load(endpoint, 5) == Load(0, 0) and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(EngineBusy, match=r"is not idle \(1 running, 0 waiting\) after 0\.1 s"):
            wait_until_idle(endpoint, wait_s=0.1, poll_s=0.01)
        assert wait_until_idle(endpoint, wait_s=5, poll_s=0.01) == Load(0, 0)  # drained
        worker.join()
