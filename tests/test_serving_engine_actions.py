"""The public engine layer: park only an idle engine, pause SGLang around the release,
sleep vLLM with ``mode=wait``, resume only what was released."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnsched.serving import EngineBusy, HttpStatusError, ServerConfigError, ServingEndpoint
from learnsched.serving.engines import (
    MEMORY_TAGS,
    Engine,
    Load,
    Parked,
    check_idle,
    engine,
    park,
    resume,
    same_model,
)

from engine_support import engine as sim_engine
from engine_support import strict_engine

Answer = tuple[int, bytes]


def metrics(dialect: str, running: int, waiting: int) -> Answer:
    names = engine(dialect).load_metrics
    return 200, f"{names[0]} {running}\n{names[1]} {waiting}\n".encode()


class FakeServer:
    """A server that answers from a script and records every call in order."""

    def __init__(self, dialect: str, routes: dict[str, Callable[[], Answer]]) -> None:
        self.url = "http://fake:1"
        self.dialect: Engine = engine(dialect)
        self.routes = routes
        self.calls: list[str] = []

    def request(self, method: str, path: str, body: object, timeout_s: float) -> Answer:
        shown = f"{method} {path}" + ("" if body is None else f" {json.dumps(body)}")
        self.calls.append(shown)
        for key in (f"{method} {path}", f"{method} {path.split('?')[0]}"):
            if key in self.routes:
                return self.routes[key]()
        return 200, b"{}"

    def call(self, method: str, path: str, body: object, timeout_s: float) -> bytes:
        status, data = self.request(method, path, body, timeout_s)
        if status != 200:
            raise HttpStatusError(status, f"{method} {path} answered {status}")
        return data

    def served_model(self, timeout_s: float) -> str:
        return "m"


class Sleeping:
    """vLLM's ``/is_sleeping``, flipped by ``/sleep`` and ``/wake_up``."""

    def __init__(self, asleep: bool = False) -> None:
        self.asleep = asleep

    def routes(self, dialect: str = "vllm") -> dict[str, Callable[[], Answer]]:
        def sleep() -> Answer:
            self.asleep = True
            return 200, b""

        def wake() -> Answer:
            self.asleep = False
            return 200, b""

        return {
            "GET /metrics": lambda: metrics(dialect, 0, 0),
            "POST /sleep": sleep,
            "POST /wake_up": wake,
            "GET /is_sleeping": lambda: (200, json.dumps({"is_sleeping": self.asleep}).encode()),
        }


class Door:
    def __init__(self, closed: bool = True, running: int = 0, waiting: int = 0) -> None:
        self.closed = closed
        self.counts = Load(running, waiting)

    def load(self) -> Load:
        return self.counts


# --- the order of the calls --------------------------------------------------------------
def test_vllm_parks_idle_with_mode_wait_and_wakes_only_a_sleeping_engine() -> None:
    state = Sleeping()
    server = FakeServer("vllm", state.routes())
    parked = park(server, level=1, timeout_s=1.0, poll_s=0.01)
    # Asleep by /is_sleeping, then the sleep-state gauge tells a park from a pause.
    assert server.calls == [
        "GET /metrics",
        "POST /sleep?level=1&mode=wait",
        "GET /is_sleeping",
        "GET /metrics",
    ]
    assert parked.released == MEMORY_TAGS
    assert not parked.paused
    assert set(parked.stamps) == {"idle_checked", "release_sent", "release_ack", "asleep_reported"}
    server.calls.clear()
    stamps = resume(server, parked, timeout_s=1.0, poll_s=0.01)
    assert server.calls == ["GET /is_sleeping", "GET /metrics", "POST /wake_up", "GET /is_sleeping"]
    assert "awake_reported" in stamps
    server.calls.clear()
    stamps = resume(server, parked, timeout_s=1.0, poll_s=0.01)  # already awake
    assert server.calls == ["GET /is_sleeping"]
    assert "found_awake" in stamps


