"""The guarded rollout with your own scores, and ``learnsched guard-check`` (App. D.3)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import re
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.cli import main
from learnsched.scores import Reach, check_scores, load_score_factory

import reference
from strategies import scenarios, to_reference

TOL = 1e-9
S0348 = ls.scenario_by_id("S0348").scenario  # cold: Rollout replaces pi0's action


def unit(state: _core.finite.State, action: _core.finite.Action, salt: int = 0) -> float:
    """A deterministic number in [-1, 1] per (state, action)."""
    key = (state.window, state.progress, state.durable, state.active, int(action.kind),
           action.quanta, action.checkpoint, action.cold, salt)  # fmt: skip
    digest = hashlib.sha256(repr(key).encode()).digest()
    return struct.unpack("<Q", digest[:8])[0] / 2**63 - 1.0


def exact_scores(scenario: ls.Scenario) -> Callable[[_core.finite.State, _core.finite.Action], float]:
    """Q^pi0(s, a) itself, from a model of the scenario."""
    model = ls.Model(scenario)
    return lambda s, a: model.reference_score(s, a)


def noisy_scores(
    scenario: ls.Scenario, bound: float
) -> Callable[[_core.finite.State, _core.finite.Action], float]:
    """Q^pi0(s, a) plus a deterministic error of at most ``bound``."""
    exact = exact_scores(scenario)
    return lambda s, a: exact(s, a) + bound * unit(s, a)


def test_exact_scores_are_rollout() -> None:
    for sid in ("S0348", "S0349", "S0301", "S1100", "S0712"):
        s = ls.scenario_by_id(sid).scenario
        guarded = ls.solve(s, "guarded", 0.0, scores=exact_scores(s))
        rollout = ls.solve(s, "rollout")
        assert guarded.value == rollout.value
        assert guarded.steps == rollout.steps
        check = check_scores(s, exact_scores(s), 0.0)
        assert check.worst_error == 0.0
        assert check.holds


def test_scores_equal_the_same_estimate_as_noise() -> None:
    """An estimator returning Q^pi0 + e decides exactly as score_noise e does."""
    exact = exact_scores(S0348)
    for bound in (0.5, 5.0, 50.0):

        def noise(s: _core.finite.State, a: _core.finite.Action, bound: float = bound) -> float:
            return bound * unit(s, a)

        def scores(s: _core.finite.State, a: _core.finite.Action, bound: float = bound) -> float:
            return exact(s, a) + bound * unit(s, a)

        for eps in (0.0, 1.0, bound):
            by_noise = ls.solve(S0348, "guarded", eps, score_noise=noise)
            by_scores = ls.solve(S0348, "guarded", eps, scores=scores)
            assert by_noise.steps == by_scores.steps


@settings(max_examples=120, deadline=None)
@given(scenarios(), st.sampled_from([0.0, 0.5, 3.0, 20.0]), st.sampled_from(list(Reach)))
def test_a_bound_that_holds_keeps_the_guarantee(
    scenario: ls.Scenario, epsilon: float, reach: Reach
) -> None:
    """Errors within epsilon: the check says so, and the guarded plan is never below
    Costed Window's (Eq. D.6)."""
    scores = noisy_scores(scenario, epsilon)
    check = check_scores(scenario, scores, epsilon, reach)
    assert check.worst_error <= epsilon + 1e-9
    assert check.holds or epsilon == 0.0  # exact scores up to rounding at epsilon = 0
    cw = ls.solve(scenario, "costed_window").value
    assert check.guarded_value >= cw - TOL * max(1.0, abs(cw))
    assert check.costed_window_value == cw


def reachable_states(scenario: ls.Scenario) -> set[tuple[int, int, int, bool]]:
    """Every state some feasible plan visits, by the reference's enumeration of plans."""
    ref = to_reference(scenario)
    seen = {ref.initial_state}
    frontier = [ref.initial_state]
    while frontier:
        state = frontier.pop()
        for action in reference.feasible_actions(ref, *state):
            _, successor = reference._transition(ref, state, action)
            if successor is not None and successor[0] < len(ref.windows) and successor not in seen:
                seen.add(successor)
                frontier.append(successor)
    return seen


@settings(max_examples=100, deadline=None)
@given(st.one_of(scenarios(max_windows=3, max_quanta=5), scenarios(two_path=True)))
def test_reach_all_scores_every_reachable_state(scenario: ls.Scenario) -> None:
    """The worst error over every reachable state and feasible action, against a
    brute-force walk and the reference's exact scores."""
    scores = noisy_scores(scenario, 1.0)
    check = check_scores(scenario, scores, 1.0, "all")
    ref = to_reference(scenario)
    states = reachable_states(scenario)
    assert check.states == len(states)
    worst = 0.0
    actions = 0
    for state in states:
        core_state = _core.finite.State(*state)
        for name, quanta, checkpoint, cold in reference.feasible_actions(ref, *state):
            action = _core.finite.Action(getattr(ls.ActionKind, name.upper()), quanta, checkpoint, cold)
            exact = reference._q_value(ref, state, (name, quanta, checkpoint, cold),
                                       reference._reference_value)  # fmt: skip
            worst = max(worst, abs(scores(core_state, action) - exact))
            actions += 1
    assert check.actions == actions
    assert math.isclose(check.worst_error, worst, rel_tol=1e-9, abs_tol=1e-9)


