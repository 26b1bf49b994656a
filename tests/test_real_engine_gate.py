"""The gate in front of a real vLLM, through the real ``openai`` client: answers identical
direct and through the gate, a cancelled stream, every control route refused however it
is spelled, and the routes that count as arrivals (and the ones that do not).

The refusals run against the shared sleep server (dev mode: ``/pause``, ``/sleep`` ...
exist there) and leave it awake and unpaused; run them under
``flock /tmp/rv/sleep.lock`` beside other users of that server.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from learnsched.gate import Gate
from learnsched.gate.stats import GateCounts
from learnsched.serving.engines import Load, engine, load_of

from engine_support import raw_request

pytestmark = pytest.mark.real_engine

# Long enough that a stream is still decoding when a test acts on it (the model is tiny).
LONG_TOKENS = 480


def engine_json(url: str, path: str) -> Any:
    """``GET path`` straight from the engine, as JSON."""
    with urllib.request.urlopen(url + path, timeout=30) as answer:
        return json.load(answer)


def engine_load(url: str) -> Load:
    """The engine's own running and waiting gauges."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as answer:
        load = load_of(answer.read().decode(), engine("vllm").load_metrics)
    assert load is not None
    return load


def settled(gate: Gate) -> GateCounts:
    """The gate's counts once nothing is in flight."""
    deadline = time.monotonic() + 10.0
    while gate.load().running and time.monotonic() < deadline:
        time.sleep(0.01)
    return gate.counts()


def openai_client(url: str) -> Any:
    """The ``openai`` client for an OpenAI-compatible server at ``url``."""
    import openai

    return openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=60.0)


def stream_events(lines: Iterator[str]) -> list[Any]:
    """A stream's ``data:`` events, each without the fields that differ per request."""
    found: list[Any] = []
    for line in lines:
        if not line.startswith("data:"):
            continue
        payload = line.removeprefix("data:").strip()
        if payload == "[DONE]":
            found.append(payload)
            continue
        event = json.loads(payload)
        event.pop("id", None)
        event.pop("created", None)
        found.append(event)
    return found


def same_answer(direct: dict[str, Any], through: dict[str, Any]) -> None:
    """Two non-stream answers agree on everything but their id and creation time."""
    for answer in (direct, through):
        answer.pop("id", None)
        answer.pop("created", None)
    assert through == direct


@pytest.fixture
def dev_gate(vllm_dev: Any) -> Iterator[Gate]:
    """A gate in front of the shared dev-mode server."""
    with Gate(vllm_dev.url, "vllm") as gate:
        yield gate


@pytest.fixture
def sleep_gate(vllm_sleep: Any) -> Iterator[Gate]:
    """A gate in front of the shared sleep server, which is left awake and unpaused."""
    try:
        with Gate(vllm_sleep.url, "vllm") as gate:
            yield gate
    finally:
        if engine_json(vllm_sleep.url, "/is_paused")["is_paused"]:
            raw_request(vllm_sleep.url, "POST", "/resume")
        if engine_json(vllm_sleep.url, "/is_sleeping")["is_sleeping"]:
            raw_request(vllm_sleep.url, "POST", "/wake_up")


# --- transparency ---------------------------------------------------------------------------
def test_completions_and_chat_answer_the_same_through_the_gate(
    vllm_dev: Any, dev_gate: Gate
) -> None:
    model = vllm_dev.model_name
    asks: list[tuple[str, dict[str, Any]]] = [
        ("completions", {"prompt": "hello world", "max_tokens": 8}),
        ("chat", {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 8}),
    ]
    with openai_client(vllm_dev.url) as direct, openai_client(dev_gate.url) as through:
        for kind, ask in asks:
            theirs, mine = (
                (
                    client.completions if kind == "completions" else client.chat.completions
                ).with_raw_response.create(model=model, temperature=0, **ask)
                for client in (direct, through)
            )
            assert mine.status_code == theirs.status_code == 200
            assert mine.headers["content-type"] == theirs.headers["content-type"]
            same_answer(json.loads(theirs.text), json.loads(mine.text))
    counts = settled(dev_gate)
    assert (counts.arrivals, counts.completed, counts.failed) == (2, 2, 0)


