"""Decision benchmarks: batched decide_many beside the Python loop of decide, and
one decision's cost against the window length and at a huge J.

Run with ``pytest bench/test_bench_decide.py`` (outside the default test run); each benchmark
asserts its answer. Targets: decide_many >= 5 M decisions/s from Python on the paper scenario,
on 100 x 3600 and at K = 4, J = 360,000, in the order sampled and shuffled; at 1 s
quanta a decision in a 240 s window within 1.5x of one in a 36 s window; K = 4, J = 360,000
under 2 us per decision from Python. The lookahead index is built
per continuation row on first use (O(J)); every benchmark warms it first, so the timings are
the steady state a scheduler sees from its second decision in a window on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched.solver import Decisions

# The solver benchmarks' scenarios, so that sizes mean the same in both files (the bench
# folder is not on the import path under --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bench_solver import GRID, large_scenario

Benchmark = Callable[..., Any]
States = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def paper_scenario() -> ls.Scenario:
    """test_bench_solver's decide scenario: 180 s of work in 5 s quanta, cold recovery."""
    return next(
        g.scenario
        for g in GRID.scenarios
        if (g.calendar, g.work_s, g.recovery, g.initial_state, g.benefit_rate, g.tail_s)
        == ("alternating", 180, "cold", "fresh", 1, 480)
    )


def sampled_states(scenario: ls.Scenario, n: int, seed: int = 0) -> States:
    """n valid states, half of them active, sorted by (window, progress) as a scheduler
    sweeping its candidates window by window would ask."""
    rng = np.random.default_rng(seed)
    windows, quanta = len(scenario.windows), scenario.work_quanta
    window = rng.integers(0, windows, n)
    progress = rng.integers(0, quanta + 1, n)
    active = rng.random(n) < 0.5
    durable = np.where(active, (progress * rng.random(n)).astype(np.int64), progress)
    order = np.lexsort((durable, progress, window))
    columns = (window[order], progress[order], durable[order], active[order])
    model = ls.Model(scenario)
    valid = np.array([_valid(model, *state) for state in zip(*columns, strict=True)])
    window, progress, durable, active = (c[valid] for c in columns)
    return (
        window.astype(np.int32),
        progress.astype(np.int32),
        durable.astype(np.int32),
        active.astype(bool),
    )


def _valid(model: ls.Model, k: Any, p: Any, d: Any, a: Any) -> bool:
    try:
        model.decide(int(k), int(p), int(d), bool(a), "never")
    except ValueError:  # an active candidate whose window no return path fits
        return False
    return True


def python_loop(model: ls.Model, states: States, policy: str) -> list[ls.Action]:
    """The baseline: one decide call per state."""
    columns = [c.tolist() for c in states]
    return [model.decide(k, p, d, a, policy) for k, p, d, a in zip(*columns, strict=True)]


def same_actions(batch: Decisions, actions: list[ls.Action]) -> bool:
    return list(
        zip(batch.kind.tolist(), batch.quanta.tolist(), batch.checkpoint.tolist(), strict=True)
    ) == [(int(a.kind), a.quanta, a.checkpoint) for a in actions]


SIZES = {
    "paper": (paper_scenario, 200_000),
    "100x3600": (lambda: large_scenario(100, 3600), 200_000),
    "4x360000": (lambda: large_scenario(4, 360_000), 200_000),
}
MODELS: dict[str, tuple[ls.Model, States]] = {}


def prepared(size: str) -> tuple[ls.Model, States]:
    """One model and its states per size, indexes warmed for both policies."""
    if size not in MODELS:
        make, n = SIZES[size]
        scenario = make()
        model, states = ls.Model(scenario), sampled_states(scenario, n)
        for policy in ("rollout", "dp"):
            model.decide_many(*states, policy=policy)
        MODELS[size] = model, states
    return MODELS[size]


