"""A scheduler's end of a long-lived gate (learnsched.gate.remote.RemoteGate), and
``learnsched run --attach``: the loop drives the door over the control listener as it
drives the in-process gate's, and the gate outlives every run, whatever ends it.

The strict simulated engine (it queues while asleep, as vLLM does) in a child process;
the gate and its control listener on threads of this process; ``learnsched run`` as a
child process where a signal must reach it.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from learnsched.control.front import held_arrivals
from learnsched.serving import read_ledger
from learnsched.testing import EngineProcess
from learnsched.testing.device import SimulatedDeviceReader

from conftest import one_line, run
from control_support import COUNTING, live_records, make_loop
from engine_support import strict_config

pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")

from learnsched.gate import ControlServer, Gate, RemoteGate

LEASE_S = 1.0  # where a test waits for a lease to lapse, or shows it renewed past it
TESTS = Path(__file__).resolve().parent


def send(url: str, statuses: list[int]) -> None:
    """One completion through the gate at ``url``; its status (0: no answer) appended."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60.0)
    body = json.dumps({"model": "sim-model", "prompt": "hi", "max_tokens": 2, "temperature": 0})
    try:
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        statuses.append(answer.status)
    except OSError:
        statuses.append(0)
    finally:
        conn.close()


def sending(url: str, statuses: list[int]) -> threading.Thread:
    """:func:`send` on a thread of its own, started."""
    thread = threading.Thread(target=send, args=(url, statuses), daemon=True)
    thread.start()
    return thread