@pytest.mark.parametrize("tags", [(), ("kv_cache",), ("weights", "kv_cache")])
def test_sglang_pauses_checks_again_releases_and_resumes_exactly_those_tags(
    tags: tuple[str, ...],
) -> None:
    server = FakeServer("sglang", {"GET /metrics": lambda: metrics("sglang", 0, 0)})
    parked = park(server, tags=tags, timeout_s=1.0)
    body = json.dumps({"tags": list(tags)} if tags else {})
    assert server.calls == [
        "GET /metrics",
        'POST /pause_generation {"mode": "in_place"}',
        "GET /metrics",
        f"POST /release_memory_occupation {body}",
    ]
    assert parked.paused
    assert parked.tags == tags
    server.calls.clear()
    stamps = resume(server, parked, timeout_s=1.0)
    assert server.calls == [
        f"POST /resume_memory_occupation {body}",
        "POST /continue_generation {}",
    ]
    assert stamps["resume_sent"] <= stamps["resume_ack"] <= stamps["continued"]


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_busy_engine_is_never_parked(dialect: str) -> None:
    server = FakeServer(dialect, {"GET /metrics": lambda: metrics(dialect, 1, 2)})
    with pytest.raises(EngineBusy, match=r"1 running, 2 waiting"):
        park(server, timeout_s=1.0)
    assert server.calls == ["GET /metrics"]  # nothing but the look


def test_a_request_that_reached_sglang_before_the_pause_stops_the_park() -> None:
    loads = iter([(0, 0), (1, 0)])  # idle, then a request got in before the pause
    server = FakeServer("sglang", {"GET /metrics": lambda: metrics("sglang", *next(loads))})
    with pytest.raises(EngineBusy):
        park(server, timeout_s=1.0)
    assert server.calls[-1] == "POST /continue_generation {}"
    assert not any("release_memory" in call for call in server.calls)


def test_gauges_that_lag_are_waited_for_within_the_bound() -> None:
    # Busy twice, then idle; the last is read again where the park is confirmed.
    loads = iter([(1, 0), (1, 0), (0, 0), (0, 0)])
    server = FakeServer(
        "vllm", {**Sleeping().routes(), "GET /metrics": lambda: metrics("vllm", *next(loads))}
    )
    park(server, timeout_s=1.0, poll_s=0.01, idle_wait_s=1.0)
    assert server.calls[:4] == ["GET /metrics"] * 3 + ["POST /sleep?level=1&mode=wait"]


def test_a_failed_sglang_release_continues_and_never_resumes() -> None:
    server = FakeServer(
        "sglang",
        {"GET /metrics": lambda: metrics("sglang", 0, 0),
         "POST /release_memory_occupation": lambda: (500, b"boom")},
    )  # fmt: skip
    stamps: dict[str, int] = {}
    with pytest.raises(HttpStatusError):
        park(server, timeout_s=1.0, stamps=stamps)
    assert server.calls[-1] == "POST /continue_generation {}"
    assert not any("resume_memory" in call for call in server.calls)
    assert "release_sent" in stamps
    assert "release_ack" not in stamps


@pytest.mark.parametrize("asleep_after", [False, True])
def test_a_failed_vllm_sleep_wakes_only_if_it_sleeps(asleep_after: bool) -> None:
    state = Sleeping()

    def failing_sleep() -> Answer:
        state.asleep = asleep_after
        return 500, b"boom"

    server = FakeServer("vllm", {**state.routes(), "POST /sleep": failing_sleep})
    with pytest.raises(HttpStatusError):
        park(server, timeout_s=1.0)
    assert ("POST /wake_up" in server.calls) is asleep_after


def test_sglang_without_pause_generation_is_named() -> None:
    server = FakeServer(
        "sglang",
        {"GET /metrics": lambda: metrics("sglang", 0, 0),
         "POST /pause_generation": lambda: (404, b"not found")},
    )  # fmt: skip
    with pytest.raises(ServerConfigError, match="/pause_generation"):
        park(server, timeout_s=1.0)
    assert not any("release" in call for call in server.calls)


# --- the door in front --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("door", "message"),
    [(Door(closed=False), "open"), (Door(running=1), "1 requests in flight"),
     (Door(waiting=3), "3 held")],
)  # fmt: skip
def test_a_door_that_is_open_or_not_empty_refuses_the_park(door: Door, message: str) -> None:
    server = FakeServer("vllm", Sleeping().routes())
    with pytest.raises(EngineBusy, match=message):
        park(server, door=door, timeout_s=1.0)
    assert server.calls == []


def test_without_gauges_only_a_door_can_vouch_for_idleness() -> None:
    server = FakeServer("sglang", {"GET /metrics": lambda: (404, b"")})
    with pytest.raises(ServerConfigError, match="--enable-metrics"):
        check_idle(server, None, 1.0)
    assert check_idle(server, Door(), 1.0) is None


