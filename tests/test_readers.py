"""Input files: every command reads JSON with one strict reader and CSV with one reader, so
every malformed file is one line naming the file (and line) and exit 2: nesting depth,
NaN, invalid UTF-8, a BOM, a field or row count past its limit, an empty path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from learnsched._csvfile import MAX_FIELD_CHARS, read_csv
from learnsched._json import read_json
from learnsched.cli import main

from conftest import TWO_PATH, one_line, run, small_scenario, write_file

BOM = b"\xef\xbb\xbf"


# --- JSON nesting and non-standard constants --------------------------------------------------


def test_solve_on_deeply_nested_json_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 1000 + "]" * 1000)
    assert main(["solve", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "RecursionError" not in err
    assert len(err.strip().splitlines()) == 1
    assert "nesting depth 1000 exceeds the limit of 32" in err


def test_solve_refuses_moderate_nesting_and_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 40 + "]" * 40)
    assert main(["solve", str(path)]) == 2
    assert "nesting depth 40" in capsys.readouterr().err
    data = small_scenario().to_json()
    path.write_text(json.dumps(data).replace('"horizon_s": 1000.0', '"horizon_s": NaN'))
    assert main(["solve", str(path)]) == 2
    assert "NaN is not standard JSON" in capsys.readouterr().err


def deep(depth: int = 2000) -> str:
    return "[" * depth + "]" * depth


def test_nested_online_spec_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "online", write_file(tmp_path / "d.json", deep()))
    assert status == 2
    assert one_line(err).endswith("d.json: JSON nesting depth 2000 exceeds the limit of 32")


@pytest.mark.parametrize("flag", ["--calendar", "--history", "--trainer-options"])
def test_run_reads_nested_json_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    calendar = write_file(tmp_path / "c.json", '{"windows": [[0, 10]]}')
    nested = write_file(tmp_path / "d.json", deep())
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


# --- CSV limits, UTF-8 and the BOM ------------------------------------------------------------


def test_csv_rows_are_bounded(tmp_path: Path) -> None:
    path = write_file(tmp_path / "t.csv", "arrival,work,deadline\n" + "1,1,2\n" * 5)
    assert len(list(read_csv(path, max_rows=5))) == 6
    with pytest.raises(ValueError, match=r"t.csv: line 6: more than the limit of 4 rows"):
        list(read_csv(path, max_rows=4))


def test_a_csv_field_over_the_limit_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past its field limit Python's csv module raises ``_csv.Error``: the reader names the
    file and line instead."""
    big = "1" * (MAX_FIELD_CHARS + 1)
    path = write_file(tmp_path / "big.csv", f"arrival,work,deadline\n0,1,2\n1,1,{big}\n")
    for argv in (["windows", path], ["capacity", "check", path, "--rate", "1"]):
        status, _, err = run(capsys, *argv)
        assert status == 2
        assert one_line(err).endswith(
            "big.csv: line 3: a field is longer than the limit of 131072 characters"
        )


def test_invalid_utf8_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_file(tmp_path / "s.json", b'{"windows":\n [[0, 1]], "x": "\xff"}')
    status, _, err = run(capsys, "solve", scenario)
    assert status == 2
    assert one_line(err).endswith(
        "s.json: line 2: not UTF-8 text (byte 0xff at offset 29: invalid start byte); "
        "save the file as UTF-8"
    )
    trace = write_file(tmp_path / "t.csv", b"arrival,work,deadline\n0,1,2\n1,\xfe,2\n")
    status, _, err = run(capsys, "windows", trace)
    assert status == 2
    assert "t.csv: line 3: not UTF-8 text (byte 0xfe at offset 30" in one_line(err)


def test_bom_prefixed_json_and_csv_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_file(tmp_path / "s.json", BOM + json.dumps(TWO_PATH).encode())
    status, out, _ = run(capsys, "solve", scenario, "--policy", "dp", "--json")
    assert status == 0
    assert json.loads(out)["policies"]["dp"]["value"] == 1390.0
    spec = write_file(
        tmp_path / "sw.json",
        BOM + json.dumps({"base": [TWO_PATH], "vary": {}, "policies": ["dp"]}).encode(),
    )
    assert run(capsys, "sweep", spec, "--out", str(tmp_path / "sw.csv"))[0] == 0
    online = write_file(
        tmp_path / "o.json", BOM + json.dumps({**TWO_PATH, "forecast": "exact"}).encode()
    )
    assert run(capsys, "online", online)[0] == 0
    trace = write_file(tmp_path / "t.csv", BOM + b"arrival,work,deadline\n0,1,30\n100,1,130\n")
    status, out, _ = run(capsys, "windows", trace, "--json")
    assert status == 0
    assert json.loads(out)["requests"] == 2
    assert read_json(write_file(tmp_path / "b.json", BOM + b"[1, 2]")) == [1, 2]


# --- paths ------------------------------------------------------------------------------------


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
    """An OSError on the empty path names the argument that gave it: the OS alone says
    ": No such file or directory"."""
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert one_line(err) == f"learnsched {argv[0]}: error: {named}: an empty path names no file"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["grid", "--costs", "-1"], "--costs -1"),
        (["solve", "--", "-1"], "file -1"),
        (
            [
                *("run", "--engine", "vllm", "--url", "http://127.0.0.1:9", "--trainer", "m:T"),
                *("--calendar", "c.json", "--ledger", "l.jsonl", "--state-dir", "."),
                *("--costs", "-1"),
            ],
            "--costs -1",
        ),
    ],
)
def test_a_path_that_reads_as_a_flag_names_its_argument(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    named: str,
) -> None:
    """A missing path such as ``-1`` names the argument that gave it: "-1: No such file or
    directory" alone reads as a stray option, not as the value of ``--costs``."""
    monkeypatch.chdir(tmp_path)
    write_file(tmp_path / "c.json", json.dumps({"windows": [[0.0, 5.0]]}))
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert one_line(err) == f"learnsched {argv[0]}: error: {named}: No such file or directory"