def test_a_bound_that_fails_is_reported_where_it_fails() -> None:
    """S0348: an estimator 30 s-eq. too kind to the first window's advances."""
    exact = exact_scores(S0348)

    def flattering(s: _core.finite.State, a: _core.finite.Action) -> float:
        return exact(s, a) + (30.0 if a.kind == ls.ActionKind.ADVANCE and s.window == 0 else 0.0)

    check = check_scores(S0348, flattering, 5.0, "all")
    assert not check.holds
    assert check.worst_error == pytest.approx(30.0)
    assert check.worst_state.window == 0
    assert check.worst_action.kind == ls.ActionKind.ADVANCE
    assert check.worst_estimate - check.worst_exact == pytest.approx(30.0)
    # On the guarded policy's own path the same estimator errs at window 0 too.
    assert not check_scores(S0348, flattering, 5.0).holds


def test_bad_scores_are_named() -> None:
    with pytest.raises(TypeError, match="scores must be callable"):
        ls.solve(S0348, "guarded", 1.0, scores=3.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"scores\(state, action\) must be finite"):
        ls.solve(S0348, "guarded", 1.0, scores=lambda s, a: math.nan)
    with pytest.raises(TypeError, match=r"scores\(state, action\) must be a number"):
        ls.solve(S0348, "guarded", 1.0, scores=lambda s, a: "1")
    with pytest.raises(ValueError, match="score_noise or scores, not both"):
        ls.solve(S0348, "guarded", 1.0, score_noise=lambda s, a: 0.0, scores=lambda s, a: 0.0)
    with pytest.raises(ValueError, match="apply only to policy 'guarded'"):
        ls.solve(S0348, "rollout", scores=lambda s, a: 0.0)
    with pytest.raises(ValueError, match="reach must be 'guarded' or 'all'"):
        check_scores(S0348, exact_scores(S0348), 1.0, "some")
    model = ls.Model(S0348)
    with pytest.raises(ValueError, match="not feasible"):
        model._model.reference_score(_core.finite.State(0, 0, 0, False), _core.finite.Action(ls.ActionKind.ABANDON))


def test_decide_takes_scores() -> None:
    model = ls.Model(S0348)
    scores = exact_scores(S0348)
    for k in range(len(S0348.windows)):
        for p in range(S0348.work_quanta + 1):
            assert model.decide(k, p, p, False, "guarded", 0.0, scores=scores) == model.decide(
                k, p, p, False, "rollout"
            )


FACTORY = '''
import hashlib, struct
import learnsched as ls


def _unit(s, a):
    key = (s.window, s.progress, s.durable, s.active, int(a.kind), a.quanta, a.checkpoint, a.cold)
    return struct.unpack("<Q", hashlib.sha256(repr(key).encode()).digest()[:8])[0] / 2**63 - 1.0


def within_two(scenario):
    model = ls.Model(scenario)._model
    return lambda s, a: model.reference_score(s, a) + 2.0 * _unit(s, a)


def broken(scenario):
    return lambda s, a: 1 / 0


not_callable = 3
'''


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def factory_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "my_scores.py").write_text(FACTORY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_scores", raising=False)
    return "my_scores"


def test_guard_check_cli(tmp_path: Path, factory_module: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([S0348.to_json(), ls.scenario_by_id("S0349").scenario.to_json()]))
    status, out, _ = run(["guard-check", str(path), "--scores", "my_scores:within_two",
                          "--epsilon", "2", "--json"])  # fmt: skip
    assert status == 0
    reports = json.loads(out)
    assert len(reports) == 2
    for report in reports:
        assert report["holds"] is True
        assert 0.0 < report["worst_error"] <= 2.0
        assert report["guarded_value"] >= report["costed_window_value"] - 1e-9
        assert set(report["worst"]) == {"state", "action", "estimate", "exact"}
    # The same estimator against a tighter bound: a violation, exit 1.
    status, out, _ = run(["guard-check", str(path), "--scores", "my_scores:within_two",
                          "--epsilon", "0.5", "--reach", "all"])  # fmt: skip
    assert status == 1
    assert "bound VIOLATED" in out
    assert "worst |Qhat - Q^pi0|" in out


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("my_scores", "scores must be MODULE:NAME"),
        ("no_such_module_xyz:f", "cannot import no_such_module_xyz"),
        ("my_scores:missing", "my_scores has no missing"),
        ("my_scores:not_callable", "not_callable is not callable"),
        ("my_scores:broken", r"my_scores:broken' \(scenario \[0\]\) failed: ZeroDivisionError"),
    ],
)
def test_guard_check_bad_scores_exit_2(
    tmp_path: Path, factory_module: str, spec: str, match: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(S0348.to_json()))
    status, out, err = run(["guard-check", str(path), "--scores", spec, "--epsilon", "1"])
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert re.search(match, err), err


def test_load_score_factory_returns_the_callable(factory_module: str) -> None:
    factory = load_score_factory("my_scores:within_two")
    assert callable(factory(S0348))
