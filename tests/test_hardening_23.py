"""Issue 23's reproductions: the sweep's cold path, bounded sizes, one reader for every
input, one line for every failure (exit 2/3/4, 70 for a bug), locked sweeps, own temps."""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _core
from learnsched._atomic import atomic_write_text, remove_stale_temps
from learnsched._checks import float64_vector
from learnsched._csvfile import MAX_FIELD_CHARS, read_csv
from learnsched._json import read_json
from learnsched.cli import build_parser, error_line, exit_status, main
from learnsched.cli.output import EXIT_BUG, EXIT_ENVIRONMENT, EXIT_STATUSES
from learnsched.serving import HandoffLedger, HandoffRecord, read_ledger

from conftest import dead_pid, run_python

BOM = b"\xef\xbb\xbf"

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


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def write(path: Path, data: bytes | str) -> str:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


# --- 1. the sweep keeps a two-path base scenario's cold path ---------------------------


def test_sweep_keeps_the_cold_path_of_a_two_path_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    solved = ls.solve(ls.Scenario.from_json(TWO_PATH), "dp").value
    assert solved == 1390.0
    spec = write(
        tmp_path / "s.json", json.dumps({"base": [TWO_PATH], "vary": {}, "policies": ["dp"]})
    )
    status, out, _ = run(capsys, "sweep", spec, "--out", str(tmp_path / "s.csv"), "--json")
    assert status == 0
    assert json.loads(out)["points"][0]["mean_value"]["dp"] == solved  # was 1099.0


# --- 2. bounds before allocation ---------------------------------------------------------


def test_sample_tables_refuse_out_of_bounds_offsets() -> None:
    """Was a segfault (ASan: heap-buffer-overflow at bind_forecast.cpp:46)."""
    candidate = ls.Scenario.from_json({**TWO_PATH, "horizon_s": 5000.0}).to_core()
    windows = np.array([[600.0, 700.0], [800.0, 900.0]])
    policies = [_core.finite.Policy.DP]
    for offsets in ([0, 100, 2], [0, -5, 2], [0, 3, 2], [0, 2, 1, 2]):
        with pytest.raises(ValueError, match="offsets"):
            _core.forecast.SampleTables(candidate, windows, np.array(offsets), policies)
    current = _core.finite.Scenario(
        [(0.0, 500.0)], 6, 50.0, 1.0, 5000.0, candidate.costs, _core.finite.State(0, 0, 0, False)
    )
    with pytest.raises(ValueError, match="offsets"):
        _core.forecast.ForecastModel(current, windows, np.array([0, 7, 2]), policies)
    with pytest.raises(ValueError, match="more than the limit of 65536"):
        _core.forecast.SampleTables(candidate, windows, np.zeros(2**16 + 2, dtype=np.int64), policies)


def online_spec(work_quanta: int, samples: int) -> dict[str, Any]:
    return {
        "windows": [[0, 10]],
        "work_quanta": work_quanta,
        "quantum_s": 1e-6,
        "benefit_rate": 1,
        "horizon_s": 1000,
        "recovery_s": 1,
        "residency_rate": 0,
        "save_s": 0,
        "load_s": 0,
        "initial": {"progress": 0, "durable": 0, "active": False},
        # Distinct samples: equal ones would share one build (SampleTables dedupes them).
        "forecast": {"samples": [[[100 + i, 200 + i]] for i in range(samples)]},
    }


def test_online_samples_x_states_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1.8 KB SPEC (J = 2^23 - 2, 64 one-window samples) reached 5.9 GB, then a traceback."""
    spec = write(tmp_path / "o.json", json.dumps(online_spec(2**23 - 2, 64)))
    status, out, err = run(capsys, "online", spec)
    assert (status, out) == (2, "")
    line = one_line(err)
    assert line.endswith(  # the size asked: 64 x 2 x (2^23 - 1), before any table is built
        "samples x states: the sum over 64 samples of (windows + 1) x (work_quanta + 1) = "
        "1073741696 exceeds the limit of 16777216"
    )


def test_core_sample_tables_bound_the_sum_of_their_states() -> None:
    candidate = ls.Scenario.from_json(
        {k: v for k, v in online_spec(2**23 - 2, 1).items() if k != "forecast"}
    ).to_core()
    windows = np.array([[100.0 + i, 200.0 + i] for i in range(64)])  # distinct: built apart
    offsets = np.arange(65, dtype=np.int64)
    with pytest.raises(ValueError, match=r"= 1073741696 exceeds the limit of 16777216"):
        _core.forecast.SampleTables(candidate, windows, offsets, [_core.finite.Policy.DP])
    assert _core.forecast.MAX_SAMPLE_STATES == _core.finite.MAX_STATES


def test_sweep_points_x_scenarios_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 4.2 KB SPEC reached 3.8 GB: its points are refused before any is built."""
    vary = {f: [0.01 * (i + 1) for i in range(12)] for f in ("save_s", "load_s", "residency_rate")}
    vary["cold_recovery_s"] = [float(10 + i) for i in range(12)]
    spec = write(
        tmp_path / "big.json", json.dumps({"base": "paper_grid", "vary": vary, "policies": ["dp"]})
    )
    status, _, err = run(capsys, "sweep", spec, "--out", str(tmp_path / "big.csv"))
    assert status == 2
    assert one_line(err).endswith(
        "sweep rows: points x base scenarios = 20736 x 1920 = 39813120 exceeds the limit of 4194304"
    )
    assert not (tmp_path / "big.csv.parts").exists()


