"""The guarded rollout (Section 4.2, Eqs. D.5-D.6): its limits, its guarantee, the reference."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.cli import main
from learnsched.solver import ScoreNoise

import reference
from strategies import scenarios, to_reference

TOL = 1e-9


def bounded_noise(epsilon: float, seed: int) -> ScoreNoise:
    """A deterministic score error in [-epsilon, epsilon] per (state, action)."""

    def noise(state: _core.finite.State, action: _core.finite.Action) -> float:
        key = (seed, state.window, state.progress, state.durable, state.active)
        return _error(epsilon, key, (action.name, action.quanta, action.checkpoint, action.cold))

    return noise


def reference_noise(epsilon: float, seed: int) -> reference.NoiseFn:
    """The same errors for the pure-Python reference's tuples."""

    def noise(state: reference.State, action: reference.Action) -> float:
        return _error(epsilon, (seed, *state), action)

    return noise


def _error(epsilon: float, state_key: tuple[object, ...], action: tuple[object, ...]) -> float:
    return epsilon * random.Random(repr((state_key, action))).uniform(-1.0, 1.0)


def test_epsilon_zero_is_rollout_and_a_huge_epsilon_is_costed_window_on_the_grid() -> None:
    scenarios_ = [g.scenario for g in ls.paper_grid().scenarios]
    policies = ("guarded", "rollout", "costed_window")
    exact = ls.solve_batch(scenarios_, policies, threads=2)
    np.testing.assert_array_equal(exact.column("guarded"), exact.column("rollout"))
    for epsilon in (1e300, math.inf):
        guarded = ls.solve_batch(scenarios_, policies, threads=2, epsilon=epsilon)
        np.testing.assert_array_equal(guarded.column("guarded"), guarded.column("costed_window"))
        assert not np.array_equal(guarded.column("guarded"), guarded.column("rollout"))


def test_a_margin_between_the_two_limits_keeps_some_of_rollouts_wins() -> None:
    s0348 = ls.scenario_by_id("S0348").scenario  # rollout gains 68.866 here
    assert ls.solve(s0348, "guarded", epsilon=34.0).value == ls.solve(s0348, "rollout").value
    assert ls.solve(s0348, "guarded", epsilon=35.0).value == ls.solve(s0348, "costed_window").value


def test_the_guard_rejects_a_replacement_that_only_the_noise_favours() -> None:
    s0348 = ls.scenario_by_id("S0348").scenario
    model = ls.Model(s0348)
    cw = model.decide(0, 0, 0, policy="costed_window")  # wait
    lure = ls.Action(ls.ActionKind.ADVANCE, 1, False)  # pays a return, keeps nothing

    def noise(state: _core.finite.State, action: _core.finite.Action) -> float:
        return 200.0 if (state.window, action) == (0, lure) else 0.0

    assert model.decide(0, 0, 0, policy="guarded", score_noise=noise) == lure
    fooled = model.solve("guarded", score_noise=noise)
    assert fooled.value < model.solve("costed_window").value
    guarded = model.decide(0, 0, 0, policy="guarded", epsilon=200.0, score_noise=noise)
    assert guarded == cw


@settings(max_examples=300, deadline=None)
@given(
    scenarios(),
    st.sampled_from([0.0, 0.01, 0.5, 3.0, 25.0]),
    st.integers(0, 2**16),
    st.booleans(),
)
def test_never_below_costed_window_when_the_scores_err_by_at_most_epsilon(
    scenario: ls.Scenario, epsilon: float, seed: int, two_path: bool
) -> None:
    """Eq. D.6: V^pi_G >= V^pi0 in true (exact-model) terms; and core == reference."""
    if two_path:  # a slower cold path beside the drawn one
        c = scenario.costs
        cold = ls.HandoffCosts(c.recovery_s * 2 + 1.0, save_s=c.save_s, load_s=c.load_s)
        scenario = scenario.with_costs(ls.HandoffCosts.choice(c, cold))
    guarded = ls.solve(scenario, "guarded", epsilon, bounded_noise(epsilon, seed))
    costed = ls.solve(scenario, "costed_window")
    assert guarded.value >= costed.value - TOL * max(1.0, abs(costed.value))
    theirs = reference.solve_guarded(
        to_reference(scenario), epsilon, reference_noise(epsilon, seed)
    )
    assert math.isclose(guarded.value, theirs.value, rel_tol=1e-12, abs_tol=1e-9)
    assert [(s.action, s.quanta, s.checkpoint) for s in guarded.steps] == [
        (s.action, s.quanta, s.checkpoint) for s in theirs.steps
    ]


