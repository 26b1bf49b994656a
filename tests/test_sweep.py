"""Sweeps on the local backend: SPEC checks, rows against direct solves, invalid rows, resume."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import learnsched as ls
from learnsched._progress import Progress
from learnsched.sweep import (
    SweepResult,
    choose_chunk_rows,
    parse_spec,
    points,
    read_rows,
    solve_rows,
    sweep,
)
from learnsched.sweep.store import ChunkStore

from conftest import dead_pid, run_python, write_file

COLD = [0, 20, 40, 69.988, 120]
COLD_SPEC: dict[str, Any] = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": COLD},
    "policies": ["costed_window", "rollout"],
}
# Published at 69.988 s (Section 6.1); counted by hand at 0, 20 and 40 s.
COLD_WINS = {0: 0, 20: 0, 40: 14, 69.988: 91}


@pytest.fixture(scope="module")
def cold_sweep(tmp_path_factory: pytest.TempPathFactory) -> SweepResult:
    out = tmp_path_factory.mktemp("cold") / "cold.csv"
    return sweep(COLD_SPEC, out, workers=2, progress=False)


def scenario_json(**changes: Any) -> dict[str, Any]:
    obj = ls.scenario_by_id("S0348").scenario.to_json()
    return {**obj, **changes}


# ---- SPEC checks -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**COLD_SPEC, "vary": {"gap_s": [1]}}, "unknown field 'gap_s'"),
        ({**COLD_SPEC, "vary": {"benefit_rate": []}}, "vary.benefit_rate must list at least"),
        ({**COLD_SPEC, "vary": {"save_s": [0.1, "x"]}}, "vary.save_s must hold numbers, got 'x'"),
        ({**COLD_SPEC, "vary": {"save_s": [True]}}, "vary.save_s must hold numbers, got True"),
        ({**COLD_SPEC, "vary": {"load_s": [float("nan")]}}, "vary.load_s[0] must be finite"),
        ({**COLD_SPEC, "vary": {"load_s": [1, 1.0]}}, "vary.load_s lists 1.0 twice"),
        ({**COLD_SPEC, "vary": {"load_s": 1}}, "vary.load_s must be a list"),
        ({**COLD_SPEC, "policies": ["rollout", "best"]}, "policy must be one of"),
        ({**COLD_SPEC, "policies": []}, "policies must name at least one policy"),
        ({**COLD_SPEC, "policies": ["dp", "dp"]}, "policies lists 'dp' twice"),
        ({**COLD_SPEC, "base": "grid"}, "base must be 'paper_grid'"),
        ({**COLD_SPEC, "base": []}, "base must hold at least one scenario"),
        ({**COLD_SPEC, "base": [{"windows": []}]}, "base[0]: scenario is missing key(s)"),
        ({**COLD_SPEC, "base": [scenario_json()]}, "'cold_recovery_s' applies only to base"),
        ({"base": "paper_grid", "vary": {}}, "SPEC is missing key(s) policies"),
        ({**COLD_SPEC, "threads": 2}, "SPEC has unknown key(s) threads"),
        ([], "SPEC must be a JSON object"),
    ],
)
def test_bad_spec_names_the_problem(spec: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_spec(spec)


def test_points_are_the_cartesian_product_first_field_slowest() -> None:
    spec = parse_spec(
        {"base": "paper_grid", "vary": {"save_s": [0, 1], "load_s": [2, 3, 4]}, "policies": ["dp"]}
    )
    assert points(spec) == tuple(
        (("save_s", s), ("load_s", ld)) for s in (0.0, 1.0) for ld in (2.0, 3.0, 4.0)
    )
    assert points(parse_spec({**COLD_SPEC, "vary": {}})) == ((),)


def test_spec_hash_follows_content_not_spelling() -> None:
    a = parse_spec(COLD_SPEC)
    b = parse_spec({**COLD_SPEC, "vary": {"cold_recovery_s": [0.0, 20.0, 40, 69.988, 120]}})
    assert a.hash == b.hash
    assert a.hash != parse_spec({**COLD_SPEC, "policies": ["rollout", "costed_window"]}).hash


# ---- rows against direct solves --------------------------------------------------------


def test_cold_recovery_sweep_reproduces_the_paper(cold_sweep: SweepResult) -> None:
    by_cold = {dict(s.params)["cold_recovery_s"]: s for s in cold_sweep.summaries}
    for cold, wins in COLD_WINS.items():
        assert by_cold[cold].wins == wins
        assert by_cold[cold].invalid == 0
    paper = by_cold[69.988]
    assert (paper.wins, paper.ties, paper.losses) == (91, 1829, 0)
    assert round(paper.mean_value["rollout"] or 0, 3) == 470.670
    assert round(paper.mean_value["costed_window"] or 0, 3) == 465.547


def test_rows_equal_the_batch_solver_bit_for_bit(cold_sweep: SweepResult) -> None:
    grid = ls.paper_grid()
    direct = ls.solve_batch([g.scenario for g in grid.scenarios], ["costed_window", "rollout"])
    rows = cold_sweep.rows
    at_paper = rows.point == COLD.index(69.988)
    np.testing.assert_array_equal(rows.value[at_paper], direct.value)
    assert [s for s, p in zip(rows.scenario, at_paper, strict=True) if p] == [
        g.sid for g in grid.scenarios
    ]
    # 20 s: the cold scenarios with 20 s recovery, the warm ones untouched.
    cold20 = [
        g.scenario.with_costs(replace(ls.PAPER_COLD, recovery_s=20.0))
        if g.recovery == "cold"
        else g.scenario
        for g in grid.scenarios
    ]
    at20 = ls.solve_batch(cold20, ["costed_window", "rollout"])
    np.testing.assert_array_equal(rows.value[rows.point == 1], at20.value)


def test_invalid_combinations_are_kept_with_the_cores_reason(
    cold_sweep: SweepResult,
) -> None:
    rows = cold_sweep.rows
    at120 = np.flatnonzero(rows.point == COLD.index(120))
    invalid = [i for i in at120 if rows.error[i]]
    assert len(at120) == 1920
    assert len(invalid) == cold_sweep.summaries[4].invalid == cold_sweep.invalid == 160
    grid = ls.paper_grid().scenarios
    for i in invalid:
        g = grid[int(i) % 1920]
        assert (g.recovery, g.calendar) in {("cold", "back_loaded"), ("cold", "fragmented")}
        assert g.initial_state in {"unsaved_active", "saved_active"}
        with pytest.raises(ValueError, match="within its window") as err:
            g.scenario.with_costs(replace(ls.PAPER_COLD, recovery_s=120.0))
        assert rows.error[i] == str(err.value)
        assert rows.status[i] == "invalid"
        assert np.isnan(rows.value[i]).all()
    ok = [i for i in at120 if not rows.error[i]]
    assert not np.isnan(rows.value[ok]).any()
    assert cold_sweep.summaries[4].ties == 1760


def test_list_base_sets_scenario_and_cost_fields(tmp_path: Path) -> None:
    base = ls.scenario_by_id("S0348").scenario
    spec = {
        "base": [base.to_json(), scenario_json(horizon_s=2000.0)],
        "vary": {"quantum_s": [5, 2.5], "residency_rate": [0, 0.05], "benefit_rate": [0.25, -1]},
        "policies": ["rollout", "dp", "never"],
    }
    result = sweep(spec, tmp_path / "list.csv", progress=False)
    rows = result.rows
    assert len(rows) == 2 * 2 * 2 * 2
    for r in range(len(rows)):
        params = dict(result.points[int(rows.point[r])])
        scenario = base if rows.scenario[r] == "scenario[0]" else replace(base, horizon_s=2000.0)
        costs = replace(scenario.costs, residency_rate=params["residency_rate"])
        if params["benefit_rate"] < 0:
            assert rows.error[r] == "benefit_rate must be >= 0, got -1"  # the core's words
            with pytest.raises(ValueError, match=re.escape(rows.error[r])):
                replace(scenario, benefit_rate=params["benefit_rate"])
            continue
        expected = replace(
            scenario,
            quantum_s=params["quantum_s"],
            benefit_rate=params["benefit_rate"],
            costs=costs,
        )
        assert expected.work_quanta == 6  # quantum_s keeps work_quanta on a list base
        direct = ls.solve_batch([expected], ["rollout", "dp", "never"]).value[0]
        np.testing.assert_array_equal(rows.value[r], direct)
        assert rows.error[r] == ""
    assert [s.invalid for s in result.summaries] == [0, 2] * 4


def test_grid_quantum_keeps_work_seconds(tmp_path: Path) -> None:
    spec = {"base": "paper_grid", "vary": {"quantum_s": [1, 7]}, "policies": ["rollout"]}
    result = sweep(spec, tmp_path / "q.csv", progress=False)
    at1 = result.rows.value[result.rows.point == 0, 0]
    direct = ls.solve_batch([g.scenario for g in ls.paper_grid(1.0).scenarios], ["rollout"])
    np.testing.assert_array_equal(at1, direct.value[:, 0])
    errors = set(result.rows.error[1920:])
    assert errors == {
        "quantum_s=7.0 does not divide the work size 30 s",
        "quantum_s=7.0 does not divide the work size 60 s",
        "quantum_s=7.0 does not divide the work size 120 s",
        "quantum_s=7.0 does not divide the work size 180 s",
    }
    assert result.summaries[1].invalid == 1920
    assert result.summaries[1].mean_value == {"rollout": None}
    assert result.summaries[1].to_json()["rollout_vs_costed_window"] is None


# ---- files, threads, chunks and resume --------------------------------------------------


def test_threads_and_chunking_do_not_change_the_file(
    tmp_path: Path, cold_sweep: SweepResult
) -> None:
    one = sweep(COLD_SPEC, tmp_path / "one.csv", workers=1, chunk_rows=777, progress=False)
    assert (one.chunks, one.solved, one.skipped) == (13, 13, 0)
    assert (tmp_path / "one.csv").read_bytes() == cold_sweep.out.read_bytes()
    back = read_rows(cold_sweep.out, cold_sweep.spec)
    np.testing.assert_array_equal(back.value, cold_sweep.rows.value)
    assert back.error == cold_sweep.rows.error


def test_csv_header_and_an_invalid_row(cold_sweep: SweepResult) -> None:
    lines = cold_sweep.out.read_text().splitlines()
    assert (
        lines[0] == "point,cold_recovery_s,scenario,status,error,value_costed_window,value_rollout"
    )
    assert lines[1].startswith("0,0.0,S0000,ok,,")
    invalid = next(line for line in lines if ",invalid," in line)
    assert invalid.startswith("4,120.0,S0325,invalid,an active candidate must be able to return")
    assert invalid.endswith(",,")


def test_a_finished_sweep_is_not_solved_again(tmp_path: Path) -> None:
    out = tmp_path / "done.csv"
    first = sweep(COLD_SPEC, out, chunk_rows=2000, progress=False)
    content = out.read_bytes()
    again = sweep(COLD_SPEC, out, progress=False)
    assert (again.solved, again.skipped, again.chunk_rows) == (0, first.chunks, 2000)
    assert out.read_bytes() == content
    assert [s.to_json() for s in again.summaries] == [s.to_json() for s in first.summaries]
    assert sorted(p.name for p in (tmp_path / "done.csv.parts").iterdir()) == ["manifest.json"]


def test_out_holding_something_else_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "mine.csv"
    sweep({**COLD_SPEC, "vary": {"cold_recovery_s": [10]}}, out, progress=False)
    with pytest.raises(ValueError, match="holds a sweep of another SPEC"):
        sweep(COLD_SPEC, out, progress=False)
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n")
    with pytest.raises(ValueError, match="exists but is no sweep output"):
        sweep(COLD_SPEC, other, progress=False)
    with pytest.raises(ValueError, match=r"--out must end in \.csv or \.parquet"):
        sweep(COLD_SPEC, tmp_path / "x.json", progress=False)
    with pytest.raises(ValueError, match="backend must be one of local, ray"):
        sweep(COLD_SPEC, tmp_path / "y.csv", backend="dask")
    with pytest.raises(ValueError, match=r"--address 1\.2\.3\.4:6379 needs --backend ray"):
        sweep(COLD_SPEC, tmp_path / "z.csv", address="1.2.3.4:6379")


KILL_SPEC = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [10.0 * i for i in range(8)]},
    "policies": ["costed_window", "rollout"],
}
KILL_CHUNK_ROWS = 16  # 960 chunks: the kill lands long before the end


def _chunk_files(out: Path) -> set[str]:
    parts = out.with_name(out.name + ".parts")
    return {p.name for p in parts.glob("chunk-*")} if parts.exists() else set()


def test_kill_9_then_rerun_gives_the_uninterrupted_file(tmp_path: Path) -> None:
    out = tmp_path / "killed.csv"
    spec = tmp_path / "kill.json"
    spec.write_text(json.dumps(KILL_SPEC))
    argv = ["sweep", str(spec), "--out", str(out), "--workers", "1"]
    child = subprocess.Popen(
        [sys.executable, "-m", "learnsched", *argv, "--chunk-rows", str(KILL_CHUNK_ROWS)],
        cwd=tmp_path,  # outside the source tree (see conftest.run_python)
    )
    try:
        deadline = time.monotonic() + 120
        while len(_chunk_files(out)) < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, "the sweep ended before it could be killed"
    assert not out.exists()
    finished = _chunk_files(out)
    total = -(-8 * 1920 // KILL_CHUNK_ROWS)
    assert 5 <= len(finished) < total

    rerun = subprocess.run(
        [sys.executable, "-m", "learnsched", *argv, "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    chunks = json.loads(rerun.stdout)["chunks"]
    assert chunks["rows"] == KILL_CHUNK_ROWS  # the killed run's chunking is kept
    assert (chunks["total"], chunks["skipped"]) == (total, len(finished))
    assert chunks["solved"] == total - len(finished)  # no finished chunk solved again
    whole = sweep(KILL_SPEC, tmp_path / "whole.csv", progress=False)
    assert out.read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert [s.wins for s in whole.summaries][:1] == [0]


def test_store_skips_exactly_the_finished_chunks(tmp_path: Path) -> None:
    spec = parse_spec(KILL_SPEC)
    store = ChunkStore(tmp_path / "s.csv", spec, 8 * 1920)
    store.open(lambda: 1000)
    chunks = store.chunks()
    assert [len(c) for c in chunks] == [1000] * 15 + [360]
    for chunk in chunks[3:5]:
        store.write(chunk, solve_rows(spec, chunk.start, chunk.stop))
    stale = f".chunk-000007.rows.learnsched-{dead_pid()}-0123abcd0123abcd.tmp"
    (store.parts / stale).write_text("cut short")
    (store.parts / ".probe-x1y2.rows").write_text("a killed run's chunk-size probe")
    # What a machine crash could leave of unsynced chunks: an empty file, a cut one, one
    # cut inside its header, and one of another row range (renamed by hand).
    (store.parts / "chunk-000008.rows").write_text("")
    data = (store.parts / "chunk-000003.rows").read_bytes()
    (store.parts / "chunk-000009.rows").write_bytes(data[: len(data) // 2])
    (store.parts / "chunk-000010.rows").write_bytes(data[:20])
    (store.parts / "chunk-000011.rows").write_bytes(data)
    resumed = ChunkStore(tmp_path / "s.csv", spec, 8 * 1920)
    resumed.open(lambda: pytest.fail("a resumed sweep keeps its chunk size"))
    assert resumed.finished() == chunks[3:5]
    assert not list(resumed.parts.glob(".*"))
    assert sorted(p.name for p in resumed.parts.glob("chunk-*")) == [
        "chunk-000003.rows",
        "chunk-000004.rows",
    ]
    with pytest.raises(ValueError, match="do not match chunk"):
        resumed.write(chunks[0], solve_rows(spec, 0, 10))


# ---- chunk sizing and progress --------------------------------------------------------


@given(
    row_s=st.floats(1e-7, 1.0),
    overhead_s=st.floats(0.0, 1.0),
    total=st.integers(1, 10**7),
    workers=st.integers(1, 256),
)
def test_chunks_keep_task_overhead_under_ten_percent(
    row_s: float, overhead_s: float, total: int, workers: int
) -> None:
    rows = choose_chunk_rows(row_s, overhead_s, total, workers)
    assert 1 <= rows <= total
    if rows < total:  # a whole sweep in one task is the best it can do
        assert overhead_s <= 0.1 * rows * row_s * (1 + 1e-12)


def test_chunks_split_for_every_worker_when_overhead_allows() -> None:
    assert choose_chunk_rows(1e-3, 1e-3, 10_000, 4) == 625  # 4 chunks per worker
    assert choose_chunk_rows(1e-3, 1.0, 10_000, 4) == 10_000  # 1 s tasks: one chunk
    assert choose_chunk_rows(1.0, 0.0, 10**6, 1) == 60  # at most a minute per task


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_rate_eta_and_a_note() -> None:
    stream = _Terminal()
    with Progress(100, "sweep", 0.0, stream, done=40, unit="scenarios") as bar:
        time.sleep(0.01)
        bar.advance(20, "points 3/5")
    text = stream.getvalue()
    assert "sweep [" in text
    assert "60/100 points 3/5, " in text
    assert " scenarios/s, ETA " in text
    assert text.endswith("\n")


def test_parquet_holds_the_same_rows_as_csv(tmp_path: Path, cold_sweep: SweepResult) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet output needs pyarrow")
    out = tmp_path / "cold.parquet"
    result = sweep(COLD_SPEC, out, chunk_rows=3000, progress=False)
    table = pq.read_table(out)
    assert table.column_names == [
        "point", "cold_recovery_s", "scenario", "status", "error",
        "value_costed_window", "value_rollout",
    ]  # fmt: skip
    np.testing.assert_array_equal(
        table.column("value_rollout").to_numpy(), cold_sweep.rows.value[:, 1]
    )
    assert tuple(table.column("error").to_pylist()) == cold_sweep.rows.error
    assert table.column("status").to_pylist().count("invalid") == 160
    again = sweep(COLD_SPEC, out, progress=False)
    assert again.solved == 0
    np.testing.assert_array_equal(again.rows.value, result.rows.value)


def test_plot_draws_the_swept_field(tmp_path: Path, cold_sweep: SweepResult) -> None:
    pytest.importorskip("matplotlib", reason="plots need the plot extra")
    from learnsched.sweep.plot import plot_sweep

    plot_sweep(cold_sweep.summaries, tmp_path / "cold.png")
    assert (tmp_path / "cold.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    two = sweep(
        {**COLD_SPEC, "vary": {"cold_recovery_s": [20, 69.988], "benefit_rate": [0.25, 1]}},
        tmp_path / "two.csv",
        progress=False,
    )
    plot_sweep(two.summaries, tmp_path / "two.svg")  # one line per benefit rate
    assert b"benefit_rate=0.25" in (tmp_path / "two.svg").read_bytes()
    flat = sweep({**COLD_SPEC, "vary": {}}, tmp_path / "flat.csv", progress=False)
    with pytest.raises(ValueError, match="--plot needs a SPEC that varies at least one field"):
        plot_sweep(flat.summaries, tmp_path / "flat.png")


def test_a_local_sweep_imports_neither_ray_nor_pyarrow(tmp_path: Path) -> None:
    code = (
        "import sys; from learnsched.cli import main; "
        f"main(['sweep', {str(tmp_path / 'spec.json')!r}, '--out', 'a.csv']); "
        "print(sorted(m for m in ('ray', 'pyarrow') if m in sys.modules))"
    )
    (tmp_path / "spec.json").write_text(json.dumps({**COLD_SPEC, "vary": {"save_s": [1]}}))
    result = run_python(["-c", code], cwd=tmp_path, check=True)
    assert result.stdout.splitlines()[-1] == "[]"


class _ModelBackend:
    """A backend whose tasks take exactly ``fixed_s + rows * row_s`` (no work is done)."""

    workers = 2

    def __init__(self, fixed_s: float, row_s: float) -> None:
        self.fixed_s, self.row_s = fixed_s, row_s
        self.sizes: list[int] = []

    def time_task(self, spec: object, start: int, stop: int) -> float:
        self.sizes.append(stop - start)
        return self.fixed_s + (stop - start) * self.row_s


@pytest.mark.parametrize(
    ("fixed_s", "row_s", "total", "sizes"),
    [
        (3e-3, 25e-6, 10**6, [1, 1, 1, 1, 4, 16, 64, 256, 1024, 4096, 4096]),  # up to 4096 rows
        (3e-3, 25e-6, 9600, [1, 1, 1, 1, 4, 16, 64, 256, 300, 300]),  # at most 1/32 of the sweep
        (3e-3, 7e-3, 9600, [1, 1, 1, 1, 4, 16, 16]),  # large rows: 16 rows pass 50 ms
    ],
)
def test_task_cost_is_measured_on_the_backend(
    fixed_s: float, row_s: float, total: int, sizes: list[int]
) -> None:
    from learnsched.sweep.run import _task_cost

    backend = _ModelBackend(fixed_s, row_s)
    fixed, per_row = _task_cost(parse_spec(COLD_SPEC), backend, total)  # type: ignore[arg-type]
    assert backend.sizes == sizes
    assert fixed == pytest.approx(fixed_s)
    assert per_row == pytest.approx(row_s)
    rows = choose_chunk_rows(per_row, fixed, total, backend.workers)
    assert fixed <= 0.1 * rows * per_row * (1 + 1e-9)


# --- the grid's size and one sweep per output at a time ---------------------------------------


def test_paper_grid_size_constant_matches_the_grid() -> None:
    from learnsched.sweep.spec import PAPER_GRID_SCENARIOS

    assert len(ls.paper_grid().batch) == PAPER_GRID_SCENARIOS


def test_two_sweeps_on_one_out_take_turns(tmp_path: Path) -> None:
    """Two sweeps on one --out take turns under a lock: unlocked, one could fail (exit 2)
    or leave stale chunks."""
    spec = write_file(
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
