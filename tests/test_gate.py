"""The gate (learnsched.gate): forwarding unchanged, counting, the door, notifications.

Real processes on loopback: the strict simulated engine in a child process, the gate on
its own thread, clients over HTTP.
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched.serving.engines import AnswerScanner, Load, ends_at_close, failure_of
from learnsched.testing import EngineProcess

from engine_support import config, raw_request, self_signed, strict_config

aiohttp = pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")

from learnsched.cli.gate import address
from learnsched.gate import Gate, NotifyServer
from learnsched.gate.notify import ArrivalForwarder
from learnsched.gate.proxy import RETRY_AFTER_S
from learnsched.gate.stats import GateCounts, GateStats, nearest_rank

LIFETIME_S = 120.0


def post(
    url: str, path: str, body: object, timeout_s: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    """One POST; status, headers (lower-case) and the whole body."""
    parts = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(parts[0], int(parts[1]), timeout=timeout_s)
    try:
        conn.request(
            "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
        )
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def get(url: str, path: str) -> tuple[int, bytes]:
    parts = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(parts[0], int(parts[1]), timeout=10.0)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def counts_settled(gate: Gate) -> GateCounts:
    """The gate's counts once nothing is in flight (a client may read its whole answer
    a moment before the gate has finished its books on it)."""
    deadline = time.monotonic() + 5.0
    while gate.load().running and time.monotonic() < deadline:
        time.sleep(0.005)
    return gate.counts()


def events(body: bytes) -> list[str]:
    """The data lines of a server-sent event stream, ids and timestamps dropped."""
    found = []
    for line in body.split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            found.append("[DONE]")
            continue
        event = json.loads(payload)
        for key in ("id", "created"):
            event.pop(key, None)
        found.append(json.dumps(event, sort_keys=True))
    return found


def completion(stream: bool, tokens: int = 4, **extra: object) -> dict[str, object]:
    return {"model": "sim-model", "prompt": "hello there", "max_tokens": tokens,
            "temperature": 0, "stream": stream, **extra}  # fmt: skip


@pytest.fixture(scope="module", params=["vllm", "sglang"])
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def sim(dialect: str) -> Iterator[EngineProcess]:
    with EngineProcess(strict_config(dialect), lifetime_s=LIFETIME_S) as process:
        yield process


@pytest.fixture
def gate(sim: EngineProcess, dialect: str) -> Iterator[Gate]:
    with Gate(sim.url, dialect) as front:
        yield front


# --- forwarding unchanged -------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("stream", [False, True])
def test_answers_through_the_gate_are_the_engines_own(
    sim: EngineProcess, gate: Gate, path: str, stream: bool
) -> None:
    body = completion(stream)
    if path == "/v1/chat/completions":
        body = {**body, "messages": [{"role": "user", "content": "hello there"}]}
    direct = post(sim.url, path, body)
    through = post(gate.url, path, body)
    assert through[0] == direct[0] == 200
    assert through[1]["content-type"] == direct[1]["content-type"]
    if stream:
        assert events(through[2]) == events(direct[2])
        assert events(through[2])[-1] == "[DONE]"
    else:
        mine, theirs = json.loads(through[2]), json.loads(direct[2])
        assert mine["choices"] == theirs["choices"]
    counts = counts_settled(gate)
    assert (counts.arrivals, counts.completed, counts.failed, counts.in_flight) == (1, 1, 0, 0)


def test_other_routes_statuses_and_queries_pass_unchanged(sim: EngineProcess, gate: Gate) -> None:
    assert get(gate.url, "/v1/models") == get(sim.url, "/v1/models")
    assert get(sim.url, "/no/such/route?x=1")[0] == 404
    assert get(gate.url, "/no/such/route?x=1")[0] == 403  # not a route clients use
    bad = completion(False, tokens=0)
    assert post(gate.url, "/v1/completions", bad)[::2] == post(sim.url, "/v1/completions", bad)[::2]
    counts = counts_settled(gate)
    assert (counts.failed, counts.rejected) == (0, 1)  # a client error, not a failure


def test_sglang_generate_streams_through(dialect: str, sim: EngineProcess, gate: Gate) -> None:
    if dialect != "sglang":
        pytest.skip("SGLang's own route")
    body = {"text": "hello", "sampling_params": {"max_new_tokens": 3, "temperature": 0},
            "stream": True}  # fmt: skip
    assert events(post(gate.url, "/generate", body)[2]) == events(
        post(sim.url, "/generate", body)[2]
    )


def test_the_usage_only_last_event_passes_and_is_no_failure(dialect: str, gate: Gate) -> None:
    if dialect != "vllm":
        pytest.skip("vLLM's --enable-force-include-usage")
    status, _, body = post(gate.url, "/v1/completions", completion(True))
    last = json.loads(events(body)[-2])
    assert status == 200
    assert last["choices"] == []
    assert "usage" in last
    assert counts_settled(gate).failed == 0


def test_the_engines_park_routes_are_refused(dialect: str, sim: EngineProcess, gate: Gate) -> None:
    route = "/sleep?level=1" if dialect == "vllm" else "/release_memory_occupation"
    status, _, body = post(gate.url, route, {})
    assert status == 403
    assert "scheduler" in json.loads(body)["error"]["message"]
    assert json.loads(get(sim.url, "/sim/state")[1])["sleeping_tags"] == []
    assert counts_settled(gate).refused == 1


def test_stats_route(gate: Gate) -> None:
    post(gate.url, "/v1/completions", completion(False))
    stats = json.loads(get(gate.url, "/gate/stats")[1])
    assert stats["arrivals"] == stats["completed"] == 1
    assert stats["held_requests"] == 0


# --- failures the gate counts ----------------------------------------------------------------
def test_a_stream_vllm_aborts_counts_as_failed() -> None:
    with (
        EngineProcess(strict_config("vllm", token_s=0.05), lifetime_s=LIFETIME_S) as sim,
        Gate(sim.url, "vllm") as gate,
    ):
        answers: list[tuple[int, dict[str, str], bytes]] = []
        thread = threading.Thread(
            target=lambda: answers.append(post(gate.url, "/v1/completions", completion(True, 40)))
        )
        thread.start()
        time.sleep(0.3)
        post(sim.url, "/sleep?level=1", {})  # the route's default: mode=abort
        thread.join(10)
        assert answers[0][0] == 200  # an abort still ends the stream normally ...
        assert any('"finish_reason": "abort"' in event for event in events(answers[0][2]))
        assert counts_settled(gate).failed == 1  # ... and the gate counts it


@pytest.mark.parametrize(
    ("dialect", "path", "body"),
    [
        ("vllm", "/v1/completions", completion(True, 40)),
        ("vllm", "/v1/chat/completions", {
            "model": "sim-model", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 40, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}),
        ("sglang", "/generate", {
            "text": "hello", "sampling_params": {"max_new_tokens": 40, "temperature": 0},
            "stream": True}),
    ],
)  # fmt: skip
def test_a_stream_cut_off_by_the_engines_death_counts_as_failed(
    dialect: str, path: str, body: dict[str, object]
) -> None:
    """An engine killed mid-stream whose body ends at its connection's close (no length,
    no chunks, as the simulator's HTTP/1.0 answers): the gate sees the close, not
    ``[DONE]``, counts the request failed, and breaks off the client's stream too."""
    config = strict_config(dialect, token_s=0.05)
    with EngineProcess(config, lifetime_s=LIFETIME_S) as sim, Gate(sim.url, dialect) as gate:
        conn = http.client.HTTPConnection("127.0.0.1", gate.port, timeout=10.0)
        got: list[bytes] = []
        try:
            conn.request(
                "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            answer = conn.getresponse()
            got.append(answer.read1(64))  # the stream has begun ...
            sim.process.kill()  # ... and the engine dies (SIGKILL)
            with pytest.raises(http.client.IncompleteRead):
                answer.read()  # the client's stream is broken off, not ended
        finally:
            conn.close()
        assert got[0]
        counts = counts_settled(gate)
        assert (counts.failed, counts.completed) == (1, 0)


def test_a_client_that_gives_up_is_cancelled_not_failed() -> None:
    with (
        EngineProcess(strict_config("vllm", token_s=0.05), lifetime_s=LIFETIME_S) as sim,
        Gate(sim.url, "vllm") as gate,
    ):
        conn = http.client.HTTPConnection("127.0.0.1", gate.port, timeout=10.0)
        body = json.dumps(completion(True, 40))
        conn.request(
            "POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"}
        )
        assert conn.getresponse().read1(64)  # the stream has begun ...
        conn.close()  # ... and the client hangs up
        deadline = time.monotonic() + 10.0
        while gate.counts().cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        counts = counts_settled(gate)
        assert (counts.cancelled, counts.failed, counts.completed) == (1, 0, 0)


