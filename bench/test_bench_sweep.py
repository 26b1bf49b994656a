"""Sweep throughput (scenarios x policies per second): local threads, 1 and 2, against
Ray with 2 workers on this machine (skipped without the ray extra), on the same SPEC.

Two SPECs: the paper grid over five cold recovery times (9600 small rows: per-row work
of a few microseconds, where task and file overheads show), and 16 large scenarios (100
windows x 900 quanta, milliseconds each). Run with ``pytest bench/test_bench_sweep.py``;
every round writes a fresh output file (a rerun of the same --out would resume and solve
nothing). Each benchmark stores its throughput in ``extra_info`` and asserts its answer
(the published 91 / 1829 / 0 at 69.988 s). Ray's overhead against local threads is the
ratio of their median times.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import learnsched as ls
from learnsched.sweep import SweepResult, sweep
from learnsched.sweep.local import LocalBackend
from learnsched.sweep.ray_backend import RayBackend
from learnsched.sweep.run import _task_cost

Benchmark = Callable[..., Any]
POLICIES = ["never", "window", "static_roi", "costed_window", "rollout", "dp"]
GRID_SPEC: dict[str, Any] = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [0, 20, 40, 69.988, 120]},
    "policies": POLICIES,
}
LARGE = ls.Scenario(
    windows=[(100.0 * k, 100.0 * k + 80.0) for k in range(100)],
    work_quanta=900,
    quantum_s=4.0,
    benefit_rate=0.5,
    horizon_s=20_000.0,
    costs=ls.PAPER_WARM,
)
LARGE_SPEC: dict[str, Any] = {
    "base": [LARGE.to_json(), LARGE.with_costs(ls.PAPER_COLD).to_json()],
    "vary": {"benefit_rate": [0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 4]},
    "policies": POLICIES,
}
SPECS = {"grid 5 x 1920": GRID_SPEC, "large 8 x 2 (100 x 900)": LARGE_SPEC}
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


def _check(name: str, result: SweepResult) -> None:
    if name.startswith("grid"):
        paper = result.summaries[3]
        assert (paper.wins, paper.ties, paper.losses) == (91, 1829, 0)
        assert result.summaries[4].invalid == 160
    else:
        assert result.invalid == 0
        rollout, costed = result.rows.value[:, 4], result.rows.value[:, 3]
        assert (rollout >= costed - 1e-9).all()


def _run(benchmark: Benchmark, tmp_path: Path, name: str, **options: Any) -> None:
    spec, fresh = SPECS[name], _fmt(tmp_path)
    sweep(spec, fresh(), progress=False, **options)  # warm: caches, worker processes
    result: SweepResult = benchmark.pedantic(
        lambda: sweep(spec, fresh(), progress=False, **options), rounds=ROUNDS, iterations=1
    )
    _check(name, result)
    if benchmark.stats is None:  # --benchmark-disable: the answer is checked, nothing timed
        return
    solves = len(result.rows) * len(POLICIES)
    if not benchmark.disabled:  # no timings under --benchmark-disable
        benchmark.extra_info["solves_per_s"] = solves / benchmark.stats.stats.median
    benchmark.extra_info["chunk_rows"] = result.chunk_rows
    # What the chunk sizing measured: a task's fixed cost against its per-row time.
    backend = RayBackend() if options.get("backend") == "ray" else LocalBackend(options["workers"])
    with closing(backend):
        fixed_s, row_s = _task_cost(result.spec, backend, len(result.rows))
    benchmark.extra_info["task_fixed_ms"] = fixed_s * 1e3
    benchmark.extra_info["row_us"] = row_s * 1e6
    benchmark.extra_info["overhead_share"] = fixed_s / (result.chunk_rows * row_s)


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("threads", [1, 2])
def test_sweep_local(benchmark: Benchmark, tmp_path: Path, name: str, threads: int) -> None:
    benchmark.group = f"sweep {name} x 6 policies"
    _run(benchmark, tmp_path, name, workers=threads)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray = pytest.importorskip("ray", reason="the Ray backend needs the ray extra")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("name", list(SPECS))
def test_sweep_ray_2_workers(
    benchmark: Benchmark, tmp_path: Path, local_ray: None, name: str
) -> None:
    benchmark.group = f"sweep {name} x 6 policies"
    _run(benchmark, tmp_path, name, backend="ray")


# ---- the README's SPEC against its floor, and sweeps of many points ------------------

README_SPEC: dict[str, Any] = {**GRID_SPEC, "policies": ["costed_window", "rollout"]}


@pytest.mark.benchmark(group="sweep README SPEC (9600 rows x 2 policies) vs bare solve_batch")
def test_sweep_readme_spec(benchmark: Benchmark, tmp_path: Path) -> None:
    fresh = _fmt(tmp_path)
    result = benchmark.pedantic(
        lambda: sweep(README_SPEC, fresh(), workers=1, progress=False), rounds=ROUNDS
    )
    paper = result.summaries[3]
    assert (paper.wins, paper.ties, paper.losses) == (91, 1829, 0)


@pytest.mark.benchmark(group="sweep README SPEC (9600 rows x 2 policies) vs bare solve_batch")
def test_sweep_readme_spec_floor(benchmark: Benchmark) -> None:
    """The floor: the same rows' core scenarios, built beforehand, in one solve_batch."""
    from learnsched.solver import core_policy
    from learnsched.sweep import parse_spec
    from learnsched.sweep.points import core_scenario, points

    spec = parse_spec(README_SPEC)
    scenarios = []
    for point in points(spec):
        for i in range(1920):
            try:
                scenarios.append(core_scenario(spec, point, i))
            except ValueError:
                continue  # the 160 invalid rows at 120 s
    policies = [core_policy(p) for p in spec.policies]
    values = benchmark(ls._core.finite.solve_batch, scenarios, policies)["value"]
    assert values.shape == (9600 - 160, 2)


def many_points_spec(rates: int, horizons: int) -> dict[str, Any]:
    """One base scenario over rates x horizons: as many rows as points."""
    return {
        "base": [ls.scenario_by_id("S0348").scenario.to_json()],
        "vary": {
            "benefit_rate": [0.05 + 0.01 * i for i in range(rates)],
            "horizon_s": [600.0 + i for i in range(horizons)],
        },
        "policies": ["costed_window", "rollout"],
    }


@pytest.mark.benchmark(group="sweep of many points (one scenario each)")
@pytest.mark.parametrize(
    "shape", [(100, 300), pytest.param((1000, 1000), marks=pytest.mark.slow)], ids=str
)
def test_sweep_many_points(benchmark: Benchmark, tmp_path: Path, shape: tuple[int, int]) -> None:
    """30,000 points and 10^6 (slow): the summary is O(rows), where a pass over every row
    per point is quadratic (docs/performance.md)."""
    fresh = _fmt(tmp_path)
    spec = many_points_spec(*shape)
    result = benchmark.pedantic(lambda: sweep(spec, fresh(), progress=False), rounds=1)
    assert len(result.summaries) == shape[0] * shape[1] == len(result.rows)
    assert all(s.invalid == 0 for s in result.summaries[:: shape[1]])
