"""Sweep throughput (scenarios x policies per second) on one SPEC: local threads, 1 and 2,
against Ray with 2 workers on this machine (skipped without the ray extra).

Run with ``pytest bench/test_bench_sweep.py``; every round writes a fresh output file
(a rerun of the same --out would resume and solve nothing). Each benchmark stores its
throughput in ``extra_info`` and asserts the published 91 / 1829 / 0 at 69.988 s. Ray's
overhead against local threads is the ratio of their median times.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from learnsched.sweep import SweepResult, sweep

Benchmark = Callable[..., Any]
POLICIES = ["never", "window", "static_roi", "costed_window", "rollout", "dp"]
SPEC: dict[str, Any] = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [0, 20, 40, 69.988, 120]},
    "policies": POLICIES,
}
SOLVES = 5 * 1920 * len(POLICIES)
ROUNDS = 5


def _fmt(tmp_path: Path) -> Callable[[], Path]:
    """A fresh output path per round (Parquet when pyarrow is here, else CSV)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        suffix = ".csv"
    else:
        suffix = ".parquet"
    counter = itertools.count()
    return lambda: tmp_path / f"round{next(counter)}{suffix}"


def _run(benchmark: Benchmark, tmp_path: Path, **options: Any) -> SweepResult:
    fresh = _fmt(tmp_path)
    sweep(SPEC, fresh(), progress=False, **options)  # warm: caches, worker processes
    result: SweepResult = benchmark.pedantic(
        lambda: sweep(SPEC, fresh(), progress=False, **options), rounds=ROUNDS, iterations=1
    )
    paper = result.summaries[3]
    assert (paper.wins, paper.ties, paper.losses) == (91, 1829, 0)
    assert result.summaries[4].invalid == 160
    benchmark.extra_info["solves_per_s"] = SOLVES / benchmark.stats.stats.median
    benchmark.extra_info["chunk_rows"] = result.chunk_rows
    return result


@pytest.mark.benchmark(group="sweep 5 x 1920 x 6 policies")
@pytest.mark.parametrize("threads", [1, 2])
def test_sweep_local(benchmark: Benchmark, tmp_path: Path, threads: int) -> None:
    _run(benchmark, tmp_path, workers=threads)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray = pytest.importorskip("ray", reason="the Ray backend needs the ray extra")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.benchmark(group="sweep 5 x 1920 x 6 policies")
def test_sweep_ray_2_workers(benchmark: Benchmark, tmp_path: Path, local_ray: None) -> None:
    _run(benchmark, tmp_path, backend="ray")
