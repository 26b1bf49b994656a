"""Slow, obviously-correct reference for the finite window model.

An independent oracle for the solver tests. It follows ``finite-model.md`` (the
paper's Sections 4.1-4.3, 6.1 and Appendix D) rule by rule, in floating point, memoising
values per state. Ties are broken in the spec's canonical action order with a relative
tolerance of 1e-9 s-eq., so that traces are reproducible across implementations.

Three extensions beyond the paper. A scenario with ``cold_recovery_s`` offers two return
paths: every returning action comes in a warm variant (``recovery_s``, ``residency_rate``
charged on the whole segment, from the window start until capacity is ready) and a cold
one (``cold_recovery_s``, no residency), warm first in canonical order; a variant is
feasible only if its own return fits (Eq. 10). Window, Static ROI and Never take the most
work any path fits and then the variant with the larger reward (the first on ties); Costed
Window (pi0) takes, in each state, the action of the fixed-path Costed Window (warm only or
cold only) whose value from that state is larger (warm on ties). And the
guarded rollout (Eqs. D.5-D.6) replaces Costed Window's action only by an estimated score
margin above ``2*epsilon``. And the benefit rate may be a piecewise-constant schedule
``((t_0, g_0), (t_1, g_1), ...)``: ``g_i`` from ``t_i`` until the next piece starts (the last
until ``H``), 0 before ``t_0``; publishing at ``t_p`` earns the integral of the rate from
``t_p`` to ``H``, here summed piece by piece with ``math.fsum`` (exactly rounded).
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

POLICIES = ("never", "window", "static_roi", "costed_window", "rollout", "dp")

Action = tuple[str, int, bool, bool]  # (name, quanta, checkpoint, cold)
State = tuple[int, int, int, bool]  # (window k, progress p, durable pbar, active)
ValueFn = Callable[["RefScenario", State], float]
NoiseFn = Callable[[State, Action], float]

TOLERANCE = 1e-9  # s-eq. and seconds, absolute
RELATIVE_TOLERANCE = 1e-12  # of the larger value's magnitude
TIME_ULPS = 16 * sys.float_info.epsilon  # a window is only as exact as its endpoints
_WAIT: Action = ("wait", 0, False, False)


def _exceeds(a: float, b: float) -> bool:
    """Whether ``a`` is larger than ``b`` by more than the tie tolerance."""
    return a - b > TOLERANCE + RELATIVE_TOLERANCE * max(abs(a), abs(b))


def _fits(duration_s: float, start_s: float, end_s: float) -> bool:
    """Whether a segment of ``duration_s`` fits the window ``[start_s, end_s]`` (tolerant)."""
    return duration_s <= (end_s - start_s) + TOLERANCE + TIME_ULPS * max(abs(start_s), abs(end_s))


@dataclass(frozen=True)
class RefScenario:
    """One candidate, its idle windows and its prices (times in s, costs in s-eq.)."""

    windows: tuple[tuple[float, float], ...]
    work_quanta: int
    quantum_s: float
    benefit_rate: float
    horizon_s: float
    recovery_s: float
    residency_rate: float
    save_s: float
    load_s: float
    progress: int
    durable: int
    active: bool
    cold_recovery_s: float | None = None  # a second, cold return path (rho = 0)
    # g(t) by pieces ((start_s, rate), ...) instead of the constant benefit_rate.
    benefit_schedule: tuple[tuple[float, float], ...] | None = None

    def __post_init__(self) -> None:
        """Reject initial states the model cannot represent."""
        if not 0 <= self.durable <= self.progress <= self.work_quanta:
            raise ValueError(
                f"need 0 <= durable ({self.durable}) <= progress ({self.progress})"
                f" <= work_quanta ({self.work_quanta})"
            )
        if not self.active and self.progress != self.durable:
            raise ValueError("a service-mode state needs progress == durable")

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> RefScenario:
        """Build a scenario from its JSON object (``initial`` holds the start state)."""
        initial = obj["initial"]
        two_path = "cold_recovery_s" in obj
        rate = obj["benefit_rate"]
        scheduled = isinstance(rate, list)
        return cls(
            windows=tuple((float(a), float(b)) for a, b in obj["windows"]),
            work_quanta=int(obj["work_quanta"]),
            quantum_s=float(obj["quantum_s"]),
            benefit_rate=0.0 if scheduled else float(rate),
            horizon_s=float(obj["horizon_s"]),
            recovery_s=float(obj["warm_recovery_s" if two_path else "recovery_s"]),
            residency_rate=float(obj["residency_rate"]),
            save_s=float(obj["save_s"]),
            load_s=float(obj["load_s"]),
            progress=int(initial["progress"]),
            durable=int(initial["durable"]),
            active=bool(initial["active"]),
            cold_recovery_s=float(obj["cold_recovery_s"]) if two_path else None,
            benefit_schedule=tuple((float(t), float(g)) for t, g in rate) if scheduled else None,
        )

    @property
    def paths(self) -> tuple[bool, ...]:
        """The ``cold`` flags of the offered return paths: (False,) or (False, True)."""
        return (False,) if self.cold_recovery_s is None else (False, True)

    def path(self, cold: bool) -> tuple[float, float]:
        """(t_ret, rho) of the warm (or only) path, or of the cold one."""
        if cold:
            assert self.cold_recovery_s is not None
            return self.cold_recovery_s, 0.0
        return self.recovery_s, self.residency_rate

    @property
    def initial_state(self) -> State:
        """The state at the start of window 0."""
        return (0, self.progress, self.durable, self.active)


@dataclass(frozen=True)
class RefStep:
    """What one window does: the action, its timeline and its s-eq. cost split."""

    window: int
    action: str
    quanta: int
    checkpoint: bool
    start_s: float
    publish_s: float | None
    ready_s: float | None
    work: float
    save: float
    load: float
    recovery: float
    residency: float
    benefit: float
    cold: bool = False

    @property
    def cost(self) -> float:
        """Total s-eq. charged in this window."""
        return self.work + self.save + self.load + self.recovery + self.residency

    @property
    def reward(self) -> float:
        """Net reward R_k(s, a): benefit minus cost."""
        return self.benefit - self.cost


@dataclass(frozen=True)
class RefPlan:
    """A whole plan: net value, benefit, publication time and the per-window steps."""

    value: float
    benefit: float
    publish_s: float | None
    steps: tuple[RefStep, ...]


def _plan(steps: list[RefStep]) -> RefPlan:
    """Total a list of steps into a plan."""
    publish_times = [step.publish_s for step in steps if step.publish_s is not None]
    return RefPlan(
        value=sum(step.reward for step in steps),
        benefit=sum(step.benefit for step in steps),
        publish_s=publish_times[0] if publish_times else None,
        steps=tuple(steps),
    )


# --- model rules ----------------------------------------------------------------------


def _base(p: int, pbar: int, active: bool) -> int:
    """Progress this window's work builds on (rule 8: active keeps unsaved work)."""
    return p if active else pbar