@pytest.mark.parametrize("kind", ["completions", "chat"])
def test_streams_are_the_same_event_for_event_through_the_gate(
    vllm_dev: Any, dev_gate: Gate, kind: str
) -> None:
    ask: dict[str, Any] = {"model": vllm_dev.model_name, "max_tokens": 12, "temperature": 0,
                           "stream": True, "extra_body": {"ignore_eos": True}}  # fmt: skip
    if kind == "completions":
        ask["prompt"] = "hello world"
    else:
        ask["messages"] = [{"role": "user", "content": "hello"}]
    answers = []
    for url in (vllm_dev.url, dev_gate.url):
        with openai_client(url) as client:
            api = client.completions if kind == "completions" else client.chat.completions
            with api.with_streaming_response.create(**ask) as answer:
                assert answer.status_code == 200
                assert answer.headers["content-type"].startswith("text/event-stream")
                answers.append(stream_events(answer.iter_lines()))
    assert answers[1] == answers[0]
    assert answers[1][-1] == "[DONE]"
    assert len(answers[1]) > 12  # one event a token, then the end
    counts = settled(dev_gate)
    assert (counts.arrivals, counts.completed, counts.failed) == (1, 1, 0)


def test_error_statuses_and_bodies_are_the_engines_own(vllm_dev: Any, dev_gate: Gate) -> None:
    import openai

    bad: list[dict[str, Any]] = [
        {"model": "no-such-model", "prompt": "hello", "max_tokens": 4},
        {"model": vllm_dev.model_name, "prompt": "hello " * 600, "max_tokens": 4},  # too long
        {"model": vllm_dev.model_name, "prompt": "hello", "max_tokens": -1},
    ]
    for ask in bad:
        errors = []
        for url in (vllm_dev.url, dev_gate.url):
            with openai_client(url) as client, pytest.raises(openai.APIStatusError) as caught:
                client.completions.create(**ask)
            errors.append((caught.value.status_code, caught.value.body))
        assert errors[1] == errors[0]
        assert 400 <= errors[1][0] < 500
    counts = settled(dev_gate)
    assert (counts.rejected, counts.failed) == (len(bad), 0)


def test_a_client_that_cancels_mid_stream_is_counted_cancelled_and_the_engine_serves_on(
    vllm_sleep: Any, sleep_gate: Gate
) -> None:
    # The tiny model decodes a whole stream in about a second, and a client starved of CPU
    # can read its first events later than that: the engine is frozen (vLLM's
    # /pause?mode=keep) once the stream has begun, so the client surely leaves mid-stream.
    model, url = vllm_sleep.model_name, vllm_sleep.url
    ask: dict[str, Any] = {
        "model": model, "prompt": "hello", "max_tokens": LONG_TOKENS, "temperature": 0,
        "stream": True, "extra_body": {"ignore_eos": True},
    }  # fmt: skip
    ended = 0  # streams that ended before the pause, read to their end
    with openai_client(sleep_gate.url) as client:
        while True:
            stream = client.completions.create(**ask)
            assert len(list(itertools.islice(stream, 3))) == 3  # the stream has begun
            raw_request(url, "POST", "/pause?mode=keep")
            time.sleep(0.2)  # the gate forwards what was decoded before the pause
            if sleep_gate.load().running:
                break  # frozen mid-stream
            raw_request(url, "POST", "/resume")  # it had ended before the pause: again
            stream.close()
            ended += 1
            assert ended < 3, "every stream had ended before the engine was paused"
        stream.close()  # the client goes away mid-stream ...
        raw_request(url, "POST", "/resume")  # ... and the engine decodes on, for nobody
        deadline = time.monotonic() + 20.0
        while sleep_gate.counts().cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        counts = settled(sleep_gate)
        assert (counts.cancelled, counts.completed, counts.failed) == (1, ended, 0)
        # The gate hung up on the engine too, which stopped decoding the cancelled stream.
        deadline = time.monotonic() + 10.0
        while engine_load(url).running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine_load(url).running == 0
        answer = client.completions.create(
            model=model, prompt="hello", max_tokens=4, temperature=0,
            extra_body={"ignore_eos": True},
        )  # fmt: skip
    assert answer.choices[0].finish_reason == "length"
    assert settled(sleep_gate).completed == ended + 1


# --- what the gate refuses ------------------------------------------------------------------
# Each control route in the spellings a client could use to slip past a check by exact path.
SPELLINGS = [
    ("POST", "/pause"),
    ("POST", "/pause/"),
    ("POST", "//pause"),
    ("POST", "/./pause"),
    ("POST", "/v1/../pause"),
    ("POST", "/%70ause"),
    ("POST", "/%2e/pause"),
    ("POST", "/pause?mode=keep"),
    ("POST", "/abort_requests"),
    ("POST", "/abort_requests/"),
    ("POST", "/inference/v1/abort_requests"),
    ("POST", "/sleep/"),
    ("POST", "/sleep?level=1"),
    ("POST", "/%73leep"),
    ("POST", "/wake_up"),
    ("POST", "/collective_rpc"),
    ("POST", "/v1/load_lora_adapter"),
]


