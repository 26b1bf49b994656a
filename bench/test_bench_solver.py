"""Solver benchmarks: the grid against the pure-Python reference, decide latency,
DP + Rollout scaling, batch threads, table memory, and one-shot solves.

Run with ``pytest bench`` (outside the default test run); each benchmark asserts its
answer. Targets: grid >= 1000x the reference; one decide < 5 us; DP + Rollout for 100
windows x 3600 quanta < 50 ms on one core; memory proportional to K*J; repeated Model
builds at 100 x 3600 at most 6 ns/state; a one-shot solve at 1000 x 3600 within 1.5x of a
solve into reused memory, for every policy.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _core
from learnsched.recovery_choice import two_path_pairs

import reference

Benchmark = Callable[..., Any]
GRID = ls.paper_grid()
SCENARIOS = [g.scenario for g in GRID.scenarios]


def reference_grid_values() -> np.ndarray:
    """The reference's values, scenario x policy, from cold caches."""
    return np.array(
        [
            [reference.solve(ref, p).value for p in reference.POLICIES]
            for _, ref in reference.paper_grid()
        ]
    )


@pytest.mark.benchmark(group="grid 1920 x 6 policies")
def test_grid_cpp(benchmark: Benchmark) -> None:
    result = benchmark(ls.solve_batch, SCENARIOS)
    summary = ls.summarize(GRID, result)
    assert (summary.wins, summary.ties, summary.losses) == (91, 1829, 0)
    assert round(summary.mean_gap["costed_window"], 3) == 5.369


@pytest.mark.benchmark(group="grid 1920 x 6 policies")
def test_grid_python_reference(benchmark: Benchmark) -> None:
    values = benchmark.pedantic(
        reference_grid_values, setup=reference.clear_caches, rounds=1, iterations=1
    )
    np.testing.assert_allclose(values, ls.solve_batch(SCENARIOS).value, rtol=1e-12, atol=1e-9)


def decide_scenario(initial_state: str) -> ls.Scenario:
    """180 s of work in 5 s quanta (J = 36), alternating calendar, cold recovery."""
    return next(
        g.scenario
        for g in GRID.scenarios
        if (g.calendar, g.work_s, g.recovery, g.initial_state, g.benefit_rate, g.tail_s)
        == ("alternating", 180, "cold", initial_state, 1, 480)
    )


@pytest.mark.benchmark(group="decide (rollout), paper-size scenario")
@pytest.mark.parametrize("initial_state", ["fresh", "unsaved_active"])
def test_decide(benchmark: Benchmark, initial_state: str) -> None:
    """Target: within 1.25x of test_decide_floor's call."""
    scenario = decide_scenario(initial_state)
    model = ls.Model(scenario)
    init = scenario.initial
    action = benchmark(model.decide, 0, init.progress, init.durable, init.active, "rollout")
    first = ls.solve(scenario, "rollout").steps[0]
    assert (action.name, action.quanta, action.checkpoint) == (
        first.action,
        first.quanta,
        first.checkpoint,
    )


@pytest.mark.benchmark(group="decide (rollout), paper-size scenario")
@pytest.mark.parametrize("initial_state", ["fresh", "unsaved_active"])
def test_decide_floor(benchmark: Benchmark, initial_state: str) -> None:
    """The floor: the same call through the same binding, doing nothing (a cached result)."""
    scenario = decide_scenario(initial_state)
    core = ls.Model(scenario)._model
    init = scenario.initial
    args = (0, init.progress, init.durable, init.active, "rollout")
    assert benchmark(core._decide_floor, *args) == ls.Action(ls.ActionKind.WAIT)