@settings(max_examples=150, deadline=None)
@given(scenarios(), st.integers(0, 2**16))
def test_exact_guarded_decisions_equal_rollouts_at_every_state(
    scenario: ls.Scenario, seed: int
) -> None:
    model = ls.Model(scenario)
    ref = to_reference(scenario)
    for k in range(len(scenario.windows)):
        for pbar in range(scenario.work_quanta + 1):
            a = model.decide(k, pbar, pbar, policy="guarded")
            assert a == model.decide(k, pbar, pbar, policy="rollout")
            noisy = model.decide(
                k, pbar, pbar, policy="guarded", epsilon=1.0, score_noise=bounded_noise(1.0, seed)
            )
            assert (noisy.name, noisy.quanta, noisy.checkpoint, noisy.cold) == (
                reference.guarded_action(
                    ref, (k, pbar, pbar, False), 1.0, reference_noise(1.0, seed)
                )
            )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"policy": "guarded", "epsilon": -1.0}, ValueError, "epsilon must be >= 0"),
        ({"policy": "guarded", "epsilon": math.nan}, ValueError, "epsilon must be finite"),
        ({"policy": "guarded", "epsilon": "1"}, TypeError, "epsilon must be a number"),
        ({"policy": "rollout", "epsilon": 1.0}, ValueError, "only to policy 'guarded'"),
        ({"policy": "guarded", "score_noise": 3}, TypeError, "score_noise must be callable"),
        (
            {"policy": "guarded", "score_noise": lambda s, a: math.inf},
            ValueError,
            "score_noise.*must be finite",
        ),
        ({"policy": "guarded", "score_noise": lambda s, a: "x"}, TypeError, "must be a number"),
    ],
)
def test_bad_guard_arguments_name_the_field(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    model = ls.Model(ls.scenario_by_id("S0348").scenario)
    with pytest.raises(error, match=match):
        model.solve(**kwargs)  # type: ignore[arg-type]


def test_the_core_guards_itself() -> None:
    # The core model as learnsched builds it: its decide falls back on the Python checks.
    model = ls.Model(ls.scenario_by_id("S0348").scenario)._model
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        model.solve(_core.finite.Policy.GUARDED, -1.0)
    with pytest.raises(ValueError, match="score noise must be finite"):
        model.solve(_core.finite.Policy.GUARDED, 0.0, lambda s, a: math.nan)
    with pytest.raises(ValueError, match="epsilon must be finite, got nan"):
        model.decide(0, 0, 0, False, _core.finite.Policy.GUARDED, math.nan)
    assert model.decide(0, 0, 0, False, _core.finite.Policy.GUARDED) == model.decide(
        0, 0, 0, False, _core.finite.Policy.ROLLOUT
    )
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        _core.finite.solve_batch(
            [ls.scenario_by_id("S0348").scenario.to_core()], [_core.finite.Policy.GUARDED], 1, -1.0
        )


def _solve_cli(tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(ls.scenario_by_id("S0348").scenario.to_json()))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["solve", str(path), *flags])
    return status, json.loads(out.getvalue()) if status == 0 else {}, err.getvalue()


@pytest.mark.parametrize(
    ("epsilon", "equals"), [("0", "rollout"), ("1e300", "costed_window"), ("inf", "costed_window")]
)
def test_cli_guarded_json_equals_its_limits(tmp_path: Path, epsilon: str, equals: str) -> None:
    status, data, _ = _solve_cli(tmp_path, "--policy", "guarded", "--epsilon", epsilon, "--json")
    assert status == 0
    guarded = data["policies"]["guarded"]
    _, other, _ = _solve_cli(tmp_path, "--policy", equals, "--json")
    assert guarded == other["policies"][equals]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--policy", "rollout", "--epsilon", "1"), "--epsilon goes with --policy guarded"),
        (("--epsilon", "1"), "--epsilon goes with --policy guarded"),
        (("--policy", "guarded", "--epsilon", "-1"), "epsilon must be >= 0"),
        (("--policy", "guarded", "--epsilon", "nan"), "epsilon must be finite"),
    ],
)
def test_cli_guard_errors_are_one_line(
    tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    status, _, err = _solve_cli(tmp_path, *flags)
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


# --- the private entry points -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("noise", "error", "message"),
    [
        (
            lambda s, a: "x",
            TypeError,
            "score_noise(state, action) must return a number (s-eq.), got str",
        ),
        (lambda s, a: None, TypeError, "must return a number (s-eq.), got NoneType"),
        (lambda s, a: True, TypeError, "must return a number (s-eq.), got bool"),
        (lambda s, a: 10**400, ValueError, "must return a finite number"),
    ],
)
def test_private_score_noise_is_checked_like_the_public_one(
    noise: Any, error: type[Exception], message: str
) -> None:
    """The core checks what a score returns itself: pybind11's cast alone raises an unnamed
    RuntimeError ("Unable to cast Python instance ...")."""
    # The core model as learnsched builds it: its decide falls back on the Python checks.
    model = ls.Model(ls.scenario_by_id("S0348").scenario)._model
    with pytest.raises(error, match=re.escape(message)):
        model.solve(_core.finite.Policy.GUARDED, 0.0, noise)
    with pytest.raises(error, match=re.escape(message.replace("score_noise", "scores"))):
        _core.finite.measure_score_error(model, noise, 0.0, _core.finite.Reach.ALL)
    with pytest.raises((TypeError, ValueError), match="score_noise"):  # the Python checks
        model.decide(0, 0, 0, False, "guarded", 0.0, noise)
    assert model.solve(_core.finite.Policy.GUARDED, 0.0, lambda s, a: np.float32(0.5)).value > 0
