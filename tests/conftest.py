"""Shared fixtures: the paper's worked example, small scenario builders, and the helpers
that run the command line in this process or in a child."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import learnsched as ls
from learnsched.cli import build_parser, main


def calendar(*durations: float, gap_s: float = 20.0) -> list[tuple[float, float]]:
    """Windows of the given lengths separated by ``gap_s``, the first at 0."""
    windows, start = [], 0.0
    for length in durations:
        windows.append((start, start + length))
        start += length + gap_s
    return windows


def small_scenario() -> ls.Scenario:
    """Six 5 s quanta over two 80 s windows, g = 0.25, H = 1000, a 10 s recovery."""
    return ls.Scenario(
        windows=((0.0, 80.0), (100.0, 180.0)),
        work_quanta=6,
        quantum_s=5.0,
        benefit_rate=0.25,
        horizon_s=1000.0,
        costs=ls.HandoffCosts(recovery_s=10.0, save_s=0.1, load_s=0.1),
    )


TWO_PATH: dict[str, Any] = {
    "windows": [[0, 500]],
    "work_quanta": 6,
    "quantum_s": 50,
    "benefit_rate": 1,
    "horizon_s": 2000,
    "residency_rate": 1,
    "warm_recovery_s": 0.5,
    "cold_recovery_s": 10,
    "save_s": 0.1,
    "load_s": 0.1,
    "initial": {"progress": 0, "durable": 0, "active": False},
}
"""A scenario file offering a warm and a cold return path; DP's value is 1390 (on the cold
path: a reader or a sweep that dropped it gives 1099)."""


@pytest.fixture
def s0348() -> ls.Scenario:
    """The paper's worked example: fresh, back-loaded, 30 s work, g = 0.25, H = 1020, cold."""
    return ls.scenario_by_id("S0348").scenario


@pytest.fixture(scope="session")
def paper_grid_result() -> tuple[ls.Grid, ls.BatchResult]:
    """The 1920-scenario grid solved under all six policies."""
    grid = ls.paper_grid()
    return grid, ls.solve_batch([g.scenario for g in grid.scenarios])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``learnsched ARGV`` through :func:`learnsched.cli.main`, as the console script does.

    Errors become exit statuses and one-line messages here, as a user sees them.
    Returns the exit status and what was printed on stdout and stderr.
    """
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_line(err: str) -> str:
    """The single line of ``err`` (asserts it is one line and holds no traceback)."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def planners_refuse_unconfirmed(
    capsys: pytest.CaptureFixture[str], profile: Path, folder: Path
) -> None:
    """``grid``, ``solve`` and ``explain`` refuse ``profile``'s unconfirmed warm figures
    (exit 2, naming them and ``--accept-unconfirmed``), and with that flag plan with them,
    warning on stderr. What the profile lacks comes from the paper's (``--base paper``)."""
    scenario = folder / "warm.json"
    scenario.write_text(json.dumps(ls.scenario_by_id("S0344").scenario.to_json()))
    costs = ("--costs", str(profile), "--base", "paper")
    for argv in (("grid", "--fresh-only"), ("solve", str(scenario), "--recovery", "warm"),
                 ("explain", "S0344")):  # fmt: skip
        status, _, err = run(capsys, *argv, *costs)
        refusal = err.splitlines()[-1]
        assert status == 2, err
        assert refusal.startswith(f"learnsched {argv[0]}: error: --costs {profile}: ")
        assert "warm_recovery_s" in refusal
        assert "(--accept-unconfirmed)" in refusal
        status, _, err = run(capsys, *argv, *costs, "--accept-unconfirmed")
        assert status == 0, err
        assert f"learnsched {argv[0]}: warning: --costs {profile}: planning with " in err


def write_spec(tmp_path: Path, spec: object, name: str = "spec.json") -> str:
    """``spec`` as a JSON file ``name`` in ``tmp_path``; returns its path."""
    path = tmp_path / name
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


def write_file(path: Path, data: bytes | str) -> str:
    """Write ``data`` (text as UTF-8) to ``path``; returns the path as a string."""
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def run_handler(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Parse ``argv`` with the real ``learnsched`` parser and call its handler directly.

    Errors propagate as exceptions here; ``learnsched.cli.main`` turns them into exit 2.
    Returns the handler's exit status and what it printed.
    """
    args = build_parser().parse_args(argv)
    status = args.func(args)
    assert isinstance(status, int)
    return status, capsys.readouterr().out


def run_python(
    args: list[str], cwd: Path, check: bool = False, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` in ``cwd`` with text output captured.

    ``cwd`` must lie outside the source tree: Python puts the working directory first on
    ``sys.path`` for ``-c`` and ``-m``, and the flat layout's unbuilt ``learnsched/``
    would shadow the installed package.
    """
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
        cwd=cwd,
    )


