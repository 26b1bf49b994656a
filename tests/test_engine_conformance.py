"""The simulated engine answers as vLLM does: each case sends the same requests to the
simulated vLLM and to a real one (the shared ``vllm_sleep`` server: dev mode and sleep
mode, a real control plane) and checks the parts that must match, the same way for both:
statuses, JSON keys, stream events' fields, error ``type``/``param``, gauge names and
labels, the control routes' bodies and what a park does to requests in flight.

The real parametrization is ``real_engine`` (it skips without vLLM). Cases park and pause
the shared server: run this file alone against it (``flock /tmp/rv/sleep.lock``); each
case leaves it awake and unpaused. What is left different by design is in
``docs/simulated-engine.md``.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from learnsched.testing import EngineConfig, SimulatedEngine

from engine_support import Client
from vllm_support import MAX_MODEL_LEN

# A request still decoding when a control call follows it by IN_FLIGHT_S (enough for it to
# reach the engine): vLLM's CPU build decodes its LONG tokens in about 0.9 s (the simulated
# engine: 2 ms a token), and the prompt must fit the context. Its events are no sign of where
# it is (a busy front end may deliver them all at the end), and on a loaded machine the
# control call may reach the engine after the request finished: the case then starts
# again, up to TRIES times.
LONG = MAX_MODEL_LEN - 32
IN_FLIGHT_S = 0.1
TRIES = 8
ERROR_KEYS = {"message", "type", "param", "code"}
GAUGES = {
    "vllm:num_requests_running": {"engine", "model_name"},
    "vllm:num_requests_waiting": {"engine", "model_name"},
    "vllm:num_requests_waiting_by_reason": {"engine", "model_name", "reason"},
    "vllm:engine_sleep_state": {"engine", "model_name", "sleep_state"},
}
SAMPLE = re.compile(r"^(?P<name>[^\s{]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.MULTILINE)


@dataclass
class Engine:
    """One engine under test: its address, client and the model it serves."""

    url: str
    model: str

    @property
    def client(self) -> Client:
        """A client for it."""
        return Client(self.url)

    def completion(self, tokens: int = 4, **extra: object) -> dict[str, Any]:
        """A greedy completion request of ``tokens`` tokens exactly."""
        return {"model": self.model, "prompt": "hello world", "max_tokens": tokens,
                "temperature": 0, "ignore_eos": True, **extra}  # fmt: skip

    def chat(self, tokens: int = 4, **extra: object) -> dict[str, Any]:
        """A greedy chat request of ``tokens`` tokens exactly."""
        return {"model": self.model, "messages": [{"role": "user", "content": "hello"}],
                "max_tokens": tokens, "temperature": 0, "ignore_eos": True, **extra}  # fmt: skip

    def post(self, path: str, body: object = None) -> tuple[int, Any]:
        """One POST: status and decoded JSON (``None``: an empty body)."""
        status, data = self.client.call("POST", path, body)
        return status, json.loads(data) if data else None

    def get(self, path: str) -> Any:
        """One GET that must answer 200: its JSON."""
        return self.client.json("GET", path)

    def gauges(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """Every vLLM gauge sample of ``/metrics``: (name, labels) -> value."""
        text = self.client.call("GET", "/metrics")[1].decode()
        samples = {}
        for match in SAMPLE.finditer(text):
            if match["name"] in GAUGES:
                labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
                samples[match["name"], labels] = float(match["value"])
        return samples

    def gauge(self, name: str) -> float:
        """The one sample of gauge ``name``."""
        values = [value for (each, _), value in self.gauges().items() if each == name]
        assert len(values) == 1, (name, values)
        return values[0]

    def settles(self, check: Callable[[], bool], timeout_s: float = 3.0) -> None:
        """``check`` holds within ``timeout_s`` (the gauges reach the front end after the
        engine's next step)."""
        assert eventually(check, timeout_s), "never settled"


def eventually(check: Callable[[], bool], timeout_s: float) -> bool:
    """Whether ``check`` holds within ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


class Stream:
    """A request read on a thread: its stream's events (not ``streamed``: its answer, as
    the one event)."""

    def __init__(self, url: str, path: str, body: dict[str, Any], streamed: bool) -> None:
        self.events: list[Any] = []
        self.status = 0
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        body = {**body, "stream": streamed}
        self.thread = threading.Thread(target=self._read, args=(path, body), daemon=True)
        self.thread.start()

    def _read(self, path: str, body: dict[str, Any]) -> None:
        headers = {"Content-Type": "application/json"}
        self.connection.request("POST", path, json.dumps(body), headers)
        response = self.connection.getresponse()
        self.status = response.status
        if not body["stream"]:
            self.events.append(json.loads(response.read()))
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data: "):
                data = line[len("data: ") :]
                self.events.append(data if data == "[DONE]" else json.loads(data))
        self.connection.close()

    def join(self, timeout_s: float = 30.0) -> list[Any]:
        """Every event, once the request ended."""
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the stream never ended"
        return self.events

    @property
    def done(self) -> bool:
        """Whether the stream ended."""
        return not self.thread.is_alive()


class Background:
    """A call on a thread; its result once joined."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.result: Any = None
        self.thread = threading.Thread(target=lambda: setattr(self, "result", call()))
        self.thread.daemon = True
        self.thread.start()

    def join(self, timeout_s: float = 30.0) -> Any:
        """The call's result."""
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the call never returned"
        return self.result


