"""Model tables: only those the policies read are built, rebuilds reuse their memory, new
models reuse what their thread's last ones released, and every value is bit for bit a fresh
model's."""

from __future__ import annotations

import math
import pathlib
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core

from conftest import run_python
from strategies import scenarios

POLICIES = list(_core.finite.Policy.__members__.values())
# The table each reader needs, as Model names it in its error.
V_G = "window-plan values V_G"
V_PI0 = "reference values V\\^pi0"
V_STAR = "optimal values V\\*"


def bits(x: float) -> str:
    """Exact, NaN-equal identity of a double."""
    return float.hex(x)


def plan_bits(plan: _core.finite.Plan) -> tuple[object, ...]:
    """Every number of a plan, exactly."""
    cost = plan.cost
    steps = tuple(
        (
            s.window,
            s.action,
            bits(s.publish_s),
            bits(s.ready_s),
            bits(s.benefit),
            bits(s.cost.total),
            (s.next.window, s.next.progress, s.next.durable, s.next.active),
        )
        for s in plan.steps
    )
    totals = (cost.work, cost.save, cost.load, cost.recovery, cost.residency)
    return (
        bits(plan.value),
        bits(plan.benefit),
        bits(plan.publish_s),
        tuple(map(bits, totals)),
        steps,
    )


def service_values(model: _core.finite.Model, reader: str) -> list[str]:
    """The reader's value in every service state, exactly."""
    sc = model.scenario
    read = getattr(model, reader)
    return [
        bits(read(_core.finite.State(k, p, p, False)))
        for k in range(len(sc.windows))
        for p in range(sc.work_quanta + 1)
    ]


def variant(base: _core.finite.Scenario, **overrides: object) -> _core.finite.Scenario:
    """`base` with some fields replaced (the core checks nothing until a model is built)."""
    fields = ("windows", "work_quanta", "quantum_s", "benefit_rate", "horizon_s", "costs")
    args = {f: getattr(base, f) for f in fields} | {"initial": _core.finite.State(0, 0, 0, False)}
    return _core.finite.Scenario(**(args | overrides))


@pytest.fixture
def small(s0348: ls.Scenario) -> _core.finite.Scenario:
    """The paper's worked example in the core's types (fresh start)."""
    return s0348.to_core()


def same_answers(a: _core.finite.Model, b: _core.finite.Model) -> None:
    for policy in POLICIES:
        assert plan_bits(a.solve(policy)) == plan_bits(b.solve(policy)), policy
    for reader in ("window_plan_value", "reference_value", "optimal_value"):
        assert service_values(a, reader) == service_values(b, reader), reader


@settings(max_examples=150, deadline=None)
@given(scenarios(), scenarios(two_path=True), st.booleans())
def test_rebuild_answers_as_a_fresh_model(
    first: ls.Scenario, second: ls.Scenario, two_path_first: bool
) -> None:
    a, b = (second, first) if two_path_first else (first, second)
    model = _core.finite.Model(a.to_core())
    same_answers(model, _core.finite.Model(a.to_core()))  # decisions build the lookahead indexes
    model.rebuild(b.to_core())
    same_answers(model, _core.finite.Model(b.to_core()))
    model.rebuild(a.to_core())  # back into the capacity the larger of the two left
    same_answers(model, _core.finite.Model(a.to_core()))


def long_window_scenario(windows: int, quanta: int, two_path: bool) -> _core.finite.Scenario:
    """Windows that each hold most of the work at 1 s quanta: advance ranges far above the
    plain scan's (32), so Rollout and DP decide through the lookahead index."""
    spans, start = [], 0.0
    for k in range(windows):
        length = 100.0 + quanta * (0.5 + 0.2 * (k % 3))
        spans.append((start, start + length))
        start += length + 50.0
    cold = 69.988 if two_path else None
    costs = _core.finite.HandoffCosts(30.0, 0.6 if two_path else 0.0, 0.5, 0.5, cold)
    return _core.finite.Scenario(
        spans, quanta, 1.0, 0.5, start + quanta, costs, _core.finite.State(0, 0, 0, False)
    )


