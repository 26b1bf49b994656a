"""Solve a scenario under a policy, or ask a prepared model for the next action."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from enum import Enum
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import bool_vector, indexed, int32_vector, integer, number
from .benefit import benefit_text
from .plan import Plan
from .scenario import C_INT_MAX, Scenario, flag

__all__ = [
    "ALL_POLICIES",
    "Action",
    "ActionKind",
    "Decisions",
    "Model",
    "Policy",
    "ScoreEstimate",
    "ScoreNoise",
    "State",
    "solve",
    "solve_all",
]

Action = _core.finite.Action
ActionKind = _core.finite.ActionKind
State = _core.finite.State
"""A decision state ``(window, progress, durable, active)``, as score callbacks get it."""
# Error of an estimated score, s-eq., as a deterministic function of (state, action).
ScoreNoise = Callable[[_core.finite.State, _core.finite.Action], float]
# A user's own score estimate Qhat(s, a) of Q^pi0(s, a) = R(s, a) + V^pi0(s'), s-eq.
ScoreEstimate = Callable[[_core.finite.State, _core.finite.Action], float]


class Policy(str, Enum):
    """The six policies of the paper's finite experiment (Sections 4.1-4.2, App. D), and
    the guarded rollout that Section 4.2 names as the condition for online use."""

    NEVER = "never"
    """Wait every window; an active candidate abandons and pays its return."""
    WINDOW = "window"
    """Greedy: publish if the rest fits, else advance the most checkpointed quanta."""
    STATIC_ROI = "static_roi"
    """Window, gated by a return on investment that ignores every handoff."""
    COSTED_WINDOW = "costed_window"
    """The reference pi0: Window, gated by the fully priced value of its plan; with two
    return paths, the better of the two fixed-path Costed Windows from each state."""
    ROLLOUT = "rollout"
    """LearnSched: one-step rollout over Costed Window (Eq. 11)."""
    DP = "dp"
    """The exact optimum by dynamic programming (Eq. D.2)."""
    GUARDED = "guarded"
    """Rollout that replaces pi0's action only if its (estimated) score beats pi0's by more
    than ``2*epsilon`` (Eqs. D.5-D.6): never below Costed Window when scores err by at most
    ``epsilon``. ``epsilon = 0`` with exact scores is Rollout; ``inf`` is Costed Window."""

    @classmethod
    def parse(cls, value: str | Policy) -> Policy:
        """The policy named ``value``; ``ValueError`` listing the names otherwise."""
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise ValueError(f"policy must be one of {names}, got {value!r}") from None


# The paper's six (the grid, its figures and solve_all's default); guarded is asked by name.
ALL_POLICIES: tuple[Policy, ...] = tuple(p for p in Policy if p is not Policy.GUARDED)


def parse_policies(policies: str | Iterable[str | Policy]) -> tuple[Policy, ...]:
    """The policies named by ``policies``: one name (``"dp"``) or an iterable of names.

    A lone string means one policy, never its letters (:class:`Policy` is a ``str`` too).
    """
    if isinstance(policies, str):
        return (Policy.parse(policies),)
    if not isinstance(policies, Iterable):
        raise TypeError(f"policies must be a policy name or an iterable of them, got {policies!r}")
    return tuple(indexed("policies", policies, Policy.parse))


# Keyed by the enum members, which hash and compare like their strings, so a plain
# "rollout" finds its entry too without a conversion on the decide() hot path. The core
# names its policies; the Python enum must list the same ones in the same order.
_CORE_POLICY: dict[str, _core.finite.Policy] = {
    _core.finite.policy_name(p): p for p in _core.finite.Policy.__members__.values()
}
if list(_CORE_POLICY) != [p.value for p in Policy]:  # pragma: no cover - a build mismatch
    raise ImportError(
        f"learnsched.Policy {[p.value for p in Policy]} does not match the core's policies "
        f"{list(_CORE_POLICY)}: rebuild the extension (pip install .)"
    )


def core_policy(policy: str | Policy) -> _core.finite.Policy:
    """The core's enum value for a policy name or member."""
    try:
        return _CORE_POLICY[policy]
    except (KeyError, TypeError):
        return _CORE_POLICY[Policy.parse(policy)]


