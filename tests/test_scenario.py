"""Scenario objects: validation at the Python boundary and the JSON round trip."""

from __future__ import annotations

import copy
import gc
import json
import math
import multiprocessing
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _core
from learnsched.cli import main

from conftest import small_scenario


def scenario_json(**overrides: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "windows": [[0, 80], [100, 180], [200, 280], [300, 540]],
        "work_quanta": 6,
        "quantum_s": 5,
        "benefit_rate": 0.25,
        "horizon_s": 1020,
        "recovery_s": 69.988,
        "residency_rate": 0.0,
        "save_s": 0.068075,
        "load_s": 0.047748,
        "initial": {"progress": 0, "durable": 0, "active": False},
    }
    obj.update(overrides)
    return obj


def test_json_round_trip(s0348: ls.Scenario) -> None:
    text = json.dumps(s0348.to_json())
    again = ls.Scenario.from_json(json.loads(text))
    assert again == s0348
    assert ls.Scenario.from_json(scenario_json()) == s0348


def test_paper_costs() -> None:
    assert ls.HandoffCosts.paper("cold") == ls.PAPER_COLD
    assert ls.PAPER_WARM.residency_rate == pytest.approx(6.383 * 0.01)
    with pytest.raises(ValueError, match="recovery must be 'cold' or 'warm', got 'tepid'"):
        ls.HandoffCosts.paper("tepid")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"windows": [[0, 80], [60, 120]]}, r"windows\[1\] starts at 60 before windows\[0\]"),
        ({"windows": [[0, 80, 90]]}, r"windows\[0\] must be a \[start, end\] pair"),
        ({"windows": "0-80"}, "windows must be a list"),
        ({"windows": [[0, "x"]]}, r"windows\[0\] end must be a number"),
        ({"windows": [[-5, -10]]}, r"windows\[0\] must end after it starts"),
        ({"work_quanta": 6.5}, "work_quanta must be an integer, got 6.5"),
        ({"work_quanta": True}, "work_quanta must be an integer, got True"),
        ({"work_quanta": -2}, "work_quanta must be >= 1, got -2"),
        ({"quantum_s": 0}, "quantum_s must be > 0, got 0"),
        ({"quantum_s": float("nan")}, "quantum_s must be finite, got nan"),
        ({"benefit_rate": float("inf")}, "benefit_rate must be finite, got inf"),
        ({"recovery_s": -1}, "recovery_s must be >= 0, got -1"),
        ({"save_s": None}, "save_s must be a number, got None"),
        ({"initial": {"progress": 2, "durable": 3, "active": True}}, "durable must be in"),
        (
            {"initial": {"progress": 2, "durable": 0, "active": "yes"}},
            "initial.active must be true",
        ),
        ({"initial": {"progress": 2, "durable": 2}}, "initial is missing key"),
        ({"initial": [0, 0, False]}, "initial must be a JSON object"),
        (
            {"recovery_s": 90.0, "initial": {"progress": 2, "durable": 2, "active": True}},
            "active candidate must be able to return",
        ),
        ({"extra": 1}, "scenario has unknown key"),
    ],
)
def test_bad_json_names_field_and_value(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ls.Scenario.from_json(scenario_json(**overrides))


def test_missing_key_is_named() -> None:
    obj = scenario_json()
    del obj["horizon_s"]
    with pytest.raises(ValueError, match=r"scenario is missing key.*horizon_s"):
        ls.Scenario.from_json(obj)


def test_python_objects_reject_wrong_types() -> None:
    with pytest.raises(TypeError, match="costs must be HandoffCosts"):
        ls.Scenario([(0, 10)], 1, 1.0, 1.0, 20.0, costs=(1, 0, 0, 0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"initial\.progress must be an integer"):
        ls.InitialState(progress=1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="load_s must be finite"):
        ls.HandoffCosts(1.0, load_s=math.inf)


def test_numbers_beyond_any_double_or_c_int() -> None:
    with pytest.raises(ValueError, match="horizon_s must be finite"):
        ls.Scenario.from_json(scenario_json(horizon_s=10**400))
    with pytest.raises(ValueError, match=r"work_quanta must be <= 16777216, got 2147483648"):
        ls.Scenario.from_json(scenario_json(work_quanta=2**31))
    with pytest.raises(ValueError, match=r"initial\.progress must be <= 2147483647"):
        ls.Scenario.from_json(
            scenario_json(initial={"progress": 2**40, "durable": 0, "active": True})
        )


def test_objects_pickle_and_copy(s0348: ls.Scenario) -> None:
    warm = s0348.with_costs(ls.PAPER_WARM)
    for obj in (warm, warm.costs, ls.InitialState(3, 1, True), ls.solve(warm, "dp")):
        for again in (pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj), copy.copy(obj)):
            assert again == obj
            assert type(again) is type(obj)
    again = pickle.loads(pickle.dumps(warm))
    assert ls.solve(again, "dp") == ls.solve(warm, "dp")  # its core object was rebuilt


def test_a_process_pool_solves_scenarios(s0348: ls.Scenario) -> None:
    scenarios = [s0348, s0348.with_costs(ls.PAPER_WARM)]
    # spawn: the scenarios and plans really cross a process boundary by pickle
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        plans = pool.map(ls.solve, scenarios)
    # The pool's queue semaphores go now: a later collection that ran inside another
    # call to the resource tracker could not unregister them on Python 3.12 and 3.13.
    del pool
    gc.collect()
    assert plans == [ls.solve(s) for s in scenarios]


def test_numpy_numbers_and_arrays_are_accepted(s0348: ls.Scenario) -> None:
    built = ls.Scenario(
        windows=np.array(s0348.windows),
        work_quanta=np.int64(6),
        quantum_s=np.float64(5.0),
        benefit_rate=np.float32(0.25),
        horizon_s=np.int32(1020),
        costs=ls.HandoffCosts(np.float64(69.988), 0, np.float64(0.068075), 0.047748),
        initial=ls.InitialState(np.int64(0), np.int16(0), np.bool_(False)),
    )
    assert built == s0348
    text = json.dumps(built.to_json())  # plain ints and floats: json accepts them
    assert json.loads(text)["work_quanta"] == 6
    assert type(built.work_quanta) is int
    assert type(built.initial.durable) is int
    assert type(built.initial.active) is bool
    listed = [np.array(w) for w in s0348.windows]
    assert replace(s0348, windows=listed).windows == s0348.windows


def test_numpy_windows_of_the_wrong_shape_name_the_field(s0348: ls.Scenario) -> None:
    with pytest.raises(ValueError, match=r"windows\[0\] must be a \[start, end\] pair"):
        replace(s0348, windows=np.array([0.0, 80.0]))
    with pytest.raises(ValueError, match=r"windows\[0\] must be a \[start, end\] pair"):
        replace(s0348, windows=np.zeros((2, 3)))


def test_exact_types_and_converted_ones_build_the_same_scenario(s0348: ls.Scenario) -> None:
    fast = ls.Scenario(
        s0348.windows, 6, 5.0, 0.25, 1020.0, s0348.costs, ls.InitialState(0, 0, False)
    )
    converted = ls.Scenario(
        [[0, 80], [100, 180], [200, 280], [300, 540]], np.int8(6), 5, 0.25, 1020, s0348.costs
    )
    assert fast == converted == s0348
    assert fast.windows is s0348.windows  # a tuple of float pairs is kept as it is
    assert all(type(x) is float for w in converted.windows for x in w)
    assert type(converted.horizon_s) is float
    # the core objects are built once and shared by every scenario using them
    assert fast.costs.to_core() is s0348.costs.to_core()
    assert s0348.initial.to_core() is s0348.initial.to_core()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("quantum_s", math.inf, "quantum_s must be finite, got inf"),
        ("benefit_rate", -1.0, "benefit_rate must be >= 0, got -1"),
        ("windows", ((0.0, math.nan),), r"windows\[0\] must be finite, got \[0, nan\]"),
        ("windows", ((0.0, 10.0), (5.0, 20.0)), r"windows\[1\] starts at 5 before windows\[0\]"),
        ("work_quanta", 0, "work_quanta must be >= 1, got 0"),
    ],
)
def test_ranges_are_the_cores_checks(
    s0348: ls.Scenario, field: str, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        replace(s0348, **{field: value})


# --- numpy scalar kinds -----------------------------------------------------------------------


def _fields(s: ls.Scenario) -> dict[str, Any]:
    return {
        "windows": s.windows,
        "work_quanta": s.work_quanta,
        "quantum_s": s.quantum_s,
        "benefit_rate": s.benefit_rate,
        "horizon_s": s.horizon_s,
        "costs": s.costs,
        "initial": s.initial,
    }


def test_timedelta64_is_not_an_integer_or_a_number() -> None:
    with pytest.raises(TypeError, match=r"work_quanta must be an integer, got"):
        ls.Scenario(**{**_fields(small_scenario()), "work_quanta": np.timedelta64(6, "s")})
    with pytest.raises(TypeError, match=r"recovery_s must be a number"):
        ls.HandoffCosts(recovery_s=np.timedelta64(10, "s"))
    with pytest.raises(TypeError, match=r"initial.progress must be an integer"):
        ls.InitialState(progress=np.timedelta64(0, "s"))


def test_scenario_keeps_python_types() -> None:
    s = ls.Scenario(
        windows=np.array([[0.0, 80.0]], dtype=np.float32),
        work_quanta=np.int16(6),
        quantum_s=np.int64(5),
        benefit_rate=np.float32(0.25),
        horizon_s=np.uint32(1000),
        costs=ls.HandoffCosts(recovery_s=np.int8(10), residency_rate=np.float16(0.5)),
        initial=ls.InitialState(np.int32(0), np.int64(0), np.bool_(False)),
    )
    assert type(s.work_quanta) is int
    assert all(type(v) is float for v in (s.quantum_s, s.benefit_rate, s.horizon_s))
    assert all(type(t) is float for w in s.windows for t in w)
    assert type(s.costs.recovery_s) is float
    assert type(s.costs.residency_rate) is float
    assert type(s.initial.progress) is int
    assert type(s.initial.active) is bool
    assert json.loads(json.dumps(s.to_json())) == s.to_json()


# --- magnitude bounds: refused up front, or finite plans --------------------------------------


def test_overflow_blames_residency_rate_when_it_is_the_cause() -> None:
    costs = ls.HandoffCosts(recovery_s=10.0, residency_rate=1e307)
    with pytest.raises(ValueError, match=r"residency_rate 1e\+307 x the longest segment"):
        small_scenario().with_costs(costs)
    with pytest.raises(ValueError, match=r"work_quanta x quantum_s plus the handoff costs"):
        ls.Scenario(**{**_fields(small_scenario()), "quantum_s": 1e307, "windows": ((0.0, 1e307),)})


def huge(windows: int, scale: float, residency_rate: float = 0.5) -> ls.Scenario:
    return ls.Scenario(
        windows=tuple((2 * k * scale, (2 * k + 1) * scale) for k in range(windows)),
        work_quanta=10,
        quantum_s=scale / 10,
        benefit_rate=1.0,
        horizon_s=2 * windows * scale,
        costs=ls.HandoffCosts(recovery_s=0.0, residency_rate=residency_rate),
    )


def test_plans_near_1e307_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match=r"windows\[1\] is too far from time 0"):
        huge(8, 1e307)
    # Every window and segment is representable, but 64 segment costs are not.
    with pytest.raises(ValueError, match=r"windows x the longest segment's cost overflows"):
        huge(64, 1e300, residency_rate=1e6)
    with pytest.raises(ValueError, match=r"benefit_rate x .* overflows"):
        ls.Scenario(**{**_fields(huge(1, 1e306)), "horizon_s": 1e308})


