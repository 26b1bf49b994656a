"""Fuzz the command line with malformed files and options: every run exits 0, 1 or 2 with
standard JSON or one error line, never a traceback, a crash or a hang; a sample of the
inputs runs as real ``learnsched`` processes."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from typing import Any

import pytest
from fuzzing import COUNTS, fuzz
from hypothesis import given
from hypothesis import strategies as st

from learnsched.cli import main

from strategies import json_values, scenarios

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2


@st.composite
def scenario_files(draw: st.DrawFn) -> str:
    """A scenario file's text: valid, mutated, truncated, deep, non-standard or random."""
    obj: dict[str, Any] = draw(scenarios(max_windows=3, max_quanta=6)).to_json()
    kind = draw(st.integers(0, 7))
    if kind == 0:
        return json.dumps(obj)
    if kind == 1:
        key = draw(st.sampled_from(sorted(obj)))
        obj[key] = draw(json_values)
        return json.dumps(obj)
    if kind == 2:
        return json.dumps([obj, draw(json_values)])
    if kind == 3:
        text = json.dumps(obj)
        return text[: draw(st.integers(0, len(text)))]
    if kind == 4:
        depth = draw(st.sampled_from([31, 33, 200, 1000, 5000]))
        return "[" * depth + "]" * depth
    if kind == 5:
        return json.dumps(obj).replace(
            str(obj["quantum_s"]),
            draw(
                st.sampled_from(
                    ["NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400, "true", '"5"']
                )
            ),
            1,
        )
    if kind == 6:
        return json.dumps(obj).replace(
            json.dumps(obj["windows"]), json.dumps([[t * 1e305 for t in w] for w in obj["windows"]])
        )
    return draw(st.text(max_size=40))


@st.composite
def trace_files(draw: st.DrawFn) -> str:
    """A trace CSV: a header (maybe wrong) and rows of numbers or junk."""
    header = draw(st.sampled_from(["arrival,work,deadline", "arrival,work", "a,b,c", ""]))
    cell = st.one_of(
        st.floats(-5, 50).map(repr), st.sampled_from(["nan", "inf", "", "x", "1e400", "-0"])
    )
    rows = draw(st.lists(st.tuples(cell, cell, cell), max_size=5))
    return "\n".join([header, *(",".join(row) for row in rows)]) + "\n"


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``learnsched ARGV`` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit:  # argparse's usage errors
            status = int(exit.code or 0)
    return status, out.getvalue(), err.getvalue()


def check_run(status: int, out: str, err: str, wants_json: bool) -> None:
    COUNTS["cli"] += 1
    assert status in (EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT), (status, err)
    assert "Traceback" not in err
    if status == EXIT_BAD_INPUT:
        COUNTS["cli named errors"] += 1
        assert len(err.strip().splitlines()) == 1, err
    elif wants_json:

        def refuse(name: str) -> None:
            raise AssertionError(f"non-standard JSON constant {name}")

        json.loads(out, parse_constant=refuse)


@fuzz(200)
@given(scenario_files(), st.booleans(), st.sampled_from([None, "dp", "rollout", "bogus"]))
def test_fuzz_solve(
    tmp_path_factory: pytest.TempPathFactory, text: str, as_json: bool, policy: str | None
) -> None:
    path = tmp_path_factory.mktemp("solve") / "scenario.json"
    path.write_text(text)
    argv = [
        "solve",
        str(path),
        *(["--json"] if as_json else []),
        *(["--policy", policy] if policy else []),
    ]
    check_run(*run_main(argv), as_json)


@fuzz(150)
@given(
    trace_files(),
    st.sampled_from(["1", "0", "-1", "nan", "inf", "x", "1e400"]),
    st.sampled_from([None, "0", "1e-9", "-1", "nan"]),
    st.booleans(),
)
def test_fuzz_capacity_check(
    tmp_path_factory: pytest.TempPathFactory,
    text: str,
    rate: str,
    tolerance: str | None,
    as_json: bool,
) -> None:
    path = tmp_path_factory.mktemp("check") / "trace.csv"
    path.write_text(text)
    argv = [
        "capacity",
        "check",
        str(path),
        "--rate",
        rate,
        *(["--json"] if as_json else []),
        *(["--tolerance", tolerance] if tolerance else []),
    ]
    check_run(*run_main(argv), as_json)


@fuzz(40)
@given(scenario_files())
def test_fuzz_real_processes(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """Real ``learnsched`` processes: a crash would show as a signal, a hang as a timeout."""
    path = tmp_path_factory.mktemp("process") / "scenario.json"
    path.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "learnsched", "solve", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=path.parent,  # not the source tree, whose learnsched/ has no built modules
    )
    assert done.returncode >= 0, f"killed by signal {-done.returncode}"
    check_run(done.returncode, done.stdout, done.stderr, True)
