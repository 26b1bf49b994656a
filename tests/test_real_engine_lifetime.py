"""What clients see when ``learnsched run`` ends, in front of a real vLLM.

A standalone ``learnsched gate --control`` (a child process) fronts the shared sleep
server; ``learnsched run --attach`` (a child process, with the counting trainer) parks
the engine, and is then stopped by SIGTERM, or killed (``kill -9``), while parked.
Clients send completions through the gate the whole time (quiet only while the test
waits for the park, since an idle window is what the loop lends): none may be refused
or fail. After the SIGTERM the run has returned the engine; after the kill the gate's
lease lapses, the held requests go on to the sleeping vLLM, which queues them, and the
next run heals the engine and they complete. The gate ``learnsched run --gate`` serves
inside the run ends with it, as the docs say: clients are refused once it has gone.

These park the shared sleep server: run them under ``flock /tmp/rv/sleep.lock``; they
leave it awake.
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
import urllib.request
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from learnsched.serving.ledger import HandoffRecord

from control_support import COUNTING, live_records

pytestmark = pytest.mark.real_engine

TESTS = Path(__file__).resolve().parent
# The standalone gate's lease: longer than a restart of the run, as docs/serving.md says.
LEASE_S = 30.0
# Short windows with short gaps: the loop lends the first one the clients leave idle.
WINDOWS = [[1.0 + 3.0 * i, 3.0 + 3.0 * i] for i in range(30)] + [[3600.0, 7200.0]]
# Child processes on a loaded two-core machine: start-up and a clean stop.
START_S = 60.0
STOP_S = 30.0


class Traffic:
    """Completions sent to ``url`` every ``every_s`` seconds, each on a thread of its
    own (a held one does not hold up the next), until :meth:`stop`; each outcome kept."""

    def __init__(self, model: str, every_s: float = 0.15, timeout_s: float = 120.0) -> None:
        self.body = json.dumps({"model": model, "prompt": "hello", "max_tokens": 4,
                                "temperature": 0})  # fmt: skip
        self.every_s = every_s
        self.timeout_s = timeout_s
        self.url = ""
        self.outcomes: list[str] = []
        self.quiet = threading.Event()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(64)
        self._thread = threading.Thread(target=self._send_all, daemon=True)

    def start(self, url: str) -> Traffic:
        """Send to ``url`` from now on."""
        self.url = url
        self._thread.start()
        return self

    def _send_all(self) -> None:
        while not self._stop.wait(self.every_s):
            if not self.quiet.is_set():
                self._pool.submit(self._send)

    def _send(self) -> None:
        host, port = self.url.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=self.timeout_s)
        try:
            conn.request("POST", "/v1/completions", body=self.body,
                         headers={"Content-Type": "application/json"})  # fmt: skip
            answer = conn.getresponse()
            answer.read()
            outcome = "ok" if answer.status == 200 else f"status {answer.status}"
        except ConnectionRefusedError:
            outcome = "refused"
        except OSError as err:
            outcome = f"failed: {err!r}"
        finally:
            conn.close()
        self.outcomes.append(outcome)

    def stop(self) -> Counter[str]:
        """Stop sending, wait for every answer; the outcomes counted."""
        self._stop.set()
        self._thread.join(10.0)
        self._pool.shutdown(wait=True)
        return Counter(self.outcomes)


def is_sleeping(url: str) -> bool:
    """vLLM's own view."""
    with urllib.request.urlopen(url + "/is_sleeping", timeout=10) as answer:
        return bool(json.load(answer)["is_sleeping"])


def door(control_url: str) -> Any:
    """The standalone gate's door state (``GET /door`` of its control listener)."""
    with urllib.request.urlopen(control_url + "/door", timeout=10) as answer:
        return json.load(answer)