def _state_args(
    window: object, progress: object, durable: object, active: object
) -> tuple[int, int, int, bool]:
    """A state's fields as the core's C types, or a ``TypeError``/``ValueError`` naming the
    field (ranges against the scenario are the core's checks, which name them too)."""
    return (
        integer("window", window, -C_INT_MAX, C_INT_MAX),
        integer("progress", progress, -C_INT_MAX, C_INT_MAX),
        integer("durable", durable, -C_INT_MAX, C_INT_MAX),
        flag("active", active),
    )


def _core_state(window: object, progress: object, durable: object, active: object) -> _core.finite.State:
    return _core.finite.State(*_state_args(window, progress, durable, active))


def decide_arguments(
    window: object,
    progress: object,
    durable: object,
    active: object,
    policy: str | Policy | _core.finite.Policy,
    epsilon: object,
    score_noise: object,
    scores: object,
) -> tuple[int, int, int, bool, _core.finite.Policy, float, ScoreNoise | None, ScoreEstimate | None]:
    """:meth:`Model.decide`'s arguments checked and converted, in the order the core takes
    them, or a ``TypeError``/``ValueError`` naming the field.

    The core's ``decide`` checks plain arguments itself (ints, a bool, a policy, no guard
    arguments) and calls this for every other call: numpy integers, guard arguments, or
    a bad argument, which then fails with the message every other function gives it.
    """
    state = _state_args(window, progress, durable, active)
    core = policy if isinstance(policy, _core.finite.Policy) else core_policy(policy)
    return (*state, core, *_guard(policy, epsilon, score_noise, scores))


def guard_epsilon(epsilon: object) -> float:
    """The score-error bound as a float ``>= 0`` (``inf`` allowed), s-eq."""
    if isinstance(epsilon, float) and math.isinf(epsilon) and epsilon > 0:
        return epsilon
    value = number("epsilon", epsilon)
    if value < 0:
        raise ValueError(f"epsilon must be >= 0 s-eq., got {value!r}")
    return value


def checked_callback(
    name: str, f: object
) -> Callable[[_core.finite.State, _core.finite.Action], float] | None:
    """``f`` wrapped so that each answer is checked as a finite number naming ``name``."""
    if f is None:
        return None
    if not callable(f):
        raise TypeError(f"{name} must be callable (state, action) -> s-eq., got {f!r}")
    call = f

    def checked(state: _core.finite.State, action: _core.finite.Action) -> float:
        return number(f"{name}(state, action)", call(state, action))

    return checked


def _guard(
    policy: str | Policy | _core.finite.Policy,
    epsilon: object,
    score_noise: object,
    scores: object = None,
) -> tuple[float, ScoreNoise | None, ScoreEstimate | None]:
    """Checked guard arguments; only the guarded policy takes them, and only one of
    ``score_noise`` and ``scores``."""
    eps = guard_epsilon(epsilon)
    given = eps != 0.0 or score_noise is not None or scores is not None
    guarded = (
        policy == _core.finite.Policy.GUARDED
        if isinstance(policy, _core.finite.Policy)
        else Policy.parse(policy) is Policy.GUARDED
    )
    if not guarded and given:
        raise ValueError(
            f"epsilon, score_noise and scores apply only to policy 'guarded', got {policy!r}"
        )
    if score_noise is not None and scores is not None:
        raise ValueError("give score_noise or scores, not both")
    return eps, checked_callback("score_noise", score_noise), checked_callback("scores", scores)


class _CheckedModel(_core.finite.Model):
    """The core's model with the checks its ``decide`` falls back on for every call it does
    not take as is (numpy integers, guard arguments, a bad argument): the extension reads
    them from the model's class and never imports this package."""

    check_arguments = staticmethod(decide_arguments)


class Decisions(NamedTuple):
    """The actions of :meth:`Model.decide_many`, one entry per state (numpy arrays).

    ``kind`` holds :class:`ActionKind` values (``ActionKind(int(kind[i]))``): 0 wait,
    1 abandon, 2 checkpoint_return, 3 discard_return, 4 publish, 5 advance.
    """

    kind: npt.NDArray[np.uint8]
    """The action kind's value, in canonical order (above)."""
    quanta: npt.NDArray[np.int32]
    """Quanta to run in the window: the remaining quanta for publish, 0 for waits and returns."""
    checkpoint: npt.NDArray[np.bool_]
    """Whether to save a checkpoint before returning."""
    cold: npt.NDArray[np.bool_]
    """Whether to return by the cold path (two-path scenarios; False otherwise)."""