def test_a_client_that_gives_up_before_the_answer_begins_is_cancelled() -> None:
    config = strict_config("vllm", token_s=0.05, max_running=1)
    with EngineProcess(config, lifetime_s=LIFETIME_S) as sim, Gate(sim.url, "vllm") as gate:
        first = threading.Thread(
            target=lambda: post(gate.url, "/v1/completions", completion(True, 20))
        )
        first.start()
        time.sleep(0.2)
        with pytest.raises(TimeoutError):  # queued behind the first: no answer in 0.3 s
            post(gate.url, "/v1/completions", completion(True, 4), timeout_s=0.3)
        first.join(10)
        deadline = time.monotonic() + 10.0
        while gate.counts().cancelled == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        counts = counts_settled(gate)
        assert (counts.cancelled, counts.failed, counts.completed) == (1, 0, 1)


def test_a_request_cut_off_by_the_gates_stop_is_cancelled_not_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("learnsched.gate.proxy.SHUTDOWN_S", 0.3)
    with EngineProcess(strict_config("vllm", token_s=0.05), lifetime_s=LIFETIME_S) as sim:
        gate = Gate(sim.url, "vllm").start()
        cut: list[BaseException] = []

        def client() -> None:
            try:
                post(gate.url, "/v1/completions", completion(True, 100))
            except (OSError, http.client.HTTPException, ValueError) as err:
                cut.append(err)  # the stream was broken off, as it should be

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        time.sleep(0.3)
        gate.stop()  # 5 s of decoding left: cut off after SHUTDOWN_S
        thread.join(10)
        assert cut
        counts = gate.counts()
        assert (counts.cancelled, counts.failed, counts.in_flight) == (1, 0, 0)