class Child:
    """A ``learnsched`` child process in a session of its own (as a service runs),
    its stderr kept (read on a thread, so the pipe never fills)."""

    def __init__(self, *args: str, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))}  # fmt: skip
        self.process = subprocess.Popen(
            [sys.executable, "-m", "learnsched", *args], cwd=cwd, env=env, text=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def line_with(self, text: str, timeout_s: float = START_S) -> str:
        """The first stderr line holding ``text`` (waited for)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [line for line in self.lines if text in line]
            if found:
                return found[0]
            assert self.process.poll() is None, self.why(f"exited before saying {text!r}")
            time.sleep(0.05)
        raise AssertionError(self.why(f"never said {text!r}"))

    def signal(self, signum: int) -> int:
        """``signum`` to its whole group; its exit status."""
        os.killpg(self.process.pid, signum)
        return self.process.wait(STOP_S)

    def why(self, what: str) -> str:
        """``what``, with the exit status and the end of stderr."""
        return f"{what} (exit {self.process.poll()}): " + "\n".join(self.lines[-30:])

    def end(self) -> None:
        """Kill it if it still runs (a failed test leaves nothing behind); close its pipe."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_S)
        self._reader.join(STOP_S)
        assert self.process.stderr is not None
        self.process.stderr.close()


@contextmanager
def children() -> Iterator[list[Child]]:
    """The children a test starts, each ended at the end."""
    started: list[Child] = []
    try:
        yield started
    finally:
        for child in reversed(started):
            child.end()


def run_args(engine_url: str, folder: Path, *front: str) -> list[str]:
    """``learnsched run`` with the counting trainer, a job that never ends in this test
    and the short windows, in front of ``front`` (``--attach URL`` or ``--gate ...``)."""
    calendar = folder / "calendar.json"
    calendar.write_text(json.dumps({"windows": WINDOWS, "clock": "relative"}))
    return [
        "run", "--engine", "vllm", "--url", engine_url, "--trainer", COUNTING,
        "--trainer-options", json.dumps({"work_quanta": 20000, "quantum_s": 0.05}),
        "--horizon", "10000", "--calendar", str(calendar), "--ledger",
        str(folder / "ledger.jsonl"), "--state-dir", str(folder / "state"),
        "--recovery-s", "0.5", "--timeout", "30", *front,
    ]  # fmt: skip


def wait_record(ledger: Path, kind: str, after: int, run: Child) -> HandoffRecord:
    """Wait for a ``kind`` record past index ``after``."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        for record in live_records(ledger)[after:]:
            if record.kind == kind:
                return record
        assert run.process.poll() is None, run.why(f"exited before a {kind} record")
        time.sleep(0.02)
    raise AssertionError(run.why(f"no {kind} record within {START_S:g} s"))


def park_quietly(traffic: Traffic, ledger: Path, run: Child) -> None:
    """Let the next window find the gate idle and wait until the run has parked."""
    wait_record(ledger, "trainer-ready", 0, run)
    seen = len(live_records(ledger))
    time.sleep(0.5)  # traffic through the run's door, awake
    traffic.quiet.set()
    wait_record(ledger, "parked", seen, run)


def standalone_gate(engine_url: str, folder: Path, started: list[Child]) -> tuple[str, str]:
    """``learnsched gate --control`` in front of ``engine_url``: its client and control
    URLs."""
    gate = Child(
        "gate", "--engine", "vllm", "--url", engine_url, "--listen", "127.0.0.1:0",
        "--control", "127.0.0.1:0", "--lease-s", str(LEASE_S), cwd=folder,
    )  # fmt: skip
    started.append(gate)
    client = gate.line_with("forwarding ").split("forwarding ")[1].split(" ->")[0]
    control = gate.line_with("door control ").split("door control ")[1].split(" ")[0]
    return client, control


@pytest.fixture
def awake_after(vllm_sleep: Any) -> Iterator[Any]:
    """The shared sleep server, woken at the end whatever the test left."""
    yield vllm_sleep
    if is_sleeping(vllm_sleep.url):
        urllib.request.urlopen(urllib.request.Request(
            vllm_sleep.url + "/wake_up", method="POST"), timeout=30).close()  # fmt: skip


def attached(url: str, folder: Path, control: str, started: list[Child]) -> Child:
    """A ``learnsched run --attach`` to the standalone gate's ``control`` listener."""
    run = Child(*run_args(url, folder, "--attach", control), cwd=folder)
    started.append(run)
    return run


def test_sigterm_while_parked_returns_the_engine_and_the_gate_serves_on(
    awake_after: Any, tmp_path: Path
) -> None:
    engine = awake_after
    traffic = Traffic(engine.model_name)
    with children() as started:
        client, control = standalone_gate(engine.url, tmp_path, started)
        traffic.start(client)
        run = attached(engine.url, tmp_path, control, started)
        park_quietly(traffic, tmp_path / "ledger.jsonl", run)
        traffic.quiet.clear()  # requests from now on are held at the closed door
        assert run.signal(signal.SIGTERM) == 0, run.why("SIGTERM")
        assert not is_sleeping(engine.url)  # returned before the run exited
        time.sleep(2.0)  # and the gate serves on without a run
        outcomes = traffic.stop()
        print(dict(outcomes))  # -s: the numbers docs/serving.md quotes
        assert not door(control)["closed"]
    assert set(outcomes) == {"ok"}, outcomes
    records = live_records(tmp_path / "ledger.jsonl")
    assert [r.kind for r in records][-2:] == ["return", "run-end"]


def test_kill_9_while_parked_the_gate_serves_on_and_the_next_run_heals(
    awake_after: Any, tmp_path: Path
) -> None:
    engine = awake_after
    ledger = tmp_path / "ledger.jsonl"
    traffic = Traffic(engine.model_name)
    with children() as started:
        client, control = standalone_gate(engine.url, tmp_path, started)
        traffic.start(client)
        run = attached(engine.url, tmp_path, control, started)
        park_quietly(traffic, ledger, run)
        assert run.signal(signal.SIGKILL) == -signal.SIGKILL
        traffic.quiet.clear()  # held at the door the killed run left closed
        assert is_sleeping(engine.url)  # the kill left it parked
        time.sleep(1.0)
        assert door(control)["closed"]
        seen = len(live_records(ledger))
        again = attached(engine.url, tmp_path, control, started)
        healed = wait_record(ledger, "return", seen, again)
        assert healed.detail["recovered"] is True
        assert healed.failure is None  # the check ran alone: the held ones were at the gate
        assert healed.detail["held_requests"] > 0
        assert not is_sleeping(engine.url)
        wait_record(ledger, "trainer-ready", seen, again)
        time.sleep(1.0)
        assert again.signal(signal.SIGTERM) == 0, again.why("SIGTERM")
        outcomes = traffic.stop()
        print(dict(outcomes))  # -s: the numbers docs/serving.md quotes
    assert set(outcomes) == {"ok"}, outcomes


def test_the_gate_a_run_serves_ends_with_the_run(awake_after: Any, tmp_path: Path) -> None:
    """``learnsched run --gate`` (documented: the gate lives as long as the run): the run
    returns the engine at SIGTERM, and its clients are refused once it has exited."""
    engine = awake_after
    traffic = Traffic(engine.model_name)
    with children() as started:
        run = Child(*run_args(engine.url, tmp_path, "--gate", "127.0.0.1:0"), cwd=tmp_path)
        started.append(run)
        traffic.start(run.line_with(" -> ").split("gate ")[1].split(" ->")[0])
        park_quietly(traffic, tmp_path / "ledger.jsonl", run)
        traffic.quiet.clear()
        assert run.signal(signal.SIGTERM) == 0, run.why("SIGTERM")
        assert not is_sleeping(engine.url)
        time.sleep(1.0)
        outcomes = traffic.stop()
        print(dict(outcomes))  # -s: the numbers docs/serving.md quotes
    assert outcomes["refused"] > 0, outcomes
    assert set(outcomes) <= {"ok", "refused"}, outcomes