class Model:
    """A validated scenario with every policy's continuation values cached.

    Building it costs O(K*J) time and memory (K windows, J work quanta) with the GIL
    released; afterwards :meth:`decide` costs O(log J) (the first decision in a window
    indexes its continuation row, O(J)) and is cheap enough to call at every window from
    another scheduler; :meth:`decide_many` answers many states in one call.

    Parameters
    ----------
    scenario
        The scenario to prepare.
    policies
        The policies it will be asked about (names or :class:`Policy`): only the value
        tables they read are built (none for never, window and static_roi). ``None``
        (default) builds them all; a decision or value that reads a table not built
        raises ``ValueError``.
    """

    # __dict__: decide, bound per instance (see __init__)
    __slots__ = ("__dict__", "_model", "_scenario", "_tables_for")

    def __init__(
        self, scenario: Scenario, policies: str | Iterable[str | Policy] | None = None
    ) -> None:
        if not isinstance(scenario, Scenario):
            raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
        tables_for = (
            None if policies is None else [core_policy(p) for p in parse_policies(policies)]
        )
        self._scenario = scenario
        self._tables_for = tables_for
        self._model = _CheckedModel(scenario.to_core(), tables_for)
        # decide's hot path is the core's binding itself, which checks every argument as
        # decide() below does: bound per instance, it skips that Python frame (30% of a call).
        object.__setattr__(self, "decide", self._model.decide)

    def rebuild(self, scenario: Scenario) -> None:
        """Prepare another scenario in this model's memory, for the same policies.

        The tables keep their capacity, so a scheduler that re-plans at every window
        (the control loop) allocates nothing once the largest scenario has been seen:
        O(K*J) time, as building a new model, without its allocations. A scenario that
        fails validation leaves the model as it was. Not while another thread uses it.

        Parameters
        ----------
        scenario
            The scenario to prepare.
        """
        if not isinstance(scenario, Scenario):
            raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
        self._model.rebuild(scenario.to_core(), self._tables_for)
        self._scenario = scenario

    def __repr__(self) -> str:
        s = self._scenario
        return (
            f"<Model: {len(s.windows)} windows, {s.work_quanta} quanta of {s.quantum_s:g} s, "
            f"benefit {benefit_text(s.benefit_rate)} s-eq./s until {s.horizon_s:g} s, "
            f"recovery {s.costs.recovery_s:g} s>"
        )

    @property
    def scenario(self) -> Scenario:
        """The scenario this model was prepared for."""
        return self._scenario

    def decide(
        self,
        window: int,
        progress: int,
        durable: int,
        active: bool = False,
        policy: str | Policy = Policy.ROLLOUT,
        epsilon: float = 0.0,
        score_noise: ScoreNoise | None = None,
        scores: ScoreEstimate | None = None,
    ) -> _core.finite.Action:
        """The policy's action for an observed state at the start of ``window``.

        Parameters
        ----------
        window
            Window index ``k`` (0-based).
        progress, durable
            Completed and checkpointed quanta; equal unless ``active``.
        active
            Whether the candidate is running (it cannot wait; it must return by the
            window's end).
        policy
            Policy name or :class:`Policy`; LearnSched's rollout by default.
        epsilon
            ``guarded`` only: the score-error bound, s-eq. (``>= 0``, ``inf`` allowed).
        score_noise
            ``guarded`` only: ``(state, action) -> e`` in s-eq., the error of each action's
            estimated score ``Q^pi0(s, a) + e``; ``None`` scores exactly. The guarantee
            (never below Costed Window) holds when ``|e| <= epsilon`` everywhere.
        scores
            ``guarded`` only: ``(state, action) -> Qhat`` in s-eq., your own estimate of
            ``Q^pi0(s, a) = R(s, a) + V^pi0(s')`` for each feasible action (instead of
            ``score_noise``). The guarantee holds when ``|Qhat - Q^pi0| <= epsilon`` over
            the states the policy reaches: :func:`learnsched.scores.check_scores` and
            ``learnsched guard-check`` measure it.

        Returns
        -------
        Action
            ``kind`` (:class:`ActionKind`), ``quanta`` (quanta to run in this window: the
            remaining quanta for ``PUBLISH``, 0 for waits and returns), ``checkpoint``
            (save before returning) and ``cold`` (return by the cold path of a two-path
            scenario). Capacity must be back by the window's end. Actions are immutable,
            and equal ones may be one shared object.

        Raises
        ------
        TypeError
            A state field that is not an integer, or ``active`` that is not a bool.
        ValueError
            An unknown policy, a state that is not valid for this scenario, or a guard
            argument for a policy other than ``guarded``.

        Notes
        -----
        From a policy's second call (``decide`` or :meth:`decide_many`) since the model was
        built or rebuilt, ``costed_window``, ``rollout`` and ``dp`` remember each state's
        decision, so that a state asked again costs one table load. Memory: at most 12 bytes
        per ``(window, progress)`` pair, ``K * (J + 1)`` of them, per such policy (4 for the
        service state, 8 for the last active state asked there). :meth:`decide_many` does
        without it while its batches keep missing it (new states every time).
        """
        return self._model.decide(
            window, progress, durable, active, policy, epsilon, score_noise, scores
        )

    def decide_many(
        self,
        window: npt.ArrayLike,
        progress: npt.ArrayLike,
        durable: npt.ArrayLike,
        active: npt.ArrayLike,
        policy: str | Policy = Policy.ROLLOUT,
        epsilon: float = 0.0,
    ) -> Decisions:
        """The policy's actions in many observed states at once (:meth:`decide` per state,
        in one C++ loop with the GIL released).

        Parameters
        ----------
        window, progress, durable
            One-dimensional integer arrays of equal length: window index ``k`` (0-based),
            completed and checkpointed quanta of each state. int32 C-contiguous arrays are
            used as they are; other integer dtypes are converted when every value fits.
        active
            One-dimensional bool array of the same length: whether each candidate is running.
        policy
            Policy name or :class:`Policy`, the same for every state; LearnSched's rollout by
            default.
        epsilon
            ``guarded`` only: the score-error bound, s-eq. (``>= 0``, ``inf`` allowed); scores
            are exact (a score-noise callback is :meth:`decide`'s alone).

        Returns
        -------
        Decisions
            Arrays ``kind`` (uint8 :class:`ActionKind` values), ``quanta`` (int32),
            ``checkpoint`` and ``cold`` (bool), entry ``i`` being ``decide`` of state ``i``.
            Decisions remembered by earlier calls are read back (see :meth:`decide`), the
            others computed and remembered.

        Raises
        ------
        TypeError
            An argument that is not an array of integers (``active``: of bools).
        ValueError
            An unknown policy, arrays that are not 1-D or differ in length, a guard argument
            for a policy other than ``guarded``, or an invalid state (``states[i]: ...``).
        """
        core = core_policy(policy)
        eps, _, _ = _guard(policy, epsilon, None)
        columns = (
            int32_vector("window", window),
            int32_vector("progress", progress),
            int32_vector("durable", durable),
            bool_vector("active", active),
        )
        for name, column in zip(("progress", "durable", "active"), columns[1:], strict=True):
            if len(column) != len(columns[0]):
                raise ValueError(
                    f"{name} must have the length of window ({len(columns[0])}), got {len(column)}"
                )
        return Decisions(*self._model.decide_many(*columns, core, eps))

    def solve(
        self,
        policy: str | Policy = Policy.ROLLOUT,
        epsilon: float = 0.0,
        score_noise: ScoreNoise | None = None,
        scores: ScoreEstimate | None = None,
    ) -> Plan:
        """The policy's whole plan from the initial state (GIL released while solving).

        Parameters
        ----------
        policy
            Policy name or :class:`Policy`; LearnSched's rollout by default.
        epsilon, score_noise, scores
            The guarded policy's score-error bound (s-eq.) and score errors or your own
            score estimates, as in :meth:`decide`.

        Returns
        -------
        Plan
            Net value, benefit and cost split in s-eq., publication time in seconds (or
            ``None``) and one step per window visited (each naming its recovery path when
            the scenario offers two).

        Raises
        ------
        ValueError
            An unknown policy, or a guard argument for a policy other than ``guarded``.
        """
        eps, noise, estimate = _guard(policy, epsilon, score_noise, scores)
        plan = self._model.solve(core_policy(policy), eps, noise, estimate)
        return Plan.from_core(plan, self._scenario.costs.offers_choice)

    def solve_all(self, policies: str | Iterable[str | Policy] = ALL_POLICIES) -> dict[str, Plan]:
        """Plans of several policies, keyed by policy name.

        Parameters
        ----------
        policies
            One policy name or several (names or :class:`Policy`); the paper's six by default.

        Returns
        -------
        dict of str to Plan
            One :class:`Plan` per policy, in the order given.
        """
        return {p.value: self.solve(p) for p in parse_policies(policies)}

    def window_plan_value(
        self, window: int, progress: int, durable: int, active: bool = False
    ) -> float:
        """``V_G`` of a state: the value of following Window from it to the end, s-eq."""
        return self._model.window_plan_value(_core_state(window, progress, durable, active))

    def optimal_value(
        self, window: int, progress: int, durable: int, active: bool = False
    ) -> float:
        """``V*`` of a state (Eq. D.2), s-eq."""
        return self._model.optimal_value(_core_state(window, progress, durable, active))

    def reference_value(
        self, window: int, progress: int, durable: int, active: bool = False
    ) -> float:
        """``V^pi0`` of a state: the value of following Costed Window from it, s-eq."""
        return self._model.reference_value(_core_state(window, progress, durable, active))

    def reference_score(self, state: State, action: Action) -> float:
        """``Q^pi0(s, a) = R(s, a) + V^pi0(s')`` (Eq. 11), s-eq.: the exact score the guarded
        rollout's estimates stand for, of a feasible ``action`` in ``state``.

        Raises
        ------
        TypeError
            ``state`` or ``action`` is not the core's :data:`State` / :data:`Action`.
        ValueError
            An invalid state, an infeasible action, or a model built without ``V^pi0``.
        """
        return self._model.reference_score(state, action)


