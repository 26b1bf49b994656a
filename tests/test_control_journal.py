"""Replaying the scheduler's ledger: a run's totals from its records alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from learnsched.control.journal import last_run, open_park, progress_seen, replay
from learnsched.serving.ledger import HandoffLedger, HandoffRecord, read_ledger


def rec(kind: str, run: int, durable: int | None = None, lost: int | None = None,
        **detail: object) -> HandoffRecord:  # fmt: skip
    return HandoffRecord(
        kind=kind, durable_progress=durable, unsaved_lost=lost, detail={"run": run, **detail}
    )


RUN_1 = [
    rec("run-start", 1, 0),
    rec("decision", 1, 0, phase="window"),
    rec("park", 1, 0),
    rec("work", 1, 0, progress=1),
    rec("work", 1, 0, progress=2),
    rec("checkpoint", 1, 2),
    rec("return", 1, 2, 0, late=False, early=False),
    rec("decision", 1, 2, phase="window"),
    rec("park", 1, 2),
    rec("work", 1, 2, progress=3),
    rec("decision", 1, 2, phase="early-return"),
    rec("discard", 1, 2, 1),
    rec("return", 1, 2, 1, late=False, early=True),
    rec("decision", 1, 2, phase="window"),
    rec("park", 1, 2),
    rec("work", 1, 2, progress=3),  # killed here: the engine stays parked
]


def test_replay_counts_a_run() -> None:
    totals = replay(RUN_1, 1)
    assert totals.windows == 3
    assert totals.decisions == 4
    assert totals.quanta_done == 4
    assert totals.durable_quanta == 2
    assert totals.handoffs == 2
    assert totals.early_returns == 1
    assert totals.late_returns == 0
    assert totals.unsaved_lost == 1
    assert not totals.published


def test_a_killed_run_leaves_an_open_park_and_its_unsaved_progress() -> None:
    assert open_park(RUN_1) is RUN_1[-2]
    assert progress_seen(RUN_1) == 3
    run_2 = [rec("run-start", 2, 2), rec("return", 2, 2, 1, late=True, recovered=True)]
    assert open_park(RUN_1 + run_2) is None
    assert last_run(RUN_1 + run_2) == 2
    totals = replay(RUN_1 + run_2, 2)
    assert (totals.resumed_from_quanta, totals.late_returns, totals.unsaved_lost) == (2, 1, 1)


def test_other_writers_records_are_ignored(tmp_path: Path) -> None:
    ledger = HandoffLedger(tmp_path / "ledger.jsonl")
    ledger.append(HandoffRecord(kind="warm-recovery", engine="vllm", readiness_s=0.5))
    for record in RUN_1:
        ledger.append(record)
    records = read_ledger(ledger.path)
    assert records[1].detail == {"run": 1}
    assert replay(records, 1) == replay(RUN_1, 1)
    assert last_run(records[:1]) == 0


def test_a_run_that_never_started() -> None:
    with pytest.raises(ValueError, match="run 5"):
        replay(RUN_1, 5)
