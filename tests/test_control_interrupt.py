"""An arrival interrupts the trainer's quantum at once (every early return starts within
one poll of the arrival, and a held request's added latency is at most the return path
plus 1 s), with multi-second quanta, on the strict simulated engine.

The trainer's partial quantum is lost (the model counts whole quanta), durable progress
stays, and the ledger records the interrupted quantum; a trainer that ignores the
interrupt is killed after a bounded grace.
"""

from __future__ import annotations

import gc
import http.client
import json
import threading
import time
import weakref
from pathlib import Path

import pytest

from learnsched.control.trainer import TrainerIgnoredInterrupt, TrainerProcess
from learnsched.serving import HandoffRecord, read_ledger
from learnsched.testing import EngineProcess

from control_support import COUNTING, live_records, make_loop
from engine_support import strict_config

QUANTUM_S = 3.0  # multi-second quanta: waiting for one to end would break the bound
POLL_S = 0.05  # LoopOptions.poll_s
SLACK_S = 0.5  # scheduling noise on a loaded two-core CI machine (a quantum: 3 s)
GRACE_S = 0.5  # Trainer.interrupt_grace_s


def test_an_interrupt_ends_the_quantum_at_once_and_undoes_it(tmp_path: Path) -> None:
    trainer = TrainerProcess(COUNTING, tmp_path, {"quantum_s": QUANTUM_S})
    trainer.start()
    try:
        assert trainer.resume() == 0
        threading.Timer(0.3, trainer.interrupt).start()
        start = time.monotonic()
        advanced = trainer.advance(1)
        assert time.monotonic() - start < 0.3 + GRACE_S
        assert (advanced.progress, advanced.interrupted) == (0, True)
        # Still raised: the next quantum returns at once; lowered, quanta run again.
        assert trainer.advance(1).interrupted
        assert trainer.running  # the same child, alive
    finally:
        trainer.close()


def test_a_trainer_that_ignores_the_interrupt_is_killed_after_the_grace(tmp_path: Path) -> None:
    trainer = TrainerProcess(
        COUNTING, tmp_path, {"quantum_s": QUANTUM_S, "honour_interrupt": False}
    )
    assert trainer.interrupt_grace_s == GRACE_S  # the class's own
    assert TrainerProcess(COUNTING, tmp_path, interrupt_grace_s=2.0).interrupt_grace_s == 2.0
    trainer.start()
    try:
        trainer.resume()
        threading.Timer(0.3, trainer.interrupt).start()
        start = time.monotonic()
        with pytest.raises(TrainerIgnoredInterrupt, match=r"Trainer\.interrupted"):
            trainer.advance(1)
        assert 0.3 + GRACE_S - 0.05 <= time.monotonic() - start < QUANTUM_S
        assert not trainer.running
    finally:
        trainer.close()


def test_closing_or_killing_a_trainer_frees_its_interrupt_at_once(tmp_path: Path) -> None:
    """The interrupt's semaphores are unregistered when the child goes, not at a later
    garbage collection: one that runs inside another call to multiprocessing's resource
    tracker cannot unregister them on Python 3.12 and 3.13 (they leak, with a warning)."""
    trainer = TrainerProcess(COUNTING, tmp_path, {})
    gc.disable()  # freed by reference counting alone, or not at all
    try:
        for end in (trainer.close, trainer.kill):
            trainer.start()
            flag = weakref.ref(trainer._interrupt)
            end()
            assert flag() is None
            trainer.interrupt()  # no child: nothing to raise, and no error
            trainer.clear_interrupt()
    finally:
        gc.enable()
        trainer.close()


def send(port: int) -> tuple[int, str]:
    body = json.dumps({"model": "sim-model", "prompt": "hello", "max_tokens": 4,
                       "temperature": 0})  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30.0)
    try:
        conn.request("POST", "/v1/completions", body=body,
                     headers={"Content-Type": "application/json"})  # fmt: skip
        answer = conn.getresponse()
        return answer.status, answer.read().decode()
    finally:
        conn.close()


