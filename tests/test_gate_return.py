"""The return's same-model check runs alone behind the gate, whatever clients send.

The strict simulated engine here is batch-variant: a greedy answer decoded beside another
request differs, as on a real GPU, so a check that shared its batch would quarantine a
healthy engine. For both dialects:

- ``learnsched run --gate`` is killed (``kill -9``) while the engine is parked, then
  started again on the same ledger and gate address while clients send requests all
  along (the gate is up before the loop, as ``run`` starts it): no quarantine, the engine
  returned and awake, every client request answered;
- past ``max_held`` while parked, the gate answers ``503`` with ``Retry-After`` and never
  forwards to the parked engine: the return is checked alone, the held requests served.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from learnsched.serving.ledger import read_ledger
from learnsched.testing import EngineProcess, free_port
from learnsched.testing.device import SimulatedDeviceReader

from control_support import (
    COUNTING,
    in_background,
    live_records,
    make_loop,
    unix_calendar,
    until_recorded,
)
from engine_support import on_threads, raw_request, strict_config

pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")

from test_gate import counts_settled

from learnsched.gate import Gate
from learnsched.gate.proxy import RETRY_AFTER_S

TESTS = Path(__file__).resolve().parent
# A greedy request each client sends: longer than the return's check, so they overlap.
REQUEST = {"model": "sim-model", "prompt": "hello", "max_tokens": 8, "temperature": 0}


@dataclass
class Clients:
    """Clients sending one request after another to the gate at ``url``, on threads."""

    url: str
    count: int = 4
    answers: list[tuple[int, bytes]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def _send(self) -> None:
        while not self.stop.is_set():
            try:
                status, _, body = raw_request(self.url, "POST", "/v1/completions", REQUEST)
            except ConnectionRefusedError:  # no gate listening yet: the restart comes
                time.sleep(0.005)
                continue
            except OSError as err:  # reached the gate, and not answered
                status, body = 0, str(err).encode()
            self.answers.append((status, body))

    @contextmanager
    def sending(self) -> Iterator[Clients]:
        """The clients send while in the ``with`` block."""
        with on_threads(self._send, self.count, self.stop, 30.0):
            yield self


def _wait_for(ledger: Path, kind: str, after: int, loop: subprocess.Popen[str]) -> None:
    """Until a ``kind`` record beyond index ``after`` (the run must not end first)."""
    deadline = time.monotonic() + 60.0
    while not any(r.kind == kind for r in live_records(ledger)[after:]):
        assert loop.poll() is None, _ended(loop, ledger, after)
        assert time.monotonic() < deadline, f"no {kind} record within 60 s"
        time.sleep(0.02)


def _ended(loop: subprocess.Popen[str], ledger: Path, after: int) -> str:
    """Why a run ended: its exit status, stderr and records since ``after``."""
    _, err = loop.communicate(timeout=30.0)
    kinds = [(r.kind, r.failure) for r in live_records(ledger)[after:]]
    return f"the run ended (exit {loop.returncode}): {err[-2000:]} {kinds}"


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_restart_with_clients_sending_returns_the_engine_it_was_killed_with(
    dialect: str, tmp_path: Path
) -> None:
    ledger, calendar = tmp_path / "ledger.jsonl", tmp_path / "calendar.json"
    gate_port = free_port()
    with EngineProcess(strict_config(dialect, batch_variant=True), lifetime_s=120.0) as sim:
        unix_calendar(calendar, time.time() + 1.0, 1, 60.0, 1.0)
        command = [
            sys.executable, "-m", "learnsched", "run", "--engine", dialect, "--url", sim.url,
            "--trainer", COUNTING, "--trainer-options", '{"work_quanta": 20000}',
            "--horizon", "10000", "--calendar", str(calendar), "--ledger", str(ledger),
            "--state-dir", str(tmp_path / "state"), "--recovery-s", "0.2",
            "--gate", f"127.0.0.1:{gate_port}", "--json",
        ]  # fmt: skip
        paths = [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}

        def start() -> subprocess.Popen[str]:
            return subprocess.Popen(command, cwd=tmp_path, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)  # fmt: skip

        with start() as first:
            _wait_for(ledger, "parked", 0, first)
            first.kill()  # kill -9 while parked: the gate dies with the run
            first.communicate()
        seen = len(live_records(ledger))
        clients = Clients(f"http://127.0.0.1:{gate_port}")
        with start() as restart:
            try:
                with clients.sending():
                    _wait_for(ledger, "trainer-ready", seen, restart)  # returned before it
                    time.sleep(0.5)  # the clients go on beside the restarted run
                os.killpg(restart.pid, signal.SIGTERM)
                out, err = restart.communicate(timeout=60.0)
            finally:
                restart.kill()
        assert restart.returncode == 0, err
        assert sim.alive(), sim.stderr_text()
        state = SimulatedDeviceReader(sim.url).state()
    records = live_records(ledger)[seen:]
    assert [r.detail for r in records if r.kind == "quarantine"] == []
    healed = next(r for r in records if r.kind == "return")
    assert (healed.detail["recovered"], healed.failure) == (True, None)
    assert (state["sleeping_tags"], state["paused"], state["weights_intact"]) == ([], None, True)
    assert clients.answers, "no client request reached the gate"
    assert [a for a in clients.answers if a[0] != 200] == []
    assert json.loads(out)["failed_requests"] == 0


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_past_max_held_while_parked_the_gate_answers_503_and_the_return_is_checked_alone(
    dialect: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    with (
        EngineProcess(strict_config(dialect, batch_variant=True), lifetime_s=120.0) as sim,
        Gate(sim.url, dialect, max_held=2) as gate,
        ThreadPoolExecutor(12) as pool,
    ):
        # No early return (the gate tells no one): the loan lasts to its window's end.
        loop = make_loop(sim.url, dialect, [(0.3, 2.5), (3600.0, 7200.0)], tmp_path,
                         door=gate, trainer_options={"work_quanta": 20_000},
                         horizon_s=10_000.0, until_s=3.0)  # fmt: skip
        thread, out = in_background(loop)
        until_recorded(ledger, "work", thread, out, 30.0)  # parked, the trainer at work
        sent = [
            pool.submit(raw_request, gate.url, "POST", "/v1/completions", REQUEST)
            for _ in range(12)
        ]
        answers = [future.result(timeout=60.0) for future in sent]
        thread.join(60.0)
        state = SimulatedDeviceReader(sim.url).state()
        counts = counts_settled(gate)
    assert "error" not in out, out
    records = read_ledger(ledger)
    assert [r.detail for r in records if r.kind == "quarantine"] == []
    returned = next(r for r in records if r.kind == "return")
    assert (returned.failure, returned.detail["held_requests"]) == (None, 2)
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [200] * 2 + [503] * 10
    assert {h["retry-after"] for status, h, _ in answers if status == 503} == {str(RETRY_AFTER_S)}
    assert (counts.held, counts.overflowed, counts.completed, counts.failed) == (2, 10, 2, 0)
    assert (state["sleeping_tags"], state["paused"], state["weights_intact"]) == ([], None, True)