def dead_pid() -> int:
    """The id of a process that has exited (a child that printed it and ended)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After a run with fuzz suites: how many inputs they ran, and how many were refused."""
    fuzzing = sys.modules.get("fuzzing")
    if fuzzing is None or not fuzzing.COUNTS:
        return
    counts = fuzzing.COUNTS
    suites = [
        s for s in ("bindings", "kernels", "cli", "registry bindings", "registry cli") if counts[s]
    ]
    total = sum(counts[s] for s in suites)
    detail = ", ".join(
        f"{s} {counts[s]} ({counts[s + ' named errors']} named errors)" for s in suites
    )
    exits = sorted((int(k.rsplit(" ", 1)[1]), n) for k, n in counts.items() if " exit " in k)
    statuses = ", ".join(f"{status}: {n}" for status, n in exits)
    terminalreporter.write_line(
        f"fuzz: {total} inputs: {detail}" + (f"; CLI exit statuses {statuses}" if exits else "")
    )


@pytest.fixture(autouse=True)
def _private_engine_leases(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control-loop runs take an engine lease (learnsched.control.locks): each test gets
    its own lease folder, never the user's ~/.local/state."""
    monkeypatch.setenv("LEARNSCHED_LEASE_DIR", str(tmp_path_factory.mktemp("leases")))


# --- the real_engine suite: a real vLLM (tests/vllm_support.py) --------------------------
@pytest.fixture(scope="session")
def vllm_python() -> str:
    """The interpreter that runs vLLM; the test skips without one."""
    from vllm_support import SKIP_REASON, vllm_python

    python = vllm_python()
    if python is None:
        pytest.skip(SKIP_REASON)
    return python


@pytest.fixture(scope="session")
def tiny_model(vllm_python: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random Llama every real server serves (``LEARNSCHED_TEST_VLLM_MODEL``: one
    made earlier)."""
    import os

    from vllm_support import make_tiny_model

    made = os.environ.get("LEARNSCHED_TEST_VLLM_MODEL")
    return Path(made) if made else make_tiny_model(vllm_python, tmp_path_factory.mktemp("model"))


@pytest.fixture(scope="session")
def vllm_servers(
    vllm_python: str, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], Any]]:
    """``server(kind)``: the session's shared server of that kind, ready. The first call
    starts every kind at once (their minute-long start-ups overlap);
    ``LEARNSCHED_TEST_VLLM_<KIND>_URL`` names one already running instead."""
    import os

    from vllm_support import KINDS, ExternalVllm, start_server

    started: dict[str, Any] = {}
    logs = tmp_path_factory.mktemp("vllm-logs")

    def server(kind: str) -> Any:
        if not started:
            for each in KINDS:
                url = os.environ.get(f"LEARNSCHED_TEST_VLLM_{each.upper()}_URL")
                started[each] = (
                    ExternalVllm(each, url, tiny_model)
                    if url
                    else start_server(vllm_python, each, tiny_model, logs)
                )
        started[kind].wait_ready()
        return started[kind]

    yield server
    for each in started.values():
        each.stop()


@pytest.fixture
def vllm_sleep(vllm_servers: Callable[[str], Any]) -> Any:
    """The shared dev-mode server with sleep mode (the control plane runs for real; CPU
    memory never moves). Tests leave it awake and unpaused."""
    return vllm_servers("sleep")


@pytest.fixture
def vllm_dev(vllm_servers: Callable[[str], Any]) -> Any:
    """The shared dev-mode server without sleep mode."""
    return vllm_servers("dev")


@pytest.fixture
def vllm_plain(vllm_servers: Callable[[str], Any]) -> Any:
    """The shared server without dev mode."""
    return vllm_servers("plain")


@pytest.fixture
def own_vllm(vllm_python: str, tiny_model: Path, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``own_vllm(kind, *flags)``: a server of this test's own, ready (to kill or to
    leave parked), stopped at the end."""
    from vllm_support import start_server

    servers: list[Any] = []

    def start(kind: str, *flags: str) -> Any:
        server = start_server(vllm_python, kind, tiny_model, tmp_path / "vllm-logs", *flags)
        servers.append(server)
        server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()