def test_paper_grid_size_constant_matches_the_grid() -> None:
    from learnsched.sweep.spec import PAPER_GRID_SCENARIOS

    assert len(ls.paper_grid().batch) == PAPER_GRID_SCENARIOS


def test_csv_rows_are_bounded(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "arrival,work,deadline\n" + "1,1,2\n" * 5)
    assert len(list(read_csv(path, max_rows=5))) == 6
    with pytest.raises(ValueError, match=r"t.csv: line 6: more than the limit of 4 rows"):
        list(read_csv(path, max_rows=4))


# --- 3. one strict JSON reader and one CSV reader -----------------------------------------


def deep(depth: int = 2000) -> str:
    return "[" * depth + "]" * depth


def test_nested_online_spec_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "online", write(tmp_path / "d.json", deep()))
    assert status == 2
    assert one_line(err).endswith("d.json: JSON nesting depth 2000 exceeds the limit of 32")


@pytest.mark.parametrize("flag", ["--calendar", "--history", "--trainer-options"])
def test_run_reads_nested_json_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    calendar = write(tmp_path / "c.json", '{"windows": [[0, 10]]}')
    nested = write(tmp_path / "d.json", deep())
    argv = {
        "--calendar": ["--calendar", nested],
        "--history": ["--calendar", calendar, "--history", nested],
        "--trainer-options": ["--calendar", calendar, "--trainer-options", deep()],
    }[flag]
    status, _, err = run(
        capsys,
        "run",
        "--engine=vllm",
        "--url=http://127.0.0.1:9",
        "--trainer=nowhere:Nothing",
        f"--ledger={tmp_path / 'l.jsonl'}",
        f"--state-dir={tmp_path}",
        *argv,
    )
    assert status == 2
    assert "JSON nesting depth 2000 exceeds the limit of 32" in one_line(err)


def test_a_csv_field_over_the_limit_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``_csv.Error: field larger than field limit (131072)`` with a traceback."""
    big = "1" * (MAX_FIELD_CHARS + 1)
    path = write(tmp_path / "big.csv", f"arrival,work,deadline\n0,1,2\n1,1,{big}\n")
    for argv in (["windows", path], ["capacity", "check", path, "--rate", "1"]):
        status, _, err = run(capsys, *argv)
        assert status == 2
        assert one_line(err).endswith(
            "big.csv: line 3: a field is longer than the limit of 131072 characters"
        )


def test_invalid_utf8_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write(tmp_path / "s.json", b'{"windows":\n [[0, 1]], "x": "\xff"}')
    status, _, err = run(capsys, "solve", scenario)
    assert status == 2
    assert one_line(err).endswith(
        "s.json: line 2: not UTF-8 text (byte 0xff at offset 29: invalid start byte); "
        "save the file as UTF-8"
    )
    trace = write(tmp_path / "t.csv", b"arrival,work,deadline\n0,1,2\n1,\xfe,2\n")
    status, _, err = run(capsys, "windows", trace)
    assert status == 2
    assert "t.csv: line 3: not UTF-8 text (byte 0xfe at offset 30" in one_line(err)


def test_bom_prefixed_json_and_csv_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write(tmp_path / "s.json", BOM + json.dumps(TWO_PATH).encode())
    status, out, _ = run(capsys, "solve", scenario, "--policy", "dp", "--json")
    assert status == 0
    assert json.loads(out)["policies"]["dp"]["value"] == 1390.0
    spec = write(
        tmp_path / "sw.json",
        BOM + json.dumps({"base": [TWO_PATH], "vary": {}, "policies": ["dp"]}).encode(),
    )
    assert run(capsys, "sweep", spec, "--out", str(tmp_path / "sw.csv"))[0] == 0
    online = write(
        tmp_path / "o.json", BOM + json.dumps({**TWO_PATH, "forecast": "exact"}).encode()
    )
    assert run(capsys, "online", online)[0] == 0
    trace = write(tmp_path / "t.csv", BOM + b"arrival,work,deadline\n0,1,30\n100,1,130\n")
    status, out, _ = run(capsys, "windows", trace, "--json")
    assert status == 0
    assert json.loads(out)["requests"] == 2
    assert read_json(write(tmp_path / "b.json", BOM + b"[1, 2]")) == [1, 2]


@pytest.mark.parametrize("value", ["1e400", "1" + "0" * 400])
def test_a_sweep_vary_value_beyond_a_double_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """``10**400`` was an OverflowError with a traceback."""
    text = '{"base": "paper_grid", "vary": {"save_s": [VALUE]}, "policies": ["dp"]}'
    text = text.replace("VALUE", value)
    status, _, err = run(
        capsys, "sweep", write(tmp_path / "v.json", text), "--out", str(tmp_path / "v.csv")
    )
    assert status == 2
    assert "vary.save_s[0] must be finite" in one_line(err)


def test_online_trace_with_a_zero_quantum_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """Was a ZeroDivisionError."""
    status, _, err = run(capsys, "online", "--trace", "--quantum-s", "0")
    assert status == 2
    assert one_line(err) == "learnsched online: error: --quantum-s must be > 0, got 0.0"


def test_return_s_inf_is_reported_under_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``ready_s must be finite, got inf``."""
    trace = write(tmp_path / "t.csv", "arrival,work,deadline\n0,1,30\n")
    with pytest.raises(SystemExit) as exit:
        main(["windows", trace, "--return-s", "inf"])
    assert exit.value.code == 2
    assert one_line(capsys.readouterr().err) == (
        "learnsched windows: error: argument --return-s: must be a finite number >= 0, got 'inf'"
    )