def large_scenario(windows: int, quanta: int) -> ls.Scenario:
    """K windows of mixed lengths that together hold the work several times over."""
    delta = 1.0
    lengths = [70.0 + (quanta * delta / windows) * (1 + k % 3) for k in range(windows)]
    spans, start = [], 0.0
    for length in lengths:
        spans.append((start, start + length))
        start += length + 20.0
    return ls.Scenario(
        windows=tuple(spans),
        work_quanta=quanta,
        quantum_s=delta,
        benefit_rate=0.5,
        horizon_s=start + 1000.0,
        costs=ls.PAPER_COLD,
        initial=ls.InitialState(quanta // 2, 0, True),
    )


def dp_and_rollout(scenario: ls.Scenario) -> tuple[ls.Plan, ls.Plan]:
    model = ls.Model(scenario)
    return model.solve("dp"), model.solve("rollout")


# Regression values for the largest size (too large for the reference); the smaller
# sizes are checked against the pure-Python reference instead.
PINNED_DP_AND_ROLLOUT = {(100, 3600): (2964.100197, 2921.892551)}


@pytest.mark.benchmark(group="DP + Rollout scaling (K windows x J quanta)")
@pytest.mark.parametrize(
    ("windows", "quanta"), [(4, 36), (10, 225), (25, 900), (50, 1800), (100, 3600)]
)
def test_dp_and_rollout_scaling(benchmark: Benchmark, windows: int, quanta: int) -> None:
    scenario = large_scenario(windows, quanta)
    dp, rollout = benchmark(dp_and_rollout, scenario)
    assert dp.value >= rollout.value - 1e-9 * max(1.0, abs(dp.value))
    assert rollout.value >= ls.solve(scenario, "costed_window").value - 1e-6
    if windows * quanta <= 10 * 225:
        ref = reference.RefScenario.from_json(scenario.to_json())
        assert dp.value == pytest.approx(reference.dp_value(ref), abs=1e-9)
        assert rollout.value == pytest.approx(reference.solve(ref, "rollout").value, abs=1e-9)
    if (windows, quanta) in PINNED_DP_AND_ROLLOUT:
        pinned = PINNED_DP_AND_ROLLOUT[windows, quanta]
        assert (dp.value, rollout.value) == pytest.approx(pinned, abs=1e-6)


@pytest.mark.benchmark(group="batch throughput, 4 x grid")
@pytest.mark.parametrize("threads", [1, 2])
def test_batch_threads(benchmark: Benchmark, threads: int) -> None:
    scenarios = SCENARIOS * 4
    result = benchmark(ls.solve_batch, scenarios, ls.ALL_POLICIES, threads)
    if not benchmark.disabled:  # no timings under --benchmark-disable
        benchmark.extra_info["scenarios_per_s"] = len(scenarios) / benchmark.stats.stats.median
    np.testing.assert_array_equal(result.value, ls.solve_batch(scenarios).value)


RSS_GROWTH = """
import json, os, sys
import learnsched as ls
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
scenario = ls.Scenario.from_json(json.load(sys.stdin))
before = rss()
model = ls.Model(scenario)
print(json.dumps({"bytes": rss() - before}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
@pytest.mark.parametrize(("windows", "quanta"), [(100, 20_000), (100, 80_000)])
def test_table_memory_is_proportional_to_states(
    windows: int, quanta: int, tmp_path: pathlib.Path
) -> None:
    """Resident memory added by building a Model: three (K+1) x (J+1) tables of doubles."""
    out = subprocess.run(
        [sys.executable, "-c", RSS_GROWTH],
        input=json.dumps(large_scenario(windows, quanta).to_json()),
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,  # outside the source tree, whose flat layout would shadow the install
    )
    measured = json.loads(out.stdout)["bytes"]
    predicted = 3 * (windows + 1) * (quanta + 1) * 8
    assert 0.8 * predicted <= measured <= 1.5 * predicted, (measured, predicted)


def assert_built(model: _core.finite.Model, scenario: ls.Scenario) -> None:
    """The model answers for `scenario` with all three tables."""
    init = model.scenario.initial
    assert model.scenario.work_quanta == scenario.work_quanta
    best = model.optimal_value(init)
    assert best >= model.reference_value(init) - 1e-9 * max(1.0, abs(best))


# Repeated builds at 100 x 3600 (target: at most 6 ns/state), and the largest model
# (MAX_STATES: one window of 2^23 - 1 quanta, 384 MiB of tables), rebuilt and fresh.
BUILDS = {"100 x 3600": large_scenario(100, 3600), "MAX_STATES": large_scenario(1, 2**23 - 1)}


@pytest.mark.parametrize("size", list(BUILDS))
@pytest.mark.parametrize("path", ["fresh", "rebuild"])
def test_model_build(benchmark: Benchmark, size: str, path: str) -> None:
    """Baseline "fresh": a new model per build, every table allocated (and first touched)
    anew; "rebuild": the same model rebuilt into the memory of its last build."""
    benchmark.group = f"Model build, {size}, repeated"
    scenario = BUILDS[size]
    core = scenario.to_core()
    build: Callable[[], _core.finite.Model] = lambda: _core.finite.Model(core)
    if path == "rebuild":
        model = build()

        def build() -> _core.finite.Model:
            model.rebuild(core)
            return model

    if size == "MAX_STATES":  # 0.2-1 s a build; the first in a process (cold pages) apart
        assert (len(scenario.windows) + 1) * (scenario.work_quanta + 1) == _core.finite.MAX_STATES
        built = benchmark.pedantic(build, rounds=5, iterations=1, warmup_rounds=1)
    else:
        built = benchmark(build)
    assert_built(built, scenario)
    if not benchmark.disabled:  # no timings under --benchmark-disable
        states = (len(scenario.windows) + 1) * (scenario.work_quanta + 1)
        benchmark.extra_info["ns_per_state"] = benchmark.stats.stats.median / states * 1e9


PEAK_RSS = """
import json, resource, sys
import learnsched as ls
from learnsched import _core
scenario = ls.Scenario.from_json(json.load(sys.stdin)).to_core()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
model = _core.finite.Model(scenario, [_core.finite.Policy(p) for p in json.loads(sys.argv[1])])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_kib": peak - before}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB (Linux)")
@pytest.mark.parametrize(
    ("policies", "predicted_mib"),
    [(list(range(7)), 3 * 128), ([int(_core.finite.Policy.DP)], 128 + 96), ([0, 1, 2], 0)],
    ids=["all tables", "dp", "table-free"],
)
def test_cap_build_peak_memory(
    policies: list[int], predicted_mib: int, tmp_path: pathlib.Path
) -> None:
    """Peak memory added by the largest build: its tables (128 MiB each), or V* and its
    two scratch rows (96 MiB, freed before the other tables are allocated); nothing for
    the table-free policies."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, json.dumps(policies)],
        input=json.dumps(BUILDS["MAX_STATES"].to_json()),
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,  # outside the source tree, whose flat layout would shadow the install
    )
    peak_mib = json.loads(out.stdout)["peak_kib"] / 1024
    assert peak_mib <= predicted_mib * 1.05 + 16, (peak_mib, predicted_mib)


TWO_PATH = [both for _, _, both in two_path_pairs(0.1)]  # parked state at 10x the paper


@pytest.mark.benchmark(group="two-path grid 960 x 6 policies")
def test_two_path_grid_cpp(benchmark: Benchmark) -> None:
    result = benchmark(ls.solve_batch, TWO_PATH)
    dp = result.column("dp")
    assert (dp >= result.value.max(axis=1) - 1e-9).all()


@pytest.mark.benchmark(group="two-path grid 960 x 6 policies")
def test_two_path_grid_python_reference(benchmark: Benchmark) -> None:
    refs = [reference.RefScenario.from_json(s.to_json()) for s in TWO_PATH]

    def values() -> np.ndarray:
        return np.array([[reference.solve(r, p).value for p in reference.POLICIES] for r in refs])

    got = benchmark.pedantic(values, setup=reference.clear_caches, rounds=1, iterations=1)
    np.testing.assert_allclose(got, ls.solve_batch(TWO_PATH).value, rtol=1e-12, atol=1e-9)


def scheduled_scenario(pieces: int) -> ls.Scenario:
    """The 100 x 3600 scenario with a benefit schedule of ``pieces`` falling rates (one
    piece: the constant 0.5 from time 0, which gives the constant's values bit for bit)."""
    base = large_scenario(100, 3600)
    step = base.horizon_s / pieces
    schedule = [(i * step, 0.5 / (1 + i)) for i in range(pieces)]
    return dataclasses.replace(base, benefit_rate=schedule)


@pytest.mark.benchmark(group="DP + Rollout 100 x 3600: constant vs scheduled benefit")
@pytest.mark.parametrize("pieces", [0, 1, 16, 1024])
def test_dp_and_rollout_with_a_benefit_schedule(benchmark: Benchmark, pieces: int) -> None:
    scenario = large_scenario(100, 3600) if pieces == 0 else scheduled_scenario(pieces)
    dp, rollout = benchmark(dp_and_rollout, scenario)
    assert dp.value >= rollout.value - 1e-9 * max(1.0, abs(dp.value))
    if pieces <= 1:  # a constant rate, as a number or as one piece: the same bits
        assert (dp.value, rollout.value) == pytest.approx(
            PINNED_DP_AND_ROLLOUT[100, 3600], abs=1e-6
        )


# One-shot solves (`ls.solve`: a new model each call) at 1000 x 3600, whose tables of 28.8 MB
# each come from the thread's table cache. Target: within 1.5x of a solve into reused memory.
ONE_SHOT = {
    "one path": large_scenario(1000, 3600),
    "two paths": large_scenario(1000, 3600).with_costs(
        ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD)
    ),
}


def solve_into_kept_model(scenario: ls.Scenario, policy: str) -> Callable[[], ls.Plan]:
    """A solve of `scenario` into a model kept between calls: rebuilt in its own memory."""
    kept = ls.Model(scenario, (policy,))

    def solve() -> ls.Plan:
        kept.rebuild(scenario)
        return kept.solve(policy)

    return solve


@pytest.mark.parametrize("policy", [p.value for p in ls.Policy])
@pytest.mark.parametrize("path", ["one-shot", "reused"])
@pytest.mark.parametrize("paths", list(ONE_SHOT))
def test_one_shot_solve(benchmark: Benchmark, paths: str, policy: str, path: str) -> None:
    """Baseline "reused": the same solve into a kept model, rebuilt; "one-shot": ls.solve."""
    benchmark.group = f"solve at 1000 x 3600, {paths}, {policy}: one-shot vs reused"
    scenario = ONE_SHOT[paths]
    if path == "one-shot":
        solve = partial(ls.solve, scenario, policy)
    else:
        solve = solve_into_kept_model(scenario, policy)
    plan = benchmark(solve)
    assert plan.value == ls.solve_batch([scenario], (policy,)).value[0, 0]
