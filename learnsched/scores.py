"""Your own scores for the guarded rollout, and the check of their error bound (App. D.3).

The guarded rollout (Eqs. D.5-D.6) compares estimated scores ``Qhat(s, a)`` of the
reference-continuation score ``Q^pi0(s, a) = R(s, a) + V^pi0(s')`` and replaces Costed
Window's action only by a margin above ``2*epsilon``. Its guarantee, never below Costed
Window, needs ``|Qhat - Q^pi0| <= epsilon`` for every candidate and reference action at
the states the policy can reach. :func:`check_scores` measures that worst error in the
model, where the exact scores are known, before the estimator is trusted online.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from . import _core
from ._named import import_named
from .scenario import Scenario
from .solver import Model, Policy, ScoreEstimate, checked_callback, guard_epsilon

__all__ = ["Reach", "ScoreCheck", "ScoreFactory", "check_scores", "load_score_factory"]

ScoreFactory = Callable[[Scenario], ScoreEstimate]
"""``factory(scenario) -> scores``: the estimator of one scenario (``learnsched guard-check``)."""


class Reach(str, Enum):
    """Which states :func:`check_scores` scores."""

    GUARDED = "guarded"
    """The states the guarded policy visits with these scores and this epsilon: where the
    induction of Eq. D.6 uses the bound, so a worst error <= epsilon there gives a plan
    never below Costed Window's."""
    ALL = "all"
    """Every state any feasible plan reaches: a worst error there bounds every guarded
    run with any epsilon at or above it."""

    @classmethod
    def parse(cls, value: str | Reach) -> Reach:
        """The reach named ``value``; ``ValueError`` naming both otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"reach must be 'guarded' or 'all', got {value!r}") from None


_CORE_REACH = {Reach.GUARDED: _core.finite.Reach.GUARDED, Reach.ALL: _core.finite.Reach.ALL}


@dataclass(frozen=True)
class ScoreCheck:
    """The worst error of score estimates over the states a policy can reach.

    Attributes
    ----------
    epsilon
        The guarded policy's score-error bound, s-eq.
    reach
        Which states were scored.
    states, actions
        States scored, and (state, action) pairs (every feasible action of each state).
    worst_error
        ``max |Qhat(s, a) - Q^pi0(s, a)|`` over them, s-eq.: the smallest ``epsilon`` the
        guarantee can use on these states.
    worst_state, worst_action
        Where it is (the first such state, in visiting order), as the core's objects.
    worst_estimate, worst_exact
        ``Qhat`` and ``Q^pi0`` there, s-eq.
    guarded_value, costed_window_value
        Values of the guarded plan with these scores and of Costed Window's, s-eq.
    """

    epsilon: float
    reach: Reach
    states: int
    actions: int
    worst_error: float
    worst_state: _core.finite.State
    worst_action: _core.finite.Action
    worst_estimate: float
    worst_exact: float
    guarded_value: float
    costed_window_value: float

    @property
    def holds(self) -> bool:
        """Whether the bound holds: ``worst_error <= epsilon``, so the guarded plan is
        guaranteed no worse than Costed Window's (Eq. D.6)."""
        return self.worst_error <= self.epsilon

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: s-eq. and counts; the state and action as objects."""
        s, a = self.worst_state, self.worst_action
        return {
            "epsilon": None if self.epsilon == float("inf") else self.epsilon,
            "reach": self.reach.value,
            "states": self.states,
            "actions": self.actions,
            "worst_error": self.worst_error,
            "holds": self.holds,
            "worst": {
                "state": {
                    "window": s.window,
                    "progress": s.progress,
                    "durable": s.durable,
                    "active": s.active,
                },
                "action": {
                    "kind": a.name,
                    "quanta": a.quanta,
                    "checkpoint": a.checkpoint,
                    "cold": a.cold,
                },
                "estimate": self.worst_estimate,
                "exact": self.worst_exact,
            },
            "guarded_value": self.guarded_value,
            "costed_window_value": self.costed_window_value,
        }


def check_scores(
    scenario: Scenario,
    scores: ScoreEstimate,
    epsilon: float,
    reach: str | Reach = Reach.GUARDED,
) -> ScoreCheck:
    """Measure the worst error of ``scores`` over the states a policy can reach.

    Parameters
    ----------
    scenario
        The scenario (its initial state is where the policy starts).
    scores
        ``(state, action) -> Qhat`` in s-eq.: your estimate of ``Q^pi0(s, a)`` for every
        feasible action, a deterministic function (it is called for every action of every
        state scored, and again by the guarded policy's own decisions).
    epsilon
        The guarded policy's score-error bound, s-eq. (``>= 0``, ``inf`` allowed).
    reach
        ``"guarded"`` (default): the states the guarded policy visits with these scores and
        this ``epsilon``; ``"all"``: every state any feasible plan reaches (one call per
        feasible action of each, up to O(K * J^2) calls).

    Returns
    -------
    ScoreCheck
        The worst error and where it is; ``holds`` when it is at most ``epsilon``.

    Raises
    ------
    TypeError
        ``scores`` is not callable, or an estimate is not a number.
    ValueError
        A bad ``epsilon`` or ``reach``, or an estimate that is not finite (naming it).
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    eps = guard_epsilon(epsilon)
    where = Reach.parse(reach)
    checked = checked_callback("scores", scores)
    assert checked is not None  # scores is required
    model = Model(scenario, (Policy.GUARDED, Policy.COSTED_WINDOW))
    report = _core.finite.measure_score_error(model._model, checked, eps, _CORE_REACH[where])
    return ScoreCheck(
        epsilon=eps,
        reach=where,
        states=report.states,
        actions=report.actions,
        worst_error=report.worst,
        worst_state=report.worst_state,
        worst_action=report.worst_action,
        worst_estimate=report.worst_estimate,
        worst_exact=report.worst_exact,
        guarded_value=model.solve(Policy.GUARDED, eps, scores=checked).value,
        costed_window_value=model.solve(Policy.COSTED_WINDOW).value,
    )


def load_score_factory(spec: str) -> ScoreFactory:
    """The callable named by ``MODULE:NAME``, a factory ``(scenario) -> scores``.

    Raises
    ------
    ValueError
        Not ``MODULE:NAME``, the module cannot be imported, or it has no such name.
    TypeError
        The name is not callable.
    """
    factory = import_named(spec, "scores")
    if not callable(factory):
        raise TypeError(f"scores {spec!r}: {spec.partition(':')[2]} is not callable")
    return factory