# --- the recorded park, the same-model check ---------------------------------------------
@given(
    st.sampled_from(["vllm", "sglang"]),
    st.integers(1, 2),
    st.lists(st.sampled_from(MEMORY_TAGS), unique=True),
    st.booleans(),
)
def test_a_recorded_park_reads_back(
    dialect: str, level: int, tags: list[str], paused: bool
) -> None:
    parked = Parked(
        dialect, level, tuple(tags), engine(dialect).released_tags(tags), paused, {"x": 1}
    )
    back = Parked.from_json(json.loads(json.dumps(parked.to_json())))
    assert back == Parked(parked.engine, level, parked.tags, parked.released, paused)


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [({"engine": "vllm"}, ValueError, "lacks level, tags, released, paused"),
     ({"engine": "vllm", "level": True, "tags": [], "released": [], "paused": False},
      TypeError, "level must be an integer, got True"),
     ({"engine": "vllm", "level": 1, "tags": "kv", "released": [], "paused": False},
      TypeError, "tags must be a list of names, got 'kv'")],
)  # fmt: skip
def test_a_bad_recorded_park_is_named(data: dict[str, Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        Parked.from_json(data)


def test_resume_refuses_another_engines_park() -> None:
    server = FakeServer("vllm", Sleeping().routes())
    with pytest.raises(ValueError, match="a sglang park"):
        resume(server, Parked("sglang", 1, (), MEMORY_TAGS, True), timeout_s=1.0)


def test_same_model() -> None:
    assert same_model("a b", "a b") is None
    assert "weights not restored" in str(same_model("a b", "c d"))


def test_the_usage_only_stream_event_has_no_text() -> None:
    assert engine("vllm").event_text({"choices": [], "usage": {"completion_tokens": 3}}) == ""
    with pytest.raises(KeyError):
        engine("vllm").event_text({"usage": {}})


# --- on the simulated engine ---------------------------------------------------------------
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_park_and_resume_on_the_simulator_serve_the_same_model(dialect: str, strict: bool) -> None:
    with (strict_engine if strict else sim_engine)(dialect) as sim:
        endpoint = ServingEndpoint(sim.url, dialect)
        before = endpoint.generate(4, timeout_s=5).text
        parked = park(endpoint, timeout_s=5.0)
        assert endpoint.request("GET", "/sim/state", None, 5)[0] == 200
        state = json.loads(endpoint.call("GET", "/sim/state", None, 5))
        assert state["sleeping_tags"] == ["kv_cache", "weights"]
        # vLLM's sleep pauses its scheduler (with the dialect's mode=wait) until the wake-up.
        paused = "wait" if dialect == "vllm" else None
        assert state["paused"] == ("in_place" if parked.paused else paused)
        resume(endpoint, parked, timeout_s=5.0)
        assert same_model(before, endpoint.generate(4, timeout_s=5).text) is None
        assert sim.alive()


def test_a_generation_sent_to_a_paused_sglang_waits_for_the_continue() -> None:
    with strict_engine("sglang") as sim:
        endpoint = ServingEndpoint(sim.url, "sglang")
        parked = park(endpoint, timeout_s=5.0)
        done: list[float] = []
        thread = threading.Thread(target=lambda: done.append(endpoint.generate(2, 10).done_ns))
        thread.start()
        time.sleep(0.3)
        assert not done  # held by the pause, not failed on released memory
        resumed = time.perf_counter_ns()
        resume(endpoint, parked, timeout_s=5.0)
        thread.join(10)
        assert done
        assert done[0] > resumed
        assert sim.alive()  # the request never ran on released memory


def test_on_mark_is_told_each_stamp_as_it_is_taken() -> None:
    seen: list[tuple[str, int]] = []
    stamps: dict[str, int] = {}
    server = FakeServer("sglang", {"GET /metrics": lambda: metrics("sglang", 0, 0)})
    park(
        server,
        timeout_s=1.0,
        stamps=stamps,
        on_mark=lambda name: seen.append((name, len(server.calls))),
    )
    # release_sent is told before the release call, release_ack after it.
    assert seen == [("idle_checked", 1), ("paused", 2), ("release_sent", 3), ("release_ack", 4)]
    assert list(stamps) == [name for name, _ in seen]
