"""The command line never prints a traceback: exit statuses, Ctrl-C, closed pipes, extras."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from learnsched.cli import COMMANDS, build_parser, main
from learnsched.cli.output import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_STATUSES

from conftest import run_python


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


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
