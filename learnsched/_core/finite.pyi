"""
The finite model: scenarios, states, actions, policies, plans and the solver.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Action', 'ActionKind', 'CostSplit', 'HandoffCosts', 'MAX_STATES', 'MAX_THREADS', 'MAX_TWO_PATH_STATES', 'MAX_WINDOWS', 'Model', 'Plan', 'Policy', 'RELATIVE_TIE_TOLERANCE', 'Reach', 'Scenario', 'ScoreErrorReport', 'Segment', 'State', 'TIE_TOLERANCE', 'cost_fields', 'measure_score_error', 'policy_name', 'scenario_rows', 'solve_batch', 'ties', 'validate']
class ActionKind:
    """
    Window macro-action kinds, in canonical order.
    
    Members:
    
      WAIT
    
      ABANDON
    
      CHECKPOINT_RETURN
    
      DISCARD_RETURN
    
      PUBLISH
    
      ADVANCE
    """
    ABANDON: typing.ClassVar[ActionKind]
    ADVANCE: typing.ClassVar[ActionKind]
    CHECKPOINT_RETURN: typing.ClassVar[ActionKind]
    DISCARD_RETURN: typing.ClassVar[ActionKind]
    PUBLISH: typing.ClassVar[ActionKind]
    WAIT: typing.ClassVar[ActionKind]
    __members__: typing.ClassVar[dict[str, ActionKind]]
    @typing.overload
    def __eq__(self, other: ActionKind) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: ActionKind) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class Policy:
    """
    The six policies of the finite model and the guarded rollout.
    
    Members:
    
      NEVER
    
      WINDOW
    
      STATIC_ROI
    
      COSTED_WINDOW
    
      ROLLOUT
    
      DP
    
      GUARDED
    """
    COSTED_WINDOW: typing.ClassVar[Policy]
    DP: typing.ClassVar[Policy]
    GUARDED: typing.ClassVar[Policy]
    NEVER: typing.ClassVar[Policy]
    ROLLOUT: typing.ClassVar[Policy]
    STATIC_ROI: typing.ClassVar[Policy]
    WINDOW: typing.ClassVar[Policy]
    __members__: typing.ClassVar[dict[str, Policy]]
    @typing.overload
    def __eq__(self, other: Policy) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: Policy) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class Action:
    """
    One window's macro-action.
    """
    def __eq__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __hash__(self) -> int:
        ...
    def __init__(self, kind: ActionKind, quanta: typing.SupportsInt | typing.SupportsIndex = 0, checkpoint: bool = False, cold: bool = False) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def checkpoint(self) -> bool:
        """
        Whether the segment saves a checkpoint.
        """
    @property
    def cold(self) -> bool:
        """
        Whether it returns by the cold alternative path (two-path scenarios).
        """
    @property
    def kind(self) -> ActionKind:
        ...
    @property
    def name(self) -> str:
        """
        The action kind as a lowercase name, e.g. 'advance'.
        """
    @property
    def quanta(self) -> int:
        """
        Quanta run in this window.
        """
class HandoffCosts:
    """
    Handoff costs in seconds and s-eq./s.
    """
    def __init__(self, recovery_s: typing.SupportsFloat | typing.SupportsIndex, residency_rate: typing.SupportsFloat | typing.SupportsIndex, save_s: typing.SupportsFloat | typing.SupportsIndex, load_s: typing.SupportsFloat | typing.SupportsIndex, cold_recovery_s: typing.SupportsFloat | typing.SupportsIndex | None = None) -> None:
        ...
    @property
    def cold_recovery_s(self) -> float | None:
        """
        t_ret of the cold alternative path, or None when only one path is offered.
        """
    @property
    def load_s(self) -> float:
        ...
    @property
    def recovery_s(self) -> float:
        ...
    @property
    def residency_rate(self) -> float:
        ...
    @property
    def save_s(self) -> float:
        ...
class State:
    """
    Decision state (window, progress, durable, active).
    """
    def __init__(self, window: typing.SupportsInt | typing.SupportsIndex, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, active: bool) -> None:
        ...
    @property
    def active(self) -> bool:
        ...
    @property
    def durable(self) -> int:
        ...
    @property
    def progress(self) -> int:
        ...
    @property
    def window(self) -> int:
        ...
class Scenario:
    """
    A finite-model scenario (not validated until used).
    """
    def __init__(self, windows: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]], work_quanta: typing.SupportsInt | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, benefit_rate: typing.SupportsFloat | typing.SupportsIndex, horizon_s: typing.SupportsFloat | typing.SupportsIndex, costs: HandoffCosts, initial: State, benefit_schedule: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]] = []) -> None:
        """
        benefit_schedule: (start_s, rate) pieces of g(t); if given, benefit_rate must be 0.
        """
    def benefit(self, publish_s: typing.SupportsFloat | typing.SupportsIndex) -> float:
        """
        Phi(publish_s): the integral of the benefit rate from publish_s to horizon_s, s-eq. (checks the benefit fields first).
        """
    @property
    def benefit_rate(self) -> float:
        ...
    @property
    def benefit_schedule(self) -> list[tuple[float, float]]:
        """
        (start_s, rate) pieces of g(t); empty for a constant benefit_rate.
        """
    @property
    def costs(self) -> HandoffCosts:
        ...
    @property
    def horizon_s(self) -> float:
        ...
    @property
    def initial(self) -> State:
        ...
    @property
    def quantum_s(self) -> float:
        ...
    @property
    def windows(self) -> list[tuple[float, float]]:
        ...
    @property
    def work_quanta(self) -> int:
        ...
class CostSplit:
    """
    Cost in s-eq. split by cause.
    """
    @property
    def load(self) -> float:
        ...
    @property
    def recovery(self) -> float:
        ...
    @property
    def residency(self) -> float:
        ...
    @property
    def save(self) -> float:
        ...
    @property
    def total(self) -> float:
        ...
    @property
    def work(self) -> float:
        ...
class Segment:
    """
    One window of a plan.
    """
    @property
    def action(self) -> Action:
        ...
    @property
    def benefit(self) -> float:
        ...
    @property
    def cost(self) -> CostSplit:
        ...
    @property
    def next(self) -> State:
        """
        State at the next window.
        """
    @property
    def publish_s(self) -> float:
        """
        NaN unless the segment publishes.
        """
    @property
    def ready_s(self) -> float:
        """
        NaN for a wait.
        """
    @property
    def start_s(self) -> float:
        ...
    @property
    def window(self) -> int:
        ...
class Plan:
    """
    A policy's plan from the initial state.
    """
    def columns(self) -> dict[str, numpy.typing.NDArray[typing.Any]]:
        """
        The segments as arrays, one entry per step: window, kind (ActionKind values), quanta, checkpoint, cold, start_s, publish_s (NaN unless publishing), ready_s (NaN for a wait), cost (n, 5: in the order of cost_fields()), benefit, progress and durable (the next state's).
        """
    @property
    def benefit(self) -> float:
        ...
    @property
    def cost(self) -> CostSplit:
        ...
    @property
    def policy(self) -> Policy:
        ...
    @property
    def publish_s(self) -> float:
        """
        NaN if never published.
        """
    @property
    def step_count(self) -> int:
        """
        Number of segments, without copying them.
        """
    @property
    def steps(self) -> list[Segment]:
        """
        A list of copies of the segments (copied per read).
        """
    @property
    def value(self) -> float:
        ...
class Model:
    """
    A validated scenario with cached continuation values.
    """
    def __init__(self, scenario: Scenario, policies: collections.abc.Sequence[Policy] | None = None) -> None:
        """
        Build the tables the policies read (None: every policy's).
        """
    def _decide_floor(self, window: int, progress: int, durable: int, active: bool = False, policy: str | Policy = 'rollout', epsilon: float = 0.0, score_noise: collections.abc.Callable[[State, Action], float] | None = None, scores: collections.abc.Callable[[State, Action], float] | None = None) -> Action:
        """
        decide's binding without its work (the benchmarks' floor): a cached wait.
        """
    def decide(self, window: int, progress: int, durable: int, active: bool = False, policy: str | Policy = 'rollout', epsilon: float = 0.0, score_noise: collections.abc.Callable[[State, Action], float] | None = None, scores: collections.abc.Callable[[State, Action], float] | None = None) -> Action:
        """
        learnsched.Model.decide itself (every argument checked here, with its messages): the policy's action in a validated state; O(log J) per change of incumbent (a continuation row's first decision indexes it, O(J)). Equal actions are one object.
        """
    def decide_many(self, window: typing.Any, progress: typing.Any, durable: typing.Any, active: typing.Any, policy: Policy, epsilon: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> tuple[numpy.typing.NDArray[numpy.uint8], numpy.typing.NDArray[numpy.int32], numpy.typing.NDArray[numpy.bool], numpy.typing.NDArray[numpy.bool]]:
        """
        The policy's actions in many states: 1-D arrays window, progress, durable (int32) and active (bool) of equal length; guarded scores exactly with bound epsilon (s-eq.). Returns (kind: uint8 ActionKind values, quanta: int32, checkpoint: bool, cold: bool), one entry per state; ValueError names the first invalid states[i].
        """
    def feasible_actions(self, state: State) -> list[Action]:
        """
        Every feasible action of a valid state, in canonical order.
        """
    def optimal_value(self, state: State) -> float:
        """
        V*: optimal value of the state (Eq. D.2), s-eq.
        """
    def rebuild(self, scenario: Scenario, policies: collections.abc.Sequence[Policy] | None = None) -> None:
        """
        Prepare another scenario in this model's memory (tables keep their capacity); a scenario that fails validation leaves the model unchanged. Not while another thread uses this model.
        """
    def reference_score(self, state: State, action: Action) -> float:
        """
        Q^pi0(s, a) = R(s, a) + V^pi0(s'), s-eq., of a feasible action (Eq. 11).
        """
    def reference_value(self, state: State) -> float:
        """
        V^pi0: value of following Costed Window from the state, s-eq.
        """
    def solve(self, policy: Policy, epsilon: typing.SupportsFloat | typing.SupportsIndex = 0.0, score_noise: collections.abc.Callable[[State, Action], typing.SupportsFloat | typing.SupportsIndex] | None = None, scores: collections.abc.Callable[[State, Action], typing.SupportsFloat | typing.SupportsIndex] | None = None) -> Plan:
        """
        The policy's plan from the initial state.
        """
    def window_plan_value(self, state: State) -> float:
        """
        V_G: value of following Window from the state, s-eq.
        """
    @property
    def scenario(self) -> Scenario:
        ...
class Reach:
    """
    Which states guard_check scores.
    
    Members:
    
      GUARDED
    
      ALL
    """
    ALL: typing.ClassVar[Reach]
    GUARDED: typing.ClassVar[Reach]
    __members__: typing.ClassVar[dict[str, Reach]]
    @typing.overload
    def __eq__(self, other: Reach) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: Reach) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class ScoreErrorReport:
    """
    The worst error of score estimates over the reached states.
    """
    @property
    def actions(self) -> int:
        ...
    @property
    def states(self) -> int:
        ...
    @property
    def worst(self) -> float:
        """
        max |Qhat - Q^pi0|, s-eq.
        """
    @property
    def worst_action(self) -> Action:
        ...
    @property
    def worst_estimate(self) -> float:
        ...
    @property
    def worst_exact(self) -> float:
        ...
    @property
    def worst_state(self) -> State:
        ...
def cost_fields() -> list[str]:
    """
    The cost causes in the order of solve_batch's cost columns.
    """
def measure_score_error(model: Model, scores: collections.abc.Callable[[State, Action], typing.SupportsFloat | typing.SupportsIndex], epsilon: typing.SupportsFloat | typing.SupportsIndex, reach: Reach) -> ScoreErrorReport:
    """
    The worst |scores(s, a) - Q^pi0(s, a)| over every feasible action of the states reach names (App. D.3's bound), with where it is.
    """
def policy_name(policy: Policy) -> str:
    """
    The policy's name in the Python API (e.g. 'costed_window').
    """
def scenario_rows(windows: collections.abc.Sequence[collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]]], costs: collections.abc.Sequence[HandoffCosts], initial: collections.abc.Sequence[State], window_set: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], work_quanta: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], quantum_s: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], benefit_rate: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], horizon_s: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], cost_set: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], initial_set: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> list[Scenario]:
    """
    Scenarios (not validated until used) that share pieces: row i has windows[window_set[i]], costs[cost_set[i]], initial[initial_set[i]] and the i-th work_quanta, quantum_s, benefit_rate and horizon_s.
    """
def solve_batch(scenarios: collections.abc.Sequence[Scenario], policies: collections.abc.Sequence[Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1, epsilon: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> dict[str, numpy.typing.NDArray[numpy.float64]]:
    """
    Solve every scenario under every policy (guarded: exact scores, bound epsilon); dict of arrays value, benefit, publish_s (n, p) and cost (n, p, 5: in the order of cost_fields()).
    """
def ties(a: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], b: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> typing.Any:
    """
    Elementwise: a and b equal up to rounding noise (the policies' tie rule).
    """
def validate(scenario: Scenario) -> None:
    """
    Raise ValueError naming the first invalid field of the scenario.
    """
MAX_STATES: int = 16777216
MAX_THREADS: int = 1024
MAX_TWO_PATH_STATES: int = 8388608
MAX_WINDOWS: int = 131072
RELATIVE_TIE_TOLERANCE: float = 1e-12
TIE_TOLERANCE: float = 1e-09
