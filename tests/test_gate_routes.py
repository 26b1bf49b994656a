"""The gate's routes (learnsched.gate.routes): paths normalised as the engine routes them,
redirects kept on the gate's address, and what the gate forwards, refuses and counts in
front of the strict simulated engine.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched.gate.routes import Target, local_location
from learnsched.testing import EngineProcess

from engine_support import LIFETIME_S, raw_request, strict_config


# --- the path the engine routes ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "path", "query"),
    [
        ("/v1/completions", "/v1/completions", ""),
        ("/pause/", "/pause", ""),
        ("//pause", "/pause", ""),
        ("/./pause", "/pause", ""),
        ("/v1/../pause", "/pause", ""),
        ("/../../pause", "/pause", ""),
        ("/%70ause", "/pause", ""),
        ("/%2e%2E/pause", "/pause", ""),
        ("/v1%2F..%2Fpause", "/pause", ""),
        ("/sleep?level=1&mode=abort", "/sleep", "level=1&mode=abort"),
        ("/sleep/?level=1", "/sleep", "level=1"),
        ("/pause#fragment", "/pause", ""),
        ("/", "/", ""),
        ("", "/", ""),
        ("/v1/responses/resp%20one", "/v1/responses/resp one", ""),
        ("/v1/responses/%FF", "/v1/responses/\ufffd", ""),  # as the engine decodes it
        # The absolute form a proxy client sends: its path, whatever host it names.
        ("http://127.0.0.1:8000/v1/models", "/v1/models", ""),
        ("HTTPS://example.com/v1/%70ause/?x=1", "/v1/pause", "x=1"),
        ("http://example.com", "/", ""),
        ("http://example.com?x=1", "/", "x=1"),
    ],
)
def test_a_target_is_the_path_the_engine_routes(raw: str, path: str, query: str) -> None:
    assert Target.of(raw) == Target(path, query)


def test_a_target_goes_on_encoded_with_its_query_as_sent() -> None:
    assert Target.of("/v1/responses/resp%20one?stream=true&x=%41").raw == (
        "/v1/responses/resp%20one?stream=true&x=%41"
    )
    assert Target.of("//v1/%6Dodels/").raw == "/v1/models"
    assert Target.of("/a%3Fb%23c%25").raw == "/a%3Fb%23c%25"  # ?, # and % stay in the path


@settings(deadline=None)
@given(st.text(alphabet=st.sampled_from("/.%2eEfF?#az-_~ é"), max_size=30))
def test_a_target_is_normalised_and_what_goes_on_reads_the_same(raw: str) -> None:
    target = Target.of(raw)
    segments = target.path.split("/")[1:]
    assert target.path.startswith("/")
    assert target.path == "/" or all(s not in ("", ".", "..") for s in segments)
    # The engine decodes what the gate sends once: the same path, the same decision.
    assert Target.of(target.raw) == target


# --- redirects --------------------------------------------------------------------------------
ENGINE = "http://10.0.0.7:8000"
GATE = "http://gate.example:9000"


@pytest.mark.parametrize(
    ("location", "local"),
    [
        ("http://10.0.0.7:8000/sleep", "http://gate.example:9000/sleep"),
        ("http://10.0.0.7:8000/v1/models?x=1", "http://gate.example:9000/v1/models?x=1"),
        ("HTTP://10.0.0.7:8000", "http://gate.example:9000"),
        ("/v1/models", "/v1/models"),  # relative: resolved against the gate by the client
        ("http://10.0.0.7:8001/sleep", "http://10.0.0.7:8001/sleep"),  # another server
        ("https://10.0.0.7:8000/sleep", "https://10.0.0.7:8000/sleep"),
        ("http://elsewhere.example/x", "http://elsewhere.example/x"),
        ("http://10.0.0.7:port/x", "http://10.0.0.7:port/x"),
    ],
)
def test_a_location_at_the_engines_address_is_moved_to_the_gates(location: str, local: str) -> None:
    assert local_location(location, ENGINE, GATE) == local


def test_a_default_port_is_the_same_address() -> None:
    assert local_location("http://engine/x", "http://engine:80", GATE) == GATE + "/x"
    assert local_location("https://engine:443/x", "https://engine", GATE) == GATE + "/x"


# --- in front of the simulated engine ---------------------------------------------------------
@pytest.fixture(scope="module", params=["vllm", "sglang"])
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def gate_class() -> Any:
    """:class:`~learnsched.gate.Gate` (the test skips without the ``serve`` extra)."""
    pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")
    from learnsched.gate import Gate

    return Gate


@pytest.fixture(scope="module")
def sim(dialect: str, gate_class: Any) -> Iterator[EngineProcess]:
    with EngineProcess(strict_config(dialect), lifetime_s=LIFETIME_S) as process:
        yield process


@pytest.fixture
def gate(sim: EngineProcess, dialect: str, gate_class: Any) -> Iterator[Any]:
    with gate_class(sim.url, dialect) as front:
        yield front


def settled(gate: Any) -> Any:
    """The gate's counts once nothing is in flight."""
    deadline = time.monotonic() + 5.0
    while gate.load().running and time.monotonic() < deadline:
        time.sleep(0.005)
    return gate.counts()


