"""The gate's control listener (learnsched.gate.control): the door API over HTTP, its
refusals, the long-polled arrivals, the lease, and ``learnsched gate --control``.

The strict simulated engine in a child process, the gate and its control listener on
threads of this process, a client over HTTP.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from learnsched.testing import EngineProcess

from conftest import one_line, run
from engine_support import strict_config

pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")

from learnsched.gate import DEFAULT_LEASE_S, ControlServer, Gate

LEASE_S = 1.0  # the tests of the lease: it lapses, or renewals keep it


def call(url: str, method: str, path: str, body: object = None) -> tuple[int, Any]:
    """One exchange with ``url``; the status and the JSON answer (``None``: empty)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10.0)
    try:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        text = answer.read()
        return answer.status, json.loads(text) if text else None
    finally:
        conn.close()


def completion(url: str, result: list[int]) -> None:
    """One completion through the gate at ``url``; its status appended to ``result``."""
    body = {"model": "sim-model", "prompt": "hello", "max_tokens": 2, "temperature": 0}
    result.append(call(url, "POST", "/v1/completions", body)[0])


@pytest.fixture(scope="module")
def sim() -> Iterator[EngineProcess]:
    with EngineProcess(strict_config("vllm"), lifetime_s=120.0) as process:
        yield process


@contextmanager
def front(sim: EngineProcess, lease_s: float) -> Iterator[tuple[Gate, ControlServer, list[str]]]:
    """The gate, its control listener and what the listener reported."""
    reported: list[str] = []
    with Gate(sim.url, "vllm") as gate, ControlServer(
        gate, lease_s=lease_s, report=reported.append
    ) as control:  # fmt: skip
        yield gate, control, reported


@pytest.fixture
def door(sim: EngineProcess) -> Iterator[tuple[Gate, ControlServer, list[str]]]:
    """:func:`front` with the default lease (no test here outlasts it)."""
    with front(sim, DEFAULT_LEASE_S) as parts:
        yield parts


@pytest.fixture
def lapsing(sim: EngineProcess) -> Iterator[tuple[Gate, ControlServer, list[str]]]:
    """:func:`front` with a lease of :data:`LEASE_S`."""
    with front(sim, LEASE_S) as parts:
        yield parts


def test_the_door_state_names_the_gate_and_its_engine(
    door: tuple[Gate, ControlServer, list[str]], sim: EngineProcess
) -> None:
    gate, control, _ = door
    status, state = call(control.url, "GET", "/door")
    assert status == 200
    assert (state["url"], state["upstream"], state["engine"]) == (gate.url, sim.url, "vllm")
    assert (state["closed"], state["holder"], state["lease_left_s"]) == (False, None, None)
    assert state["lease_s"] == DEFAULT_LEASE_S
    assert state["load"] == {"running": 0, "waiting": 0}
    assert state["counts"]["arrivals"] == 0


def test_close_holds_requests_and_open_forwards_them_with_their_latency(
    door: tuple[Gate, ControlServer, list[str]],
) -> None:
    gate, control, _ = door
    status, closed = call(control.url, "POST", "/door/close", {"drain_s": 1.0, "holder": "t"})
    assert (status, closed["drained"]) == (200, True)
    statuses: list[int] = []
    client = threading.Thread(target=completion, args=(gate.url, statuses))
    client.start()
    told = call(control.url, "GET", "/door/arrivals?arrivals=0&held=0&wait_s=5")[1]
    assert told == {"arrivals": 1, "held": 1}  # answered at the arrival, not after 5 s
    assert call(control.url, "GET", "/door/load")[1] == {
        "closed": True, "running": 0, "waiting": 1,
    }  # fmt: skip
    assert call(control.url, "GET", "/door")[1]["holder"] == "t"
    status, opened = call(control.url, "POST", "/door/open", {})
    client.join(10.0)
    assert status == 200
    assert len(opened["added_latency_s"]) == 1
    assert statuses == [200]
    assert call(control.url, "GET", "/door/counts?latencies_from=0")[1]["added_latency_s"] == (
        opened["added_latency_s"]
    )


def test_an_arrivals_poll_without_arrivals_answers_after_its_wait(
    door: tuple[Gate, ControlServer, list[str]],
) -> None:
    _, control, _ = door
    start = time.monotonic()
    assert call(control.url, "GET", "/door/arrivals?arrivals=0&held=0&wait_s=0.3")[1] == {
        "arrivals": 0, "held": 0,
    }  # fmt: skip
    assert time.monotonic() - start >= 0.3


def test_a_door_whose_lease_lapses_opens_by_itself(
    lapsing: tuple[Gate, ControlServer, list[str]],
) -> None:
    """Its holder stopped renewing (killed): the held request goes on to the engine."""
    gate, control, reported = lapsing
    call(control.url, "POST", "/door/close", {"drain_s": 1.0, "holder": "a killed run"})
    statuses: list[int] = []
    client = threading.Thread(target=completion, args=(gate.url, statuses))
    client.start()
    client.join(LEASE_S + 5.0)
    assert statuses == [200]
    assert not gate.closed
    assert reported == [
        (
            "the lease of a killed run lapsed: the door is open, 1 held requests went on to "
            "the engine"
        )
    ]