def _load_s(s: RefScenario, pbar: int, active: bool) -> float:
    """Rule 1: resuming from a checkpoint in service mode loads it."""
    return s.load_s if not active and pbar > 0 else 0.0


def _benefit(s: RefScenario, publish_s: float) -> float:
    """Phi(t_p): g * (H - t_p)^+, or the schedule's integral of g from t_p to H."""
    if s.benefit_schedule is None:
        return s.benefit_rate * max(0.0, s.horizon_s - publish_s)
    return scheduled_benefit(s.benefit_schedule, s.horizon_s, publish_s)


def scheduled_benefit(
    schedule: tuple[tuple[float, float], ...], horizon_s: float, publish_s: float
) -> float:
    """The integral of a piecewise-constant rate from ``publish_s`` to ``horizon_s``: each
    piece's rate times the part of ``[publish_s, horizon_s]`` it covers."""
    ends = [t for t, _ in schedule[1:]] + [math.inf]
    return math.fsum(
        rate * max(0.0, min(horizon_s, end) - max(publish_s, start))
        for (start, rate), end in zip(schedule, ends, strict=True)
    )


def _duration_s(s: RefScenario, state: State, action: Action) -> float:
    """Wall-clock time from the window start until capacity is ready (Eq. 10's LHS)."""
    _, _, pbar, active = state
    name, quanta, checkpoint, cold = action
    if name == "wait":
        return 0.0
    load = _load_s(s, pbar, active) if name in ("publish", "advance") else 0.0
    save = s.save_s if checkpoint else 0.0
    return load + quanta * s.quantum_s + save + s.path(cold)[0]


