"""The raw bindings of learnsched._core: types, errors and the GIL-free entry points."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from learnsched import _core

from conftest import small_scenario


def make(**overrides: object) -> _core.finite.Scenario:
    args: dict[str, object] = {
        "windows": [(0.0, 80.0), (100.0, 180.0)],
        "work_quanta": 6,
        "quantum_s": 5.0,
        "benefit_rate": 0.25,
        "horizon_s": 600.0,
        "costs": _core.finite.HandoffCosts(69.988, 0.0, 0.068075, 0.047748),
        "initial": _core.finite.State(0, 0, 0, False),
    }
    args.update(overrides)
    return _core.finite.Scenario(**args)


def test_model_solves_every_policy() -> None:
    model = _core.finite.Model(make())
    for policy in _core.finite.Policy.__members__.values():
        plan = model.solve(policy)
        assert plan.policy == policy
        assert math.isclose(plan.value, plan.benefit - plan.cost.total, abs_tol=1e-9)


def test_action_value_semantics() -> None:
    a = _core.finite.Action(_core.finite.ActionKind.ADVANCE, 3, True)
    assert a == _core.finite.Action(_core.finite.ActionKind.ADVANCE, 3, True)
    assert a != _core.finite.Action(_core.finite.ActionKind.ADVANCE, 3, False)
    assert hash(a) == hash(_core.finite.Action(_core.finite.ActionKind.ADVANCE, 3, True))
    assert a.name == "advance"
    assert repr(a) == "Action(advance, quanta=3, checkpoint=True)"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"windows": [(0.0, 80.0), (50.0, 120.0)]}, r"windows\[1\] starts at 50"),
        ({"windows": [(10.0, 10.0)]}, r"windows\[0\] must end after it starts"),
        ({"windows": []}, "at least one"),
        ({"windows": [(0.0, math.inf)]}, r"windows\[0\] must be finite"),
        ({"work_quanta": 0}, "work_quanta must be >= 1, got 0"),
        ({"quantum_s": 0.0}, "quantum_s must be > 0, got 0"),
        ({"quantum_s": math.nan}, "quantum_s must be finite, got nan"),
        ({"benefit_rate": -1.0}, "benefit_rate must be >= 0, got -1"),
        ({"horizon_s": math.inf}, "horizon_s must be finite"),
        ({"costs": _core.finite.HandoffCosts(-1.0, 0.0, 0.0, 0.0)}, "recovery_s must be >= 0"),
        ({"costs": _core.finite.HandoffCosts(1.0, math.nan, 0.0, 0.0)}, "residency_rate must be finite"),
        ({"initial": _core.finite.State(0, 2, 3, True)}, "durable must be in"),
        ({"initial": _core.finite.State(0, 3, 1, False)}, "service-mode state keeps no unsaved work"),
        ({"initial": _core.finite.State(0, 7, 7, False)}, r"progress must be in \[0, work_quanta=6\]"),
        ({"initial": _core.finite.State(1, 0, 0, False)}, "initial.window must be 0"),
        (
            {
                "costs": _core.finite.HandoffCosts(90.0, 0.0, 0.0, 0.0),
                "initial": _core.finite.State(0, 2, 2, True),
            },
            "active candidate must be able to return",
        ),
        ({"work_quanta": 2**24}, "states exceeds the limit"),
    ],
)
def test_core_guards_its_inputs(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.finite.Model(make(**overrides))
    with pytest.raises(ValueError, match=message):
        _core.finite.validate(make(**overrides))


def test_decide_validates_the_observed_state() -> None:
    model = _core.finite.Model(make())
    with pytest.raises(ValueError, match=r"window must be in \[0, 2\), got 2"):
        model.decide(2, 0, 0, False, _core.finite.Policy.ROLLOUT)
    with pytest.raises(ValueError, match="durable must be in"):
        model.decide(0, 1, 2, True, _core.finite.Policy.DP)
    with pytest.raises(TypeError):
        model.decide("0", 0, 0, False, _core.finite.Policy.DP)


def test_batch_rejects_bad_threads_and_names_the_bad_scenario() -> None:
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 0"):
        _core.finite.solve_batch([make()], [_core.finite.Policy.DP], 0)
    with pytest.raises(ValueError, match=r"scenarios\[1\]: work_quanta"):
        _core.finite.solve_batch([make(), make(work_quanta=0)], [_core.finite.Policy.DP], 2)


def test_constants() -> None:
    assert _core.finite.TIE_TOLERANCE == 1e-9
    assert _core.finite.RELATIVE_TIE_TOLERANCE == 1e-12
    assert _core.finite.MAX_STATES == 2**24


def test_out_of_range_enums_are_rejected() -> None:
    model = _core.finite.Model(make())
    bogus = _core.finite.Policy(99)  # py::enum_ accepts any integer
    with pytest.raises(ValueError, match="policy must be one of the seven Policy values, got 99"):
        model.decide(0, 0, 0, False, bogus)
    with pytest.raises(ValueError, match="got 99"):
        model.solve(bogus)
    with pytest.raises(ValueError, match="policies must hold Policy values, got 99"):
        _core.finite.solve_batch([make()], [bogus], 1)
    with pytest.raises(ValueError, match="kind must be an ActionKind, got 9"):
        _core.finite.Action(_core.finite.ActionKind(9))
    with pytest.raises(ValueError, match="quanta must be >= 0, got -1"):
        _core.finite.Action(_core.finite.ActionKind.ADVANCE, -1)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"windows": [(-1e308, 1e308)]}, r"windows\[0\] is too long to represent"),
        ({"benefit_rate": 1e308, "horizon_s": 1e308}, "benefit_rate x .* overflows"),
        ({"quantum_s": 1e308}, "work_quanta x quantum_s plus the handoff costs overflows"),
    ],
)
def test_derived_quantities_may_not_overflow(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.finite.Model(make(**overrides))


def test_state_limit_message_survives_int_max() -> None:
    with pytest.raises(
        ValueError,
        match=r"\(windows \+ 1\) x \(work_quanta \+ 1\) = 3 x 2147483648 = 6442450944 states",
    ):
        _core.finite.validate(make(work_quanta=2**31 - 1))


def test_exact_fits_do_not_depend_on_the_time_origin() -> None:
    # 6 x 5 s of work plus a 0.402 s return fill [t, t + 30.402] exactly.
    def plan_at(origin: float) -> _core.finite.Plan:
        scenario = make(
            windows=[(origin, origin + 30.402)],
            horizon_s=origin + 1000.0,
            costs=_core.finite.HandoffCosts(0.402, 0.0, 0.0, 0.0),
        )
        return _core.finite.Model(scenario).solve(_core.finite.Policy.DP)

    here, epoch = plan_at(0.0), plan_at(1.7e9)
    assert here.steps[0].action.kind == _core.finite.ActionKind.PUBLISH
    assert epoch.steps[0].action.kind == _core.finite.ActionKind.PUBLISH
    assert epoch.value == pytest.approx(here.value, abs=1e-6)


def test_long_work_releases_the_gil() -> None:
    # A Python thread keeps running while a large model is built and solved.
    big = make(
        windows=[(k * 500.0, k * 500.0 + 400.0) for k in range(64)],
        work_quanta=60_000,
        quantum_s=0.01,
        horizon_s=40_000.0,
    )
    ticks = 0
    done = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        _core.finite.Model(big).solve(_core.finite.Policy.ROLLOUT)
    finally:
        done.set()
        counter.join()
    assert ticks > 100


def test_one_model_serves_many_threads() -> None:
    model = _core.finite.Model(make(windows=[(0.0, 80.0), (100.0, 400.0)], work_quanta=30))
    expected = {p: model.solve(p).value for p in _core.finite.Policy.__members__.values()}
    results: list[dict[_core.finite.Policy, float]] = []

    def solve_all() -> None:
        results.append({p: model.solve(p).value for p in _core.finite.Policy.__members__.values()})

    workers = [threading.Thread(target=solve_all) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [expected] * 8


def test_scenario_rows_share_pieces_and_name_bad_rows() -> None:
    windows = [[(0.0, 80.0), (100.0, 180.0)], [(0.0, 480.0)]]
    costs = [_core.finite.HandoffCosts(69.988, 0.0, 0.068075, 0.047748)]
    initial = [_core.finite.State(0, 0, 0, False), _core.finite.State(0, 3, 3, False)]
    rows = _core.finite.scenario_rows(
        windows,
        costs,
        initial,
        [1, 0],
        [6, 6],
        [5.0, 5.0],
        [0.25, 1.0],
        [600.0, 700.0],
        [0, 0],
        [0, 1],
    )
    assert [s.windows for s in rows] == [windows[1], windows[0]]
    assert [(s.benefit_rate, s.horizon_s, s.initial.progress) for s in rows] == [
        (0.25, 600.0, 0),
        (1.0, 700.0, 3),
    ]
    one = make(benefit_rate=1.0, horizon_s=700.0, initial=initial[1])
    assert (
        _core.finite.Model(rows[1]).solve(_core.finite.Policy.DP).value
        == _core.finite.Model(one).solve(_core.finite.Policy.DP).value
    )
    with pytest.raises(IndexError, match=r"cost_set\[1\] must be in \[0, 1\), got 1"):
        _core.finite.scenario_rows(
            windows,
            costs,
            initial,
            [0, 0],
            [6, 6],
            [5.0] * 2,
            [1.0] * 2,
            [600.0] * 2,
            [0, 1],
            [0, 0],
        )
    with pytest.raises(IndexError, match=r"window_set\[0\] must be in \[0, 2\), got -1"):
        _core.finite.scenario_rows(windows, costs, initial, [-1], [6], [5.0], [1.0], [600.0], [0], [0])
    with pytest.raises(ValueError, match="every row column must have 2 entries"):
        _core.finite.scenario_rows(
            windows, costs, initial, [0, 0], [6], [5.0] * 2, [1.0] * 2, [600.0] * 2, [0, 0], [0, 0]
        )


# --- flags and shapes -------------------------------------------------------------------------


def test_core_bindings_take_only_true_or_false_as_flags() -> None:
    with pytest.raises(TypeError):
        _core.finite.State(0, 0, 0, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.finite.State(0, 0, 0, 2)  # type: ignore[arg-type]
    model = _core.finite.Model(small_scenario().to_core())
    with pytest.raises(TypeError):
        model.decide(0, 0, 0, 1, _core.finite.Policy.DP)  # type: ignore[arg-type]


def test_private_ties_names_shapes_that_do_not_broadcast() -> None:
    """Shapes that do not broadcast are named (pybind11's vectorize alone raises an unnamed
    RuntimeError)."""
    with pytest.raises(
        ValueError, match=r"a and b must broadcast to one shape, got shapes \(2,\) and \(3,\)"
    ):
        _core.finite.ties(np.ones(2), np.ones(3))
    assert _core.finite.ties(np.ones(3), np.ones((2, 1))).shape == (2, 3)