# --- 3. the catch-all and the exit statuses ------------------------------------------------


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
    """Was exit 2 (bad input)."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "fsync")

    trace = write(tmp_path / "t.csv", "arrival,work,deadline\n0,1,30\n")
    monkeypatch.setattr(os, "fsync", full)
    status, _, err = run(capsys, "windows", trace, "--out", str(tmp_path / "w.json"))
    assert status == EXIT_ENVIRONMENT
    assert one_line(err) == "learnsched windows: error: fsync: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # no temporary left


def test_a_failed_ledger_append_leaves_no_torn_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk mid-append left a torn line that the reader blamed on a killed writer."""
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


def test_every_parser_lists_the_statuses_even_with_its_own_epilog() -> None:
    parser = build_parser(["grid"])
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    later = commands.add_parser("later", epilog="a command added later, with an epilog")
    text = " ".join(later.format_help().split())
    assert "a command added later, with an epilog" in text
    assert text.endswith(EXIT_STATUSES)
    assert "4 environment failure" in EXIT_STATUSES
    assert "70 internal error" in EXIT_STATUSES


# --- 5. locks, temporaries, integers --------------------------------------------------------


def test_two_sweeps_on_one_out_take_turns(tmp_path: Path) -> None:
    """Unlocked, 3 of 36 trials had one exit 2 and 8 of 36 left stale chunks."""
    spec = write(
        tmp_path / "s.json",
        json.dumps({"base": "paper_grid", "vary": {"save_s": [0.1, 0.2]}, "policies": ["dp"]}),
    )
    out = tmp_path / "s.csv"
    argv = [sys.executable, "-m", "learnsched", "sweep", spec, "--out", str(out), "--json"]
    argv += ["--chunk-rows", "64", "--workers", "1"]
    children = [
        subprocess.Popen(
            argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = [child.communicate(timeout=300) for child in children]
    assert [child.returncode for child in children] == [0, 0], results
    first, second = (json.loads(stdout) for stdout, _ in results)
    assert first["points"] == second["points"]
    assert sorted(c["chunks"]["solved"] for c in (first, second)) == [0, 60]
    assert sorted(p.name for p in out.with_name("s.csv.parts").iterdir()) == ["manifest.json"]


def test_remove_stale_temps_touches_only_its_own_files(tmp_path: Path) -> None:
    """It removed other programs' look-alikes (``.NAME.PID.XXXXXXXX.tmp`` of a dead pid)."""
    gone = dead_pid()
    look_alikes = [
        f".result.csv.{gone}.0123abcd.tmp",  # the old pattern: another program's file
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


def test_int64_beyond_2_53_is_refused_not_rounded() -> None:
    """``2**53 + 1`` compared after its conversion passed as ``2**53``."""
    for values in (np.array([2**53 + 1]), [2**53 + 1], np.array([-(2**63)]), [2**64]):
        with pytest.raises(ValueError, match=r"is not exact as a float64 \(> 2\*\*53\)"):
            float64_vector("arrival", values)
    exact = float64_vector("arrival", np.array([2**53, -(2**53)], dtype=np.int64))
    assert exact.tolist() == [2.0**53, -(2.0**53)]


# --- what the fuzz registry found (each a test that failed before its fix) --------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # Was an allocation of tens of GB (the fuzz run was killed for memory).
        (["econ", "alerts", "--n", "2147483648"], "--n must be <= 10000000, got 2147483648"),
        (["econ", "alerts", "--repeats", "10" + "0" * 12], "--repeats must be <= 10000"),
        # Was an OverflowError (exit 70) in the probe's worker thread.
        (["probe", "waits", "--step-ms", "1e308"], "--step-ms must be <= 60000 ms"),
        # Was a hang: 2**31 commands of one step each.
        (["probe", "waits", "--commands", "2147483648"], "--commands must be <= 100000"),
        # Was an OverflowError: int(inf) release bytes.
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
        # Was "initial.progress must be <= 2147483647": the quantum went unnamed.
        (["grid", "--quantum", "1e-9"], "quantum_s=1e-09 makes work_quanta = 30 s / quantum_s"),
        (["grid", "--quantum", "5e-324"], "= inf quanta, more than the limit of 16777216"),
        # Was "Out of range float values are not JSON compliant: inf".
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
def test_sizes_and_overflows_the_fuzz_found_are_named(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert message in one_line(err)


def test_json_output_names_a_non_finite_result() -> None:
    from learnsched.cli.output import emit_json

    with pytest.raises(ValueError, match=r"--json: the result's a\[1\]\.b is inf"):
        emit_json({"a": [1, {"b": float("inf")}]})


@pytest.mark.parametrize(
    ("noise", "error", "message"),
    [
        (
            lambda s, a: "x",
            TypeError,
            "score_noise(state, action) must return a number (s-eq.), got str",
        ),
        (lambda s, a: None, TypeError, "must return a number (s-eq.), got NoneType"),
        (lambda s, a: True, TypeError, "must return a number (s-eq.), got bool"),
        (lambda s, a: 10**400, ValueError, "must return a finite number"),
    ],
)
def test_private_score_noise_is_checked_like_the_public_one(
    noise: Any, error: type[Exception], message: str
) -> None:
    """``_core`` raised an unnamed RuntimeError ("Unable to cast Python instance ...")."""
    # The core model as learnsched builds it: its decide falls back on the Python checks.
    model = ls.Model(ls.scenario_by_id("S0348").scenario)._model
    with pytest.raises(error, match=re.escape(message)):
        model.solve(_core.finite.Policy.GUARDED, 0.0, noise)
    with pytest.raises(error, match=re.escape(message.replace("score_noise", "scores"))):
        _core.finite.measure_score_error(model, noise, 0.0, _core.finite.Reach.ALL)
    with pytest.raises((TypeError, ValueError), match="score_noise"):  # the Python checks
        model.decide(0, 0, 0, False, "guarded", 0.0, noise)
    assert model.solve(_core.finite.Policy.GUARDED, 0.0, lambda s, a: np.float32(0.5)).value > 0


def test_private_next_share_checks_its_config() -> None:
    """``_capacity.next_share(..., None)`` was ``AttributeError: 'NoneType' ... 'step'``."""
    from learnsched import _capacity
    from learnsched.capacity import AIMDConfig

    with pytest.raises(TypeError, match="config must be an AIMDConfig, got NoneType"):
        _capacity.next_share(0.5, 1.0, 0.0, None)
    assert 0.0 <= _capacity.next_share(0.5, 1.0, 0.0, AIMDConfig()) <= 1.0


def test_a_burst_trace_is_bounded_before_its_arrays_are_made() -> None:
    """``burst_trace(high_rate=1e12)`` asked numpy for 80 TB; ``phase_s=1e308`` was
    ``OverflowError: cannot convert float infinity to integer``."""
    from learnsched.capacity.traces import burst_trace

    assert len(burst_trace().arrival) == 480
    with pytest.raises(ValueError, match=r"= 1e\+13 exceeds the limit of 16777216"):
        burst_trace(high_rate=1e12)
    with pytest.raises(ValueError, match=r"= inf exceeds the limit"):
        burst_trace(phase_s=1e308)


def test_an_overflowing_decimal_rounds_to_infinity_and_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``float(Fraction)`` beyond a double raised OverflowError (exit 70)."""
    from fractions import Fraction

    from learnsched.economics._decimal import rounded

    assert rounded(Fraction(10) ** 400) == float("inf")
    assert rounded(-(Fraction(10) ** 400)) == float("-inf")
    status, _, err = run(
        capsys, "econ", "wait", "--cost-now=1e308", "--cost-wait=0", "--publish-now=-1e308",
        "--publish-wait=1e308", "--benefit-rate=1e308",
    )  # fmt: skip
    assert status == 2
    assert "overflows a double" in one_line(err)


def test_a_user_module_that_fails_to_import_is_bad_input(tmp_path: Path) -> None:
    """A --scores or --trainer module raising SyntaxError at import was exit 70."""
    (tmp_path / "broken_scores_23.py").write_text("def f(:\n")
    (tmp_path / "s.json").write_text(json.dumps(TWO_PATH))
    argv = ["guard-check", "s.json", "--scores", "broken_scores_23:f", "--epsilon", "0"]
    done = run_python(["-m", "learnsched", *argv], cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(
        "learnsched guard-check: error: scores 'broken_scores_23:f': cannot import "
        "broken_scores_23 (SyntaxError: "
    )
    from learnsched.control.trainer import load_trainer_class

    sys.path.insert(0, str(tmp_path))
    try:
        (tmp_path / "broken_trainer_23.py").write_text("raise RuntimeError('no GPU here')\n")
        with pytest.raises(ValueError, match=r"cannot import broken_trainer_23 \(RuntimeError"):
            load_trainer_class("broken_trainer_23:Trainer")
    finally:
        sys.path.remove(str(tmp_path))


def test_private_ties_names_shapes_that_do_not_broadcast() -> None:
    """Was ``RuntimeError: pybind11::vectorize: incompatible size/dimension of inputs!``."""
    with pytest.raises(
        ValueError, match=r"a and b must broadcast to one shape, got shapes \(2,\) and \(3,\)"
    ):
        _core.finite.ties(np.ones(2), np.ones(3))
    assert _core.finite.ties(np.ones(3), np.ones((2, 1))).shape == (2, 3)


def test_probe_runs_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    """``probe lora --runs 2147483648`` ran until killed."""
    status, _, err = run(
        capsys, "probe", "lora", "--device=cpu", "--shape=tiny", "--runs", "2147483648"
    )
    assert status == 2
    assert one_line(err).endswith("--runs must be <= 10000, got 2147483648")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://h:99999", "bad port (Port out of range 0-65535)"),
        ("http://h:x", "bad port"),
        ("", "must be http://HOST:PORT or https://HOST:PORT, got ''"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://h:1/?q=1", "got 'http://h:1/?q=1'"),
    ],
)
def test_gate_urls_are_checked_before_it_serves(
    capsys: pytest.CaptureFixture[str], url: str, why: str
) -> None:
    """``gate --url http://h:99999`` served until killed (urlsplit reads the port lazily);
    ``--url ''`` was refused without naming the flag."""
    from learnsched._url import http_url
    from learnsched.serving import ServingEndpoint

    with pytest.raises(SystemExit) as exited:  # argparse's own exit
        main(["gate", "--engine", "vllm", "--url", url])
    assert exited.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after the usage lines
    assert line.startswith("learnsched gate: error: argument --url: URL"), line
    assert why in line
    for name, check in (
        ("url", lambda: ServingEndpoint(url, "vllm")),
        ("notify url", lambda: http_url("notify url", url, schemes=("http",), path=True)),
    ):
        with pytest.raises(ValueError, match=re.escape(name)):
            check()
    assert http_url("url", "https://h") == ("https", "h", 443, "")


def _causal() -> tuple[Any, Any, Any]:
    arrival = np.array([0.0, 10.0, 30.0])
    schedule = _core.causal.UnlentSchedule(arrival, np.ones(3), arrival + 5.0)
    pool = _core.causal.GapPool(schedule, 100.0, 1000.0, 0.0, 10.0)
    candidate = _core.causal.CausalCandidate(2, 1.0, 1.0, 100.0, 0.5, 0.0, 0.1, 0.1, 1.0)
    return schedule, pool, candidate


def test_causal_bindings_guard_their_arguments() -> None:
    """Before: GapPool.lateness/slack of a record past the pool and stochastic_dp([None])
    were segmentation faults, GapPool.draw(n = 2**40) a MemoryError, a wrong pool, tables,
    candidate or seed an unnamed RuntimeError ("Unable to cast Python instance ...")."""
    schedule, pool, candidate = _causal()
    assert pool.size == 2
    for method in (lambda r: pool.lateness(r, 5.0), pool.slack):
        with pytest.raises(ValueError, match=r"record must be -1 or in \[0, 2\), got 2"):
            method(2)
        with pytest.raises(ValueError, match="got -2"):
            method(-2)
        assert method(-1) >= 0.0
        assert method(1) >= 0.0
    with pytest.raises(ValueError, match=r"n must be <= 16777216, got 1099511627776"):
        pool.draw(1.0, 2**40, 0)
    assert pool.draw(1.0, 3, 0)[0].shape == (3,)
    with pytest.raises(ValueError, match=r"branches\[1\] must be an UnlentSchedule, got None"):
        _core.causal.stochastic_dp([schedule, None], [0.5, 0.5], candidate, 0.0, 25.0)
    with pytest.raises(TypeError, match="pool must be a GapPool or None, got 'x'"):
        _core.causal.CausalDecider(candidate, "rollout", 0.5, "x", None, 0)
    with pytest.raises(TypeError, match="tables must be SampleTables or None, got 3"):
        _core.causal.CausalDecider(candidate, "rollout", 0.5, None, 3, 0)
    fields = (candidate, 0.0, 25.0, "window", 0.5, None, None, 0, False)
    job = _core.causal.CausalJob(*fields)
    for at, bad, message in (
        (0, "x", r"jobs\[0\].candidate must be a CausalCandidate, got 'x'"),
        (5, "p", r"jobs\[0\].pool must be a GapPool or None, got 'p'"),
        (7, -1, r"jobs\[0\].seed must be an int in \[0, 2\*\*64\), got -1"),
        (1, "0", r"jobs\[0\].from_s must be a number, got '0'"),
    ):
        with pytest.raises(TypeError, match=message):
            _core.causal.run_causal(
                schedule, [_core.causal.CausalJob(*fields[:at], bad, *fields[at + 1 :])]
            )
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 1025"):
        _core.causal.run_causal(schedule, [job], 1025)
    both, one = _core.causal.run_causal(schedule, [job, job], 2)[0], _core.causal.run_causal(schedule, [job])[0]
    assert {k: v for k, v in both.items() if k != "steps"} == {
        k: v for k, v in one.items() if k != "steps"
    }


def test_private_online_readers_are_bounded() -> None:
    # A lone surrogate in a key is standard JSON (Python's json reads it), and so is it
    # in a SPEC.
    from learnsched._json import parse

    assert parse('{"\\ud800": 1, "forecast": {"\\udfff": 2}}', "s.json") == {
        "\ud800": 1,
        "forecast": {"\udfff": 2},
    }
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 2048"):
        _core.forecast.run_online([], [_core.finite.Policy.DP], 2048)
    with pytest.raises(TypeError, match=r"cases\[0\].scenario must be a Scenario, got 'x'"):
        _core.forecast.run_online([("x", np.zeros((1, 2)), np.array([0, 1]))], [_core.finite.Policy.DP])


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--days", "1e300", "synthetic trace rows: mean_rate x duration_s = "),
        ("--days", "inf", "duration_s must be finite"),
        ("--bin-s", "5e-324", "bin_s = 4.94066e-324 cuts the trace's"),
        ("--bin-s", "1e-9", "over the limit of 16777216"),
    ],
)
def test_synth_sizes_are_bounded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, message: str
) -> None:
    """``synth --days 1e300`` grew until memory ran out; ``--bin-s 5e-324`` was an
    OverflowError (exit 70) and ``1e-9`` asked bincount for 10^14 bins."""
    status, _, err = run(capsys, "synth", "--out", str(tmp_path / "s.csv"), f"{flag}={value}")
    assert status == 2
    line = one_line(err)
    assert line.startswith("learnsched synth: error: ")
    assert message in line
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (BOM + b'engine = "vllm"\nbogus = 1\n', "bogus: not a flag of this command"),
        (b'engine = "\xff"\n', r"line 1: not UTF-8 text \(byte 0xff at offset 10"),
        # RecursionError under the default limit; parsed (then refused by key) where a
        # test runner raised it: named either way.
        (
            b"engine = " + b"[" * 5000 + b"]" * 5000 + b"\n",
            "nested too deeply to read|engine must be",
        ),
    ],
)
def test_run_config_is_read_by_the_one_reader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes, message: str
) -> None:
    """``run --config``: a BOM was "not TOML", a bad byte an error naming no file, deep
    nesting a RecursionError (exit 70)."""
    config = tmp_path / "c.toml"
    config.write_bytes(data)
    status, _, err = run(capsys, "run", "--config", str(config))
    assert status == 2
    line = one_line(err)
    assert line.startswith("learnsched run: error: "), line
    assert re.search(message, line), line
    assert str(config) in line


def test_seeds_beyond_a_uint64_are_named() -> None:
    """A seed of 2**64 was pybind11's "incompatible function arguments" listing the
    signature of stream_seed; ``online --seeds 10**9`` ran a billion evaluations."""
    from learnsched.calendar.causal import CausalDecider
    from learnsched.cli.calendar import _seeds

    with pytest.raises(
        ValueError, match="seed must be <= 18446744073709551615, got 18446744073709551616"
    ):
        CausalDecider(ls.scenario_by_id("S0348").scenario, "window", None, seed=2**64)
    with pytest.raises(ValueError, match="--seeds must be <= 10000, got 1000000000"):
        _seeds(argparse.Namespace(seed=0, seeds=10**9))
    with pytest.raises(ValueError, match="--seed must be <= 18446744073709551614, got"):
        _seeds(argparse.Namespace(seed=2**64 - 1, seeds=2))
    assert _seeds(argparse.Namespace(seed=2**64 - 2, seeds=2)) == (2**64 - 2, 2**64 - 1)


def test_an_empty_trace_through_idle_window_bounds() -> None:
    """Under UBSan the sanitizer step died here: ``_zeros(0)`` cloned an array with
    ``memset(NULL, 0, 0)`` ("null pointer passed as argument 1")."""
    from learnsched import _capacity

    empty = np.zeros(0)
    assert _capacity.idle_window_bounds(empty, empty, empty, 1.0, 0.0, 0.0, 0.1, 0.0) == (
        [],
        [],
        -1,
    )


# --- round 3: the commands' thorough fuzz campaigns --------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "2147483648"], "--seeds must be <= 10000, got 2147483648"),
        (["--fit-seeds", "10001"], "--fit-seeds must be <= 10000, got 10001"),
        (["--fit-alerts", "0"], "--fit-alerts must be >= 1, got 0"),
        (
            ["--alerts", "1000000", "--seeds", "11"],
            (
                "alerts held, --alerts x --seeds = 1000000 x 11 = 11000000 exceeds the limit "
                "of 10000000"
            ),
        ),
    ],
)
def test_calibrate_alerts_bounds_its_seeds_before_drawing(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """``econ calibrate-alerts --seeds 2147483648`` drew 100 alerts for each of 2^31 seeds
    (the thorough fuzz campaign did not end): every seed's draws are held at once."""
    status, _, err = run(
        capsys, "econ", "calibrate-alerts", "--fit-alerts", "100", "--alerts", "100", *argv
    )
    assert status == 2
    assert one_line(err) == f"learnsched econ calibrate-alerts: error: {message}"


def test_calibrate_alerts_reads_no_more_seeds_than_the_limit() -> None:
    """The library's own bound: ``range(2**62)`` is refused, not iterated; a generator
    of seeds is read once (the result's seeds were empty after the draws consumed it)."""
    from learnsched.economics.alert_calibration import calibrate_alerts

    with pytest.raises(ValueError, match="fit_seeds must name at most 10000 seeds"):
        calibrate_alerts(fit_seeds=range(2**62))
    with pytest.raises(ValueError, match="alerts held, alerts x seeds = 10000000 x 2 ="):
        calibrate_alerts(fit_alerts=10, fit_seeds=[0], alerts=10**7, seeds=range(2))
    result = calibrate_alerts("offset", 50, iter([3]), 50, (s for s in (1, 2)))
    assert (result.fit_seeds, result.seeds) == ((3,), (1, 2))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--horizon-s", "0"], "--horizon-s must be > 0, got 0.0"),
        (["--warmup-s", "-1"], "--warmup-s must be >= 0, got -1.0"),
        (["--history-s", "0"], "--history-s must be > 0, got 0.0"),
        (["--return-level", "2"], "--return-level must be in [0, 1], got 2.0"),
        (
            ["--horizon-s", "1e6"],
            (
                "no horizon of --horizon-s = 1e+06 s after a warm-up of --warmup-s = 600 s fits "
                "the trace's 3435.95 s"
            ),
        ),
        (  # listed 10^303 starts until memory ran out (a hang)
            ["--horizon-s", "1e-300"],
            (
                "2.84e+303 horizons of --horizon-s = 1e-300 s after a warm-up of --warmup-s = "
                "600 s in the trace's 3435.95 s exceed the limit of 100000"
            ),
        ),
        (
            ["--horizon-s", "5e-324", "--known-window"],
            "inf horizons of --horizon-s = 4.94066e-324 s",
        ),
    ],
)
def test_online_trace_horizon_errors_name_the_flags(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """``online --trace``'s horizons come from --horizon-s and --warmup-s: its errors said
    "horizon_s must be > 0" and "no horizon of 1e+06 s" (and 1e-300 hung)."""
    status, _, err = run(capsys, "online", "--trace", "--samples", "1", *argv)
    assert status == 2
    assert one_line(err).startswith(f"learnsched online: error: {message}"), err


def test_online_trace_names_the_flag_of_a_horizon_too_long_to_solve(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact clairvoyant's node limit said "horizon [600, 1200] s: ...; use a shorter
    horizon" naming no flag; the library keeps it (HorizonTooLong), the CLI names
    --horizon-s."""
    import functools

    from learnsched.calendar import causal, study

    monkeypatch.setattr(study, "clairvoyant", functools.partial(causal.clairvoyant, max_nodes=1))
    status, _, err = run(capsys, "online", "--trace", "--samples", "1")
    assert status == 2
    line = one_line(err)
    assert line.startswith(
        "learnsched online: error: --horizon-s 600: the horizon [600, 1200] s is too long to "
        "solve exactly (the scenario tree has more than max_nodes = 1"
    ), line
    assert line.endswith("; give a shorter --horizon-s"), line
    trace = causal.CausalTrace(ls.calendar.load_trace(ls.calendar.AZURE_TRACE))
    scenario = ls.scenario_by_id("S0348").scenario
    with pytest.raises(causal.HorizonTooLong, match=r"horizon \[600, 1200\] s: .*max_nodes") as e:
        causal.clairvoyant(trace, scenario, 600.0, 1200.0, max_nodes=1)
    assert (e.value.from_s, e.value.to_s) == (600.0, 1200.0)


PORTFOLIO_TRACE_ERRORS = [
    (
        ["--from-s", "5000"],
        (
            "--from-s 5000 and --to-s (default: the trace's last request, 3435.95 s) leave no "
            "horizon: --to-s must be > --from-s"
        ),
    ),
    (["--from-s", "1200", "--to-s", "600"], "--from-s 1200 and --to-s 600 leave no horizon"),
    (["--to-s", "1e9"], "--to-s 1e+09 is after the trace's last request at 3435.95 s"),
    (["--to-s", "inf"], "--to-s must be finite, got inf"),
    (["--from-s", "nan"], "--from-s must be finite, got nan"),  # was "now_s must be finite"
    (["--history-s", "0"], "--history-s must be > 0, got 0.0"),
    (["--slo-s", "-1"], "--slo-s must be >= 0, got -1.0"),
]


@pytest.mark.parametrize(("argv", "message"), PORTFOLIO_TRACE_ERRORS)
def test_portfolio_trace_horizon_errors_name_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """``portfolio --trace``'s horizon is [--from-s, --to-s): it said "the horizon must be
    finite with end > start, got [5000.000000, 3435.948056)"."""
    spec = {
        "recovery_s": 0.487,
        "residency_rate": 0.06,
        "candidates": [
            {
                "name": "a",
                "work_quanta": 2,
                "quantum_s": 30,
                "benefit_rate": 1,
                "horizon_s": 9000,
                "save_s": 0.1,
                "load_s": 0.1,
                "initial": {"progress": 0, "durable": 0, "active": False},
            }
        ],
    }
    path = write(tmp_path / "p.json", json.dumps(spec))
    status, _, err = run(capsys, "portfolio", path, "--trace", "--samples", "1", *argv)
    assert status == 2
    assert one_line(err).startswith(f"learnsched portfolio: error: {message}"), err


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["solve", ""], "file ''"),
        (["online", "--trace", ""], "--trace ''"),
        (
            [
                *("run", "--engine", "vllm", "--url", "http://127.0.0.1:9", "--trainer", "m:T"),
                *("--calendar", "", "--ledger", "l.jsonl", "--state-dir", "."),
            ],
            "--calendar ''",
        ),
    ],
)
def test_an_empty_path_names_its_argument(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    named: str,
) -> None:
    """``run --calendar ''`` said ": No such file or directory" (the thorough fuzz
    campaign): an OSError on the empty path names the argument that gave it."""
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert one_line(err) == f"learnsched {argv[0]}: error: {named}: an empty path names no file"


def test_a_ray_that_does_not_start_is_an_environment_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under the fuzz worker's address-space cap Ray's raylet died and ``ray.init`` raised
    a bare ``Exception`` after 30 s: ``sweep --backend ray`` exited 70 (a bug) and the
    thorough campaign crawled. Now exit 4 naming the backend, after ``ray.shutdown()``."""
    import types

    from learnsched.sweep import ray_backend

    calls: list[str] = []

    def init(**options: object) -> None:
        calls.append("init")
        raise Exception("The current node timed out during startup.\nmore")  # noqa: TRY002

    ray = types.SimpleNamespace(
        is_initialized=lambda: False, init=init, shutdown=lambda: calls.append("shutdown")
    )
    monkeypatch.setattr(ray_backend, "require", lambda module, extra: ray)
    spec = {"base": [TWO_PATH], "vary": {"benefit_rate": [1, 2]}, "policies": ["rollout"]}
    path = write(tmp_path / "spec.json", json.dumps(spec))
    out = str(tmp_path / "out.csv")
    monkeypatch.setattr("learnsched.sweep.run.require", lambda module, extra: ray)
    status, _, err = run(capsys, "sweep", path, "--out", out, "--backend", "ray", "--workers", "1")
    assert (status, calls) == (4, ["init", "shutdown"])
    assert one_line(err) == (
        "learnsched sweep: error: backend ray: could not start a local Ray: "
        "The current node timed out during startup."
    )