def _successor(state: State, action: Action) -> State | None:
    """Rules 5-8: the next window's state, or None once the plan has ended."""
    k, p, pbar, active = state
    name, quanta, checkpoint, _ = action
    if name in ("publish", "abandon"):
        return None
    kept = _base(p, pbar, active) + quanta if checkpoint else pbar
    return (k + 1, kept, kept, False)


def _transition(s: RefScenario, state: State, action: Action) -> tuple[RefStep, State | None]:
    """Apply one action: the step it records and the successor state."""
    k, _, pbar, active = state
    name, quanta, checkpoint, cold = action
    recovery_s, residency_rate = s.path(cold)
    start = s.windows[k][0]
    if name == "wait":  # Rule 7: free.
        step = RefStep(k, name, 0, False, start, None, None, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return step, _successor(state, action)
    duration = _duration_s(s, state, action)
    load = _load_s(s, pbar, active) if name in ("publish", "advance") else 0.0
    work = quanta * s.quantum_s
    publish_s = start + load + work if name == "publish" else None
    step = RefStep(
        window=k,
        action=name,
        quanta=quanta,
        checkpoint=checkpoint,
        start_s=start,
        publish_s=publish_s,
        ready_s=start + duration,
        work=work,
        save=s.save_s if checkpoint else 0.0,
        load=load,
        recovery=recovery_s,
        # Rule 4: rho per charged second; parked state is held from l_k until ready.
        residency=residency_rate * duration,
        benefit=0.0 if publish_s is None else _benefit(s, publish_s),
        cold=cold,
    )
    return step, _successor(state, action)


def feasible_actions(s: RefScenario, k: int, p: int, pbar: int, active: bool) -> list[Action]:
    """Every feasible action at ``(k, p, pbar, active)``, in canonical order.

    Every action that returns capacity must fit the window by its own path (Eq. 10); an
    active candidate's abandon and discard always fit by some path (validated scenarios).
    """
    return list(_feasible(s, (k, p, pbar, active)))


@cache
def _feasible(s: RefScenario, state: State) -> tuple[Action, ...]:
    """Memoised body of :func:`feasible_actions`."""
    k, p, pbar, active = state
    start, end = s.windows[k]
    remaining = s.work_quanta - _base(p, pbar, active)
    advances = range(remaining - 1, 0, -1)  # u = remaining is publishing.
    kinds: list[tuple[str, int, bool]] = [("publish", remaining, False)]
    kinds += [("advance", u, True) for u in advances]
    kinds += [("advance", u, False) for u in advances]
    # Checkpoint-return only with unsaved work: with none it would save nothing.
    unsaved = [("checkpoint_return", 0, True)] if p > pbar else []
    head = [("abandon", 0, False), *unsaved, ("discard_return", 0, False)]
    returning = [(*kind, cold) for kind in (head if active else []) + kinds for cold in s.paths]
    return tuple(
        action
        for action in ([] if active else [_WAIT]) + returning
        # Eq. 10: load + u*delta + [save]*t_ck + t_ret <= d_k - l_k.
        if action == _WAIT or _fits(_duration_s(s, state, action), start, end)
    )


# --- policies -------------------------------------------------------------------------


def _cheapest(s: RefScenario, state: State, variants: list[Action]) -> Action:
    """The variant (feasible, canonical order) with the largest reward; ties keep the first."""
    best = variants[0]
    for action in variants[1:]:
        if _exceeds(_transition(s, state, action)[0].reward, _transition(s, state, best)[0].reward):
            best = action
    return best


def _variants(s: RefScenario, state: State, name: str) -> list[Action]:
    """Every feasible variant (path) of the zero-quanta action ``name``."""
    return [a for a in _feasible(s, state) if a[0] == name]


def _decline(s: RefScenario, state: State) -> Action:
    """Not acting: wait, or, if active, discard unsaved work and return (cheapest path)."""
    return _cheapest(s, state, _variants(s, state, "discard_return")) if state[3] else _WAIT


def _never_action(s: RefScenario, state: State) -> Action:
    """Never: wait; an active candidate abandons (cheapest path)."""
    return _cheapest(s, state, _variants(s, state, "abandon")) if state[3] else _WAIT


def _window_action(s: RefScenario, state: State) -> Action:
    """Window: publish if it fits, else the largest checkpointed advance, else pass; of the
    variants that do this much work, the cheapest."""
    actions = _feasible(s, state)
    publishes = [a for a in actions if a[0] == "publish"]
    if publishes:
        return _cheapest(s, state, publishes)
    saved = [a for a in actions if a[0] == "advance" and a[2]]
    if saved:
        most = max(a[1] for a in saved)
        return _cheapest(s, state, [a for a in saved if a[1] == most])
    if not state[3]:
        return _WAIT
    if _variants(s, state, "checkpoint_return"):
        return _cheapest(s, state, _variants(s, state, "checkpoint_return"))
    return _decline(s, state)


def _abandon_value(s: RefScenario, state: State) -> float:
    """V_ab(s): an active candidate pays its cheapest return; a service one loses nothing."""
    if not state[3]:
        return 0.0
    return max(-(1.0 + s.path(a[3])[1]) * s.path(a[3])[0] for a in _variants(s, state, "abandon"))


def _costed_window_action(s: RefScenario, state: State) -> Action:
    """Costed Window (pi0): Window's action iff its full plan beats abandoning; with two
    paths, the action of the better fixed-path Costed Window from ``state``."""
    if s.cold_recovery_s is not None:
        return _path_choice_action(s, state)
    go_value = _policy_value(s, "window", state)
    if _exceeds(go_value, _abandon_value(s, state)):
        return _window_action(s, state)
    return _decline(s, state)


def fixed_path(s: RefScenario, cold: bool) -> RefScenario:
    """The scenario with only one of its two return paths."""
    recovery_s, residency_rate = s.path(cold)
    return replace(s, recovery_s=recovery_s, residency_rate=residency_rate, cold_recovery_s=None)


def _path_choice_action(s: RefScenario, state: State) -> Action:
    """pi0 with two paths: follow whichever fixed-path Costed Window is worth more from
    ``state`` (warm on ties; an active state only by a path that can return from it)."""
    best: tuple[Action, float] | None = None
    for cold in s.paths:
        one = fixed_path(s, cold)
        if state[3] and not _variants(one, state, "discard_return"):
            continue  # this path cannot return from the window
        name, quanta, checkpoint, _ = _costed_window_action(one, state)
        value = _policy_value(one, "costed_window", state)
        if best is None or _exceeds(value, best[1]):
            best = ((name, quanta, checkpoint, cold and name != "wait"), value)  # waits return nothing
    assert best is not None, "a valid active state can return by some path"
    return best[0]


def _static_roi_action(s: RefScenario, state: State) -> Action:
    """Take Window's action iff benefit minus bare work is positive (Static ROI)."""
    k, p, pbar, active = state
    work_s = (s.work_quanta - _base(p, pbar, active)) * s.quantum_s
    start = s.windows[k][0]
    if s.benefit_schedule is None:
        roi = s.benefit_rate * max(0.0, s.horizon_s - start - work_s) - work_s
    else:  # handoff-blind: publishing the rest right at the window start
        roi = _benefit(s, start + work_s) - work_s
    return _window_action(s, state) if _exceeds(roi, 0.0) else _decline(s, state)


def _q_value(s: RefScenario, state: State, action: Action, value: ValueFn) -> float:
    """Q(s, a) = R(s, a) + V(s'); ended plans continue with 0."""
    step, successor = _transition(s, state, action)
    return step.reward + (0.0 if successor is None else value(s, successor))


def _select(s: RefScenario, state: State, incumbent: Action, value: ValueFn) -> Action:
    """Keep ``incumbent`` unless a later canonical action beats the best so far."""
    best = _q_value(s, state, incumbent, value)
    for action in _feasible(s, state):
        q = _q_value(s, state, action, value)
        if _exceeds(q, best):
            incumbent, best = action, q
    return incumbent


def _reference_value(s: RefScenario, state: State) -> float:
    """V^pi0: the value of following Costed Window."""
    return _policy_value(s, "costed_window", state)


def _rollout_action(s: RefScenario, state: State) -> Action:
    """Rollout (Eq. 11): best Q under the pi0 continuation; ties keep pi0's action."""
    return _select(s, state, _costed_window_action(s, state), _reference_value)


def guarded_action(
    s: RefScenario, state: State, epsilon: float, noise: NoiseFn | None = None
) -> Action:
    """Guarded rollout (Eq. D.5): the best estimated score replaces Costed Window's action
    only if it beats that action's estimated score by more than ``2*epsilon``."""
    base = _costed_window_action(s, state)

    def score(action: Action) -> float:
        error = 0.0 if noise is None else noise(state, action)
        return _q_value(s, state, action, _reference_value) + error

    base_score = score(base)
    best, best_score = base, base_score
    for action in _feasible(s, state):
        if action != base and _exceeds(score(action), best_score):
            best, best_score = action, score(action)
    return best if best != base and _exceeds(best_score, base_score + 2 * epsilon) else base


def solve_guarded(s: RefScenario, epsilon: float, noise: NoiseFn | None = None) -> RefPlan:
    """Follow the guarded rollout from the initial state."""
    steps: list[RefStep] = []
    state: State | None = s.initial_state
    while state is not None and state[0] < len(s.windows):
        step, state = _transition(s, state, guarded_action(s, state, epsilon, noise))
        steps.append(step)
    return _plan(steps)


def _dp_action(s: RefScenario, state: State) -> Action:
    """DP: an optimal action, the first in canonical order up to ties."""
    return _select(s, state, _feasible(s, state)[0], _dp_state_value)


_CHOOSERS: dict[str, Callable[[RefScenario, State], Action]] = {
    "never": _never_action,
    "window": _window_action,
    "static_roi": _static_roi_action,
    "costed_window": _costed_window_action,
    "rollout": _rollout_action,
    "dp": _dp_action,
}


@cache
def _policy_value(s: RefScenario, policy: str, state: State) -> float:
    """Value of following ``policy`` from ``state`` to the end (Eq. D.1)."""
    if state[0] == len(s.windows):
        return 0.0
    return _q_value(
        s,
        state,
        _CHOOSERS[policy](s, state),
        lambda sc, st: _policy_value(sc, policy, st),
    )


@cache
def _dp_state_value(s: RefScenario, state: State) -> float:
    """Compute V*_k(s) = max_a R_k(s, a) + V*_{k+1}(s'), V*_T = 0 (Eq. D.2)."""
    if state[0] == len(s.windows):
        return 0.0
    return max(_q_value(s, state, a, _dp_state_value) for a in _feasible(s, state))


# --- public entry points --------------------------------------------------------------


def solve(s: RefScenario, policy: str) -> RefPlan:
    """Follow ``policy`` from the initial state and record one step per window."""
    if policy not in _CHOOSERS:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    steps: list[RefStep] = []
    state: State | None = s.initial_state
    while state is not None and state[0] < len(s.windows):
        step, state = _transition(s, state, _CHOOSERS[policy](s, state))
        steps.append(step)
    return _plan(steps)


def policy_action(s: RefScenario, policy: str, state: State) -> Action:
    """The action ``policy`` takes in ``state`` (any window, service or active)."""
    return _CHOOSERS[policy](s, state)


def state_value(s: RefScenario, policy: str, state: State) -> float:
    """``V^pi(state)`` for a policy, or ``V*(state)`` for ``"dp"`` (Eqs. D.1, D.2)."""
    if policy == "dp":
        return _dp_state_value(s, state)
    return _policy_value(s, policy, state)


def dp_value(s: RefScenario) -> float:
    """Return the optimum V*_0 of Eq. D.2, by memoised backward recursion."""
    return _dp_state_value(s, s.initial_state)


def _all_plans(s: RefScenario, state: State | None) -> Iterator[list[RefStep]]:
    """Every feasible sequence of steps from ``state`` (exponential)."""
    if state is None or state[0] == len(s.windows):
        yield []
        return
    for action in _feasible(s, state):
        step, successor = _transition(s, state, action)
        for rest in _all_plans(s, successor):
            yield [step, *rest]


def exhaustive_value(s: RefScenario) -> float:
    """Best value over every feasible plan, by enumeration; for tiny scenarios only."""
    return max(_plan(steps).value for steps in _all_plans(s, s.initial_state))


# --- the paper's grid (Section 6.1, Table D.1) ----------------------------------------

CALENDARS: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("front-loaded", (240.0, 80.0, 80.0, 80.0)),
    ("back-loaded", (80.0, 80.0, 80.0, 240.0)),
    ("alternating", (120.0, 240.0, 120.0, 240.0)),
    ("fragmented", (80.0, 80.0, 80.0, 80.0)),
    ("uniform", (160.0, 160.0, 160.0, 160.0)),
    ("continuous", (480.0,)),
)
WORK_S = (30.0, 60.0, 120.0, 180.0)
BENEFIT_RATES = (0.1, 0.25, 0.5, 1.0, 2.0)
TAILS_S = (120.0, 480.0)
# (name, t_ret, rho); warm rho = 6.383 GiB * 0.01 s-eq./(GiB s).
RECOVERIES = (("warm", 0.487, 0.06383), ("cold", 69.988, 0.0))
INITIAL_STATES = ("fresh", "unsaved-active", "saved-active", "saved-service")
GAP_S = 20.0
SAVE_S = 0.068075
LOAD_S = 0.047748


