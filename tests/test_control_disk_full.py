"""A full disk while the engine is lent: the write-ahead rule holds, and the errors name the file.

The disk is :class:`disk_support.FullDisk` (a byte budget on the run's folder), filled
right after the loan's first ``work`` record, so the next append fails with the engine
parked. The engines are strict: SGLang dies on a second resume (``KeyError
'kv_cache'``), as the real one does, which is what a resume sent without its record
leads to when the restart resumes again.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from learnsched.control.journal import quarantine_of
from learnsched.serving.ledger import RESERVE_BYTES, read_ledger
from learnsched.testing import EngineConfig, SimulatedEngine

from control_support import make_loop
from disk_support import FullDisk

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