def solve(
    scenario: Scenario,
    policy: str | Policy = Policy.ROLLOUT,
    epsilon: float = 0.0,
    score_noise: ScoreNoise | None = None,
    scores: ScoreEstimate | None = None,
) -> Plan:
    """Solve one scenario under one policy (default: LearnSched's rollout).

    Parameters
    ----------
    scenario
        The scenario: idle windows and work in seconds and quanta, benefit in s-eq./s.
    policy
        Policy name (``"never"``, ``"window"``, ``"static_roi"``, ``"costed_window"``,
        ``"rollout"``, ``"dp"``, ``"guarded"``) or :class:`Policy`.
    epsilon, score_noise, scores
        The guarded policy's score-error bound (s-eq.) and score errors or your own score
        estimates (:meth:`Model.decide`).

    Returns
    -------
    Plan
        ``value`` (net, s-eq.), ``benefit`` (s-eq.), ``publish_s`` (seconds, or ``None``
        if it never publishes), ``cost`` (:class:`CostSplit`, s-eq.) and ``steps`` (one
        :class:`Step` per window visited).

    Raises
    ------
    TypeError
        ``scenario`` is not a :class:`Scenario`.
    ValueError
        An unknown policy, or a guard argument for a policy other than ``guarded``.

    Notes
    -----
    Each call builds a new :class:`Model`. Its tables' memory (blocks of 128 KiB to 32 MiB)
    stays with the calling thread for its next solve, already faulted in, so that a one-shot
    solve costs about what a solve into a kept, rebuilt model does: at most 128 MiB in the
    whole process, freed when a thread ends.
    """
    return Model(scenario, (policy,)).solve(policy, epsilon, score_noise, scores)


def solve_all(
    scenario: Scenario, policies: str | Iterable[str | Policy] = ALL_POLICIES
) -> dict[str, Plan]:
    """Plans of several policies for one scenario, keyed by name.

    Parameters
    ----------
    scenario
        The scenario to solve (prepared once for every policy).
    policies
        One policy name or several (names or :class:`Policy`); the paper's six by default.

    Returns
    -------
    dict of str to Plan
        One :class:`Plan` per policy, in the order given.

    Raises
    ------
    ValueError
        An unknown policy.
    """
    chosen = parse_policies(policies)  # once: `policies` may be an iterator
    return Model(scenario, chosen).solve_all(chosen)