CONTROL = {
    "vllm": ["/sleep", "/wake_up", "/pause", "/resume", "/abort_requests", "/collective_rpc"],
    "sglang": ["/release_memory_occupation", "/resume_memory_occupation", "/pause_generation",
               "/continue_generation", "/update_weights_from_disk", "/abort_request"],
}  # fmt: skip
SPELLINGS = ["{}", "{}/", "/{}", "/.{}", "/v1/..{}", "{}?level=1", "{}#x"]


def escaped(route: str) -> str:
    """``route`` with its first letter percent-encoded."""
    return f"/%{ord(route[1]):02x}{route[2:]}"


def test_control_routes_are_refused_in_every_spelling_and_change_nothing(
    sim: EngineProcess, dialect: str, gate: Any
) -> None:
    before = json.loads(raw_request(sim.url, "GET", "/sim/state")[2])
    paths = [s.format(route) for route in CONTROL[dialect] for s in SPELLINGS]
    paths += [escaped(route) for route in CONTROL[dialect]]
    for path in paths:
        status, headers, body = raw_request(gate.url, "POST", path, {})
        assert status == 403, path
        assert "location" not in headers
        error = json.loads(body)["error"]
        assert (error["type"], error["param"], error["code"]) == (
            "PermissionDeniedError",
            None,
            403,
        )
        assert "scheduler" in error["message"]
    assert json.loads(raw_request(sim.url, "GET", "/sim/state")[2]) == before
    assert settled(gate).refused == len(paths)


@pytest.mark.parametrize(
    "path", ["/no/such/route", "/docs", "/server_info", "/v1/load_lora_adapter"]
)
def test_a_route_that_is_not_listed_is_refused(gate: Any, path: str) -> None:
    assert raw_request(gate.url, "GET", path)[0] == 403
    assert settled(gate).arrivals == 0


def test_a_path_goes_on_normalised(gate: Any) -> None:
    for path in ("/v1/models/", "//v1//models", "/v1/./models", "/v1/%6Dodels"):
        status, _, body = raw_request(gate.url, "GET", path)
        assert (status, json.loads(body)["data"][0]["id"]) == (200, "sim-model"), path


def test_a_request_in_absolute_form_goes_to_the_engine(gate: Any) -> None:
    """``GET http://HOST/v1/models`` (as a client configured for a forward proxy sends):
    the gate's engine answers, whatever host the target names."""
    for host in (gate.url, "http://elsewhere.example"):
        status, _, body = raw_request(gate.url, "GET", f"{host}/v1/models")
        assert (status, json.loads(body)["data"][0]["id"]) == (200, "sim-model"), host


def test_a_generation_outside_v1_is_an_arrival_held_at_the_closed_door(
    sim: EngineProcess, dialect: str, gate: Any
) -> None:
    path = "/invocations" if dialect == "vllm" else "/generate"
    body: dict[str, Any] = (
        {"model": "sim-model", "prompt": "hello", "max_tokens": 3}
        if dialect == "vllm"
        else {"text": "hello", "sampling_params": {"max_new_tokens": 3}}
    )
    assert gate.close(1.0)
    answers: list[int] = []
    thread = threading.Thread(target=lambda: answers.append(raw_request(gate.url, "POST", path, body)[0]))
    thread.start()
    deadline = time.monotonic() + 5.0
    while gate.load().waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.1)
    assert answers == []
    gate.open()
    thread.join(10)
    assert answers == [raw_request(sim.url, "POST", path, body)[0]]  # the engine's own answer
    counts = settled(gate)
    assert (counts.arrivals, counts.held, counts.in_flight) == (1, 1, 0)


def test_routes_that_run_no_model_pass_without_counting(dialect: str, gate: Any) -> None:
    raw_request(gate.url, "GET", "/v1/models")
    raw_request(gate.url, "POST", "/tokenize", {"model": "sim-model", "prompt": "hello"})
    if dialect == "vllm":
        raw_request(gate.url, "POST", "/v1/completions/render", {"model": "sim-model", "prompt": "x"})
    counts = settled(gate)
    assert (counts.arrivals, counts.refused) == (0, 0)


@contextmanager
def redirecting_engine() -> Iterator[str]:
    """An HTTP server that answers every request with a redirect naming its own address,
    as an engine's router does for a path it would spell otherwise."""
    address: list[str] = []

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("Location", f"{address[0]}/v1/models?page=2")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect) as server:
        address.append(f"http://127.0.0.1:{server.server_address[1]}")
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield address[0]
        finally:
            server.shutdown()


def test_a_redirect_never_names_the_engines_address(gate_class: Any) -> None:
    with redirecting_engine() as url, gate_class(url, "vllm") as gate:
        status, headers, _ = raw_request(gate.url, "GET", "/v1/models")
    assert status == 307
    assert headers["location"] == f"{gate.url}/v1/models?page=2"