def test_an_error_event_and_an_unreachable_engine_count_as_failed() -> None:
    with (
        EngineProcess(config("sglang", stream="error"), lifetime_s=LIFETIME_S) as sim,
        Gate(sim.url, "sglang") as gate,
    ):
        assert post(gate.url, "/v1/completions", completion(True))[0] == 200
        assert counts_settled(gate).failed == 1
        url = sim.url
    with Gate(url, "sglang") as gate:  # the engine is gone
        status, _, body = post(gate.url, "/v1/completions", completion(False))
        assert status == 502
        assert "could not reach" in json.loads(body)["error"]["message"]
        assert counts_settled(gate).failed == 1


# --- the door ------------------------------------------------------------------------------
def test_held_requests_wait_at_the_closed_door_and_go_on_when_it_opens(
    dialect: str, gate: Gate
) -> None:
    told: list[bool] = []
    gate.on_arrival = told.append
    assert gate.close(1.0)  # nothing in flight: drained at once
    assert gate.closed
    answers: list[int] = []
    threads = [
        threading.Thread(
            target=lambda: answers.append(post(gate.url, "/v1/completions", completion(True))[0])
        )
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.4)
    assert answers == []
    assert gate.load().waiting == 3
    assert told == [True, True, True]
    added = gate.open()
    for thread in threads:
        thread.join(10)
    assert answers == [200, 200, 200]
    assert len(added) == 3
    assert all(0.3 < seconds < 2.0 for seconds in added)
    counts = counts_settled(gate)
    assert (counts.held, counts.holding, counts.failed) == (3, 0, 0)
    assert counts.summary()["added_latency_p99_s"] == max(added)