def until(ready: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait until ``ready()`` (polled), at most ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert time.monotonic() < deadline, f"not ready within {timeout_s:g} s"
        time.sleep(0.01)


def asleep(sim: EngineProcess) -> bool:
    """Whether the simulated engine has memory released."""
    return bool(SimulatedDeviceReader(sim.url).state()["sleeping_tags"])


@pytest.fixture(scope="module")
def sim() -> Iterator[EngineProcess]:
    with EngineProcess(strict_config("vllm"), lifetime_s=300.0) as process:
        yield process


@pytest.fixture
def control(sim: EngineProcess) -> Iterator[ControlServer]:
    """A long-lived gate's control listener (the gate on a thread of this process), with
    the default lease: a loaded machine never starves its renewals that long."""
    with Gate(sim.url, "vllm") as gate, ControlServer(gate) as server:
        yield server


@pytest.fixture
def short_lease(sim: EngineProcess) -> Iterator[ControlServer]:
    """The same with a lease of :data:`LEASE_S`."""
    with Gate(sim.url, "vllm") as gate, ControlServer(gate, lease_s=LEASE_S) as server:
        yield server


# --- the client ---------------------------------------------------------------------------
def test_the_remote_door_closes_holds_and_opens_as_the_gates_own(
    short_lease: ControlServer, sim: EngineProcess
) -> None:
    told: list[bool] = []
    with RemoteGate(short_lease.url, "vllm", sim.url, on_arrival=told.append) as door:
        assert door.url == short_lease.gate.url
        assert door.close(1.0) is True
        assert door.closed
        assert short_lease.gate.closed
        statuses: list[int] = []
        client = sending(door.url, statuses)
        until(lambda: door.load().waiting == 1)
        assert (door.load().running, door.load().waiting) == (0, 1)
        time.sleep(2 * LEASE_S)  # renewed: held past the lease
        assert door.closed
        added = door.open()
        client.join(10.0)
        assert statuses == [200]
        assert told == [True]
        assert len(added) == 1
        assert added[0] >= 2 * LEASE_S
        door.release_sent()
        door.release_done()
        counts = door.counts()
    assert (counts.arrivals, counts.held, counts.completed, counts.parks) == (1, 1, 1, 1)
    assert counts.added_latency_s == tuple(added)


def test_counts_are_those_since_the_client_started(
    control: ControlServer, sim: EngineProcess
) -> None:
    before: list[int] = []
    sending(control.gate.url, before).join(10.0)
    with RemoteGate(control.url, "vllm", sim.url) as door:
        assert door.counts().arrivals == 0
        after: list[int] = []
        door.close(1.0)
        client = sending(door.url, after)
        until(lambda: door.load().waiting == 1)
        added = door.open()
        client.join(10.0)
        counts = door.counts()
    assert before == after == [200]
    assert (counts.arrivals, counts.held, counts.completed) == (1, 1, 1)
    assert counts.added_latency_s == tuple(added)
    assert control.gate.counts().arrivals == 2


def test_a_client_that_stops_opens_the_door_it_holds(
    control: ControlServer, sim: EngineProcess
) -> None:
    with RemoteGate(control.url, "vllm", sim.url) as door:
        door.close(1.0)
    assert not control.gate.closed


def test_a_client_that_vanishes_loses_the_door_to_the_lease(
    short_lease: ControlServer, sim: EngineProcess
) -> None:
    """It stops renewing (as a killed run does): the gate opens the door by itself."""
    door = RemoteGate(short_lease.url, "vllm", sim.url).start()
    door.close(1.0)
    door._stop.set()  # the renewing thread ends, as in a process killed
    until(lambda: not short_lease.gate.closed, LEASE_S + 5.0)


def test_a_client_that_starts_at_a_door_left_closed_takes_it_over(
    short_lease: ControlServer, sim: EngineProcess
) -> None:
    """A run killed with the door closed, and the next run attached before the lease
    lapsed: the door stays closed, renewed by the new run, until it opens it."""
    dead = RemoteGate(short_lease.url, "vllm", sim.url).start()
    dead.close(1.0)
    dead._stop.set()  # killed: it renews no more
    with RemoteGate(short_lease.url, "vllm", sim.url) as door:
        assert short_lease.state()["epoch"] == 2  # closed again, by this client
        time.sleep(2 * LEASE_S)  # past the killed client's lease: renewed by this one
        assert short_lease.gate.closed
        door.open()
        assert not short_lease.gate.closed


@pytest.mark.parametrize(
    ("engine", "upstream"), [("sglang", None), ("vllm", "http://127.0.0.1:9")]
)
def test_a_gate_in_front_of_another_engine_is_refused(
    control: ControlServer, sim: EngineProcess, engine: str, upstream: str | None
) -> None:
    with pytest.raises(ValueError, match=f"the gate at {control.url} fronts vllm at {sim.url}"):
        RemoteGate(control.url, engine, upstream or sim.url).start()


def test_the_same_server_with_a_trailing_slash_is_accepted(
    control: ControlServer, sim: EngineProcess
) -> None:
    with RemoteGate(control.url, "vllm", sim.url + "/") as door:
        assert door.url == control.gate.url


def test_an_unreachable_control_listener_is_named() -> None:
    with pytest.raises(ConnectionError, match=r"the gate's control listener http://127\.0\.0\.1:9"):
        RemoteGate("http://127.0.0.1:9", "vllm", "http://127.0.0.1:8000").start()


@pytest.mark.parametrize("url", ["127.0.0.1:9", "https://127.0.0.1:9", "http://x:9/door"])
def test_a_bad_control_url_is_named(url: str) -> None:
    with pytest.raises(ValueError, match="control_url must be http://HOST:PORT"):
        RemoteGate(url, "vllm", "http://127.0.0.1:8000")


# --- the loop behind it ---------------------------------------------------------------------
def test_the_loop_returns_early_for_a_request_held_at_the_remote_door(
    control: ControlServer, sim: EngineProcess, tmp_path: Path
) -> None:
    statuses: list[int] = []
    sent: list[threading.Thread] = []
    with RemoteGate(control.url, "vllm", sim.url) as door:

        def inject(clock_start: float) -> None:
            def later() -> None:
                until(lambda: loop.lent, 30.0)  # inside the loan, however slow the park
                sent.append(sending(door.url, statuses))

            threading.Thread(target=later, daemon=True).start()

        loop = make_loop(sim.url, "vllm", [(0.3, 3.0), (3600.0, 7200.0)], tmp_path,
                         trainer_options={"work_quanta": 20_000}, horizon_s=10_000.0,
                         until_s=3.5, on_ready=inject, door=door)  # fmt: skip
        door.on_arrival = held_arrivals(loop.watcher.notify_arrival)
        totals = loop.run()
        sent[0].join(10.0)
        counts = door.counts()
    assert statuses == [200]
    assert (totals.handoffs, totals.early_returns) == (1, 1)
    assert (counts.held, counts.failed, counts.parks, counts.parks_on_busy_engine) == (1, 0, 1, 0)
    (record,) = [r for r in read_ledger(tmp_path / "ledger.jsonl") if r.kind == "return"]
    assert record.detail["held_requests"] == 1
    assert record.stamps_ns["interrupted"] - record.stamps_ns["release_ack"] < 2e9


# --- learnsched run --attach ----------------------------------------------------------------
def run_child(
    control: ControlServer, sim: EngineProcess, folder: Path, *extra: str
) -> subprocess.Popen[str]:
    """``learnsched run --attach`` in a session of its own (as a service runs)."""
    calendar = folder / "calendar.json"
    windows = [[0.5 + 6.0 * i, 5.5 + 6.0 * i] for i in range(10)] + [[3600.0, 7200.0]]
    calendar.write_text(json.dumps({"windows": windows, "clock": "relative"}))
    command = [
        sys.executable, "-m", "learnsched", "run", "--engine", "vllm", "--url", sim.url,
        "--trainer", COUNTING, "--trainer-options", '{"work_quanta": 20000}',
        "--horizon", "10000", "--calendar", str(calendar), "--ledger",
        str(folder / "ledger.jsonl"), "--state-dir", str(folder / "state"),
        "--recovery-s", "0.2", "--attach", control.url, *extra,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}  # fmt: skip
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip


def wait_for(
    ledger: Path, kind: str, after: int, child: subprocess.Popen[str], timeout_s: float = 60.0
) -> None:
    """Until a ``kind`` record past index ``after`` (the child must not exit first)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(r.kind == kind for r in live_records(ledger)[after:]):
            return
        assert child.poll() is None, child.communicate()[1]
        time.sleep(0.02)
    raise AssertionError(f"no {kind} record within {timeout_s:g} s")


def stopped(child: subprocess.Popen[str], signum: int) -> int:
    """``signum`` to the child's group; its exit status."""
    os.killpg(child.pid, signum)
    child.communicate(timeout=60.0)
    return int(child.returncode)


def test_sigterm_while_parked_returns_the_engine_and_the_gate_serves_on(
    control: ControlServer, sim: EngineProcess, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    child = run_child(control, sim, tmp_path)
    wait_for(ledger, "parked", 0, child)
    assert stopped(child, signal.SIGTERM) == 0
    assert not asleep(sim)
    statuses: list[int] = []
    sending(control.gate.url, statuses).join(10.0)
    assert statuses == [200]
    assert not control.gate.closed
    assert [r.kind for r in read_ledger(ledger)][-2:] == ["return", "run-end"]


def killed_while_parked(
    control: ControlServer, sim: EngineProcess, folder: Path
) -> tuple[threading.Thread, list[int]]:
    """A run killed (-9) while the engine is parked, and a request sent after: the
    request's thread and its status (once answered)."""
    child = run_child(control, sim, folder)
    wait_for(folder / "ledger.jsonl", "parked", 0, child)
    assert stopped(child, signal.SIGKILL) == -signal.SIGKILL
    assert asleep(sim)
    statuses: list[int] = []
    return sending(control.gate.url, statuses), statuses


def heal(control: ControlServer, sim: EngineProcess, folder: Path) -> None:
    """The next run: it heals the engine (a clean return, recorded as recovered)."""
    ledger = folder / "ledger.jsonl"
    seen = len(live_records(ledger))
    again = run_child(control, sim, folder)
    wait_for(ledger, "trainer-ready", seen, again)
    assert not asleep(sim)
    assert stopped(again, signal.SIGTERM) == 0
    healed = next(r for r in read_ledger(ledger)[seen:] if r.kind == "return")
    assert healed.detail["recovered"] is True
    assert healed.failure is None


def test_after_kill_9_the_request_waits_at_the_gate_until_the_next_run_has_healed(
    sim: EngineProcess, tmp_path: Path
) -> None:
    """The request stays held at the gate until the heal is done: the same-model check
    runs alone, on an engine whose greedy text varies with the batch."""
    with Gate(sim.url, "vllm") as gate, ControlServer(gate, lease_s=60.0) as control:
        held, statuses = killed_while_parked(control, sim, tmp_path)
        until(lambda: gate.load().waiting == 1)
        heal(control, sim, tmp_path)
        held.join(10.0)
        counts = gate.counts()
    assert statuses == [200]
    assert (counts.held, counts.completed, counts.failed) == (1, 1, 0)


def test_after_kill_9_the_lease_lapses_and_the_engine_holds_the_request_until_the_heal(
    tmp_path: Path,
) -> None:
    """No run came back within the lease: the request goes on to the sleeping engine,
    which queues it, and completes once the next run has healed the engine (whose check
    shares the batch with it: a batch-invariant engine, as docs/serving.md says)."""
    invariant = strict_config("vllm", batch_variant=False)
    with EngineProcess(invariant, lifetime_s=120.0) as sim, Gate(sim.url, "vllm") as gate, \
            ControlServer(gate, lease_s=LEASE_S) as control:  # fmt: skip
        held, statuses = killed_while_parked(control, sim, tmp_path)
        time.sleep(LEASE_S + 0.5)
        assert not gate.closed
        assert statuses == []  # queued in the sleeping engine
        heal(control, sim, tmp_path)
        held.join(10.0)
    assert statuses == [200]


def test_a_run_that_ends_leaves_the_gate_serving(
    control: ControlServer, sim: EngineProcess, tmp_path: Path
) -> None:
    child = run_child(control, sim, tmp_path, "--seconds", "3", "--json")
    out, err = child.communicate(timeout=60.0)
    assert child.returncode == 0, err
    assert f"gate {control.gate.url} -> {sim.url}" in err
    assert json.loads(out)["handoffs"] >= 1
    statuses: list[int] = []
    sending(control.gate.url, statuses).join(10.0)
    assert statuses == [200]


def test_run_attach_to_nothing_is_an_environment_failure(
    capsys: pytest.CaptureFixture[str], sim: EngineProcess, tmp_path: Path
) -> None:
    calendar = tmp_path / "calendar.json"
    calendar.write_text(json.dumps({"windows": [[0.5, 1.0]]}))
    status, _, err = run(
        capsys, "run", "--engine", "vllm", "--url", sim.url, "--trainer", COUNTING,
        "--calendar", str(calendar), "--ledger", str(tmp_path / "ledger.jsonl"),
        "--state-dir", str(tmp_path / "state"), "--attach", "http://127.0.0.1:9",
    )  # fmt: skip
    assert status == 4
    assert "the gate's control listener http://127.0.0.1:9" in one_line(err)
