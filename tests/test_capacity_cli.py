"""``learnsched capacity``: tables, JSON, golden text and errors of check, lend and replay."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from learnsched.capacity import burst_trace, write_trace_csv

from conftest import run_handler

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "burst.csv"
    write_trace_csv(path, burst_trace(prompt_tokens=512))
    return path


@pytest.fixture
def rate_file(tmp_path: Path) -> Path:
    path = tmp_path / "rate.csv"
    path.write_text("start,rate\n0,45\n10,45\n20,45\n30,45\n")
    return path


# golden file -> (arguments after the trace file, exit status); RATES is the rate file.
GOLDEN_COMMANDS = {
    "capacity_check.txt": ("check --rate 45", 0),
    "capacity_check_infeasible.txt": ("check --rate 30", 1),
    "capacity_lend.txt": ("lend --rate 45", 0),
    "capacity_lend_intervals.txt": (
        "lend --rate-file RATES --per-interval --share 0.9 --actuation 0.1 --ready 0.487",
        0,
    ),
    "capacity_replay_aimd.txt": ("replay --rate 45 --work-budget 1536 --stage-estimate 576", 0),
    "capacity_replay_static.txt": ("replay --rate 45 --share 0.25", 0),
    "capacity_replay_count.txt": ("replay --rate 45 --share 0.5 --count-threshold 4", 0),
}


def golden_argv(name: str, trace_file: Path, rate_file: Path) -> tuple[list[str], int]:
    arguments, status = GOLDEN_COMMANDS[name]
    action, *rest = arguments.replace("RATES", str(rate_file)).split()
    return ["capacity", action, str(trace_file), *rest], status


@pytest.mark.parametrize("name", sorted(GOLDEN_COMMANDS))
def test_text_table_matches_golden(
    name: str, trace_file: Path, rate_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, expected_status = golden_argv(name, trace_file, rate_file)
    status, out = run_handler(argv, capsys)
    assert status == expected_status
    assert out == (GOLDEN / name).read_text()


@pytest.mark.parametrize("name", sorted(GOLDEN_COMMANDS))
def test_json_is_indented_like_the_rest_of_the_cli(
    name: str, trace_file: Path, rate_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, _ = golden_argv(name, trace_file, rate_file)
    _, out = run_handler([*argv, "--json"], capsys)
    result = json.loads(out)
    assert out == json.dumps(result, indent=2) + "\n"
    table = (GOLDEN / name).read_text().splitlines()
    assert list(result) == [line.split()[0] for line in table]  # same keys, same order


def test_check_json_feasible(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run_handler(
        ["capacity", "check", str(trace_file), "--rate", "45", "--json"], capsys
    )
    result = json.loads(out)
    assert status == 0
    assert result["feasible"] is True
    assert result["first_violation"] is None
    assert result["min_slack"] > 0
    assert result["requests"] == 480


def test_check_infeasible_exits_one_with_index(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run_handler(
        ["capacity", "check", str(trace_file), "--rate", "30", "--json"], capsys
    )
    result = json.loads(out)
    assert status == 1
    assert result["feasible"] is False
    assert isinstance(result["first_violation"], int)
    assert 40 <= result["first_violation"] < 440  # inside the burst
    assert result["min_slack"] < 0


def test_check_table(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run_handler(["capacity", "check", str(trace_file), "--rate", "45"], capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["requests", "480"]
    assert lines[1].split() == ["feasible", "True"]
    assert lines[2].split() == ["first_violation", "-"]


def test_lend_json_with_rate_file_and_return(
    trace_file: Path, rate_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["capacity", "lend", str(trace_file), "--rate-file", str(rate_file), "--per-interval"]
    argv += ["--share", "0.9", "--ready", "0.487", "--json"]
    status, out = run_handler(argv, capsys)
    result = json.loads(out)
    assert status == 0
    assert 0.1 < result["max_share"] < 0.25
    assert len(result["interval_shares"]) == 4
    assert result["interval_starts"] == [0.0, 10.0, 20.0, 30.0]
    assert 10 < result["ready_by_s"] < 12
    assert result["reclaim_by_s"] == pytest.approx(result["ready_by_s"] - 0.487)


def test_lend_infeasible_prints_null(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run_handler(
        ["capacity", "lend", str(trace_file), "--rate", "30", "--json"], capsys
    )
    assert status == 1
    assert json.loads(out)["max_share"] is None


def test_replay_static_and_aimd(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    static_argv = ["capacity", "replay", str(trace_file), "--rate", "45", "--share", "0.25"]
    _, out = run_handler([*static_argv, "--json"], capsys)
    static = json.loads(out)
    assert static["policy"] == "static"
    assert static["deadline_misses"] > 0
    assert static["bad_requests"] == static["deadline_misses"]
    output = tmp_path / "finish.csv"
    argv = ["capacity", "replay", str(trace_file), "--rate", "45", "--json"]
    status, out = run_handler([*argv, "--work-budget", "1536", "--output", str(output)], capsys)
    adaptive = json.loads(out)
    assert status == 0
    assert adaptive["policy"] == "aimd"
    assert adaptive["bad_rate"] == 0.0
    assert adaptive["background_progress"] > 0
    with output.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 480
    assert {row["late"] for row in rows} == {"0"}


def test_bad_input_raises_value_error(
    trace_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("arrival,work,deadline\n0,-1,1\n")
    with pytest.raises(ValueError, match=r"bad.csv: work\[0\] must be > 0"):
        run_handler(["capacity", "check", str(path), "--rate", "1"], capsys)
    with pytest.raises(ValueError, match="rate must be > 0"):
        run_handler(["capacity", "check", str(trace_file), "--rate", "-1"], capsys)
    with pytest.raises(ValueError, match="period_s must be > 0"):
        run_handler(["capacity", "replay", str(trace_file), "--rate", "1", "--period", "0"], capsys)


def test_rate_source_is_required(trace_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_handler(["capacity", "check", str(trace_file)], capsys)
