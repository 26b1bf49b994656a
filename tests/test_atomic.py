"""Result files: atomic, with the permissions the user's umask gives, modes kept on replace."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from learnsched._atomic import atomic_write, atomic_write_text
from learnsched.capacity.traces import write_csv
from learnsched.handoff import PAPER_PROFILE
from learnsched.serving import HandoffLedger, HandoffRecord


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """Run the test under a real process umask, restored afterwards."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask_mode(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "grid.csv"
    atomic_write_text(target, "a,b\n")
    assert target.read_text() == "a,b\n"
    assert mode(target) == 0o666 & ~umask
    assert not list(tmp_path.glob(".*.tmp"))


def test_replace_keeps_the_existing_mode(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "profile.json"
    target.write_text("old")
    target.chmod(0o600)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert mode(target) == 0o600
    target.chmod(0o664)
    atomic_write(target, lambda file: file.write(b"newer"), durable=False)
    assert mode(target) == 0o664


def test_failed_write_leaves_the_old_file(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "trace.csv"
    target.write_text("old")

    def fail(file: object) -> None:
        raise RuntimeError("writer died")

    with pytest.raises(RuntimeError, match="writer died"):
        atomic_write(target, fail)
    assert target.read_text() == "old"
    assert not list(tmp_path.glob(".*.tmp"))


def test_every_result_writer_gives_a_normal_file(tmp_path: Path, umask: int) -> None:
    expected = 0o666 & ~umask
    write_csv(tmp_path / "replay.csv", ("arrival",), [(1.0,)])
    PAPER_PROFILE.write(tmp_path / "profile.json")
    ledger = HandoffLedger(tmp_path / "handoffs.jsonl")
    ledger.append(HandoffRecord(kind="checkpoint", durable_progress=1))
    for name in ("replay.csv", "profile.json", "handoffs.jsonl"):
        assert mode(tmp_path / name) == expected, name


def test_figure_is_a_normal_file(tmp_path: Path, umask: int) -> None:
    pytest.importorskip("matplotlib", reason="figures need matplotlib (learnsched[plot])")
    from learnsched._figures import pyplot, save_figure

    save_figure(pyplot().figure(), tmp_path / "fig.png")
    assert mode(tmp_path / "fig.png") == 0o666 & ~umask


def test_adapter_is_a_normal_file(tmp_path: Path, umask: int) -> None:
    pytest.importorskip("torch", reason="adapters need torch (learnsched[gpu])")
    pytest.importorskip("safetensors", reason="adapters need safetensors (learnsched[gpu])")
    from learnsched.handoff.lora import BASE_SHAPES, save_adapter, synthesise_adapter

    path = save_adapter(synthesise_adapter(BASE_SHAPES["llama-3.2-3b"], 4), tmp_path, durable=True)
    assert mode(path) == 0o666 & ~umask


@pytest.mark.parametrize("folder", [".", "/"])
def test_a_folder_with_no_name_is_refused_as_a_folder(folder: str) -> None:
    """``--out .`` was "PosixPath('.') has an empty name" (pathlib's words, no path named
    as the CLI names it): now the folder's own OSError, naming it."""
    with pytest.raises(IsADirectoryError) as err:
        atomic_write_text(folder, "x")
    assert err.value.filename == folder
