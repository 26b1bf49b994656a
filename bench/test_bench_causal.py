"""Benchmarks of causal scheduling, each beside its floor in one group.

* One causal decision at N = 64 sampled continuations (rollout, J = 12 and 36), at a gap
  start and 10 s into a gap, beside the **table floor**: the N row lookups and N * (J + 1)
  table entries a decision under a forecast must read (``SampleTables.row_sum``). Target:
  within 2x of the floor (docs/causal-study.md, "Speed", says where each case stands and
  what the rest of a decision costs).
* One 600 s causal horizon of the shipped trace, every causal policy, N = 64, beside the
  same horizon with the forecast-free ``window`` policy only (the simulator's own cost).
* The exact clairvoyant of that horizon (the one-branch tree DP with branch and bound).
* The gap pool of a horizon's start (the gaps of the hour before it), fitted from the
  trace's past gaps scanned once (``GapRecords``, as a study fits every horizon's pools)
  beside the same pool fitted alone (its own scan of the trace): the empirical model the
  forecast reads, and the mean model, whose pooled slacks are merged from the records'
  sorted runs.

Run with ``pytest bench/test_bench_causal.py --benchmark-only --benchmark-timer
time.process_time`` (CPU time: the development machine is shared); every benchmark checks
its answer and also runs under ``--benchmark-disable``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _core
from learnsched.calendar import EmpiricalForecaster, load_trace
from learnsched.calendar.causal import (
    CAUSAL_PLANS,
    CAUSAL_POLICIES,
    CausalForecast,
    CausalTrace,
    clairvoyant,
    core_candidate,
    run_causal,
)
from learnsched.calendar.study import StudyCandidate

Benchmark = Callable[..., Any]
TRACE = CausalTrace(load_trace())
START, END = 1200.0, 1800.0


def forecast(work_quanta: int, n: int = 64) -> tuple[ls.Scenario, CausalForecast]:
    scenario = StudyCandidate(work_quanta, 5.0, 0.25, 480.0, ls.PAPER_COLD).scenario(END)
    rng = np.random.default_rng(0)
    return scenario, CausalForecast(TRACE, scenario, START, EmpiricalForecaster(), n, rng)


@pytest.mark.benchmark(group="causal decision, N = 64")
@pytest.mark.parametrize("work_quanta", [12, 36])
@pytest.mark.parametrize("age", [0.0, 10.0])
def test_causal_decision(benchmark: Benchmark, work_quanta: int, age: float) -> None:
    scenario, f = forecast(work_quanta)
    decider = _core.causal.CausalDecider(
        core_candidate(scenario, 1.0), "rollout", 0.95, f.pool, f.tables, 1
    )
    plan, quanta, move = benchmark(decider.decide, 1300.0 + age, 1300.0, 0, 0, False)
    assert plan in CAUSAL_PLANS
    assert 0 <= quanta <= work_quanta
    assert move in ("wait", "work")


@pytest.mark.benchmark(group="causal decision, N = 64")
@pytest.mark.parametrize("work_quanta", [12, 36])
def test_table_floor(benchmark: Benchmark, work_quanta: int) -> None:
    _, f = forecast(work_quanta)
    total = benchmark(f.tables.row_sum, 1305.0)
    rows = [f.tables.row_after(i, 1305.0, "reference") for i in range(f.tables.sample_count)]
    assert total == pytest.approx(sum(sum(r) for r in rows))


@pytest.mark.benchmark(group="one causal horizon (600 s of the shipped trace, N = 64)")
def test_causal_horizon_every_policy(benchmark: Benchmark) -> None:
    scenario, f = forecast(12)
    outs = benchmark(run_causal, TRACE, scenario, START, END, CAUSAL_POLICIES, f, 1)
    best = clairvoyant(TRACE, scenario, START, END)
    assert all(o.value <= best.value + 1e-9 for o in outs.values())


@pytest.mark.benchmark(group="one causal horizon (600 s of the shipped trace, N = 64)")
def test_causal_horizon_simulator_floor(benchmark: Benchmark) -> None:
    scenario, _ = forecast(12)
    outs = benchmark(run_causal, TRACE, scenario, START, END, ["window"], None, 1)
    assert outs["window"].requests > 0


@pytest.mark.benchmark(group="one causal horizon (600 s of the shipped trace, N = 64)")
def test_exact_clairvoyant(benchmark: Benchmark) -> None:
    scenario, _ = forecast(12)
    best = benchmark(clairvoyant, TRACE, scenario, START, END)
    assert best.value >= 0.0


HISTORY_S, CLOSE_S = 3600.0, 300.0


@pytest.mark.benchmark(group="a horizon's gap pool (the hour before it)")
@pytest.mark.parametrize("model", ["empirical", "mean"])
@pytest.mark.parametrize("shared", [True, False], ids=["from shared records", "fitted alone"])
def test_gap_pool(benchmark: Benchmark, model: str, shared: bool) -> None:
    reach = ls.PAPER_COLD.recovery_s
    if shared:
        records = _core.causal.GapRecords(TRACE.schedule, START - HISTORY_S, END, CLOSE_S, reach)
        fit = partial(_core.causal.GapPool, records, START, HISTORY_S, None, model)
    else:
        fit = partial(_core.causal.GapPool, TRACE.schedule, START, HISTORY_S, CLOSE_S, reach, model)
    pool = benchmark(fit)
    alone = _core.causal.GapPool(TRACE.schedule, START, HISTORY_S, CLOSE_S, reach, model)
    assert pool.size == alone.size > 0
    assert pool.lateness(0, reach) == alone.lateness(0, reach)
