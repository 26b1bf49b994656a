"""The command line never prints a traceback: exit statuses, Ctrl-C, closed pipes, extras."""

from __future__ import annotations

import argparse
import errno
import json
import os
import platform
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from learnsched.cli import COMMANDS, build_parser, error_line, exit_status
from learnsched.cli.output import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_ENVIRONMENT,
    EXIT_INTERRUPTED,
    EXIT_STATUSES,
)

from conftest import TWO_PATH, one_line, run, run_python, write_file


def test_zero_quantum_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "grid", "--quantum", "0")
    assert (status, out) == (2, "")
    assert one_line(err) == "learnsched grid: error: quantum_s must be > 0, got 0.0"


@pytest.mark.parametrize("device", ["tpu", "cuda:x", "cuda:-1"])
def test_unknown_lora_device_is_bad_input(capsys: pytest.CaptureFixture[str], device: str) -> None:
    status, _, err = run(capsys, "probe", "lora", f"--device={device}", "--shape=tiny")
    assert status == 2
    assert one_line(err) == (
        f"learnsched probe lora: error: device must be cpu, cuda or cuda:N, got {device!r}"
    )


def test_ctrl_c_in_a_command_is_one_line_and_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("learnsched.cli.solve.run_grid", interrupted)
    status, out, err = run(capsys, "grid")
    assert (status, out) == (EXIT_INTERRUPTED, "")
    assert one_line(err) == "learnsched grid: interrupted"


# read(2)'s number, for /proc/PID/syscall (absent elsewhere: the state check stands in).
_READ_SYSCALL = {"x86_64": "0", "aarch64": "63"}.get(platform.machine())


def _blocked_on_stdin(pid: int) -> bool:
    """Whether the child's main thread sleeps in read(0, ...), main's handlers around it
    (a sleep alone could also be one while it imports)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:  # no /proc/PID/syscall here (or no access): the sleeping state must do
        call = []
    if _READ_SYSCALL is not None and call:
        return call[:2] == [_READ_SYSCALL, "0x0"]
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S"


def _wait_until_blocked(pid: int, timeout_s: float = 60.0) -> None:
    """Wait until the child is blocked reading stdin, inside main's handlers."""
    if not Path(f"/proc/{pid}/stat").exists():  # not Linux: fall back to a pause
        time.sleep(1.0)
        return
    deadline = time.monotonic() + timeout_s
    while not _blocked_on_stdin(pid):
        assert time.monotonic() < deadline, "the child never blocked on stdin"
        time.sleep(0.01)