def indexed_decisions(model: _core.finite.Model) -> list[tuple[object, ...]]:
    """Rollout's and DP's action in a spread of service and active states."""
    sc = model.scenario
    out = []
    for policy in (_core.finite.Policy.ROLLOUT, _core.finite.Policy.DP):
        for k in range(len(sc.windows)):
            for p in range(0, sc.work_quanta + 1, 7):
                out.append(model.decide(k, p, p, False, policy))
                out.append(model.decide(k, p, p // 2, True, policy))
    return out


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(40, 300), st.booleans()), min_size=2, max_size=4
    )
)
def test_rebuild_reuses_the_lookahead_indexes(shapes: list[tuple[int, int, bool]]) -> None:
    """Rebuilds between scenarios of more and fewer windows, quanta and paths keep each
    index's rows and levels: every indexed decision is a fresh model's."""
    model = _core.finite.Model(long_window_scenario(*shapes[0]))
    indexed_decisions(model)  # builds index rows for the next rebuild to reuse
    for shape in shapes[1:]:
        scenario = long_window_scenario(*shape)
        model.rebuild(scenario)
        assert indexed_decisions(model) == indexed_decisions(_core.finite.Model(scenario))


@settings(max_examples=100, deadline=None)
@given(scenarios(two_path=True), st.sampled_from(POLICIES))
def test_a_model_for_one_policy_solves_it_as_the_full_model(
    scenario: ls.Scenario, policy: _core.finite.Policy
) -> None:
    core = scenario.to_core()
    full = _core.finite.Model(core)
    lean = _core.finite.Model(core, [policy])
    assert plan_bits(lean.solve(policy)) == plan_bits(full.solve(policy))
    init = core.initial
    state = (init.window, init.progress, init.durable, init.active)
    if policy != _core.finite.Policy.GUARDED:
        assert lean.decide(*state, policy) == full.decide(*state, policy)


@pytest.mark.parametrize(
    ("built", "policy", "table"),
    [
        ([], _core.finite.Policy.COSTED_WINDOW, V_G),
        ([_core.finite.Policy.WINDOW], _core.finite.Policy.ROLLOUT, V_G),
        ([_core.finite.Policy.COSTED_WINDOW], _core.finite.Policy.ROLLOUT, V_PI0),
        ([_core.finite.Policy.COSTED_WINDOW], _core.finite.Policy.GUARDED, V_PI0),
        ([_core.finite.Policy.ROLLOUT], _core.finite.Policy.DP, V_STAR),
        ([_core.finite.Policy.DP], _core.finite.Policy.COSTED_WINDOW, V_G),
    ],
)
def test_a_policy_whose_table_was_not_built_is_refused(
    small: _core.finite.Scenario,
    built: list[_core.finite.Policy],
    policy: _core.finite.Policy,
    table: str,
) -> None:
    model = _core.finite.Model(small, built)
    message = (
        f"policy {_core.finite.policy_name(policy)} reads the {table}, which this model was built"
    )
    with pytest.raises(ValueError, match=message):
        model.solve(policy)
    with pytest.raises(ValueError, match=message):
        model.decide(0, 0, 0, False, policy)
    zeros = np.zeros(1, dtype=np.int32)
    with pytest.raises(ValueError, match=message):
        model.decide_many(zeros, zeros, zeros, np.zeros(1, dtype=bool), policy)