@pytest.fixture(
    params=[
        pytest.param("simulated"),
        pytest.param("vllm", marks=pytest.mark.real_engine),
    ]
)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """The simulated vLLM (the real one's context length), or the shared real one; left
    awake and unpaused."""
    if request.param == "simulated":
        config = EngineConfig("vllm", token_s=0.002, max_model_len=MAX_MODEL_LEN)
        with SimulatedEngine(config) as sim:
            yield Engine(sim.url, config.model)
        return
    server = request.getfixturevalue("vllm_sleep")
    real = Engine(server.url, server.model_name)
    try:
        yield real
    finally:
        real.post("/wake_up")
        real.post("/resume")
    assert real.get("/is_sleeping") == {"is_sleeping": False}
    assert real.get("/is_paused") == {"is_paused": False}


def finish(events: list[Any]) -> str:
    """How a stream ended: its last content event's ``finish_reason``."""
    return str(content(events)[-1]["choices"][0]["finish_reason"])


Missed = Callable[["Engine", "Stream", Any], bool]


def in_flight(
    engine: Engine, path: str, body: object, missed: Missed, streamed: bool = True
) -> tuple[Stream, Any]:
    """``POST path`` while a long request decodes: the request and the call's answer. When
    ``missed`` says the call did not reach the request in flight (it finished first, or
    reached the engine after the call), the engine is woken and resumed and the case
    starts again. A stream keeps vLLM's front end busy with its events, which delays the
    call: ``streamed=False`` where the stream's shape is not the point."""
    for _ in range(TRIES):
        stream = Stream(engine.url, "/v1/completions", engine.completion(LONG), streamed)
        if streamed:  # its first event: it decodes now, neither queued nor held
            eventually(lambda s=stream: bool(s.events) or s.done, 5.0)
        else:
            time.sleep(IN_FLIGHT_S)
        answer = engine.post(path, body)
        if not missed(engine, stream, answer):
            return stream, answer
        engine.post("/wake_up")
        engine.post("/resume")
        stream.join()
    raise AssertionError(f"{TRIES} requests of {LONG} tokens missed {path}")


def not_aborted(engine: Engine, stream: Stream, answer: Any) -> bool:
    """The stream ran to its length, or is held (it came after the call)."""
    stream.thread.join(5.0)
    return not stream.done or finish(stream.events) == "length"


def not_kept(engine: Engine, stream: Stream, answer: Any) -> bool:
    """The stream ended, or the gauges do not count it (held: it came after the call)."""
    stream.thread.join(0.3)
    return stream.done or not eventually(
        lambda: engine.gauge("vllm:num_requests_running") == 1.0, 3.0
    )


def not_waited(engine: Engine, stream: Stream, answer: Any) -> bool:
    """The stream is held, not finished (it came after the call)."""
    stream.thread.join(5.0)
    return not stream.done


def content(events: list[Any]) -> list[dict[str, Any]]:
    """A stream's events with a choice (not ``[DONE]``, not the usage-only one)."""
    return [e for e in events if e != "[DONE]" and e["choices"]]


def sleep_states(engine: Engine) -> dict[str, float]:
    """``vllm:engine_sleep_state`` by its ``sleep_state`` label."""
    return {
        dict(labels)["sleep_state"]: value
        for (name, labels), value in engine.gauges().items()
        if name == "vllm:engine_sleep_state"
    }


def error_of(engine: Engine, path: str, body: object, status: int) -> dict[str, Any]:
    """The nested error a bad request answers (with ``status``)."""
    got, answer = engine.post(path, body)
    assert got == status, answer
    assert set(answer) == {"error"}
    assert set(answer["error"]) == ERROR_KEYS
    assert answer["error"]["code"] == status
    error: dict[str, Any] = answer["error"]
    return error