def test_sigint_to_a_running_process(tmp_path: Path) -> None:
    # `solve -` blocks reading stdin; "ready" is printed once main's handlers are in place
    # for everything that follows (parsing included).
    code = (
        "import signal, sys\n"
        # Python keeps SIGINT ignored if its parent ignored it (a job started with & from a
        # script): give the child what an interpreter in a terminal has.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from learnsched.cli import main\n"
        "print('ready', flush=True)\n"
        "sys.exit(main(['solve', '-']))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    ) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        assert child.stdout.readline() == "ready\n"
        _wait_until_blocked(child.pid)
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=60)
        err = child.stderr.read()
    assert status == EXIT_INTERRUPTED
    assert one_line(err).endswith(": interrupted")


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["grid"], EXIT_BROKEN_PIPE),
        (["grid", "--json"], EXIT_BROKEN_PIPE),
        (["econ", "paper"], EXIT_BROKEN_PIPE),
        (["--help"], 0),  # argparse itself ignores a help text it cannot write
    ],
)
def test_closed_pipe_is_quiet(tmp_path: Path, argv: list[str], status: int) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first write: `| head -0`
    try:
        done = subprocess.run(
            [sys.executable, "-m", "learnsched", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == status


def test_head_reads_one_line_quietly(tmp_path: Path) -> None:
    head = subprocess.run(
        f"{sys.executable} -m learnsched grid | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    assert head.stdout.startswith("1920 scenarios")
    assert head.stderr == ""


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser below it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += parsers(sub)
    return found


def test_every_command_documents_its_exit_statuses() -> None:
    every = parsers(build_parser())
    assert len(every) > len(COMMANDS)
    for parser in every:
        assert " ".join(parser.format_help().split()).endswith(EXIT_STATUSES), parser.prog


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "S0348", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["sid"] == "S0348"
    assert (data["calendar"], data["recovery"], data["initial_state"]) == (
        "back_loaded",
        "cold",
        "fresh",
    )
    assert data["scenario"]["work_quanta"] == 6
    assert set(data["policies"]) == {"costed_window", "rollout"}
    assert round(data["policies"]["rollout"]["value"], 3) == 72.512
    assert data["policies"]["rollout"]["publish_s"] == 330.0


def without(module: str, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``learnsched ARGV`` in a process where ``module`` cannot be imported."""
    code = (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"
        "from learnsched.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return run_python(["-c", code], cwd=tmp_path)


def test_plot_without_matplotlib_names_both_install_commands(tmp_path: Path) -> None:
    done = without("matplotlib", ["explain", "S0348", "--plot", "plan.png"], tmp_path)
    assert done.returncode == 3
    line = one_line(done.stderr)
    assert line.startswith("learnsched explain: matplotlib is not installed")
    assert "pip install 'learnsched[plot]'" in line
    assert 'pip install ".[plot]"' in line


def test_probe_without_torch_is_a_missing_library(tmp_path: Path) -> None:
    done = without("torch", ["probe", "lora", "--shape=tiny", "--runs=2"], tmp_path)
    assert done.returncode == 3
    assert one_line(done.stderr).startswith("learnsched probe lora: torch is not installed")


# --- the catch-all, each failure's status, the epilog -----------------------------------------


def test_an_unexpected_exception_is_one_line_with_a_bug_report_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise KeyError("surprise")

    monkeypatch.setattr("learnsched.cli.solve.run_grid", broken)
    status, out, err = run(capsys, "grid")
    assert (status, out) == (EXIT_BUG, "")
    line = one_line(err)
    assert line.startswith("learnsched grid: internal error: KeyError: 'surprise' (a bug")
    assert "https://github.com/learnsched/learnsched/issues" in line


def test_the_traceback_is_printed_only_when_asked(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        import learnsched.cli.solve as solve
        def broken(args):
            raise ZeroDivisionError("x")
        solve.run_grid = broken
        from learnsched.cli import main
        sys.exit(main(["grid"]))
        """
    )
    quiet = run_python(["-c", code], cwd=tmp_path)
    assert quiet.returncode == EXIT_BUG
    assert "Traceback" not in quiet.stderr
    loud = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "LEARNSCHED_TRACEBACK": "1"},
        timeout=60,
        check=False,
    )
    assert loud.returncode == EXIT_BUG
    assert "Traceback" in loud.stderr
    assert loud.stderr.strip().splitlines()[-1] == quiet.stderr.strip()


@pytest.mark.parametrize(
    ("err", "status"),
    [
        (ValueError("x"), 2),
        (TypeError("x"), 2),
        (FileNotFoundError(errno.ENOENT, "No such file or directory", "in.json"), 2),
        (IsADirectoryError(errno.EISDIR, "Is a directory", "dir"), 2),
        (ProcessLookupError("pid 123: no such process"), 2),
        (OSError(errno.ENOSPC, "No space left on device", "out.csv"), 4),
        (PermissionError(errno.EACCES, "Permission denied", "out.csv"), 4),
        (OSError(errno.EROFS, "Read-only file system", "out.csv"), 4),
        (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), 4),
        (TimeoutError("timed out"), 4),
        (MemoryError(), 4),
        (ImportError("no module named x"), 3),
        (KeyError("x"), EXIT_BUG),
        (ZeroDivisionError("x"), EXIT_BUG),
        (OverflowError("x"), EXIT_BUG),
        (RecursionError("x"), EXIT_BUG),
    ],
)
def test_exit_status_of_each_failure(err: BaseException, status: int) -> None:
    assert exit_status(err) == status


def test_an_exception_class_may_name_its_own_status() -> None:
    class GateFailed(RuntimeError):
        exit_status = 1

    assert exit_status(GateFailed("a gate failed")) == 1
    assert error_line("learnsched gate", GateFailed("a gate failed")) == (
        1,
        "learnsched gate: error: a gate failed",
    )


