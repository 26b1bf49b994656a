"""The Python boundary: the paper grid in process, long plans and Scenario construction.

Run with ``pytest bench/test_bench_boundary.py``; each benchmark asserts its answer.
Targets: ``paper_grid()`` + ``solve_batch`` + ``summarize`` within 3x the bare
``solve_batch``; a 1000-step plan's Python conversion about its C++ walk (``Model.solve``
in the core); a Scenario at the cost of the core's own construction and validation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

import learnsched as ls
from learnsched import _core
from learnsched.plan import CostSplit, Plan, Step

Benchmark = Callable[..., Any]
SCENARIOS = [g.scenario for g in ls.paper_grid().scenarios]


def check_paper_figures(summary: ls.GridSummary) -> None:
    assert (summary.wins, summary.ties, summary.losses) == (91, 1829, 0)
    assert round(summary.mean_gap["costed_window"], 3) == 5.369


@pytest.mark.benchmark(group="paper grid in process (1920 x 6 policies)")
def test_bare_solve_batch(benchmark: Benchmark) -> None:
    result = benchmark(ls.solve_batch, SCENARIOS)
    check_paper_figures(ls.summarize(ls.paper_grid(), result))


def grid_solve_summarize() -> ls.GridSummary:
    grid = ls.paper_grid()
    return ls.summarize(grid, ls.solve_batch(grid.batch))


@pytest.mark.benchmark(group="paper grid in process (1920 x 6 policies)")
def test_paper_grid_solve_batch_summarize(benchmark: Benchmark) -> None:
    check_paper_figures(benchmark(grid_solve_summarize))


def grid_as_python_objects() -> ls.GridSummary:
    """Every GridScenario and Scenario built (the list idiom of solve_batch's callers)."""
    grid = ls.paper_grid()
    return ls.summarize(grid, ls.solve_batch([g.scenario for g in grid.scenarios]))


@pytest.mark.benchmark(group="paper grid in process (1920 x 6 policies)")
def test_paper_grid_as_python_objects(benchmark: Benchmark) -> None:
    check_paper_figures(benchmark(grid_as_python_objects))


def long_plan_model(windows: int = 1000) -> ls.Model:
    """``windows`` 80 s windows of a fresh candidate; ``never`` waits in each (a step each)."""
    return ls.Model(
        ls.Scenario(
            windows=tuple((100.0 * k, 100.0 * k + 80.0) for k in range(windows)),
            work_quanta=100,
            quantum_s=1.0,
            benefit_rate=0.5,
            horizon_s=100.0 * windows + 1000.0,
            costs=ls.PAPER_WARM,
        )
    )


MODEL = long_plan_model()


def stepwise_plan(plan: _core.finite.Plan) -> Plan:
    """The conversion before the columns: one Step per segment, read field by field."""
    return Plan(
        policy=_core.finite.policy_name(plan.policy),
        value=plan.value,
        benefit=plan.benefit,
        publish_s=None if math.isnan(plan.publish_s) else plan.publish_s,
        cost=CostSplit.from_core(plan.cost),
        steps=tuple(Step.from_core(seg) for seg in plan.steps),
    )


@pytest.mark.benchmark(group="1000-step plan: C++ walk vs Python conversion")
def test_long_plan_cpp_walk(benchmark: Benchmark) -> None:
    plan = benchmark(MODEL._model.solve, _core.finite.Policy.NEVER, 0.0, None)
    assert len(plan.steps) == 1000


@pytest.mark.benchmark(group="1000-step plan: C++ walk vs Python conversion")
def test_long_plan_python(benchmark: Benchmark) -> None:
    plan = benchmark(MODEL.solve, "never")
    assert len(plan.steps) == 1000
    assert plan.steps[-1].action == "wait"


@pytest.mark.benchmark(group="1000-step plan: C++ walk vs Python conversion")
def test_long_plan_stepwise_conversion(benchmark: Benchmark) -> None:
    plan = benchmark(lambda: stepwise_plan(MODEL._model.solve(_core.finite.Policy.NEVER, 0.0, None)))
    assert plan == MODEL.solve("never")


@pytest.mark.benchmark(group="1000-step plan: C++ walk vs Python conversion")
def test_long_plan_to_json(benchmark: Benchmark) -> None:
    plan = MODEL.solve("never")
    steps = benchmark(lambda: plan.to_json()["steps"])
    assert steps == [step.to_json() for step in stepwise_plan(MODEL._model.solve(
        _core.finite.Policy.NEVER, 0.0, None
    )).steps]


S0348 = ls.scenario_by_id("S0348").scenario


@pytest.mark.benchmark(group="one Scenario (4 windows): Python vs the core's own")
def test_scenario_python(benchmark: Benchmark) -> None:
    s = S0348
    built = benchmark(
        ls.Scenario, s.windows, 6, 5.0, 0.25, 1020.0, s.costs, s.initial
    )
    assert built == s


@pytest.mark.benchmark(group="one Scenario (4 windows): Python vs the core's own")
def test_scenario_python_converted(benchmark: Benchmark) -> None:
    windows = [[0, 80], [100, 180], [200, 280], [300, 540]]  # ints in lists, as from JSON
    built = benchmark(ls.Scenario, windows, 6, 5, 0.25, 1020, S0348.costs, S0348.initial)
    assert built == S0348


def core_scenario() -> _core.finite.Scenario:
    s = S0348
    core = _core.finite.Scenario(
        list(s.windows), 6, 5.0, 0.25, 1020.0, s.costs.to_core(), s.initial.to_core()
    )
    _core.finite.validate(core)
    return core


@pytest.mark.benchmark(group="one Scenario (4 windows): Python vs the core's own")
def test_scenario_core(benchmark: Benchmark) -> None:
    core = benchmark(core_scenario)
    assert core.horizon_s == S0348.horizon_s
