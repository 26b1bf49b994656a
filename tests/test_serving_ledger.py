"""Handoff ledger: durable appends, torn tails, and a writer killed mid-append."""

from __future__ import annotations

import errno
import os
import signal
import warnings
from pathlib import Path
from typing import Any

import pytest

from learnsched.serving import (
    DeviceMemory,
    HandoffLedger,
    HandoffRecord,
    HostMemory,
    TornRecordWarning,
    read_ledger,
)

from conftest import run_python
from disk_support import FullDisk

GIB = 2**30

# Commits COMMITTED records, then dies inside the next append: its write puts half the
# line in the file and the process SIGKILLs itself before writing the rest.
COMMITTED = 5
WRITER = f"""
import os, signal, sys
from learnsched.serving import HandoffLedger, HandoffRecord
ledger = HandoffLedger(sys.argv[1])
def record(index):
    return HandoffRecord(kind="checkpoint", durable_progress=index,
                         stamps_ns={{"pad" + str(i): i for i in range(200)}})
for index in range({COMMITTED}):
    ledger.append(record(index))
    print(index, flush=True)
write = os.write
def torn_write(fd, data):
    write(fd, bytes(data[: len(data) // 2]))
    os.kill(os.getpid(), signal.SIGKILL)
os.write = torn_write  # the ledger's own append path, cut mid-line
ledger.append(record({COMMITTED}))
print("not reached", flush=True)
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
    child = run_python(["-c", WRITER, str(path)], cwd=tmp_path)  # it dies of SIGKILL
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert child.stdout.split() == [str(i) for i in range(COMMITTED)]
    data = path.read_bytes()
    assert not data.endswith(b"\n")  # the torn half-record is really there
    with pytest.warns(TornRecordWarning, match="torn final record"):
        records = read_ledger(path)
    assert [r.durable_progress for r in records] == list(range(COMMITTED))
    HandoffLedger(path).append(record(99))  # cuts the torn tail before writing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        after = read_ledger(path)
    assert [r.durable_progress for r in after] == [*range(COMMITTED), 99]
    assert path.read_bytes().startswith(data[: data.rindex(b"\n") + 1])


# --- a full disk ------------------------------------------------------------------------------


def test_a_failed_ledger_append_leaves_no_torn_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk mid-append cuts the half line: left, the reader would take it for the
    torn tail of a killed writer."""
    ledger = HandoffLedger(tmp_path / "l.jsonl")
    written = os.write

    def half_then_full(fd: int, data: Any) -> int:
        if len(data) > 8:
            written(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return written(fd, data)

    ledger.append(HandoffRecord(kind="checkpoint", durable_progress=0))
    size = ledger.path.stat().st_size
    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        ledger.append(HandoffRecord(kind="checkpoint", durable_progress=1))
    monkeypatch.undo()
    assert ledger.path.stat().st_size == size  # the half line was cut
    assert len(read_ledger(ledger.path)) == 1  # and no warning (filterwarnings: error)


def test_a_full_disk_names_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.write`` names no file: the append's error does, with the errno's text."""
    ledger = HandoffLedger(tmp_path / "l.jsonl")
    ledger.append(HandoffRecord(kind="checkpoint", durable_progress=0))
    FullDisk(tmp_path, monkeypatch).fill()
    with pytest.raises(OSError, match="No space left on device") as err:
        ledger.append(HandoffRecord(kind="checkpoint", durable_progress=1))
    assert err.value.errno == errno.ENOSPC
    assert err.value.filename == str(ledger.path)


def test_a_reserved_append_is_written_in_the_reserve_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a full disk only a ``reserved`` append gets the reserve's room, and the
    reserve is spent then; re-reserving needs room again, and names its file."""
    ledger = HandoffLedger(tmp_path / "l.jsonl")
    ledger.reserve(4096)
    ledger.append(HandoffRecord(kind="park", durable_progress=0))
    disk = FullDisk(tmp_path, monkeypatch)
    disk.fill()
    with pytest.raises(OSError, match="No space left"):
        ledger.append(HandoffRecord(kind="work", durable_progress=0))
    assert not ledger.reserve_spent
    ledger.append(HandoffRecord(kind="return", durable_progress=0), reserved=True)
    assert ledger.reserve_spent
    assert ledger.reserve_path.stat().st_size == 0
    assert [r.kind for r in read_ledger(ledger.path)] == ["park", "return"]
    disk.capacity = disk.used()  # the room the reserve freed is taken
    with pytest.raises(OSError, match="No space left") as err:
        ledger.append(HandoffRecord(kind="run-end"), reserved=True)
    assert err.value.filename == str(ledger.path)
    with pytest.raises(OSError, match="No space left") as err:
        ledger.reserve(4096)
    assert err.value.filename == str(ledger.reserve_path)
    disk.free()
    ledger.reserve(4096)
    assert not ledger.reserve_spent
    assert ledger.reserve_path.stat().st_size == 4096


def test_a_reserve_of_no_bytes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="size must be >= 1, got 0"):
        HandoffLedger(tmp_path / "l.jsonl").reserve(0)


def test_a_file_system_that_cannot_preallocate_gets_the_reserve_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    ledger = HandoffLedger(tmp_path / "l.jsonl")
    ledger.reserve(200_000)
    assert ledger.reserve_path.read_bytes() == bytes(200_000)
    ledger.reserve(200_000)  # again: the same room, not more
    assert ledger.reserve_path.stat().st_size == 200_000
