"""A full disk while the engine is lent: the write-ahead rule holds, and the errors name the file.

The disk is :class:`disk_support.FullDisk` (a byte budget on the run's folder), filled
right after the loan's first ``work`` record, so the next append fails with the engine
parked. The engines are strict: SGLang dies on a second resume (``KeyError
'kv_cache'``), as the real one does, which is what a resume sent without its record
leads to when the restart resumes again.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_control_restart import run_argv

from learnsched.cli import main
from learnsched.control.journal import quarantine_of
from learnsched.serving.ledger import RESERVE_BYTES, read_ledger
from learnsched.testing import EngineConfig, SimulatedEngine

from control_support import make_loop
from disk_support import FullDisk
from engine_support import strict_engine

TESTS = Path(__file__).resolve().parent

FAST = {"token_s": 0.001}
LOAN = {"work_quanta": 200, "quantum_s": 0.02}


def lend_on_a_full_disk(
    engine: SimulatedEngine, folder: Path, disk: FullDisk, dialect: str
) -> OSError:
    """A run whose disk fills inside its loan; the error it stops with."""
    loop = make_loop(engine.url, dialect, [(0.2, 30.0)], folder, trainer_options=LOAN)
    with pytest.raises(OSError, match="No space left") as raised:
        loop.run()
    assert disk.refused > 0  # the disk did fill while the engine was lent
    return raised.value


def restart(engine: SimulatedEngine, folder: Path, dialect: str) -> None:
    """The next run once space is freed: it returns what is left parked, then stops."""
    make_loop(engine.url, dialect, [(5.0, 60.0)], folder, until_s=0.3).run()


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_full_disk_while_lent_returns_from_the_reserve_and_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dialect: str
) -> None:
    """The return's records are written in the ledger's reserve: the engine serves, the
    ledger closes the park, and the restart resumes nothing (before, SGLang's return
    went out unrecorded and the restart resumed it again: the engine died)."""
    ledger = tmp_path / "ledger.jsonl"
    with SimulatedEngine(EngineConfig.strict(dialect, batch_variant=False, **FAST)) as engine:
        disk = FullDisk(tmp_path, monkeypatch, after_kind="work")
        error = lend_on_a_full_disk(engine, tmp_path, disk, dialect)
        assert not engine.state.sleeping  # served again before the run stopped
        disk.free()
        restart(engine, tmp_path, dialect)
        assert engine.death is None, engine.death
        assert not engine.state.sleeping
    assert error.errno == errno.ENOSPC
    assert error.filename == str(ledger)
    assert "reserve" in str(error)
    records = read_ledger(ledger)
    assert [r.kind for r in records].count("return") == 1
    assert not any(r.detail.get("recovered") for r in records if r.kind == "return")
    steps = [r.detail.get("step") for r in records if r.kind == "park-step"]
    assert ("resume_sent" in steps) == (dialect == "sglang")
    assert quarantine_of(records) is None


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_resume_whose_record_cannot_be_written_is_not_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dialect: str
) -> None:
    """Another writer takes the space the reserve frees: SGLang's resume cannot be
    written ahead, so it is not sent; the engine stays parked, the error says what to do,
    and the restart after space is freed returns it exactly once. vLLM, which says
    whether it is parked, is resumed; its restart confirms readiness only."""
    ledger = tmp_path / "ledger.jsonl"
    with SimulatedEngine(EngineConfig.strict(dialect, batch_variant=False, **FAST)) as engine:
        disk = FullDisk(tmp_path, monkeypatch, after_kind="work", taken=RESERVE_BYTES)
        error = lend_on_a_full_disk(engine, tmp_path, disk, dialect)
        assert bool(engine.state.sleeping) == (dialect == "sglang")
        disk.free()
        restart(engine, tmp_path, dialect)
        assert engine.death is None, engine.death
        assert not engine.state.sleeping
    assert error.errno == errno.ENOSPC
    assert error.filename == str(ledger)
    if dialect == "sglang":
        assert "not sent" in str(error)
        assert "run again" in str(error)
    records = read_ledger(ledger)
    returns = [r for r in records if r.kind == "return"]
    assert len(returns) == 1
    assert returns[0].detail["recovered"]
    if dialect == "sglang":  # the restart's resume, written ahead, is the only one
        assert "resume_ack" in returns[0].stamps_ns
    else:
        assert "resume_ack" not in returns[0].stamps_ns
    assert quarantine_of(records) is None


def test_a_disk_too_full_for_the_reserve_stops_the_run_before_the_engine_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No reserve, no run: nothing is lent without room for its return's records."""
    with SimulatedEngine(EngineConfig.strict("sglang", batch_variant=False, **FAST)) as engine:
        FullDisk(tmp_path, monkeypatch).fill()
        loop = make_loop(engine.url, "sglang", [(0.2, 30.0)], tmp_path, trainer_options=LOAN)
        with pytest.raises(OSError, match="No space left") as raised:
            loop.run()
        assert not engine.state.sleeping
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.filename == str(tmp_path / ".ledger.jsonl.reserve")
    assert not (tmp_path / "ledger.jsonl").exists()


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_run_on_a_full_disk_exits_4_naming_the_ledger_and_the_restart_returns_once(
    tmp_path: Path, dialect: str
) -> None:
    """``learnsched run`` as a process (the disk hook on its path), the reserve's room
    taken: exit 4, its error line naming the ledger; once space is freed, the next run
    returns the engine once and exits 0, the strict engine alive (before: exit 4 naming
    no file, then SGLang resumed twice and dead)."""
    ledger = tmp_path / "ledger.jsonl"
    with strict_engine(dialect, slow_health_s=0.0) as engine:
        hook = [sys.executable, str(TESTS / "disk_support.py"), str(tmp_path), "work"]
        done = subprocess.run(
            [*hook, str(RESERVE_BYTES), *run_argv(engine.url, tmp_path, dialect)],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(TESTS)},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 4, done.stderr
        line = f"learnsched run: error: {ledger}: No space left on device"
        assert done.stderr.splitlines()[-1].startswith(line), done.stderr
        assert main(run_argv(engine.url, tmp_path, dialect, seconds=0.2)) == 0
        assert engine.alive(), engine.stderr_text()
    returns = [r for r in read_ledger(ledger) if r.kind == "return"]
    assert [r.detail["recovered"] for r in returns][:1] == [True]
