"""The simulated engine: dialects, real memory, parking semantics and load counters."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from learnsched.handoff import read_host_memory
from learnsched.testing import EngineConfig, EngineProcess, SimulatedEngine, engine_command
from learnsched.testing.device import SimulatedDeviceReader
from learnsched.testing.engine import config_argv

from conftest import run_python
from engine_support import Client

MIB = 2**20


@pytest.fixture
def vllm() -> Iterator[Client]:
    with SimulatedEngine(EngineConfig("vllm", token_s=0)) as engine:
        yield Client(engine.url)


def sglang(**options: object) -> SimulatedEngine:
    return SimulatedEngine(EngineConfig("sglang", token_s=0, **options))  # type: ignore[arg-type]


def test_greedy_text_depends_on_the_weights_only() -> None:
    with (
        SimulatedEngine(EngineConfig("vllm", token_s=0)) as one,
        SimulatedEngine(EngineConfig("vllm", token_s=0)) as same,
        SimulatedEngine(EngineConfig("vllm", token_s=0, seed=7)) as other,
    ):
        a, b, c = Client(one.url), Client(same.url), Client(other.url)
        assert a.complete() == a.complete() == b.complete()
        assert a.complete() != c.complete()
        assert a.complete("another prompt") != a.complete()
        sampled = {"model": "sim-model", "prompt": "x", "max_tokens": 12, "temperature": 1.0}
        first = a.json("POST", "/v1/completions", sampled)
        second = a.json("POST", "/v1/completions", sampled)
        assert first != second  # only temperature 0 repeats


def test_openai_routes_stream_and_chat(vllm: Client) -> None:
    models = vllm.json("GET", "/v1/models")
    assert models["data"][0]["id"] == "sim-model"  # type: ignore[index]
    body = {"model": "sim-model", "prompt": "p", "max_tokens": 4, "temperature": 0}
    status, data = vllm.call("POST", "/v1/completions", {**body, "stream": True})
    assert status == 200
    events = [line[6:] for line in data.decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    assert streamed == vllm.complete("p", 4)
    chat = {"model": "sim-model", "messages": [{"role": "user", "content": "p"}], "temperature": 0}
    answer = vllm.json("POST", "/v1/chat/completions", {**chat, "max_tokens": 4})
    assert answer["choices"][0]["message"]["content"] == streamed  # type: ignore[index]
    status, data = vllm.call("POST", "/v1/chat/completions", {**chat, "stream": True})
    lines = [line[6:] for line in data.decode().splitlines() if line.startswith("data: ")]
    deltas = [json.loads(line) for line in lines[:-1]]
    assert all("delta" in d["choices"][0] for d in deltas)
    assert vllm.call("POST", "/v1/completions", {**body, "model": "other"})[0] == 404


def test_vllm_sleep_takes_no_tags_and_stays_asleep_until_every_tag_wakes(vllm: Client) -> None:
    before = vllm.complete()
    assert vllm.call("POST", "/sleep?level=1&tags=kv_cache")[0] == 200  # tags ignored
    assert vllm.json("GET", "/is_sleeping") == {"is_sleeping": True}
    assert vllm.state()["sleeping_tags"] == ["kv_cache", "weights"]
    assert vllm.call("GET", "/health")[0] == 200  # vLLM's health answers while asleep
    vllm.call("POST", "/wake_up?tags=weights")
    assert vllm.json("GET", "/is_sleeping") == {"is_sleeping": True}
    vllm.call("POST", "/wake_up?tags=weights")  # not sleeping: vLLM logs and ignores it
    assert vllm.state()["sleeping_tags"] == ["kv_cache"]
    vllm.call("POST", "/wake_up?tags=kv_cache")
    assert vllm.json("GET", "/is_sleeping") == {"is_sleeping": False}
    assert vllm.complete() == before  # level 1 kept the weights in host memory


def test_vllm_refusing_while_asleep_is_a_fault_to_ask_for() -> None:
    with SimulatedEngine(EngineConfig("vllm", token_s=0, queue_while_asleep=False)) as engine:
        client = Client(engine.url)
        client.json("POST", "/sleep?level=1")
        status, data = client.call("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        assert (status, json.loads(data)["error"]["type"]) == (503, "ServiceUnavailableError")
        assert client.json("POST", "/wake_up") == {"status": "awake", "tags": None}
        assert client.complete()


def test_vllm_level_2_needs_a_reload(vllm: Client) -> None:
    before = vllm.complete()
    vllm.call("POST", "/sleep?level=2")
    assert vllm.state()["host_backup_bytes"] == 0  # discarded, not offloaded
    vllm.call("POST", "/wake_up")
    assert vllm.complete() != before  # garbage weights answer
    assert vllm.state()["weights_intact"] is False
    vllm.json("POST", "/collective_rpc", {"method": "reload_weights"})
    assert vllm.complete() == before
    # The docs' recipe: wake the weights, reload, then wake the KV cache.
    vllm.call("POST", "/sleep?level=2")
    vllm.call("POST", "/wake_up?tags=weights")
    vllm.json("POST", "/collective_rpc", {"method": "reload_weights"})
    vllm.call("POST", "/wake_up?tags=kv_cache")
    assert vllm.complete() == before


def test_sglang_release_resume_tags_backup_and_server_info() -> None:
    with sglang() as engine:
        client = Client(engine.url)
        info = client.json("GET", "/get_server_info")
        assert info["enable_memory_saver"] is True  # type: ignore[index]
        assert info["enable_weights_cpu_backup"] is True  # type: ignore[index]
        before = client.generate()
        assert client.call("POST", "/resume_memory_occupation", {"tags": ["kv_cache"]})[0] == 400
        client.json("POST", "/release_memory_occupation", {"tags": ["kv_cache"]})
        state = client.state()
        assert state["held_bytes"] == {"weights": 8 * MIB, "kv_cache": 0, "resident": 2 * MIB}
        assert client.call("POST", "/resume_memory_occupation", {"tags": ["weights"]})[0] == 400
        client.json("POST", "/resume_memory_occupation", {"tags": ["kv_cache"]})
        client.json("POST", "/release_memory_occupation", {})
        assert client.state()["device_bytes"] == 2 * MIB  # the context stays
        client.json("POST", "/resume_memory_occupation", {})
        assert client.generate() == before


def test_sglang_without_weights_backup_answers_differently() -> None:
    with sglang(weights_backup=False) as engine:
        client = Client(engine.url)
        assert client.json("GET", "/get_server_info")["enable_weights_cpu_backup"] is False  # type: ignore[index]
        before = client.generate()
        client.json("POST", "/release_memory_occupation", {})
        client.json("POST", "/resume_memory_occupation", {})
        assert client.generate() != before
        client.json("POST", "/update_weights_from_disk", {"model_path": "sim-model"})
        assert client.generate() == before


def test_without_memory_saver_a_release_frees_nothing() -> None:
    with sglang(memory_saver=False) as engine:
        client = Client(engine.url)
        held = client.state()["device_bytes"]
        client.json("POST", "/release_memory_occupation", {})
        assert client.state()["device_bytes"] == held
        assert client.json("GET", "/get_server_info")["enable_memory_saver"] is False  # type: ignore[index]


def test_busy_engine_refuses_a_release_and_counts_its_load() -> None:
    config = EngineConfig("sglang", token_s=0.02, max_running=1)
    with SimulatedEngine(config) as engine:
        client = Client(engine.url)
        body = {"text": "x", "sampling_params": {"max_new_tokens": 40}}
        workers = [
            threading.Thread(target=client.call, args=("POST", "/generate", body)) for _ in range(2)
        ]
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + 5
        while client.state()["waiting"] != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        metrics = client.call("GET", "/metrics")[1].decode()
        assert re.search(r"^sglang:num_running_reqs\{.*\} 1\.0$", metrics, re.MULTILINE)
        assert re.search(r"^sglang:num_queue_reqs\{.*\} 1\.0$", metrics, re.MULTILINE)
        status, data = client.call("POST", "/release_memory_occupation", {})
        assert status == 400
        assert b"only when server is idle" in data
        for worker in workers:
            worker.join()
        client.json("POST", "/release_memory_occupation", {})  # idle now


def test_gauges_show_the_load_gauge_lag_late() -> None:
    with SimulatedEngine(EngineConfig("vllm", token_s=0.02, gauge_lag_s=0.5)) as engine:
        client = Client(engine.url)
        worker = threading.Thread(target=client.complete, args=("p", 100))  # 2 s
        worker.start()
        client.wait_for(lambda s: s["running"] == 1)
        assert client.gauges() == (0.0, 0.0)  # not yet
        time.sleep(0.6)
        assert client.gauges() == (1.0, 0.0)
        worker.join()
        assert client.gauges() == (1.0, 0.0)  # the finish shows late too
        time.sleep(0.6)
        assert client.gauges() == (0.0, 0.0)


def test_vllm_metrics_names(vllm: Client) -> None:
    metrics = vllm.call("GET", "/metrics")[1].decode()
    assert re.search(r"^vllm:num_requests_running\{.*\} 0\.0$", metrics, re.MULTILINE)
    assert re.search(r"^vllm:num_requests_waiting\{.*\} 0\.0$", metrics, re.MULTILINE)


def test_slow_health() -> None:
    with sglang(slow_health_s=0.3) as engine:
        client = Client(engine.url)
        start = time.monotonic()
        assert client.call("GET", "/health")[0] == 200
        assert time.monotonic() - start >= 0.3
        start = time.monotonic()
        client.generate()
        assert time.monotonic() - start < 0.3  # generation does not wait on health


def test_only_loopback() -> None:
    with pytest.raises(ValueError, match="host must be a loopback address"):
        SimulatedEngine(EngineConfig("vllm"), host="0.0.0.0")
    with pytest.raises(ValueError, match="dialect must be one of vllm, sglang"):
        EngineConfig("tgi")
    with pytest.raises(ValueError, match="kv_mib must be >= 0"):
        EngineConfig("vllm", kv_mib=-1)


def test_config_round_trips_through_the_command_line() -> None:
    from learnsched.testing.engine import _parser, config_from_args

    config = EngineConfig(
        "sglang", seed=3, weights_mib=1.5, weights_backup=False, refuse_busy=False, free_delay_s=0.2
    )
    assert config_from_args(_parser().parse_args(config_argv(config))) == config
    faulty = EngineConfig(
        "vllm", queue_while_asleep=False, sleep_modes=False, gauge_lag_s=0.1, max_model_len=512
    )
    argv = config_argv(faulty)
    assert "--no-queue-while-asleep" in argv
    assert config_from_args(_parser().parse_args(argv)) == faulty
    assert EngineConfig("vllm").queue_while_asleep is True  # vLLM's own behaviour
    assert EngineConfig("sglang").queue_while_asleep is False


def test_process_holds_real_memory_and_frees_it_when_parked() -> None:
    config = EngineConfig("sglang", weights_mib=32, kv_mib=64, token_s=0)
    with EngineProcess(config, lifetime_s=60) as engine:
        client = Client(engine.url)
        device = SimulatedDeviceReader(engine.url)
        awake = read_host_memory(engine.pid, children=False).pss
        assert device.processes()[0].used_bytes == (32 + 64 + 2) * MIB
        client.json("POST", "/release_memory_occupation", {"tags": ["kv_cache"]})
        parked = read_host_memory(engine.pid, children=False).pss
        assert awake - parked >= 48 * MIB  # the KV cache's pages went back to the OS
        assert device.memory().used == (32 + 2) * MIB
        client.json("POST", "/resume_memory_occupation", {"tags": ["kv_cache"]})
        assert read_host_memory(engine.pid, children=False).pss - parked >= 48 * MIB


def test_module_command_line(tmp_path: Path) -> None:
    command = engine_command(EngineConfig("vllm"), lifetime_s=30)
    assert command[1:3] == ["-m", "learnsched.testing.engine"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT ")
        assert Client(f"http://127.0.0.1:{line.split()[1]}").complete()
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stdout is not None
        process.stdout.close()
    bad = run_python(
        ["-m", "learnsched.testing.engine", "--dialect", "vllm", "--host", "10.0.0.1"],
        cwd=tmp_path,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "learnsched.testing.engine: host must be a loopback address (127.0.0.1, ::1), got "
        + repr("10.0.0.1")
    ]
    assert sys.executable  # the child ran under this interpreter


def test_cuda_device_needs_torch_and_a_gpu() -> None:
    torch = pytest.importorskip("torch", reason="a CUDA engine needs torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: covered by the gpu-marked test")
    with pytest.raises((RuntimeError, AssertionError, AttributeError), match=r"(?i)cuda|nvidia"):
        SimulatedEngine(EngineConfig("vllm", device="cuda"))


@pytest.mark.gpu
def test_cuda_engine_holds_device_memory() -> None:
    torch = pytest.importorskip("torch", reason="a CUDA engine needs torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    config = EngineConfig("vllm", device="cuda", weights_mib=256, kv_mib=256, token_s=0)
    with SimulatedEngine(config) as engine:
        client = Client(engine.url)
        before = client.complete()
        free_awake = torch.cuda.mem_get_info()[0]
        client.call("POST", "/sleep?level=1")
        assert torch.cuda.mem_get_info()[0] - free_awake >= 400 * MIB
        client.call("POST", "/wake_up")
        assert client.complete() == before