def test_tables_need_nothing_for_the_table_free_policies(small: _core.finite.Scenario) -> None:
    model = _core.finite.Model(
        small,
        [_core.finite.Policy.NEVER, _core.finite.Policy.WINDOW, _core.finite.Policy.STATIC_ROI],
    )
    full = _core.finite.Model(small)
    for policy in (
        _core.finite.Policy.NEVER,
        _core.finite.Policy.WINDOW,
        _core.finite.Policy.STATIC_ROI,
    ):
        assert plan_bits(model.solve(policy)) == plan_bits(full.solve(policy))
    state = _core.finite.State(0, 0, 0, False)
    for reader, table in [
        ("window_plan_value", V_G),
        ("reference_value", V_G),
        ("optimal_value", V_STAR),
    ]:
        with pytest.raises(ValueError, match=f"{reader} reads the {table}"):
            getattr(model, reader)(state)


def test_reference_values_bring_the_window_plan_values(small: _core.finite.Scenario) -> None:
    """Costed Window's actions read V_G, so a model built for Rollout answers it too."""
    model = _core.finite.Model(small, [_core.finite.Policy.ROLLOUT])
    full = _core.finite.Model(small)
    assert plan_bits(model.solve(_core.finite.Policy.COSTED_WINDOW)) == plan_bits(
        full.solve(_core.finite.Policy.COSTED_WINDOW)
    )


def test_rebuild_with_an_invalid_scenario_keeps_the_model(small: _core.finite.Scenario) -> None:
    model = _core.finite.Model(small)
    before = plan_bits(model.solve(_core.finite.Policy.DP))
    with pytest.raises(ValueError, match="work_quanta must be >= 1, got 0"):
        model.rebuild(variant(small, work_quanta=0))
    assert model.scenario.work_quanta == small.work_quanta
    assert plan_bits(model.solve(_core.finite.Policy.DP)) == before


def test_rebuild_with_fewer_tables_refuses_the_dropped_ones(small: _core.finite.Scenario) -> None:
    model = _core.finite.Model(small)
    model.rebuild(variant(small, work_quanta=4), [_core.finite.Policy.WINDOW])
    assert model.scenario.work_quanta == 4
    with pytest.raises(ValueError, match=f"reads the {V_STAR}"):
        model.solve(_core.finite.Policy.DP)


def test_policies_must_be_policy_values(small: _core.finite.Scenario) -> None:
    with pytest.raises(ValueError, match="policies must hold Policy values, got 9"):
        _core.finite.Model(small, [_core.finite.Policy(9)])


def test_large_mapped_tables_rebuild_to_the_same_values(small: _core.finite.Scenario) -> None:
    """Tables of 32 MiB and more live in fresh mapped blocks, whose zero row is left
    unwritten: growing, shrinking and reusing them (a reused block's zero row is written)
    keeps every value."""
    big = variant(small, windows=[(0.0, 3.0e6)], work_quanta=2**21, quantum_s=1.0, horizon_s=4.0e6)
    model = _core.finite.Model(small)
    model.rebuild(big)  # grows into a mapped block
    fresh = _core.finite.Model(big)
    for policy in POLICIES:
        assert plan_bits(model.solve(policy)) == plan_bits(fresh.solve(policy))
    states = [_core.finite.State(0, p, p, False) for p in (0, 1, 2**20, 2**21 - 1, 2**21)]
    for reader in ("window_plan_value", "reference_value", "optimal_value"):
        got = [bits(getattr(model, reader)(s)) for s in states]
        assert got == [bits(getattr(fresh, reader)(s)) for s in states]
    model.rebuild(small)  # keeps the big block, uses its start
    same_answers(model, _core.finite.Model(small))


@pytest.mark.parametrize("policy", ls.ALL_POLICIES)
def test_batch_of_one_policy_matches_its_column(policy: ls.Policy) -> None:
    grid = ls.paper_grid()
    scenarios = [g.scenario for g in grid.scenarios][::7]
    every = ls.solve_batch(scenarios)
    alone = ls.solve_batch(scenarios, (policy,))
    np.testing.assert_array_equal(alone.value[:, 0], every.column(policy.value))