def test_a_held_client_that_hangs_up_is_never_forwarded(dialect: str, gate: Gate) -> None:
    assert gate.close(1.0)
    body = json.dumps(completion(False)).encode()
    with socket.create_connection((gate.host, gate.port)) as client:
        client.sendall(
            b"POST /v1/completions HTTP/1.1\r\nHost: gate\r\nContent-Type: application/json"
            + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        deadline = time.monotonic() + 5.0
        while gate.load().waiting == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert gate.load().waiting == 1
    deadline = time.monotonic() + 5.0  # the hang-up is seen within HANGUP_CHECK_S
    while gate.load().waiting and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.open() == []  # no one left at the door to let through
    counts = counts_settled(gate)
    assert (counts.held, counts.abandoned, counts.holding) == (1, 1, 0)
    assert counts.completed + counts.failed + counts.cancelled == 0  # never forwarded


def test_close_waits_for_requests_in_flight_within_the_bound() -> None:
    with (
        EngineProcess(strict_config("vllm", token_s=0.05), lifetime_s=LIFETIME_S) as sim,
        Gate(sim.url, "vllm") as gate,
    ):
        thread = threading.Thread(
            target=lambda: post(gate.url, "/v1/completions", completion(True, 20))
        )
        thread.start()
        time.sleep(0.2)
        start = time.monotonic()
        assert not gate.close(0.2)  # 1 s of decoding left: not drained in 0.2 s
        assert 0.15 < time.monotonic() - start < 1.0
        assert gate.load().running == 1
        assert gate.close(5.0)  # drained once it finishes
        gate.open()
        thread.join(10)
        assert counts_settled(gate).completed == 1


def test_past_the_hold_bound_the_gate_answers_503_with_retry_after(
    sim: EngineProcess, dialect: str
) -> None:
    """A request past ``max_held`` never reaches the (parked) engine: the gate answers it
    503 with ``Retry-After`` and an OpenAI-shaped error, and tells the scheduler."""
    told: list[bool] = []
    with Gate(sim.url, dialect, max_held=1, on_arrival=told.append) as gate:
        gate.close(1.0)
        held = threading.Thread(target=post, args=(gate.url, "/v1/completions", completion(False)))
        held.start()
        deadline = time.monotonic() + 10.0
        while gate.load().waiting < 1:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        status, headers, body = post(gate.url, "/v1/completions", completion(False))
        assert (status, headers["retry-after"]) == (503, str(RETRY_AFTER_S))
        error = json.loads(body)["error"]
        assert (error["type"], error["code"]) == ("ServiceUnavailableError", 503)
        assert "--max-held" in error["message"]
        assert gate.load() == Load(0, 1)  # nothing forwarded: the engine never saw it
        gate.open()
        held.join(10.0)
        counts = counts_settled(gate)
    assert (counts.arrivals, counts.held, counts.overflowed, counts.completed) == (2, 1, 1, 1)
    assert told == [True, True]


def test_a_gate_started_closed_holds_until_opened(sim: EngineProcess, dialect: str) -> None:
    with Gate(sim.url, dialect, closed=True) as gate:
        assert gate.closed
        sender = threading.Thread(
            target=post, args=(gate.url, "/v1/completions", completion(False))
        )
        sender.start()
        deadline = time.monotonic() + 10.0
        while gate.load().waiting < 1:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert gate.open()[0] > 0.0
        sender.join(10.0)
        counts = counts_settled(gate)
    assert (counts.held, counts.completed) == (1, 1)


def test_a_park_is_busy_if_a_request_was_in_flight_at_its_release() -> None:
    stats = GateStats()
    stats.release_sent()
    stats.release_done()
    stats.add("in_flight")
    stats.release_sent()  # sent while one is in flight
    stats.release_done()
    stats.add("in_flight", -1)
    stats.release_sent()
    stats.add("in_flight")  # forwarded while the release is under way
    stats.release_done()
    counts = stats.snapshot()
    assert (counts.parks, counts.parks_on_busy_engine) == (3, 2)


def test_a_second_gate_on_a_taken_port_names_it(gate: Gate, dialect: str) -> None:
    with pytest.raises(OSError, match="cannot listen"):
        Gate(gate.upstream, dialect, port=gate.port).start()


# --- reading answers, quantiles -----------------------------------------------------------------
SSE_OK = b'data: {"choices": [{"text": "a", "finish_reason": null}]}\n\ndata: {"choices": [], "usage": {"completion_tokens": 1}}\n\ndata: [DONE]\n\n'
SSE_ABORT = b'data: {"choices": [{"text": "", "finish_reason": "abort"}]}\n\ndata: [DONE]\n\n'
SSE_ERROR = b'data: {"text": "a", "meta_info": {}}\n\ndata: {"error": {"message": "oom"}}\n\n'
SGLANG_ABORT = b'data: {"text": "a", "meta_info": {"finish_reason": {"type": "abort"}}}\n\n'


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [
            (SSE_OK, None),
            (SSE_ABORT, "aborted"),
            (SSE_ERROR, "error event"),
            (SGLANG_ABORT, "aborted"),
        ]
    ),
    st.lists(st.integers(0, 200), max_size=8),
)
def test_any_chunking_of_a_stream_reads_the_same(
    case: tuple[bytes, str | None], cuts: list[int]
) -> None:
    data, expected = case
    scanner = AnswerScanner(event_stream=True)
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for a, b in itertools.pairwise(edges):
        scanner.feed(data[a:b])
    assert scanner.close() == expected