def shuffled(states: States) -> States:
    """The states in a random order (a scheduler's candidates as they come)."""
    order = np.random.default_rng(1).permutation(len(states[0]))
    window, progress, durable, active = (c[order] for c in states)
    return window, progress, durable, active


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
@pytest.mark.parametrize("policy", ["rollout", "dp"])
@pytest.mark.parametrize("size", list(SIZES))
def test_decide_many(benchmark: Benchmark, size: str, policy: str, order: str) -> None:
    """Target: >= 5 M decisions/s on shuffled states at every size."""
    model, states = prepared(size)
    if order == "shuffled":
        states = shuffled(states)
    benchmark.group = f"decide {size}, {policy}: decide_many vs Python loop"
    result = benchmark(model.decide_many, *states, policy)
    if not benchmark.disabled:
        benchmark.extra_info["decisions_per_s"] = len(states[0]) / benchmark.stats.stats.median
    every_50th = tuple(c[::50] for c in states)
    assert same_actions(
        Decisions(*(c[::50] for c in result)), python_loop(model, every_50th, policy)
    )


@pytest.mark.parametrize("policy", ["rollout", "dp"])
@pytest.mark.parametrize("size", ["paper", "100x3600"])
def test_decide_python_loop(benchmark: Benchmark, size: str, policy: str) -> None:
    model, states = prepared(size)
    states = tuple(c[:20_000] for c in states)  # the loop's rate does not depend on n
    benchmark.group = f"decide {size}, {policy}: decide_many vs Python loop"
    actions = benchmark.pedantic(python_loop, (model, states, policy), rounds=3, iterations=1)
    if not benchmark.disabled:
        benchmark.extra_info["decisions_per_s"] = len(states[0]) / benchmark.stats.stats.median
    assert same_actions(model.decide_many(*states, policy=policy), actions)


def equal_windows(length_s: float, windows: int = 100, quanta: int = 3600) -> ls.Scenario:
    """K windows of one length at 1 s quanta, warm (0.487 s) recovery: the advance range
    is the window length."""
    spans = tuple((k * (length_s + 20.0), k * (length_s + 20.0) + length_s) for k in range(windows))
    return ls.Scenario(
        windows=spans,
        work_quanta=quanta,
        quantum_s=1.0,
        benefit_rate=0.5,
        horizon_s=spans[-1][1] + 1000.0,
        costs=ls.PAPER_WARM,
        initial=ls.InitialState(0, 0, False),
    )


@pytest.mark.parametrize("policy", ["rollout", "dp"])
@pytest.mark.parametrize("length_s", [36.0, 240.0])
def test_decide_by_window_length(benchmark: Benchmark, length_s: float, policy: str) -> None:
    """2000 decisions from Python (the loop of decide) per round; compare the medians."""
    scenario = equal_windows(length_s)
    model = ls.Model(scenario)
    states = sampled_states(scenario, 2000)
    model.decide_many(*states, policy=policy)  # warm the index
    benchmark.group = f"one decide vs window length at 1 s quanta, {policy} (2000 calls)"
    actions = benchmark(python_loop, model, states, policy)
    if not benchmark.disabled:
        benchmark.extra_info["ns_per_decision"] = benchmark.stats.stats.median / 2000 * 1e9
    assert same_actions(model.decide_many(*states, policy=policy), actions)
    assert any(a.name == "advance" and a.quanta > 36 for a in actions) == (length_s > 36)


@pytest.mark.parametrize("policy", ["rollout", "dp"])
def test_decide_huge_work(benchmark: Benchmark, policy: str) -> None:
    """K = 4, J = 360,000: windows of 90,000 to 270,000 quanta (1000 calls per round)."""
    scenario = large_scenario(4, 360_000)
    model = ls.Model(scenario)
    states = sampled_states(scenario, 1000)
    model.decide_many(*states, policy=policy)
    benchmark.group = f"one decide at K = 4, J = 360,000, {policy} (1000 calls)"
    actions = benchmark(python_loop, model, states, policy)
    if not benchmark.disabled:
        benchmark.extra_info["ns_per_decision"] = benchmark.stats.stats.median / 1000 * 1e9
    assert same_actions(model.decide_many(*states, policy=policy), actions)
