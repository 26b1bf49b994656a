"""The strict simulated engine fails as vLLM 0.33 and SGLang 0.5.23 do."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from learnsched.testing import EngineConfig, SimulatedEngine
from learnsched.testing.engine import _parser, config_argv, config_from_args

from engine_support import PROMPT, Client, strict_engine


def completion(tokens: int = 6, **extra: object) -> dict[str, Any]:
    return {"model": "sim-model", "prompt": PROMPT, "max_tokens": tokens, "temperature": 0, **extra}


def generate(tokens: int = 6) -> dict[str, Any]:
    return {"text": PROMPT, "sampling_params": {"max_new_tokens": tokens, "temperature": 0}}


def text_of(events: list[Any]) -> str:
    return "".join(e["choices"][0]["text"] for e in events if e != "[DONE]" and e["choices"])


@contextmanager
def strict(dialect: str, **options: object) -> Iterator[tuple[SimulatedEngine, Client]]:
    config = EngineConfig.strict(dialect, **{"token_s": 0.001, "slow_health_s": 0.0, **options})
    with SimulatedEngine(config) as engine:
        yield engine, Client(engine.url)


class Background:
    """A call on a thread; its result (or exception) once joined."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                self.result = call()
            except BaseException as err:  # noqa: BLE001 - handed to the test
                self.error = err

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout_s: float = 10.0) -> Any:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the call never returned"
        if self.error is not None:
            raise self.error
        return self.result


def assert_dead(engine: SimulatedEngine, client: Client, reason: str) -> None:
    assert engine.death is not None
    assert re.search(reason, engine.death), engine.death
    end = time.monotonic() + 5
    while True:  # it stops listening, as a dead server's port does
        try:
            client.call("GET", "/sim/state")
        except OSError:
            return
        assert time.monotonic() < end, "a dead engine still answers"
        time.sleep(0.01)


# --- SGLang ------------------------------------------------------------------------------
def test_sglang_generation_on_released_memory_kills_the_server() -> None:
    with strict("sglang") as (engine, client):
        client.json("POST", "/release_memory_occupation", {})
        with pytest.raises(ConnectionError):
            client.call("POST", "/generate", generate())
        assert_dead(engine, client, "released.*illegal memory access")


def test_sglang_health_on_released_memory_kills_the_server() -> None:
    with strict("sglang") as (engine, client):
        assert client.call("GET", "/health")[0] == 200
        client.json("POST", "/release_memory_occupation", {"tags": ["kv_cache"]})
        with pytest.raises(ConnectionError):
            client.call("GET", "/health")
        assert_dead(engine, client, "illegal memory access")


def test_sglang_busy_release_kills_the_server() -> None:
    with strict("sglang", token_s=0.02) as (engine, client):
        running = Background(lambda: client.call("POST", "/generate", generate(50)))
        client.wait_for(lambda s: s["running"] == 1)
        with pytest.raises(ConnectionError):
            client.call("POST", "/release_memory_occupation", {})
        assert_dead(engine, client, "AssertionError.*only when server is idle")
        with pytest.raises(ConnectionError):  # the in-flight request dies with the server
            running.join()


def test_sglang_resume_of_a_tag_never_released_kills_the_server() -> None:
    with strict("sglang") as (engine, client):
        client.json("POST", "/release_memory_occupation", {"tags": ["kv_cache"]})
        with pytest.raises(ConnectionError):
            client.call("POST", "/resume_memory_occupation", {"tags": ["weights"]})
        assert_dead(engine, client, "KeyError.*'weights'")


def test_sglang_pause_release_resume_continue_holds_arrivals_invisibly() -> None:
    with strict("sglang") as (engine, client):
        before = client.json("POST", "/generate", generate())["text"]
        client.json("POST", "/pause_generation", {"mode": "abort"})
        client.json("POST", "/release_memory_occupation", {})
        held = Background(lambda: client.json("POST", "/generate", generate()))
        health = Background(lambda: client.call("GET", "/health"))
        client.wait_for(lambda s: s["held"] == 2)
        assert client.gauges() == (0.0, 0.0)  # the tokenizer manager holds them: unseen
        client.json("POST", "/resume_memory_occupation", {})
        time.sleep(0.05)
        assert held.thread.is_alive()  # still paused: resumed memory does not unpause
        client.json("POST", "/continue_generation", {})
        assert held.join()["text"] == before
        assert health.join()[0] == 200
        assert engine.death is None