# --- generation ----------------------------------------------------------------------------
def test_completion_answer(engine: Engine) -> None:
    status, answer = engine.post("/v1/completions", engine.completion(4))
    assert status == 200
    assert {"id", "object", "created", "model", "choices", "usage"} <= set(answer)
    assert answer["id"].startswith("cmpl-")
    assert (answer["object"], answer["model"]) == ("text_completion", engine.model)
    assert isinstance(answer["created"], int)
    choice = answer["choices"][0]
    assert {"index", "text", "logprobs", "finish_reason", "stop_reason"} <= set(choice)
    assert choice["finish_reason"] == "length"
    usage = answer["usage"]
    assert usage["completion_tokens"] == 4
    assert usage["total_tokens"] == usage["prompt_tokens"] + 4


def test_chat_answer(engine: Engine) -> None:
    status, answer = engine.post("/v1/chat/completions", engine.chat(3))
    assert status == 200
    assert answer["id"].startswith("chatcmpl-")
    assert answer["object"] == "chat.completion"
    choice = answer["choices"][0]
    assert {"index", "message", "logprobs", "finish_reason"} <= set(choice)
    assert choice["message"]["role"] == "assistant"
    assert answer["usage"]["completion_tokens"] == 3


def test_completion_stream_events(engine: Engine) -> None:
    events = engine.client.stream("/v1/completions", engine.completion(5))
    assert events[-1] == "[DONE]"
    chunks = content(events)
    assert len(chunks) == 5
    assert len({(e["id"], e["created"]) for e in chunks}) == 1  # one id for the stream
    for event in chunks:
        assert {"id", "object", "created", "model", "choices"} <= set(event)
        assert event["object"] == "text_completion"
        assert {"index", "text", "logprobs", "finish_reason"} <= set(event["choices"][0])
    assert [e["choices"][0]["finish_reason"] for e in chunks] == [None] * 4 + ["length"]


def test_chat_stream_opens_with_the_role(engine: Engine) -> None:
    events = engine.client.stream("/v1/chat/completions", engine.chat(3))
    chunks = content(events)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all("content" in e["choices"][0]["delta"] for e in chunks[1:])
    assert len(chunks) == 4
    assert {e["object"] for e in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["id"].startswith("chatcmpl-")


def test_stream_usage_event(engine: Engine) -> None:
    asked = engine.completion(3, stream_options={"include_usage": True})
    events = engine.client.stream("/v1/completions", asked)
    assert events[-2]["choices"] == []
    assert {"prompt_tokens", "completion_tokens", "total_tokens"} <= set(events[-2]["usage"])
    assert events[-2]["usage"]["completion_tokens"] == 3


def test_invocations_serve_a_completion_or_a_chat(engine: Engine) -> None:
    status, answer = engine.post("/invocations", engine.completion(2))
    assert (status, answer["object"]) == (200, "text_completion")
    status, answer = engine.post("/invocations", engine.chat(2))
    assert (status, answer["object"]) == (200, "chat.completion")


# --- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "status", "kind", "param"),
    [
        ({"model": "no-such-model"}, 404, "NotFoundError", "model"),
        ({"max_tokens": 0}, 400, "BadRequestError", "max_tokens"),
        ({"max_tokens": MAX_MODEL_LEN + 1}, 400, "BadRequestError", "max_tokens"),
        ({"max_tokens": "many"}, 400, "Bad Request", "body.max_tokens"),
        ({"prompt": ""}, 400, "BadRequestError", "prompt"),
        ({"prompt": "hello " * (MAX_MODEL_LEN + 8)}, 400, "BadRequestError", "input_tokens"),
    ],
    ids=["unknown-model", "no-tokens", "too-many-tokens", "not-a-count", "no-prompt", "too-long"],
)
def test_bad_generation_requests(
    engine: Engine, change: dict[str, Any], status: int, kind: str, param: str
) -> None:
    error = error_of(engine, "/v1/completions", {**engine.completion(), **change}, status)
    assert (error["type"], error["param"]) == (kind, param)