def _calendar_windows(durations: tuple[float, ...]) -> tuple[tuple[float, float], ...]:
    """Windows of the given durations from t = 0, separated by 20 s gaps."""
    windows: list[tuple[float, float]] = []
    start = 0.0
    for duration in durations:
        windows.append((start, start + duration))
        start += duration + GAP_S
    return tuple(windows)


def _initial(name: str, quanta: int) -> tuple[int, int, bool]:
    """(progress, durable, active) of a named initial state; half is quanta // 2."""
    half = quanta // 2
    return {
        "fresh": (0, 0, False),
        "unsaved-active": (half, 0, True),
        "saved-active": (half, half, True),
        "saved-service": (half, half, False),
    }[name]


def paper_grid(quantum_s: float = 5.0, fresh_only: bool = False) -> list[tuple[str, RefScenario]]:
    """List the paper's scenarios: calendar, work, rate, tail, recovery, initial state.

    The last dimension varies fastest. Ids are ``S0000``..``S1919`` for the full grid;
    with ``fresh_only`` the 480 fresh scenarios are numbered ``F000``..``F479``.
    """
    initials = INITIAL_STATES[:1] if fresh_only else INITIAL_STATES
    grid: list[tuple[str, RefScenario]] = []
    for calendar, work_s, rate, tail_s, recovery, initial in itertools.product(
        CALENDARS, WORK_S, BENEFIT_RATES, TAILS_S, RECOVERIES, initials
    ):
        windows = _calendar_windows(calendar[1])
        quanta = round(work_s / quantum_s)
        progress, durable, active = _initial(initial, quanta)
        scenario = RefScenario(
            windows=windows,
            work_quanta=quanta,
            quantum_s=quantum_s,
            benefit_rate=rate,
            horizon_s=windows[-1][1] + tail_s,
            recovery_s=recovery[1],
            residency_rate=recovery[2],
            save_s=SAVE_S,
            load_s=LOAD_S,
            progress=progress,
            durable=durable,
            active=active,
        )
        name = f"F{len(grid):03d}" if fresh_only else f"S{len(grid):04d}"
        grid.append((name, scenario))
    return grid


def clear_caches() -> None:
    """Forget every memoised value, so that a timing run starts cold."""
    for memo in (_feasible, _policy_value, _dp_state_value):
        memo.cache_clear()
