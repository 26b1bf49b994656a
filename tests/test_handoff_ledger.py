"""Handoff ledger: durable appends, torn tails, and a writer killed mid-append."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from learnsched.handoff import (
    DeviceMemory,
    HandoffLedger,
    HandoffRecord,
    HostMemory,
    TornRecordWarning,
    read_ledger,
)

GIB = 2**30

# Appends records with a large payload as fast as it can; prints each committed index.
WRITER = """
import sys
from learnsched.handoff import HandoffLedger, HandoffRecord
ledger = HandoffLedger(sys.argv[1])
for index in range(100000):
    ledger.append(HandoffRecord(kind="checkpoint", durable_progress=index,
                                stamps_ns={"pad" + str(i): i for i in range(2000)}))
    print(index, flush=True)
"""


def record(index: int) -> HandoffRecord:
    return HandoffRecord(
        kind="warm-recovery",
        engine="sglang",
        stamps_ns={"resume_sent": 10, "request_done": 10 + index},
        readiness_s=0.5,
        durable_progress=index,
        unsaved_lost=0,
        device_before=DeviceMemory(80 * GIB, GIB, 70 * GIB, 9 * GIB, 2),
        device_after=DeviceMemory(80 * GIB, None, 4 * GIB, 76 * GIB, 1),
        host_before=HostMemory(5 * GIB, 4 * GIB, GIB, 0, (11, 12)),
        host_after=None,
    )


def test_round_trip(tmp_path: Path) -> None:
    ledger = HandoffLedger(tmp_path / "ledger.jsonl")
    written = [record(i) for i in range(3)]
    for r in written:
        ledger.append(r)
    assert ledger.records() == written


def test_torn_final_line_is_skipped_then_cut(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = HandoffLedger(path)
    first, second = record(0), record(1)
    ledger.append(first)
    with path.open("ab") as file:
        file.write(b'{"kind": "warm-rec')
    with pytest.warns(TornRecordWarning, match="torn final record"):
        assert read_ledger(path) == [first]
    ledger.append(second)  # cuts the torn tail first
    assert read_ledger(path) == [first, second]


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"kind": "x"}\nnot json\n{"kind": "y"}\n')
    with pytest.raises(ValueError, match=r"ledger.jsonl:2: not a handoff record"):
        read_ledger(path)


def test_bad_record_values() -> None:
    with pytest.raises(ValueError, match="unsaved_lost must be >= 0, got -1"):
        HandoffRecord(kind="x", unsaved_lost=-1)
    with pytest.raises(ValueError, match="kind must be a non-empty string"):
        HandoffRecord(kind="")


def test_writer_killed_mid_append_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    committed = -1
    deadline = time.monotonic() + 20
    while committed < 30 and time.monotonic() < deadline:
        committed = int(child.stdout.readline())
    time.sleep(0.013)  # land somewhere inside a later append
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    committed = max([committed, *(int(line) for line in child.stdout.read().split())])
    child.stdout.close()
    with warnings.catch_warnings(record=True) as caught:  # a torn tail is possible
        warnings.simplefilter("always")
        records = read_ledger(path)
    assert all(issubclass(w.category, TornRecordWarning) for w in caught)
    assert [r.durable_progress for r in records][: committed + 1] == list(range(committed + 1))
    assert len(records) in (committed + 1, committed + 2)  # the last may have landed unprinted
