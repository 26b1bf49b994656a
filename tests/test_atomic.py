"""Result files: atomic, with the permissions the user's umask gives, modes kept on replace."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from learnsched._atomic import atomic_write, atomic_write_text, remove_stale_temps
from learnsched.capacity.traces import write_csv
from learnsched.handoff import PAPER_PROFILE
from learnsched.serving import HandoffLedger, HandoffRecord

from conftest import dead_pid


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
    """``--out .`` is the folder's own OSError, naming it as the CLI names it (pathlib alone
    says "PosixPath('.') has an empty name")."""
    with pytest.raises(IsADirectoryError) as err:
        atomic_write_text(folder, "x")
    assert err.value.filename == folder


# --- temporary files: named by pid, removed after a kill or at exit, only our own -------------


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_temp_names_carry_the_pid_and_stale_ones_go(tmp_path: Path) -> None:
    stale = tmp_path / f".result.csv.learnsched-{dead_pid()}-0123abcd0123abcd.tmp"
    stale.write_bytes(b"partial")
    live = tmp_path / f".result.csv.learnsched-{os.getpid()}-0123abcd0123abcd.tmp"
    live.write_bytes(b"being written")
    other = tmp_path / ".notes.tmp"  # not our pattern: never touched
    other.write_bytes(b"x")
    seen: list[str] = []
    atomic_write(tmp_path / "out.txt", lambda f: seen.extend(temps(tmp_path)))
    assert any(f".out.txt.learnsched-{os.getpid()}-" in name for name in seen)
    assert not stale.exists()
    assert live.exists()
    assert other.exists()
    assert remove_stale_temps(tmp_path) == 0
    live.unlink()


def test_kill_9_leftovers_are_removed_by_the_next_write(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import time
        from learnsched._atomic import atomic_write
        def slow(f):
            f.write(b"x" * 4096)
            print("writing", flush=True)
            time.sleep(60)
        atomic_write({str(tmp_path / "trace.csv")!r}, slow)
        """
    )
    for _ in range(3):  # each writer removes the temp its killed predecessor left
        with subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path
        ) as child:
            assert child.stdout is not None
            assert child.stdout.readline() == "writing\n"
            child.send_signal(signal.SIGKILL)
        assert len(temps(tmp_path)) == 1
    atomic_write_text(tmp_path / "trace.csv", "arrival,work,deadline\n")
    assert temps(tmp_path) == []


def test_open_writes_are_removed_at_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import threading, time
        from learnsched._atomic import atomic_write
        started = threading.Event()
        def slow(f):
            started.set()
            time.sleep(60)
        threading.Thread(target=atomic_write, args=({str(tmp_path / "a.bin")!r}, slow),
                         daemon=True).start()
        started.wait()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60, cwd=tmp_path)
    assert temps(tmp_path) == []


def test_remove_stale_temps_touches_only_its_own_files(tmp_path: Path) -> None:
    """Only files named as ours (``.NAME.learnsched-PID-HEX.tmp``, of a dead pid) go: another
    program's look-alikes (``.NAME.PID.XXXXXXXX.tmp``) and folders are not ours to delete."""
    gone = dead_pid()
    look_alikes = [
        f".result.csv.{gone}.0123abcd.tmp",  # another program's pattern
        f".result.csv.other-{gone}-0123abcd0123abcd.tmp",
        f".result.csv.learnsched-{10**30}-0123abcd0123abcd.tmp",  # no process has that id
    ]
    for name in look_alikes:
        (tmp_path / name).write_text("not ours")
    folder = tmp_path / f".folder.learnsched-{gone}-0123abcd0123abcd.tmp"
    folder.mkdir()  # ours by name, but not a file
    ours = tmp_path / f".result.csv.learnsched-{gone}-0123abcd0123abcd.tmp"
    ours.write_text("a killed write")
    assert remove_stale_temps(tmp_path) == 1
    assert not ours.exists()
    assert all((tmp_path / name).exists() for name in look_alikes)
    assert folder.is_dir()
    atomic_write_text(tmp_path / "result.csv", "x")  # and writes still work beside them


def test_a_full_disk_names_the_file_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``os.fsync`` (and a buffered write) raise ``ENOSPC`` naming no file: the error
    names the file being written, with the errno's text."""
    target = tmp_path / "count.json"

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device") as err:
        atomic_write_text(target, "{}")
    assert err.value.errno == errno.ENOSPC
    assert err.value.filename == str(target)
    assert not target.exists()
    assert not temps(tmp_path)