# Streams that reached their last event, and that event: the OpenAI routes' (vLLM's
# usage-only event before it), SGLang's /generate, the Responses and Messages APIs'.
ENDED = [
    (SSE_OK, b"data: [DONE]"),
    (SSE_OK.replace(b"\n", b"\r\n"), b"data: [DONE]"),
    (b'data: {"text": "a", "meta_info": {"finish_reason": null}}\n\ndata:[DONE]\n\n',
     b"data:[DONE]"),
    ((b'event: response.output_text.delta\ndata: {"delta": "a"}\n\n'
      b'event: response.completed\ndata: {"type": "response.completed"}\n\n'),
     b"event: response.completed"),
    ((b'event: content_block_delta\ndata: {"delta": {"text": "a"}}\n\n'
      b'event: message_stop\ndata: {"type": "message_stop"}\n\n'), b"event: message_stop"),
]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ENDED), st.integers(0, 1000), st.lists(st.integers(0, 200), max_size=8))
def test_a_stream_that_closes_before_its_last_event_was_cut_off(
    case: tuple[bytes, bytes], at: int, cuts: list[int]
) -> None:
    """Ended only by its connection's close, a stream is whole once its last event came
    (however it was chunked) and cut off before; a framed one is the HTTP reader's to
    judge."""
    data, last = case
    whole = data.index(last) + len(last)
    cut = data[: at % whole]
    for stream, until_close, expected in [
        (data, True, None),
        (cut, True, "cut off"),
        (cut, False, None),
    ]:
        scanner = AnswerScanner(event_stream=True, until_close=until_close)
        edges = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
        for a, b in itertools.pairwise(edges):
            scanner.feed(stream[a:b])
        assert scanner.close() == expected


def test_an_answer_ends_at_its_close_without_a_length_or_chunks() -> None:
    assert ends_at_close(None, None)
    assert ends_at_close(None, "identity")
    assert not ends_at_close("12", None)
    assert not ends_at_close(None, "gzip, Chunked")


def test_a_plain_json_answer_is_read_at_its_end() -> None:
    scanner = AnswerScanner(event_stream=False)
    scanner.feed(b'{"choices": [{"text": "", "finish_')
    scanner.feed(b'reason": "abort"}]}')
    assert scanner.close() == "aborted"
    assert failure_of({"object": "error", "message": "x"}) == "error event"
    assert failure_of([1, 2]) is None