def test_a_full_disk_exits_4_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk is the environment's failure (exit 4), not bad input (2)."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "fsync")

    trace = write_file(tmp_path / "t.csv", "arrival,work,deadline\n0,1,30\n")
    monkeypatch.setattr(os, "fsync", full)
    status, _, err = run(capsys, "windows", trace, "--out", str(tmp_path / "w.json"))
    assert status == EXIT_ENVIRONMENT
    assert one_line(err) == "learnsched windows: error: fsync: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # no temporary left


def test_every_parser_lists_the_statuses_even_with_its_own_epilog() -> None:
    parser = build_parser(["grid"])
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    later = commands.add_parser("later", epilog="a command added later, with an epilog")
    text = " ".join(later.format_help().split())
    assert "a command added later, with an epilog" in text
    assert text.endswith(EXIT_STATUSES)
    assert "4 environment failure" in EXIT_STATUSES
    assert "70 internal error" in EXIT_STATUSES


def test_a_user_module_that_fails_to_import_is_bad_input(tmp_path: Path) -> None:
    """A --scores or --trainer module that fails at import is bad input (exit 2), not a bug
    of learnsched (70)."""
    (tmp_path / "unimportable_scores.py").write_text("def f(:\n")
    (tmp_path / "s.json").write_text(json.dumps(TWO_PATH))
    argv = ["guard-check", "s.json", "--scores", "unimportable_scores:f", "--epsilon", "0"]
    done = run_python(["-m", "learnsched", *argv], cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(
        "learnsched guard-check: error: scores 'unimportable_scores:f': cannot import "
        "unimportable_scores (SyntaxError: "
    )
    from learnsched.control.trainer import load_trainer_class

    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "unimportable_trainer.py").write_text("raise RuntimeError('no GPU here')\n")
        with pytest.raises(ValueError, match=r"cannot import unimportable_trainer \(RuntimeError"):
            load_trainer_class("unimportable_trainer:Trainer")
    finally:
        sys.path.remove(str(tmp_path))


# --- sizes and overflows, bounded and named ---------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # Unbounded: an allocation of tens of GB.
        (["econ", "alerts", "--n", "2147483648"], "--n must be <= 10000000, got 2147483648"),
        (["econ", "alerts", "--repeats", "10" + "0" * 12], "--repeats must be <= 10000"),
        # Unbounded: an OverflowError in the probe's worker thread.
        (["probe", "waits", "--step-ms", "1e308"], "--step-ms must be <= 60000 ms"),
        # Unbounded: 2**31 commands of one step each, a hang.
        (["probe", "waits", "--commands", "2147483648"], "--commands must be <= 100000"),
        # Unbounded: int(inf) release bytes.
        (
            [
                "probe",
                "recovery",
                "--engine=vllm",
                "--url=http://127.0.0.1:9",
                "--release-gib=1e308",
            ],
            "--release-gib must be <= 1048576 GiB",
        ),
        # The quantum is named, not the initial.progress it would overflow.
        (["grid", "--quantum", "1e-9"], "quantum_s=1e-09 makes work_quanta = 30 s / quantum_s"),
        (["grid", "--quantum", "5e-324"], "= inf quanta, more than the limit of 16777216"),
        # Named before json refuses the inf ("Out of range float values ...").
        (
            [
                "econ",
                "wait",
                "--cost-now=0",
                "--cost-wait=0",
                "--publish-now=0",
                "--publish-wait=3",
                "--benefit-rate=1e308",
                "--json",
            ],
            "benefit_rate x (publish_wait_s - publish_now_s) = 1e+308 x (3.0 - 0.0) overflows",
        ),
    ],
)
def test_command_sizes_and_overflows_are_named(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert message in one_line(err)


def test_called_bare_it_prints_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from learnsched.cli import main

    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: learnsched")
    assert all(f"    {command} " in out for command in ("grid", "online", "run", "gate"))
    assert EXIT_STATUSES.split(",")[0] in " ".join(out.split())


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "-"),
        (True, "yes"),
        (False, "no"),
        (0.1 + 0.2, "0.3"),
        (3, "3"),
        ([0.5, None], "0.5, -"),
        ([], "-"),
        ({"running": 1, "waiting": 0}, "running 1, waiting 0"),
        ("path/x", "path/x"),
    ],
)
def test_text_output_shows_json_values_without_python_reprs(value: object, shown: str) -> None:
    from learnsched.cli.output import text_value

    assert text_value(value) == shown
