"""The batch solver: agreement with single solves, threads, arrays and errors."""

from __future__ import annotations

import math
import pickle
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _core

from conftest import small_scenario


def test_batch_equals_single_solves() -> None:
    grid = ls.paper_grid()
    sample = [g.scenario for g in grid.scenarios[::97]]
    result = ls.solve_batch(sample)
    assert result.value.shape == (len(sample), 6)
    assert result.cost.shape == (len(sample), 6, 5)
    for i, scenario in enumerate(sample):
        for j, plan in enumerate(ls.solve_all(scenario).values()):
            assert result.value[i, j] == plan.value
            assert result.benefit[i, j] == plan.benefit
            assert (math.isnan(result.publish_s[i, j]) and plan.publish_s is None) or (
                result.publish_s[i, j] == plan.publish_s
            )
            assert list(result.cost[i, j]) == [getattr(plan.cost, f) for f in ls.COST_FIELDS]


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threaded_equals_serial(threads: int) -> None:
    scenarios = [g.scenario for g in ls.paper_grid().scenarios]
    serial = ls.solve_batch(scenarios, threads=1)
    threaded = ls.solve_batch(scenarios, threads=threads)
    for field in ("value", "benefit", "publish_s", "cost"):
        np.testing.assert_array_equal(getattr(serial, field), getattr(threaded, field))


def test_progress_is_reported_in_chunks() -> None:
    scenarios = [g.scenario for g in ls.paper_grid().scenarios[:600]]
    seen: list[int] = []
    result = ls.solve_batch(scenarios, ["dp"], progress=seen.append)
    assert seen == [256, 256, 88]
    np.testing.assert_array_equal(result.value, ls.solve_batch(scenarios, ["dp"]).value)


def test_empty_batch_and_policy_subset() -> None:
    assert ls.solve_batch([], ["rollout"]).value.shape == (0, 1)
    scenario = ls.scenario_by_id("S0348").scenario
    result = ls.solve_batch([scenario], ["dp", "never"])
    assert result.policies == (ls.Policy.DP, ls.Policy.NEVER)
    assert result.column("never")[0] == 0.0


def test_one_policy_name_is_one_column() -> None:
    scenario = ls.scenario_by_id("S0348").scenario
    result = ls.solve_batch([scenario], policies="dp")
    assert result.policies == (ls.Policy.DP,)
    assert result.value.shape == (1, 1)
    assert ls.solve_batch([scenario], ls.Policy.NEVER).policies == (ls.Policy.NEVER,)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"threads": 0}, ValueError, "threads must be >= 1, got 0"),
        ({"threads": 1.5}, TypeError, "threads must be an integer, got 1.5"),
        ({"policies": ["fast"]}, ValueError, "policy must be one of"),
        ({"policies": []}, ValueError, "policies must name at least one policy"),
    ],
)
def test_bad_batch_arguments(kwargs: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        ls.solve_batch([ls.scenario_by_id("S0000").scenario], **kwargs)  # type: ignore[arg-type]


def test_numpy_integer_threads() -> None:
    scenarios = [g.scenario for g in ls.paper_grid().scenarios[:50]]
    result = ls.solve_batch(scenarios, threads=np.int64(2))
    np.testing.assert_array_equal(result.value, ls.solve_batch(scenarios).value)


def test_a_scenario_batch_is_solved_as_its_scenarios() -> None:
    grid = ls.paper_grid()
    batch = grid.batch
    assert isinstance(batch, ls.ScenarioBatch)
    assert len(batch) == 1920
    scenarios = [g.scenario for g in grid.scenarios]
    assert batch[348] is scenarios[348]  # the grid's own, made once
    both = (ls.solve_batch(batch), ls.solve_batch(scenarios))
    for field in ("value", "benefit", "publish_s", "cost"):
        np.testing.assert_array_equal(getattr(both[0], field), getattr(both[1], field))
    mine = ls.ScenarioBatch.of(scenarios[:3])
    assert mine[1] is scenarios[1]
    assert mine == tuple(scenarios[:3])
    again = pickle.loads(pickle.dumps(mine))
    assert again == mine
    np.testing.assert_array_equal(ls.solve_batch(again).value, both[1].value[:3])
    with pytest.raises(TypeError, match=r"scenarios\[1\] must be a Scenario, got int"):
        ls.ScenarioBatch.of([scenarios[0], 3])  # type: ignore[list-item]


# --- argument checks and the thread cap -------------------------------------------------------


@pytest.mark.parametrize(
    ("second", "kind"), [(None, "NoneType"), ("json", "dict"), ("core", "Scenario")]
)
def test_solve_batch_names_the_bad_scenario(second: str | None, kind: str) -> None:
    s = small_scenario()
    other: object = {None: None, "json": s.to_json(), "core": s.to_core()}[second]
    with pytest.raises(TypeError, match=rf"scenarios\[1\] must be a Scenario, got {kind}"):
        ls.solve_batch([s, other])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"policies": None}, TypeError, "policies must be a policy name or an iterable"),
        ({"policies": ["dp", 3]}, ValueError, r"policies\[1\]: policy must be one of"),
        ({"threads": 2**31}, ValueError, "threads must be <= 1024, got 2147483648"),
        ({"threads": 40_000}, ValueError, "threads must be <= 1024, got 40000"),
        ({"threads": True}, TypeError, "threads must be an integer"),
        ({"threads": 2.0}, TypeError, "threads must be an integer"),
    ],
)
def test_solve_batch_names_bad_arguments(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ls.solve_batch([small_scenario()], **kwargs)


def test_solve_batch_scenarios_must_be_a_sequence() -> None:
    with pytest.raises(TypeError, match=r"scenarios must be a sequence of Scenario"):
        ls.solve_batch(small_scenario())  # type: ignore[arg-type]


def test_threads_cap_holds_in_the_core_and_results_match() -> None:
    assert ls.batch.MAX_THREADS == _core.finite.MAX_THREADS == 1024
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 1025"):
        _core.finite.solve_batch([small_scenario().to_core()], [_core.finite.Policy.DP], 1025)
    scenarios = [small_scenario()] * 8
    serial = ls.solve_batch(scenarios, threads=1).value
    np.testing.assert_array_equal(serial, ls.solve_batch(scenarios, threads=1024).value)