def wait_for(ledger: Path, kind: str, timeout_s: float = 30.0) -> None:
    """Until the ledger has a ``kind`` record (records are fsynced lines)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(r.kind == kind for r in live_records(ledger)):
            return
        time.sleep(0.02)
    raise AssertionError(f"no {kind} record within {timeout_s:g} s")


def held_during_a_quantum(
    dialect: str, folder: Path, honour: bool
) -> tuple[list[HandoffRecord], int]:
    """Run a loop with 3 s quanta behind the gate; one request arrives 1 s into the
    second quantum. The ledger's records, and when the request was sent (perf ns)."""
    pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")
    from learnsched.gate import Gate

    ledger = folder / "ledger.jsonl"
    sent: list[int] = []
    answers: list[tuple[int, str]] = []
    with (
        EngineProcess(strict_config(dialect), lifetime_s=120.0) as sim,
        Gate(sim.url, dialect) as gate,
    ):
        loop = make_loop(
            sim.url, dialect, [(0.2, 60.0), (3600.0, 7200.0)], folder,
            trainer_options={"work_quanta": 200, "quantum_s": QUANTUM_S,
                             "honour_interrupt": honour},
            horizon_s=10_000.0, door=gate,
        )  # fmt: skip
        gate.on_arrival = lambda held: loop.watcher.notify_arrival() if held else None

        def client() -> None:
            try:
                wait_for(ledger, "work")  # the first quantum is done: 1 s into the second
                time.sleep(1.0)
                sent.append(time.perf_counter_ns())
                answers.append(send(gate.port))
                wait_for(ledger, "return")
            finally:
                loop.stop()

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        totals = loop.run()
        thread.join(30.0)
        assert sim.alive(), sim.stderr_text()
    assert [status for status, _ in answers] == [200], answers
    assert (totals.handoffs, totals.early_returns, totals.interrupted_quanta) == (1, 1, 1)
    return list(read_ledger(ledger)), sent[0]


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_an_arrival_interrupts_a_three_second_quantum(dialect: str, tmp_path: Path) -> None:
    records, sent_ns = held_during_a_quantum(dialect, tmp_path, honour=True)
    (cut,) = [r for r in records if r.kind == "interrupted"]
    assert cut.detail["honoured"] is True
    assert cut.detail["progress"] == 1  # whole quanta only: the second one is lost
    assert cut.detail["seconds"] < 1.0 + POLL_S + SLACK_S  # not the quantum's 3 s
    (ret,) = [r for r in records if r.kind == "return"]
    stamps = ret.stamps_ns
    # The early return starts within one poll of the arrival, not after the quantum.
    assert (stamps["interrupted"] - sent_ns) / 1e9 <= POLL_S + SLACK_S
    # Added latency: at most the return path plus 1 s.
    (added,) = ret.detail["added_latency_s"]
    assert added <= ret.readiness_s + 1.0
    # Durable progress stays: the first quantum was saved or lost by the model's choice.
    ends = [r for r in records if r.kind in ("checkpoint", "discard")]
    assert ends
    assert all(r.kind != "discard" or r.unsaved_lost == 1 for r in ends)
    assert [r.detail["progress"] for r in records if r.kind == "work"] == [1]


def test_a_trainer_that_ignores_the_interrupt_is_stopped_in_bounded_time(tmp_path: Path) -> None:
    records, sent_ns = held_during_a_quantum("sglang", tmp_path, honour=False)
    (cut,) = [r for r in records if r.kind == "interrupted"]
    assert cut.detail["honoured"] is False
    (lost,) = [r for r in records if r.kind == "trainer-lost"]
    assert lost.unsaved_lost == 1
    assert "interrupt" in lost.detail["why"]
    (ret,) = [r for r in records if r.kind == "return"]
    assert ret.detail["early"] is True
    waited = (ret.stamps_ns["interrupted"] - sent_ns) / 1e9
    assert GRACE_S - 0.05 <= waited <= GRACE_S + POLL_S + SLACK_S
    (added,) = ret.detail["added_latency_s"]
    assert added <= ret.readiness_s + 1.0