def test_accepted_magnitudes_give_finite_plans_and_standard_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = huge(8, 1e300)
    model = ls.Model(s)
    for plan in model.solve_all().values():
        assert math.isfinite(plan.value)
        assert math.isfinite(plan.cost.total)
    assert math.isfinite(model.optimal_value(0, 0, 0))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s.to_json()))
    assert main(["solve", str(path), "--json"]) == 0

    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    json.loads(capsys.readouterr().out, parse_constant=refuse)


def test_plan_length_is_bounded() -> None:
    """K = 2^23, J = 1 is refused up front: its tables would take about 10 GiB."""
    assert _core.finite.MAX_WINDOWS == 2**17
    many = np.broadcast_to([0.0, 1.0], (2**23, 2))  # a view: no 2^23 windows in memory
    with pytest.raises(ValueError, match="windows must hold at most 131072 windows, got 8388608"):
        ls.Scenario(**{**_fields(small_scenario()), "windows": many, "work_quanta": 1})
    windows = [(2.0 * k, 2.0 * k + 1.0) for k in range(2**17 + 1)]
    costs = _core.finite.HandoffCosts(0.1, 0.0, 0.0, 0.0)
    core = _core.finite.Scenario(windows, 1, 0.5, 1.0, 1e8, costs, _core.finite.State(0, 0, 0, False))
    with pytest.raises(ValueError, match="windows must hold at most 131072 windows, got 131073"):
        _core.finite.Model(core)