def test_sglang_pause_abort_ends_in_flight_streams_retract_keeps_them_queued() -> None:
    with strict("sglang", token_s=0.01) as (engine, client):
        stream = Background(lambda: client.stream("/generate", generate(100)))
        client.wait_for(lambda s: s["running"] == 1)
        client.json("POST", "/pause_generation", {})  # mode abort, the default
        events = stream.join()
        assert events[-1] == "[DONE]"
        assert events[-2]["meta_info"]["finish_reason"]["type"] == "abort"
        client.json("POST", "/continue_generation", {})
        stream = Background(lambda: client.stream("/generate", generate(100)))
        client.wait_for(lambda s: s["running"] == 1)
        client.json("POST", "/pause_generation", {"mode": "retract"})
        client.wait_for(lambda s: s["waiting"] == 1 and s["running"] == 0)
        assert client.call("POST", "/pause_generation", {"mode": "later"})[0] == 400
        client.json("POST", "/continue_generation", {})
        events = stream.join()
        assert events[-2]["meta_info"]["finish_reason"]["type"] == "length"
        # A retracted request still waits in the scheduler: a release then is fatal.
        stream = Background(lambda: client.stream("/generate", generate(100)))
        client.wait_for(lambda s: s["running"] == 1)
        client.json("POST", "/pause_generation", {"mode": "retract"})
        client.wait_for(lambda s: s["waiting"] == 1)
        with pytest.raises(ConnectionError):
            client.call("POST", "/release_memory_occupation", {})
        assert_dead(engine, client, "only when server is idle")


def test_sglang_server_info_new_route_full_precision_and_deprecated_route() -> None:
    with strict("sglang", weights_mib=1000.0, metrics=False) as (_, client):
        info = client.json("GET", "/server_info")
        assert info["internal_states"][0]["memory_usage"]["weight"] == 0.977  # GB, 3 decimals
        assert info["enable_metrics"] is False
        assert info["enable_deterministic_inference"] is False
        assert client.state()["deprecated_calls"] == 0
        client.json("GET", "/get_server_info")
        assert client.state()["deprecated_calls"] == 1
        assert client.call("GET", "/metrics")[0] == 404  # no --enable-metrics


def test_strict_sglang_health_takes_a_second() -> None:
    with SimulatedEngine(EngineConfig.strict("sglang", token_s=0.0)) as engine:
        start = time.monotonic()
        assert Client(engine.url).call("GET", "/health")[0] == 200
        assert time.monotonic() - start >= 1.0


# --- vLLM --------------------------------------------------------------------------------
def test_vllm_queues_requests_while_asleep_unseen_by_the_gauges() -> None:
    with strict("vllm") as (engine, client):
        before = text_of(client.stream("/v1/completions", completion()))
        assert client.call("POST", "/sleep?level=1")[0] == 200
        assert client.json("GET", "/is_sleeping") == {"is_sleeping": True}
        queued = Background(lambda: client.stream("/v1/completions", completion()))
        client.wait_for(lambda s: s["held"] == 1)
        assert client.gauges() == (0.0, 0.0)
        assert client.call("GET", "/health")[0] == 200  # vLLM's health answers while asleep
        client.call("POST", "/wake_up")
        assert text_of(queued.join()) == before  # no 503: it waited, then ran
        assert engine.death is None


def test_vllm_sleep_default_mode_aborts_in_flight_streams() -> None:
    with strict("vllm", token_s=0.01) as (_, client):
        stream = Background(lambda: client.stream("/v1/completions", completion(200)))
        client.wait_for(lambda s: s["running"] == 1)
        assert client.call("POST", "/sleep?level=1")[0] == 200  # mode=abort
        events = stream.join()
        assert events[-1] == "[DONE]"  # the stream still ends normally
        content = [e for e in events[:-1] if e["choices"]]
        assert content[-1]["choices"][0]["finish_reason"] == "abort"
        assert len(text_of(events).split()) < 200
        assert client.state()["aborted"] == 1
        client.call("POST", "/wake_up")


def test_vllm_sleep_mode_wait_drains_and_level_0_only_pauses() -> None:
    # 60 tokens of 20 ms: long enough that a loaded machine still sees it running.
    with strict("vllm", token_s=0.02) as (_, client):
        stream = Background(lambda: client.stream("/v1/completions", completion(60)))
        client.wait_for(lambda s: s["running"] == 1)
        assert client.call("POST", "/sleep?level=1&mode=wait")[0] == 200
        assert client.state()["running"] == 0  # drained before the sleep answered
        events = stream.join()
        content = [e for e in events[:-1] if e["choices"]]
        assert content[-1]["choices"][0]["finish_reason"] == "length"
        assert len(text_of(events).split()) == 60
        client.call("POST", "/wake_up")
        assert client.call("POST", "/sleep?level=1&mode=soon")[0] == 400
        held = client.state()["device_bytes"]
        assert client.call("POST", "/sleep?level=0")[0] == 200
        assert client.json("GET", "/is_sleeping") == {"is_sleeping": True}
        assert client.state()["device_bytes"] == held  # paused, nothing freed
        queued = Background(lambda: client.stream("/v1/completions", completion()))
        client.wait_for(lambda s: s["held"] == 1)
        client.call("POST", "/wake_up")
        assert queued.join()[-1] == "[DONE]"
        assert client.json("GET", "/is_sleeping") == {"is_sleeping": False}