def test_renewals_keep_the_door_closed_past_the_lease(
    lapsing: tuple[Gate, ControlServer, list[str]],
) -> None:
    gate, control, reported = lapsing
    epoch = call(control.url, "POST", "/door/close", {"drain_s": 1.0})[1]["epoch"]
    for _ in range(8):
        time.sleep(LEASE_S / 4)
        assert call(control.url, "POST", "/door/renew", {"epoch": epoch})[0] == 200
    assert gate.closed
    assert reported == []
    call(control.url, "POST", "/door/open", {})
    status, answer = call(control.url, "POST", "/door/renew", {"epoch": epoch})
    assert status == 409
    assert "opened" in answer["error"]


def test_a_later_close_takes_the_door_over(door: tuple[Gate, ControlServer, list[str]]) -> None:
    _, control, _ = door
    first = call(control.url, "POST", "/door/close", {"drain_s": 1.0, "holder": "a"})[1]
    second = call(control.url, "POST", "/door/close", {"drain_s": 1.0, "holder": "b"})[1]
    assert second["epoch"] == first["epoch"] + 1
    assert call(control.url, "POST", "/door/renew", {"epoch": first["epoch"]})[0] == 409
    assert call(control.url, "GET", "/door")[1]["holder"] == "b"
    call(control.url, "POST", "/door/open", {})


def test_release_steps_count_a_park(door: tuple[Gate, ControlServer, list[str]]) -> None:
    gate, control, _ = door
    assert call(control.url, "POST", "/door/release", {"step": "sent"}) == (204, None)
    assert call(control.url, "POST", "/door/release", {"step": "done"}) == (204, None)
    assert (gate.counts().parks, gate.counts().parks_on_busy_engine) == (1, 0)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "names"),
    [
        ("POST", "/door/close", {"drain_s": 0}, 400, "drain_s"),
        ("POST", "/door/close", {"drain_s": "x"}, 400, "drain_s"),
        ("POST", "/door/close", {"drain_s": 1.0, "holder": 7}, 400, "holder"),
        ("POST", "/door/close", b"not json", 400, "JSON"),
        ("POST", "/door/close", b"[1]", 400, "JSON object"),
        ("POST", "/door/renew", {"epoch": -1}, 400, "epoch"),
        ("POST", "/door/renew", {"epoch": 99}, 409, "opened"),
        ("POST", "/door/release", {"step": "maybe"}, 400, "step"),
        ("GET", "/door/arrivals?arrivals=x", None, 400, "arrivals"),
        ("GET", "/door/counts?latencies_from=-2", None, 400, "latencies_from"),
        ("GET", "/v1/completions", None, 404, "/v1/completions"),
        ("POST", "/door", {}, 404, "POST /door"),
    ],
)
def test_bad_control_requests_are_refused_naming_what_is_wrong(
    door: tuple[Gate, ControlServer, list[str]],
    method: str, path: str, body: object, status: int, names: str,
) -> None:  # fmt: skip
    gate, control, _ = door
    answered, answer = call(control.url, method, path, body)
    assert answered == status
    assert names in answer["error"]
    assert not gate.closed


def test_the_client_port_never_reaches_the_door(
    door: tuple[Gate, ControlServer, list[str]],
) -> None:
    """The door's routes are the control listener's only: on the client port they are
    a path like any other, which no engine serves."""
    gate, _, _ = door
    status, _ = call(gate.url, "POST", "/door/close", {"drain_s": 1.0})
    assert status in (403, 404)  # refused by the gate, or unknown to the engine
    assert not gate.closed


# --- the command --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (("--listen", "127.0.0.1:8123", "--control", "8123"), "--control 8123 is the client port"),
        (("--control", "0", "--lease-s", "0"), "--lease-s must be > 0"),
        (("--control", "0", "--lease-s", "inf"), "--lease-s must be finite"),
        (("--control", "0", "--max-held", "-1"), "--max-held must be at least 0"),
    ],
)
def test_the_gate_command_refuses_a_bad_control(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], names: str
) -> None:
    status, _, err = run(capsys, "gate", "--engine", "vllm", "--url", "http://127.0.0.1:9",
                         *flags)  # fmt: skip
    assert status == 2
    assert names in one_line(err)


def test_the_gate_command_serves_its_control_until_sigterm(
    sim: EngineProcess, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "learnsched", "gate", "--engine", "vllm", "--url", sim.url,
               "--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--json"]  # fmt: skip
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as child:  # fmt: skip
        assert child.stderr is not None
        client = child.stderr.readline().split("forwarding ")[1].split(" ->")[0]
        line = child.stderr.readline()
        assert line.endswith("(lease 10 s)\n"), line
        control = line.split("door control ")[1].split(" ")[0]
        assert call(control, "GET", "/door")[1]["url"] == client
        child.terminate()
        out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    assert json.loads(out)["arrivals"] == 0
