"""kill -9 of the loop and of the trainer at random points: no durable quantum is lost.

``learnsched run`` runs as a real process against the simulated engine (a child
process too); each round kills the loop or its trainer at a random moment, and a killed
loop is started again on the same ledger and state folder. Afterwards the ledger must
show that every restart resumed from at least the last recorded checkpoint, that
checkpoints never went back, that every park a killed run left open was returned, and
the last (cleanly stopped) run's summary must equal the replay of its records.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from learnsched.control.journal import replay, run_of
from learnsched.handoff.ledger import HandoffRecord, read_ledger
from learnsched.testing import EngineConfig, EngineProcess

from control_support import COUNTING, LORA, unix_calendar

TESTS = Path(__file__).resolve().parent
KILLS = 20


def _records(ledger: Path) -> list[HandoffRecord]:
    return read_ledger(ledger) if ledger.exists() else []


def _wait_for(ledger: Path, kind: str, after: int, timeout_s: float) -> HandoffRecord | None:
    """The first ``kind`` record beyond index ``after`` (polled), or None."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        found = [r for r in _records(ledger)[after:] if r.kind == kind]
        if found:
            return found[-1]
        time.sleep(0.05)
    return None


def _kill(loop: subprocess.Popen[str]) -> None:
    loop.kill()
    loop.wait()
    if loop.stdout is not None:
        loop.stdout.close()


def campaign(
    tmp_path: Path,
    trainer: str,
    options: dict[str, object],
    loop_share: float,
    window_s: float,
) -> Path:
    """Run :data:`KILLS` kill rounds on windows of ``window_s``; the ledger."""
    rng = random.Random(20261201)
    ledger, state = tmp_path / "ledger.jsonl", tmp_path / "state"
    calendar = tmp_path / "calendar.json"
    with EngineProcess(EngineConfig("vllm", token_s=0.001), lifetime_s=900.0) as engine:
        unix_calendar(calendar, time.time() + 1.0, 400, window_s, 0.3)
        command = [
            sys.executable, "-m", "learnsched", "run", "--engine", "vllm", "--url", engine.url,
            "--trainer", trainer, "--trainer-options", json.dumps(options),
            "--calendar", str(calendar), "--ledger", str(ledger), "--state-dir", str(state),
            "--recovery-s", "0.2", "--json",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(TESTS)}
        loop: subprocess.Popen[str] | None = None
        for round_ in range(KILLS):
            if loop is None or loop.poll() is not None:
                seen = len(_records(ledger))
                loop = subprocess.Popen(
                    command, cwd=tmp_path, env=env, text=True,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                assert _wait_for(ledger, "run-start", seen, 300.0) is not None
            seen = len(_records(ledger))
            park = _wait_for(ledger, "park", seen, 60.0)  # lent: work is under way
            assert park is not None
            # Round 0 kills the loop at once, while the engine is surely parked, so the
            # restart's return of a park left open is always exercised; the others kill
            # at a random point of the segment (or after).
            first = round_ == 0
            time.sleep(0.0 if first else rng.uniform(0.0, window_s))
            pid = park.detail.get("trainer_pid")
            if first or rng.random() < loop_share or not isinstance(pid, int):
                _kill(loop)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # already replaced after an earlier kill
                    _kill(loop)
        if loop is None or loop.poll() is not None:
            seen = len(_records(ledger))
            loop = subprocess.Popen(command, cwd=tmp_path, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
            assert _wait_for(ledger, "run-start", seen, 300.0) is not None
        seen = len(_records(ledger))
        assert _wait_for(ledger, "return", seen, 30.0) is not None
        loop.send_signal(signal.SIGTERM)  # a clean stop: the last run prints its totals
        out, _ = loop.communicate(timeout=120.0)
    (tmp_path / "summary.json").write_text(out)
    return ledger


def check(ledger: Path, tmp_path: Path) -> None:
    records = _records(ledger)
    durable = 0  # the last checkpoint recorded so far
    runs, trainer_losses, recovered = 0, 0, 0
    parked = owed = False  # an engine left parked / a restart that must return it
    for record in records:
        if record.kind == "checkpoint":
            assert (record.durable_progress or 0) >= durable, "a checkpoint went back"
            durable = record.durable_progress or 0
        elif record.kind == "run-start":
            runs += 1
            assert (record.durable_progress or 0) >= durable, "a restart lost durable quanta"
            durable = record.durable_progress or 0
            owed = parked
        elif record.kind == "trainer-lost":
            trainer_losses += 1
            assert record.unsaved_lost is not None
            assert record.unsaved_lost >= 0
        elif record.kind == "park":
            assert not owed, "a run lent the engine before returning the one left parked"
            assert (record.durable_progress or 0) >= durable, "a resumed trainer lost quanta"
            parked = True
        elif record.kind == "return":
            assert record.detail["recovered"] == owed
            recovered += owed
            parked = owed = False
    assert runs >= 2
    assert trainer_losses >= 1
    assert recovered >= 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    last = max(r for x in records if (r := run_of(x)) is not None)
    totals = replay(records, last).to_json()
    assert {k: summary[k] for k in totals} == totals
    assert summary["durable_quanta"] >= durable


def test_kill_nine_loses_no_durable_quantum(tmp_path: Path) -> None:
    ledger = campaign(tmp_path, COUNTING, {"work_quanta": 5000, "quantum_s": 0.02}, 0.5, 0.8)
    check(ledger, tmp_path)


def test_kill_nine_with_the_lora_trainer(tmp_path: Path) -> None:
    for module in ("torch", "peft", "safetensors"):
        pytest.importorskip(module, reason="the reference LoRA trainer needs the gpu extra")
    options = {"work_quanta": 2000, "steps_per_quantum": 1}
    ledger = campaign(tmp_path, LORA, options, 0.15, 2.0)  # loop restarts re-import torch
    check(ledger, tmp_path)
