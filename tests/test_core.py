"""The raw bindings of learnsched._core: types, errors and the GIL-free entry points."""

from __future__ import annotations

import math

import pytest

from learnsched import _core


def make(**overrides: object) -> _core.Scenario:
    args: dict[str, object] = {
        "windows": [(0.0, 80.0), (100.0, 180.0)],
        "work_quanta": 6,
        "quantum_s": 5.0,
        "benefit_rate": 0.25,
        "horizon_s": 600.0,
        "costs": _core.HandoffCosts(69.988, 0.0, 0.068075, 0.047748),
        "initial": _core.State(0, 0, 0, False),
    }
    args.update(overrides)
    return _core.Scenario(**args)


def test_model_solves_every_policy() -> None:
    model = _core.Model(make())
    for policy in _core.Policy.__members__.values():
        plan = model.solve(policy)
        assert plan.policy == policy
        assert math.isclose(plan.value, plan.benefit - plan.cost.total, abs_tol=1e-9)


def test_action_value_semantics() -> None:
    a = _core.Action(_core.ActionKind.ADVANCE, 3, True)
    assert a == _core.Action(_core.ActionKind.ADVANCE, 3, True)
    assert a != _core.Action(_core.ActionKind.ADVANCE, 3, False)
    assert hash(a) == hash(_core.Action(_core.ActionKind.ADVANCE, 3, True))
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
        ({"costs": _core.HandoffCosts(-1.0, 0.0, 0.0, 0.0)}, "recovery_s must be >= 0"),
        ({"costs": _core.HandoffCosts(1.0, math.nan, 0.0, 0.0)}, "residency_rate must be finite"),
        ({"initial": _core.State(0, 2, 3, True)}, "durable must be in"),
        ({"initial": _core.State(0, 3, 1, False)}, "service-mode state keeps no unsaved work"),
        ({"initial": _core.State(0, 7, 7, False)}, r"progress must be in \[0, work_quanta=6\]"),
        ({"initial": _core.State(1, 0, 0, False)}, "initial.window must be 0"),
        (
            {
                "costs": _core.HandoffCosts(90.0, 0.0, 0.0, 0.0),
                "initial": _core.State(0, 2, 2, True),
            },
            "active candidate must be able to return",
        ),
        ({"work_quanta": 2**24}, "states exceeds the limit"),
    ],
)
def test_core_guards_its_inputs(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.Model(make(**overrides))
    with pytest.raises(ValueError, match=message):
        _core.validate(make(**overrides))


def test_decide_validates_the_observed_state() -> None:
    model = _core.Model(make())
    with pytest.raises(ValueError, match=r"window must be in \[0, 2\), got 2"):
        model.decide(2, 0, 0, False, _core.Policy.ROLLOUT)
    with pytest.raises(ValueError, match="durable must be in"):
        model.decide(0, 1, 2, True, _core.Policy.DP)
    with pytest.raises(TypeError):
        model.decide("0", 0, 0, False, _core.Policy.DP)


def test_batch_rejects_bad_threads_and_names_the_bad_scenario() -> None:
    with pytest.raises(ValueError, match="threads must be >= 1"):
        _core.solve_batch([make()], [_core.Policy.DP], 0)
    with pytest.raises(ValueError, match=r"scenarios\[1\]: work_quanta"):
        _core.solve_batch([make(), make(work_quanta=0)], [_core.Policy.DP], 2)


def test_constants() -> None:
    assert _core.TIE_TOLERANCE == 1e-9
    assert _core.MAX_STATES == 2**24