@given(st.lists(st.floats(0, 10), min_size=1, max_size=50), st.floats(0.01, 1.0))
def test_nearest_rank_is_a_sample_with_that_share_at_or_below_it(
    samples: list[float], q: float
) -> None:
    value = nearest_rank(samples, q)
    assert value in samples
    assert sum(s <= value for s in samples) >= q * len(samples)
    assert nearest_rank([], q) is None


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_an_https_engine_of_a_private_ca_is_reached_with_its_ca_file(
    tmp_path: Path, dialect: str
) -> None:
    from learnsched.testing import SimulatedEngine

    cert, key = self_signed(tmp_path)
    tls = config(dialect, ssl_certfile=str(cert), ssl_keyfile=str(key))
    with SimulatedEngine(tls) as sim:
        with Gate(sim.url, dialect, ca_file=cert) as gate:
            status, _, body = raw_request(gate.url, "GET", "/v1/models")
            assert status == 200, body
        with Gate(sim.url, dialect) as gate:  # the system's CAs do not know it
            status, _, body = raw_request(gate.url, "GET", "/v1/models")
            assert status == 502
            assert b"CERTIFICATE_VERIFY_FAILED" in body
    with pytest.raises(ValueError, match="ca_file is for an https:// server"):
        Gate("http://127.0.0.1:9", dialect, ca_file=cert)


# --- notifications, the command ------------------------------------------------------------------
def test_a_router_posts_arrivals_to_the_notify_endpoint() -> None:
    told: list[int] = []
    with NotifyServer(lambda: told.append(1)) as server:
        forwarder = ArrivalForwarder(server.url).start()
        for _ in range(3):
            forwarder.arrived()
        forwarder.stop()
        assert forwarder.sent == 3
        base = f"http://127.0.0.1:{server.port}"
        assert post(base, "/elsewhere", {})[0] == 404
        assert get(base, "/arrival")[0] == 405
    assert told == [1, 1, 1]
    assert server.received == 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8100", ("127.0.0.1", 8100)), ("0.0.0.0:9", ("0.0.0.0", 9)), ("[::1]:80", ("::1", 80))],
)
def test_addresses(text: str, expected: tuple[str, int]) -> None:
    assert address(text) == expected


@pytest.mark.parametrize("text", ["host:", "x", "1:99999", ":80"])
def test_bad_addresses_are_refused(text: str) -> None:
    with pytest.raises(Exception, match=r"\[HOST:\]PORT"):
        address(text)


def test_the_gate_command_forwards_counts_and_stops_on_sigterm(
    sim: EngineProcess, dialect: str, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "learnsched", "gate", "--engine", dialect, "--url", sim.url,
               "--listen", "127.0.0.1:0", "--json"]  # fmt: skip
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as child:  # fmt: skip
        assert child.stderr is not None
        line = child.stderr.readline()
        url = line.split("forwarding ")[1].split(" ->")[0]
        assert post(url, "/v1/completions", completion(True))[0] == 200
        child.terminate()
        out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    counts = json.loads(out)
    assert (counts["arrivals"], counts["completed"], counts["failed_requests"]) == (1, 1, 0)


@pytest.mark.parametrize("upstream", ["127.0.0.1:8000", "ftp://x:1", "http://x:1/v1"])
def test_a_bad_upstream_is_named(upstream: str) -> None:
    with pytest.raises(ValueError, match="upstream must be"):
        Gate(upstream, "vllm")


def test_a_stop_ends_a_request_stalled_in_a_paused_engine() -> None:
    """A request forwarded to an engine that never answers (paused by another controller)
    is cut off by the stop, which returns: before, the stop raised a bare ``TimeoutError``
    (aiohttp waits its shutdown timeout twice), and a run ending with a quarantine
    exited 4 instead of 3."""
    from learnsched.serving.endpoint import ServingEndpoint

    with EngineProcess(strict_config("sglang"), lifetime_s=120.0) as engine:
        endpoint = ServingEndpoint(engine.url, "sglang")
        endpoint.dialect.pause(endpoint, 10.0)
        gate = Gate(engine.url, "sglang").start()
        answers: list[object] = []

        def send() -> None:
            body = {"model": "sim-model", "prompt": "hello", "max_tokens": 8}
            try:
                answers.append(raw_request(gate.url, "POST", "/v1/completions", body)[0])
            except http.client.RemoteDisconnected as err:
                answers.append(err)

        client = threading.Thread(target=send)
        client.start()
        deadline = time.monotonic() + 10.0
        while not gate.load().running:
            assert time.monotonic() < deadline, "the request never reached the engine"
            time.sleep(0.01)
        gate.stop()
        client.join(30.0)
    assert [type(a) for a in answers] == [http.client.RemoteDisconnected]
