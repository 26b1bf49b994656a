"""Fuzz the solver's API and bindings: named errors, never a crash, hang or broken plan."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fuzzing import fuzz, junk, maybe, named
from hypothesis import given
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.scenario import INITIAL_KEYS, JSON_KEYS

from strategies import scenarios

SCENARIO_NAMES = (*JSON_KEYS, *INITIAL_KEYS, "scenario", "windows", "initial")
STATE_NAMES = ("window", "progress", "durable", "active", "policy", "recovery_s")
BATCH_NAMES = ("scenarios", "policies", "policy", "threads")

times = st.one_of(st.floats(-1e6, 1e6), st.floats(allow_nan=True, allow_infinity=True))
window = st.one_of(st.tuples(times, times).map(list), junk)


@st.composite
def scenario_json(draw: st.DrawFn) -> Any:
    """A scenario's JSON object with any field replaced, removed or added."""
    base: dict[str, Any] = draw(scenarios()).to_json()
    for key in draw(st.lists(st.sampled_from(JSON_KEYS), max_size=2)):
        base[key] = draw(
            st.one_of(
                junk,
                times,
                st.integers(-(2**40), 2**40),
                st.lists(window, max_size=4),
                st.sampled_from([10.0**k for k in range(295, 309)]),
            )
        )
    rarely = st.sampled_from([False] * 9 + [True])
    if draw(rarely):
        base["initial"] = {k: draw(maybe(st.integers(0, 3))) for k in INITIAL_KEYS}
    if draw(rarely):
        base.pop(draw(st.sampled_from(JSON_KEYS)))
    if draw(rarely):
        base["extra"] = 1
    return base


def check_plan(scenario: ls.Scenario, plan: ls.Plan) -> None:
    """Finite values, steps in window order, every return by its window's end."""
    assert math.isfinite(plan.value)
    assert math.isfinite(plan.cost.total)
    assert math.isfinite(plan.benefit)
    for k, step in enumerate(plan.steps):
        assert step.window == k
        start, end = scenario.windows[k]
        if step.ready_s is not None:
            assert start <= step.ready_s <= end + 1e-9 * max(1.0, abs(end))
        if step.publish_s is not None:
            assert step.ready_s is not None
            assert step.publish_s <= step.ready_s


@fuzz(300)
@given(scenario_json())
def test_fuzz_scenarios_from_json(obj: Any) -> None:
    scenario = named("bindings", SCENARIO_NAMES, ls.Scenario.from_json, obj)
    if scenario is None:
        return
    assert ls.Scenario.from_json(scenario.to_json()) == scenario
    for plan in ls.solve_all(scenario).values():
        check_plan(scenario, plan)


state_args = st.tuples(
    maybe(st.integers(0, 3), st.one_of(junk, st.integers(-2, 9))),
    maybe(st.integers(0, 8), st.one_of(junk, st.integers(-2, 12))),
    maybe(st.integers(0, 8), st.one_of(junk, st.integers(-2, 12))),
    maybe(st.booleans()),
    maybe(st.sampled_from([*ls.ALL_POLICIES, "rollout", "dp"])),
)


@fuzz(300)
@given(scenarios(), st.lists(state_args, min_size=1, max_size=4))
def test_fuzz_decide_and_values(scenario: ls.Scenario, calls: list[tuple[Any, ...]]) -> None:
    model = ls.Model(scenario)
    for window, progress, durable, active, policy in calls:
        action = named(
            "bindings", STATE_NAMES, model.decide, window, progress, durable, active, policy
        )
        if action is not None:
            assert action.quanta >= 0
        for value in (model.optimal_value, model.reference_value, model.window_plan_value):
            v = named("bindings", STATE_NAMES, value, window, progress, durable, active)
            assert v is None or math.isfinite(v)


@fuzz(150)
@given(
    st.lists(maybe(scenarios(max_windows=3)), max_size=4),
    maybe(st.lists(st.sampled_from(["dp", "never", "rollout"]), min_size=1, max_size=3)),
    maybe(st.integers(1, 3), st.one_of(junk, st.integers(-3, 0), st.integers(1025, 2**40))),
)
def test_fuzz_solve_batch(items: list[Any], policies: Any, threads: Any) -> None:
    result = named("bindings", BATCH_NAMES, ls.solve_batch, items, policies, threads)
    if result is not None:
        assert np.all(np.isfinite(result.value))
        assert result.value.shape == (len(items), len(result.policies))


floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-100, 100))
positive = maybe(st.floats(0.1, 100), floats)


@st.composite
def raw_windows(draw: st.DrawFn) -> list[tuple[float, float]]:
    """Mostly sorted windows of positive length (at any origin), sometimes any pairs."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.lists(st.tuples(floats, floats), max_size=4))
    start = draw(st.sampled_from([0.0, 1.7e9, -50.0, 1e12]))
    windows = []
    for _ in range(draw(st.integers(1, 4))):
        length, gap = draw(positive), draw(positive)
        windows.append((start, start + length))
        start += length + gap
    return windows


@fuzz(300)
@given(
    raw_windows(),
    maybe(st.integers(1, 20), st.sampled_from([-2, 0, 2**22, 2**24, 2**31 - 1])),
    positive,
    positive,
    maybe(st.floats(0, 1e4), floats),
    st.tuples(positive, maybe(st.floats(0, 1), floats), positive, positive),
    maybe(st.just((0, 0, False)), st.tuples(st.integers(-2, 5), st.integers(-2, 5), st.booleans())),
)
def test_fuzz_raw_core(
    windows: list[tuple[float, float]],
    work_quanta: int,
    quantum_s: float,
    benefit_rate: float,
    horizon_s: float,
    costs: tuple[float, float, float, float],
    initial: tuple[int, int, bool],
) -> None:
    """The core guards itself: any field values give ValueError or finite plans."""
    core = _core.finite.Scenario(
        windows,
        work_quanta,
        quantum_s,
        benefit_rate,
        horizon_s,
        _core.finite.HandoffCosts(*costs),
        _core.finite.State(0, *initial),
    )
    model = named("bindings", SCENARIO_NAMES, _core.finite.Model, core)
    if model is None:
        return
    for policy in _core.finite.Policy.__members__.values():
        plan = model.solve(policy)
        assert math.isfinite(plan.value)
        assert len(plan.steps) <= len(windows)
        for step in plan.steps:
            if not math.isnan(step.publish_s):
                assert step.publish_s <= step.ready_s
