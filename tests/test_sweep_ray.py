"""Sweeps as Ray tasks on a local Ray with 2 CPUs: the same rows, bit for bit, as threads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched.sweep import SweepResult, parse_spec, solve_rows, sweep
from learnsched.sweep.store import ChunkStore

ray: Any = pytest.importorskip("ray", reason="the Ray backend needs the ray extra")

COLD_SPEC: dict[str, Any] = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [0, 20, 40, 69.988, 120]},
    "policies": ["costed_window", "rollout"],
}


def test_a_local_ray_is_started_for_the_run_and_stopped(tmp_path: Path) -> None:
    assert not ray.is_initialized()
    spec = {**COLD_SPEC, "vary": {"cold_recovery_s": [69.988]}}
    result = sweep(spec, tmp_path / "own.csv", backend="ray", workers=2, progress=False)
    assert not ray.is_initialized()
    assert (result.summaries[0].wins, result.summaries[0].ties) == (91, 1829)
    local = sweep(spec, tmp_path / "local.csv", progress=False)
    assert (tmp_path / "own.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert local.rows.scenario == result.rows.scenario


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def both(
    local_ray: None, tmp_path_factory: pytest.TempPathFactory
) -> tuple[SweepResult, SweepResult]:
    folder = tmp_path_factory.mktemp("ray")
    on_ray = sweep(COLD_SPEC, folder / "ray.csv", backend="ray", chunk_rows=700, progress=False)
    on_threads = sweep(COLD_SPEC, folder / "local.csv", workers=2, progress=False)
    return on_ray, on_threads


def test_ray_rows_equal_local_rows_bit_for_bit(both: tuple[SweepResult, SweepResult]) -> None:
    on_ray, on_threads = both
    assert on_ray.chunks == 14  # 9600 rows in 700-row tasks
    assert on_ray.out.read_bytes() == on_threads.out.read_bytes()
    np.testing.assert_array_equal(on_ray.rows.value, on_threads.rows.value)
    assert on_ray.rows.error == on_threads.rows.error
    assert [s.to_json() for s in on_ray.summaries] == [s.to_json() for s in on_threads.summaries]


def test_ray_sweep_summaries(both: tuple[SweepResult, SweepResult]) -> None:
    on_ray, _ = both
    wins = [s.wins for s in on_ray.summaries]
    assert wins == [0, 0, 14, 91, 0]
    paper = on_ray.summaries[3]
    assert (paper.wins, paper.ties, paper.losses, paper.invalid) == (91, 1829, 0, 0)
    at120 = on_ray.summaries[4]
    assert (at120.invalid, at120.ties, at120.scenarios) == (160, 1760, 1920)


def test_ray_parquet_equals_local_parquet(local_ray: None, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="Parquet output needs pyarrow (the ray extra)")
    on_ray = sweep(COLD_SPEC, tmp_path / "ray.parquet", backend="ray", progress=False)
    sweep(COLD_SPEC, tmp_path / "local.parquet", progress=False)
    assert (tmp_path / "ray.parquet").read_bytes() == (tmp_path / "local.parquet").read_bytes()
    assert on_ray.chunk_rows >= 1


def test_ray_resumes_a_sweep_begun_on_threads(local_ray: None, tmp_path: Path) -> None:
    spec = parse_spec(COLD_SPEC)
    out = tmp_path / "mixed.csv"
    store = ChunkStore(out, spec, 9600)
    store.open(lambda: 1000)
    for chunk in store.chunks()[::3]:
        store.write(chunk, solve_rows(spec, chunk.start, chunk.stop))
    resumed = sweep(COLD_SPEC, out, backend="ray", progress=False)
    assert (resumed.chunks, resumed.skipped, resumed.solved) == (10, 4, 6)
    sweep(COLD_SPEC, tmp_path / "whole.csv", progress=False)
    assert out.read_bytes() == (tmp_path / "whole.csv").read_bytes()


def test_ray_runs_a_list_base(local_ray: None, tmp_path: Path) -> None:
    scenario = ls.scenario_by_id("S0348").scenario
    spec = {
        "base": [scenario.to_json(), scenario.with_costs(ls.PAPER_WARM).to_json()],
        "vary": {"benefit_rate": [0.1, 0.25, -1], "save_s": [0.068075, 5]},
        "policies": ["costed_window", "rollout", "dp"],
    }
    on_ray = sweep(spec, tmp_path / "ray.csv", backend="ray", chunk_rows=3, progress=False)
    sweep(spec, tmp_path / "local.csv", progress=False)
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert on_ray.invalid == 4  # benefit_rate = -1
    assert [s.wins for s in on_ray.summaries] == [0, 0, 1, 0, 0, 0]  # S0348 itself wins
