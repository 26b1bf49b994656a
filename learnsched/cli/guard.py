"""``learnsched guard-check``: the worst error of your score estimates (App. D.3).

The guarded rollout is never below Costed Window when its estimates err by at most
``epsilon`` over the states it can reach (Eqs. D.5-D.6). This command measures that worst
error in the model, where the exact scores are known, and exits 1 when it exceeds
``--epsilon`` (the guarantee does not hold).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from .._json import read_json
from ..scenario import Scenario, scenarios_from_json
from ..scores import Reach, ScoreCheck, ScoreFactory, check_scores, load_score_factory
from ..solver import ScoreEstimate
from .output import EXIT_OK, EXIT_VIOLATION, emit_json

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``guard-check`` sub-command."""
    parser = commands.add_parser(
        "guard-check",
        help="measure your guarded-rollout score estimates' worst error (App. D.3)",
        description=(
            "Score every feasible action of every state the policy can reach with your "
            "estimator and with the model's exact reference scores Q^pi0(s, a) = R(s, a) + "
            "V^pi0(s'), and report the worst absolute error: the guarded rollout's guarantee "
            "(never below Costed Window, Eq. D.6) needs it to be at most --epsilon. "
            "Exits 1 when it is not."
        ),
    )
    parser.add_argument("file", help="a scenario object or a list of them (JSON; '-' for stdin)")
    parser.add_argument(
        "--scores",
        required=True,
        metavar="MODULE:NAME",
        help="an importable factory: NAME(scenario) returns your estimator "
        "(state, action) -> Qhat in s-eq.",
    )
    parser.add_argument(
        "--epsilon",
        type=float,
        required=True,
        metavar="E",
        help="the guarded policy's score-error bound, s-eq. (>= 0; inf allowed)",
    )
    parser.add_argument(
        "--reach",
        choices=[r.value for r in Reach],
        default=Reach.GUARDED.value,
        help="guarded (default): the states the guarded policy visits with these scores; "
        "all: every state any feasible plan reaches (bounds every guarded run)",
    )
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.set_defaults(func=run_guard_check)


def _estimator(spec: str, factory: ScoreFactory, scenario: Scenario, index: int) -> ScoreEstimate:
    """The factory's estimator for one scenario; its own failures are bad input, named."""
    where = f"scores {spec!r} (scenario [{index}])"
    try:
        scores = factory(scenario)
    except Exception as err:
        raise ValueError(f"{where} failed: {type(err).__name__}: {err}") from err
    if not callable(scores):
        raise TypeError(f"{where} must return a callable (state, action) -> s-eq., got {scores!r}")

    def estimate(state: Any, action: Any) -> float:
        try:
            return scores(state, action)
        except Exception as err:
            raise ValueError(f"{where} failed: {type(err).__name__}: {err}") from err

    return estimate


def run_guard_check(args: argparse.Namespace) -> int:
    """``learnsched guard-check FILE --scores MODULE:NAME --epsilon E``."""
    scenarios, many = scenarios_from_json(read_json(args.file))
    factory = load_score_factory(args.scores)
    checks = [
        check_scores(s, _estimator(args.scores, factory, s, i), args.epsilon, args.reach)
        for i, s in enumerate(scenarios)
    ]
    if args.json:
        objs = [c.to_json() for c in checks]
        emit_json(objs if many else objs[0])
    else:
        for i, check in enumerate(checks):
            print(_text(check, f"scenario [{i}]: " if many else ""))
    return EXIT_OK if all(c.holds for c in checks) else EXIT_VIOLATION


def _text(check: ScoreCheck, header: str) -> str:
    s, a = check.worst_state, check.worst_action
    mode = "active" if s.active else "service"
    eps = "inf" if math.isinf(check.epsilon) else f"{check.epsilon:g}"
    verdict = (
        f"bound holds (<= epsilon {eps}): the guarded plan ({check.guarded_value:.3f}) is "
        f"never below Costed Window ({check.costed_window_value:.3f}), Eq. D.6"
        if check.holds
        else f"bound VIOLATED (> epsilon {eps}): no guarantee; guarded "
        f"{check.guarded_value:.3f}, Costed Window {check.costed_window_value:.3f}"
    )
    return (
        f"{header}{check.states} states, {check.actions} actions scored "
        f"(reach {check.reach.value})\n"
        f"  worst |Qhat - Q^pi0| = {check.worst_error:.6g} s-eq. at window {s.window}, "
        f"progress {s.progress}, durable {s.durable} ({mode}), {_action_text(a)}: "
        f"estimate {check.worst_estimate:.6g}, exact {check.worst_exact:.6g}\n"
        f"  {verdict}"
    )


def _action_text(action: Any) -> str:
    path = ", cold return" if action.cold else ""
    if action.name == "advance":
        saved = " + checkpoint" if action.checkpoint else " (unsaved)"
        return f"advance {action.quanta} quanta{saved}{path}"
    if action.name == "publish":
        return f"publish {action.quanta} quanta{path}"
    return str(action.name).replace("_", " ") + path