def test_python_model_builds_the_tables_of_its_policies(s0348: ls.Scenario) -> None:
    scenario = s0348
    model = ls.Model(scenario, policies="window")
    assert model.solve("window").value == ls.Model(scenario).solve("window").value
    with pytest.raises(ValueError, match=f"policy dp reads the {V_STAR}"):
        model.solve("dp")
    with pytest.raises(ValueError, match="policy must be one of"):
        ls.Model(scenario, policies=["nope"])
    assert math.isfinite(ls.Model(scenario, policies=()).solve("never").value)


def solved(scenario: _core.finite.Scenario) -> list[tuple[object, ...]]:
    """Every policy's plan, each from a new model built for it alone (as ``ls.solve``)."""
    return [plan_bits(_core.finite.Model(scenario, [p]).solve(p)) for p in POLICIES]


def on_a_new_thread(scenario: _core.finite.Scenario) -> list[tuple[object, ...]]:
    """:func:`solved` on a thread of its own, whose table cache starts empty."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(solved, scenario).result()


# Tables of 0.1-0.3 MB, which the thread's table cache keeps: larger, then smaller, then
# with two paths (six tables a model), then the first again.
CACHED_SHAPES = [(8, 3000, False), (6, 2500, False), (5, 3500, True), (8, 3000, False)]


def test_models_built_one_after_another_answer_as_fresh_ones() -> None:
    """Each model takes the blocks its thread's last models released (larger ones holding
    their values): its answers are those of a model built where the cache is empty, one
    thread after another and on two threads at once."""
    every = [long_window_scenario(*shape) for shape in CACHED_SHAPES]
    fresh = [on_a_new_thread(s) for s in every]
    assert [solved(s) for s in every] == fresh
    with ThreadPoolExecutor(2) as pool:
        forward = pool.submit(lambda: [solved(s) for s in every])
        backward = pool.submit(lambda: [solved(s) for s in reversed(every)])
        assert forward.result() == fresh
        assert backward.result() == fresh[::-1]


# 1000 windows x J quanta: each table (1001 x (J+1) doubles) 16-32 MB, under the mapped size.
AT_1000_WINDOWS = """
import os, resource, sys
import learnsched as ls
def scenario(quanta):
    windows = [(200.0 * k, 200.0 * k + 150.0) for k in range(1000)]
    return ls.Scenario(windows=windows, work_quanta=quanta, quantum_s=1.0, benefit_rate=0.5,
                       horizon_s=3.0e5, costs=ls.PAPER_COLD)
"""

SECOND_SOLVE_FAULTS = (
    AT_1000_WINDOWS
    + """
policy, s = sys.argv[1], scenario(3600)
ls.solve(s, policy)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
ls.solve(s, policy)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
@pytest.mark.parametrize("policy", ["rollout", "guarded"])
def test_a_second_one_shot_solve_takes_the_first_ones_table_memory(
    policy: str, tmp_path: pathlib.Path
) -> None:
    """At 1000 x 3600 each table is 28.8 MB (7031 pages): the second solve finds the
    first one's blocks in its thread's cache, where glibc would have unmapped or trimmed
    them and faulted them in again (14,072 faults for rollout's two)."""
    out = run_python(["-c", SECOND_SOLVE_FAULTS, policy], tmp_path, check=True)
    assert int(out.stdout) < 700


CACHE_BOUND = (
    AT_1000_WINDOWS
    + """
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
ls.solve(scenario(10), "rollout")
before = rss()
for quanta in range(2000, 4000, 100):
    ls.solve(scenario(quanta), "rollout")
print(rss() - before)
"""
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_the_table_cache_holds_at_most_128_mib(tmp_path: pathlib.Path) -> None:
    """Twenty rollout solves of growing tables (2 x 16-32 MB each, 1 GB in all) leave at
    most the cache's 128 MiB resident once their models are gone."""
    out = run_python(["-c", CACHE_BOUND], tmp_path, check=True)
    assert int(out.stdout) <= (128 + 8) * 2**20