def test_a_body_that_is_not_json_and_a_missing_route(engine: Engine) -> None:
    parts = urlsplit(engine.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    headers = {"Content-Type": "application/json"}
    connection.request("POST", "/v1/completions", "{oops", headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 400
    assert set(answer["error"]) == ERROR_KEYS
    assert answer["error"]["type"] == "Bad Request"
    assert answer["error"]["param"].startswith("body")
    status, data = engine.client.call("GET", "/no-such-route")
    assert (status, json.loads(data)) == (404, {"detail": "Not Found"})


# --- models, metrics, small routes ---------------------------------------------------------
def test_models_list_the_context_length(engine: Engine) -> None:
    listing = engine.get("/v1/models")
    assert listing["object"] == "list"
    card = listing["data"][0]
    keys = {"id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission"}
    assert keys <= set(card)
    assert (card["id"], card["owned_by"], card["max_model_len"]) == (
        engine.model, "vllm", MAX_MODEL_LEN,
    )  # fmt: skip


def test_metrics_names_and_labels(engine: Engine) -> None:
    gauges = engine.gauges()
    for name, labels in GAUGES.items():
        seen = [got for each, got in gauges if each == name]
        assert seen, name
        assert all({key for key, _ in got} == labels for got in seen), (name, seen)
    named = {dict(got)["model_name"] for _, got in gauges}
    assert named == {engine.model}
    reasons = {dict(got)["reason"] for _, got in gauges if "reason" in dict(got)}
    assert reasons == {"capacity", "deferred"}
    assert sleep_states(engine) == {"awake": 1.0, "weights_offloaded": 0.0, "discard_all": 0.0}


def test_version_ping_and_tokenize(engine: Engine) -> None:
    assert isinstance(engine.get("/version")["version"], str)
    assert engine.client.call("GET", "/ping")[0] == 200
    status, answer = engine.post("/tokenize", {"model": engine.model, "prompt": "hello world"})
    assert status == 200
    assert set(answer) == {"count", "max_model_len", "tokens", "token_strs"}
    assert answer["count"] == len(answer["tokens"]) > 0
    assert answer["max_model_len"] == MAX_MODEL_LEN


# --- sleep, wake, pause ----------------------------------------------------------------------
@pytest.mark.parametrize(("level", "state"), [(1, "weights_offloaded"), (2, "discard_all")])
def test_sleep_and_wake_bodies(engine: Engine, level: int, state: str) -> None:
    assert engine.post(f"/sleep?level={level}") == (200, {"status": "sleeping", "level": level})
    assert engine.get("/is_sleeping") == {"is_sleeping": True}
    assert engine.get("/is_paused") == {"is_paused": True}  # a sleep pauses first
    assert sleep_states(engine) == {
        "awake": 0.0, "weights_offloaded": float(level == 1), "discard_all": float(level == 2)
    }  # fmt: skip
    assert engine.post(f"/sleep?level={level}")[0] == 200  # already asleep: a no-op
    woken = engine.post("/wake_up?tags=weights")
    assert woken == (200, {"status": "sleeping", "tags": ["weights"]})
    assert engine.get("/is_sleeping") == {"is_sleeping": True}  # the KV cache still sleeps
    assert sleep_states(engine)[state] == 1.0
    assert engine.post("/wake_up") == (200, {"status": "awake", "tags": None})
    assert engine.get("/is_sleeping") == {"is_sleeping": False}
    assert engine.get("/is_paused") == {"is_paused": False}
    assert sleep_states(engine) == {"awake": 1.0, "weights_offloaded": 0.0, "discard_all": 0.0}


def test_level_0_only_pauses(engine: Engine) -> None:
    assert engine.post("/sleep?level=0") == (200, {"status": "sleeping", "level": 0})
    assert engine.get("/is_sleeping") == {"is_sleeping": True}
    assert engine.get("/is_paused") == {"is_paused": True}
    assert sleep_states(engine) == {"awake": 0.0, "weights_offloaded": 0.0, "discard_all": 0.0}
    assert engine.post("/wake_up") == (200, {"status": "awake", "tags": None})
    assert engine.get("/is_paused") == {"is_paused": False}


def test_pause_resume_and_is_paused(engine: Engine) -> None:
    assert engine.post("/pause") == (200, {"status": "paused"})
    assert engine.get("/is_paused") == {"is_paused": True}
    assert engine.get("/is_sleeping") == {"is_sleeping": True}  # vLLM: paused reads as asleep
    assert sleep_states(engine)["awake"] == 1.0  # a pause is no sleep to the gauge
    assert engine.post("/resume") == (200, {"status": "resumed"})
    assert engine.get("/is_paused") == {"is_paused": False}
    assert engine.post("/resume") == (200, {"status": "resumed"})  # not paused: a no-op
    engine.post("/pause")
    assert engine.post("/wake_up") == (200, {"status": "awake", "tags": None})
    assert engine.get("/is_paused") == {"is_paused": False}  # every tag awake: resumed


@pytest.mark.parametrize(
    ("path", "param"),
    [("/sleep?mode=bogus", "query.mode"), ("/pause?mode=bogus", "query.mode"),
     ("/sleep?level=7", "query.level"), ("/sleep?level=deep", "query.level")],
)  # fmt: skip
def test_bad_control_queries_are_refused(engine: Engine, path: str, param: str) -> None:
    error = error_of(engine, path, None, 400)
    assert (error["type"], error["param"]) == ("Bad Request", param)
    assert engine.get("/is_sleeping") == {"is_sleeping": False}


# --- what a park does to requests ------------------------------------------------------------
def test_a_request_sent_while_asleep_waits_for_the_wake_up(engine: Engine) -> None:
    engine.post("/sleep?level=1")
    queued = Background(lambda: engine.post("/v1/completions", engine.completion(3)))
    time.sleep(0.5)
    assert queued.thread.is_alive()  # queued, not refused
    running = engine.gauge("vllm:num_requests_running")
    waiting = engine.gauge("vllm:num_requests_waiting")
    assert (running, waiting) == (0.0, 0.0)  # and no gauge counts it
    engine.post("/wake_up")
    status, answer = queued.join()
    assert status == 200
    assert answer["choices"][0]["finish_reason"] == "length"


def test_an_aborting_sleep_ends_streams_and_empties_the_gauges(engine: Engine) -> None:
    stream, answer = in_flight(engine, "/sleep?level=1", None, not_aborted)  # mode=abort
    assert answer == (200, {"status": "sleeping", "level": 1})
    events = stream.join()
    assert (stream.status, events[-1]) == (200, "[DONE]")  # the stream still ends normally
    assert finish(events) == "abort"
    engine.settles(lambda: engine.gauge("vllm:num_requests_running") == 0.0)  # asleep


def test_a_keeping_sleep_freezes_requests_until_the_wake_up(engine: Engine) -> None:
    kept, answer = in_flight(engine, "/sleep?level=1&mode=keep", None, not_kept, False)
    assert answer == (200, {"status": "sleeping", "level": 1})
    assert engine.gauge("vllm:num_requests_running") == 1.0  # it is kept
    engine.post("/wake_up")
    (whole,) = kept.join()
    assert whole["choices"][0]["finish_reason"] == "length"
    assert whole["usage"]["completion_tokens"] == LONG


def test_a_waiting_sleep_lets_requests_finish_first(engine: Engine) -> None:
    drained, answer = in_flight(engine, "/sleep?level=1&mode=wait", None, not_waited, False)
    assert answer == (200, {"status": "sleeping", "level": 1})
    (whole,) = drained.join()  # answered while the engine sleeps: it finished first
    assert whole["choices"][0]["finish_reason"] == "length"
    assert whole["usage"]["completion_tokens"] == LONG
    assert engine.get("/is_sleeping") == {"is_sleeping": True}


def abort_held(engine: Engine, timeout_s: float = 5.0) -> Any:
    """``/abort_requests`` until it finds the request held by the pause (sent meanwhile)."""
    end = time.monotonic() + timeout_s
    while True:
        answer = engine.post("/abort_requests", {})
        if answer[1]["aborted"] or time.monotonic() > end:
            return answer
        time.sleep(0.05)


def test_abort_requests_ends_streams_and_held_requests(engine: Engine) -> None:
    stream, answer = in_flight(engine, "/abort_requests", {}, not_aborted)
    assert answer == (200, {"status": "aborted", "aborted": 1})
    assert finish(stream.join()) == "abort"
    assert engine.get("/is_paused") == {"is_paused": False}  # the scheduler runs on
    assert engine.post("/abort_requests", {"request_ids": ["a", "b"]})[1]["aborted"] == 2
    engine.post("/pause")
    held = Background(lambda: engine.post("/v1/completions", engine.completion(3)))
    assert abort_held(engine) == (200, {"status": "aborted", "aborted": 1})
    status, answer = held.join(timeout_s=5.0)  # answered while still paused
    assert (status, answer["choices"][0]["finish_reason"]) == (200, "abort")
    assert answer["usage"]["completion_tokens"] == 0
    engine.post("/resume")
    error = error_of(engine, "/abort_requests", [], 400)
    assert (error["message"], error["type"]) == (
        "Request body must be a JSON object",
        "Bad Request",
    )
