"""Slow, obviously-correct decisions under a forecast, on top of tests/reference.py.

For the current window and N sampled continuations, each sample ``i`` is the scenario
``[current] + sample_i`` of the pure-Python reference; an action scores
``R(a) + mean_i V_i(s')`` with ``V_i`` the reference's own values on that scenario.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import reference
from reference import Action, RefScenario, State

Window = tuple[float, float]


def _scenarios(
    base: RefScenario, current: Window, samples: Sequence[Sequence[Window]]
) -> list[RefScenario]:
    return [replace(base, windows=(current, *sample)) for sample in samples]


def _mean_continuation(
    refs: list[RefScenario], state: State, action: Action, policy: str
) -> tuple[float, float]:
    """``R(a)`` and ``mean_i V_i(s')`` (0 after publishing or abandoning)."""
    step, successor = reference._transition(refs[0], state, action)
    if successor is None:
        return step.reward, 0.0
    values = [reference.state_value(r, policy, successor) for r in refs]
    return step.reward, sum(values) / len(values)


def _best(refs: list[RefScenario], state: State, incumbent: Action, policy: str) -> Action:
    def q(action: Action) -> float:
        reward, mean = _mean_continuation(refs, state, action, policy)
        return reward + mean

    best = q(incumbent)
    for action in reference._feasible(refs[0], state):
        score = q(action)
        if reference._exceeds(score, best):
            incumbent, best = action, score
    return incumbent


def _costed_window(refs: list[RefScenario], state: State) -> Action:
    go = reference._window_action(refs[0], state)
    reward, mean = _mean_continuation(refs, state, go, "window")
    if reference._exceeds(reward + mean, reference._abandon_value(refs[0], state)):
        return go
    return reference._decline(refs[0], state)


def decide(
    base: RefScenario,
    current: Window,
    samples: Sequence[Sequence[Window]],
    policy: str,
    state: State,
) -> Action:
    """The action of ``policy`` (window, costed_window, rollout, dp) at the current window."""
    refs = _scenarios(base, current, samples)
    if policy == "window":
        return reference._window_action(refs[0], state)
    if policy == "costed_window":
        return _costed_window(refs, state)
    if policy == "rollout":
        return _best(refs, state, _costed_window(refs, state), "costed_window")
    if policy == "dp":
        return _best(refs, state, reference._never_action(refs[0], state), "dp")
    raise ValueError(f"policy must be window, costed_window, rollout or dp, got {policy!r}")