def test_vllm_usage_only_final_event() -> None:
    with strict("vllm") as (_, client):
        events = client.stream("/v1/completions", completion(4))
        assert events[-1] == "[DONE]"
        assert events[-2]["choices"] == []
        assert events[-2]["usage"]["completion_tokens"] == 4
    with SimulatedEngine(EngineConfig("vllm", token_s=0)) as engine:
        client = Client(engine.url)
        assert client.stream("/v1/completions", completion(4))[-2]["choices"] != []
        asked = completion(4, stream_options={"include_usage": True})
        assert client.stream("/v1/completions", asked)[-2]["choices"] == []


# --- both --------------------------------------------------------------------------------
@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_metrics_freeze_while_parked(dialect: str) -> None:
    """SGLang's gauges keep the value they had when it paused: a request aborted by the
    pause still shows as running until the engine is back. vLLM's pause emits its own
    stats: the aborted request is gone from its gauges at once."""
    pause = "/sleep?level=1" if dialect == "vllm" else "/pause_generation"
    for frozen in (False, True) if dialect == "sglang" else (False,):
        options = {"frozen_metrics": frozen} if dialect == "sglang" else {}
        with strict(dialect, token_s=0.01, **options) as (_, client):
            path, body = (
                ("/v1/completions", completion(200))
                if dialect == "vllm"
                else ("/generate", generate(200))
            )
            stream = Background(lambda c=client, p=path, b=body: c.stream(p, b))
            client.wait_for(lambda s: s["running"] == 1)
            client.call("POST", pause, {})
            stream.join()
            client.wait_for(lambda s: s["running"] == 0)
            assert client.gauges() == ((1.0, 0.0) if frozen else (0.0, 0.0))
            client.call("POST", "/wake_up" if dialect == "vllm" else "/continue_generation", {})
            assert client.gauges() == (0.0, 0.0)


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_greedy_text_varies_with_the_batch_unless_served_alone(dialect: str) -> None:
    path, body = (
        ("/v1/completions", completion(24)) if dialect == "vllm" else ("/generate", generate(24))
    )

    def answer(client: Client) -> str:
        data = client.json("POST", path, body)
        return str(data["choices"][0]["text"] if dialect == "vllm" else data["text"])

    for variant in (True, False):
        with strict(dialect, token_s=0.002, max_running=8, batch_variant=variant) as (_, client):
            alone = answer(client)
            assert answer(client) == alone  # served alone: deterministic
            crowd = [Background(lambda c=client: answer(c)) for _ in range(6)]
            answers = {c.join() for c in crowd}
            assert (answers != {alone}) is variant


def test_strict_flags_each_named_in_help_and_round_trip() -> None:
    text = _parser().format_help()
    for flag in (
        "--strict", "--die-on-released-generation", "--die-on-busy-release",
        "--die-on-unreleased-resume", "--queue-while-asleep", "--sleep-modes",
        "--frozen-metrics", "--batch-variant", "--batch-invariant", "--force-include-usage",
        "--no-metrics", "--slow-health",
    ):  # fmt: skip
        assert flag in text
    for dialect in ("vllm", "sglang"):
        config = EngineConfig.strict(dialect, seed=4)
        assert config_from_args(_parser().parse_args(config_argv(config))) == config
        assert (
            config_from_args(
                _parser().parse_args(["--dialect", dialect, "--strict", "--seed", "4"])
            )
            == config
        )
    invariant = _parser().parse_args(["--dialect", "vllm", "--strict", "--batch-invariant"])
    assert config_from_args(invariant).batch_variant is False
    slow = _parser().parse_args(["--dialect", "sglang", "--strict", "--slow-health", "0.2"])
    assert config_from_args(slow).slow_health_s == 0.2
    with pytest.raises(ValueError, match="queue_while_asleep is a behaviour of the other engine"):
        EngineConfig("sglang", queue_while_asleep=True)
    with pytest.raises(ValueError, match="die_on_busy_release is a behaviour of the other engine"):
        EngineConfig("vllm", die_on_busy_release=True)


def test_strict_sglang_process_exits_naming_the_fault() -> None:
    with strict_engine("sglang") as engine:
        client = Client(engine.url)
        client.json("POST", "/release_memory_occupation", {})
        with pytest.raises(ConnectionError):
            client.call("POST", "/v1/completions", completion())
        engine.process.wait(timeout=10)
        assert not engine.alive()
        assert engine.returncode == 1
        assert "the server died" in engine.stderr_text()
        assert "illegal memory access" in engine.stderr_text()