def test_control_routes_are_refused_in_every_spelling_and_streams_run_on(
    vllm_sleep: Any, sleep_gate: Gate
) -> None:
    with openai_client(sleep_gate.url) as client:
        stream = client.completions.create(
            model=vllm_sleep.model_name, prompt="hello", max_tokens=LONG_TOKENS, temperature=0,
            stream=True, extra_body={"ignore_eos": True},
        )  # fmt: skip
        events = iter(stream)
        first = next(events)  # a stream in flight while the control calls come in
        answers = {path: raw_request(sleep_gate.url, method, path, {}) for method, path in SPELLINGS}
        finishes = [first.choices[0].finish_reason] + [e.choices[0].finish_reason for e in events]
    for path, (status, headers, body) in answers.items():
        assert status == 403, (path, status, headers.get("location"))
        assert "location" not in headers, path
        error = json.loads(body)["error"]
        assert error["code"] == 403
        assert error["type"] == "PermissionDeniedError"
        assert "scheduler" in error["message"]
    assert finishes[-1] == "length"  # not "abort": nothing reached the engine
    assert engine_json(vllm_sleep.url, "/is_paused") == {"is_paused": False}
    assert engine_json(vllm_sleep.url, "/is_sleeping") == {"is_sleeping": False}
    counts = settled(sleep_gate)
    assert (counts.refused, counts.completed, counts.failed) == (len(SPELLINGS), 1, 0)


def test_every_route_dev_mode_adds_is_refused(vllm_sleep: Any, vllm_plain: Any) -> None:
    # The server's own route tables: what dev mode adds is what the gate must never pass.
    # GET, so that a route the gate let through would answer 405 and change nothing.
    dev = set(engine_json(vllm_sleep.url, "/openapi.json")["paths"])
    plain = set(engine_json(vllm_plain.url, "/openapi.json")["paths"])
    added = sorted(dev - plain)
    assert {"/sleep", "/wake_up", "/pause", "/abort_requests", "/collective_rpc"} <= set(added)
    with Gate(vllm_sleep.url, "vllm") as gate:
        statuses = {path: raw_request(gate.url, "GET", path)[0] for path in added}
    assert statuses == dict.fromkeys(added, 403)


@pytest.mark.parametrize("path", ["/docs", "/openapi.json", "/server_info", "/kv_event_sources"])
def test_the_engines_own_descriptions_are_refused(vllm_dev: Any, dev_gate: Gate, path: str) -> None:
    assert raw_request(vllm_dev.url, "GET", path)[0] == 200
    assert raw_request(dev_gate.url, "GET", path)[0] == 403


@pytest.mark.parametrize("path", ["/v1/models", "/health", "/ping", "/version", "/metrics"])
def test_read_only_routes_pass_unchanged_and_are_not_arrivals(
    vllm_dev: Any, dev_gate: Gate, path: str
) -> None:
    status, headers, _ = raw_request(dev_gate.url, "GET", path)
    kind = raw_request(vllm_dev.url, "GET", path)[1].get("content-type")
    assert (status, headers.get("content-type")) == (200, kind)
    assert settled(dev_gate).arrivals == 0


# --- which routes run the model -------------------------------------------------------------
def test_invocations_is_an_arrival_held_at_the_closed_door(vllm_dev: Any, dev_gate: Gate) -> None:
    told: list[bool] = []
    dev_gate.on_arrival = told.append
    assert dev_gate.close(1.0)
    answers: list[tuple[int, dict[str, str], bytes]] = []
    ask = {"model": vllm_dev.model_name, "prompt": "hello", "max_tokens": 4}
    thread = threading.Thread(
        target=lambda: answers.append(raw_request(dev_gate.url, "POST", "/invocations", ask))
    )
    thread.start()
    deadline = time.monotonic() + 10.0
    while dev_gate.load().waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert answers == []  # held at the door, not waiting inside the engine
    assert told == [True]
    dev_gate.open()
    thread.join(30)
    status, _, body = answers[0]
    assert status == 200
    assert json.loads(body)["choices"][0]["finish_reason"] == "length"
    counts = settled(dev_gate)
    assert (counts.arrivals, counts.held, counts.completed) == (1, 1, 1)


@pytest.mark.parametrize(
    "path", ["/v1/completions/render", "/v1/chat/completions/render", "/tokenize"]
)
def test_routes_that_run_no_model_pass_without_counting(
    vllm_dev: Any, dev_gate: Gate, path: str
) -> None:
    ask: dict[str, Any] = {"model": vllm_dev.model_name}
    if "chat" in path:
        ask["messages"] = [{"role": "user", "content": "hello"}]
    else:
        ask["prompt"] = "hello"
    # The render routes answer 403 unless vLLM runs with --enable-scale-out: the same
    # answer through the gate either way.
    direct = raw_request(vllm_dev.url, "POST", path, ask)
    assert raw_request(dev_gate.url, "POST", path, ask)[::2] == direct[::2]
    counts = settled(dev_gate)
    assert (counts.arrivals, counts.completed) == (0, 0)
