"""
learnsched's C++ solver core (private: use the learnsched package).
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Action', 'ActionKind', 'CandidateState', 'CausalCandidate', 'CausalDecider', 'CausalSim', 'CostSplit', 'ForecastModel', 'GapPool', 'HandoffCosts', 'MAX_CANDIDATES', 'MAX_DP_STAGES', 'MAX_DP_STATES', 'MAX_GPUS', 'MAX_SAMPLES', 'MAX_SAMPLE_STATES', 'MAX_STATES', 'MAX_THREADS', 'MAX_TWO_PATH_STATES', 'MAX_WINDOWS', 'Model', 'Plan', 'Policy', 'Portfolio', 'PortfolioAction', 'PortfolioCandidate', 'PortfolioModel', 'PortfolioPlan', 'PortfolioPolicy', 'PortfolioState', 'PortfolioStep', 'RELATIVE_TIE_TOLERANCE', 'Reach', 'SampleTables', 'Scenario', 'ScoreErrorReport', 'Segment', 'SharedReturn', 'State', 'StateSpaceError', 'TIE_TOLERANCE', 'UnlentSchedule', 'causal_moves', 'causal_plans', 'causal_portfolio_policies', 'cost_fields', 'exact_schedule', 'measure_score_error', 'pack_calendars', 'policy_name', 'run_causal', 'run_online', 'run_portfolio_causal', 'scenario_rows', 'solve_batch', 'stochastic_dp', 'stream_seed', 'ties', 'validate', 'validate_portfolio']
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
class SampleTables:
    """
    Continuation tables of N sampled calendars, built once.
    """
    def __init__(self, candidate: Scenario, windows: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], policies: collections.abc.Sequence[Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
        """
        candidate: the work, benefit and costs (its windows are not used); sample i is windows[offsets[i]:offsets[i+1]], a full calendar.
        """
    def row_after(self, sample: typing.SupportsInt | typing.SupportsIndex, time_s: typing.SupportsFloat | typing.SupportsIndex, table: str) -> list[float]:
        """
        Sample `sample`'s row of V_G ('window'), V^pi0 ('reference') or V* ('optimal') after time_s (its first window starting at or after it), per durable progress.
        """
    def row_sum(self, time_s: typing.SupportsFloat | typing.SupportsIndex) -> float:
        """
        Sum of every sample's V^pi0 row after time_s: the table floor of one decision (N row lookups and N * (J + 1) entries), for benchmarks.
        """
    @property
    def distinct_count(self) -> int:
        """
        Tables built: one per distinct sample.
        """
    @property
    def sample_count(self) -> int:
        ...
class ForecastModel:
    """
    Decisions at the current window from N sampled continuations.
    """
    @typing.overload
    def __init__(self, current: Scenario, windows: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], policies: collections.abc.Sequence[Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
        """
        current: a one-window scenario; sample i is windows[offsets[i]:offsets[i+1]], all after the current window.
        """
    @typing.overload
    def __init__(self, current: Scenario, tables: SampleTables) -> None:
        """
        current: a one-window scenario; each sample of `tables` contributes its windows from the current window's end on; O(N*J).
        """
    def decide(self, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, active: bool, policy: Policy) -> Action:
        """
        The policy's action in the current window; O(J).
        """
    def mean_optimal_values(self) -> list[float]:
        """
        mean_i V_i* after the current window, per durable progress 0..J (s-eq.).
        """
    def mean_reference_values(self) -> list[float]:
        """
        mean_i V_i^pi0 after the current window, per durable progress 0..J (s-eq.).
        """
    def mean_window_plan_values(self) -> list[float]:
        """
        mean_i V_G,i after the current window, per durable progress 0..J (s-eq.).
        """
    def take(self, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, active: bool, action: Action) -> Segment:
        """
        The segment a feasible action makes of the current window.
        """
    @property
    def sample_count(self) -> int:
        ...
    @property
    def scenario(self) -> Scenario:
        ...
class UnlentSchedule:
    """
    A request trace served FIFO with nothing lent, and its idle gaps.
    """
    def __init__(self, arrival: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], service: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], deadline: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> None:
        """
        Requests in arrival order: arrival, service (work / rate) and deadline, seconds.
        """
    def causal_windows(self, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, return_s: typing.SupportsFloat | typing.SupportsIndex, overlap: bool = False) -> numpy.typing.NDArray[numpy.float64]:
        """
        The gaps starting in [from_s, to_s) that fit a quantum as windows: [g, A], or with overlap [g, min(D, A + t_ret, next gap start)].
        """
    def gaps(self) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
        """
        (start, arrival, return deadline D) of every idle gap, seconds.
        """
    @property
    def gap_count(self) -> int:
        ...
class GapPool:
    """
    Past idle gaps fitted at a time: the current gap's forecast.
    """
    def __init__(self, schedule: UnlentSchedule, now_s: typing.SupportsFloat | typing.SupportsIndex, history_s: typing.SupportsFloat | typing.SupportsIndex, close_s: typing.SupportsFloat | typing.SupportsIndex, reach_s: typing.SupportsFloat | typing.SupportsIndex, model: str = 'empirical', repeat_last: typing.SupportsInt | typing.SupportsIndex = 8) -> None:
        ...
    def draw(self, age_s: typing.SupportsFloat | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int32]]:
        """
        (remaining_s, record) of n draws of the current gap at age age_s.
        """
    def lateness(self, record: typing.SupportsInt | typing.SupportsIndex, overrun_s: typing.SupportsFloat | typing.SupportsIndex) -> float:
        """
        Request-seconds of lateness of capacity ready overrun_s after the arrival.
        """
    def scores(self, ages: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], remaining: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], seed: typing.SupportsInt | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.float64]]:
        """
        (PIT, CRPS seconds) of the remaining-length forecast at each age against the truth.
        """
    def slack(self, record: typing.SupportsInt | typing.SupportsIndex) -> float:
        ...
    def windows(self, quantum_s: typing.SupportsFloat | typing.SupportsIndex, return_s: typing.SupportsFloat | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
        """
        The records' causal windows [g, A + min(D - A, t_ret)] in time order, (K, 2).
        """
    @property
    def size(self) -> int:
        ...
class CausalCandidate:
    """
    The candidate of causal scheduling.
    """
    def __init__(self, work_quanta: typing.SupportsInt | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, benefit_rate: typing.SupportsFloat | typing.SupportsIndex, horizon_s: typing.SupportsFloat | typing.SupportsIndex, return_s: typing.SupportsFloat | typing.SupportsIndex, residency_rate: typing.SupportsFloat | typing.SupportsIndex, save_s: typing.SupportsFloat | typing.SupportsIndex, load_s: typing.SupportsFloat | typing.SupportsIndex, lateness_price: typing.SupportsFloat | typing.SupportsIndex, benefit_schedule: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]] = []) -> None:
        ...
    @property
    def benefit_rate(self) -> float:
        ...
    @property
    def horizon_s(self) -> float:
        ...
    @property
    def lateness_price(self) -> float:
        ...
    @property
    def load_s(self) -> float:
        ...
    @property
    def quantum_s(self) -> float:
        ...
    @property
    def residency_rate(self) -> float:
        ...
    @property
    def return_s(self) -> float:
        ...
    @property
    def save_s(self) -> float:
        ...
    @property
    def work_quanta(self) -> int:
        ...
class CausalSim:
    """
    One horizon of causal scheduling, a move at a time (tests, tools).
    """
    def __init__(self, schedule: UnlentSchedule, candidate: CausalCandidate, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    def allows(self, arg0: str) -> bool:
        ...
    def apply(self, move: str) -> tuple[float, int, float]:
        """
        (reward, late requests, lateness_s) of the move's step.
        """
    @property
    def benefit(self) -> float:
        ...
    @property
    def bound(self) -> float:
        ...
    @property
    def checkpoints(self) -> int:
        ...
    @property
    def cost(self) -> float:
        ...
    @property
    def deciding(self) -> bool:
        ...
    @property
    def handoffs(self) -> int:
        ...
    @property
    def late_requests(self) -> int:
        ...
    @property
    def lateness_s(self) -> float:
        ...
    @property
    def point(self) -> tuple[float, float, int, int, bool]:
        """
        (t, gap_start, progress, durable, lent) at the decision point.
        """
    @property
    def requests(self) -> int:
        ...
    @property
    def value(self) -> float:
        ...
class CausalDecider:
    """
    Causal decisions with their own draw stream (a control loop's).
    """
    def __init__(self, candidate: CausalCandidate, policy: str, return_level: typing.SupportsFloat | typing.SupportsIndex, pool: typing.Any, tables: typing.Any, seed: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def decide(self, t: typing.SupportsFloat | typing.SupportsIndex, gap_start: typing.SupportsFloat | typing.SupportsIndex, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, lent: bool) -> tuple[str, int, str]:
        """
        (plan kind, quanta, move) at a quantum boundary of the current gap.
        """
class StateSpaceError(ValueError):
    pass
class PortfolioPolicy:
    """
    The portfolio's policies.
    
    Members:
    
      sequential
    
      density
    
      earliest
    
      costed_window
    
      rollout
    
      dp
    """
    __members__: typing.ClassVar[dict[str, PortfolioPolicy]]
    costed_window: typing.ClassVar[PortfolioPolicy]
    density: typing.ClassVar[PortfolioPolicy]
    dp: typing.ClassVar[PortfolioPolicy]
    earliest: typing.ClassVar[PortfolioPolicy]
    rollout: typing.ClassVar[PortfolioPolicy]
    sequential: typing.ClassVar[PortfolioPolicy]
    @typing.overload
    def __eq__(self, other: PortfolioPolicy) -> bool:
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
    def __ne__(self, other: PortfolioPolicy) -> bool:
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
class PortfolioCandidate:
    """
    One finite-model job of a portfolio.
    """
    def __init__(self, name: str, work_quanta: typing.SupportsInt | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, benefit_rate: typing.SupportsFloat | typing.SupportsIndex, horizon_s: typing.SupportsFloat | typing.SupportsIndex, save_s: typing.SupportsFloat | typing.SupportsIndex, load_s: typing.SupportsFloat | typing.SupportsIndex, half_life_s: typing.SupportsFloat | typing.SupportsIndex | None, initial: State, benefit_schedule: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]] = []) -> None:
        """
        benefit_schedule: (start_s, rate) pieces of g(t); if given, benefit_rate must be 0.
        """
    @property
    def benefit_rate(self) -> float:
        ...
    @property
    def half_life_s(self) -> float | None:
        ...
    @property
    def horizon_s(self) -> float:
        ...
    @property
    def initial(self) -> State:
        ...
    @property
    def load_s(self) -> float:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def quantum_s(self) -> float:
        ...
    @property
    def save_s(self) -> float:
        ...
    @property
    def work_quanta(self) -> int:
        ...
class SharedReturn:
    """
    The serving engine's return path(s).
    """
    def __init__(self, recovery_s: typing.SupportsFloat | typing.SupportsIndex, residency_rate: typing.SupportsFloat | typing.SupportsIndex, cold_recovery_s: typing.SupportsFloat | typing.SupportsIndex | None = None) -> None:
        ...
    @property
    def cold_recovery_s(self) -> float | None:
        ...
    @property
    def recovery_s(self) -> float:
        ...
    @property
    def residency_rate(self) -> float:
        ...
class Portfolio:
    """
    Candidates sharing the idle windows of GPUs.
    """
    def __init__(self, gpus: collections.abc.Sequence[collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]]], returns: SharedReturn, budget_gpu_s: typing.SupportsFloat | typing.SupportsIndex | None, candidates: collections.abc.Sequence[PortfolioCandidate]) -> None:
        ...
    @property
    def budget_gpu_s(self) -> float | None:
        ...
    @property
    def candidates(self) -> list[PortfolioCandidate]:
        ...
    @property
    def gpu_count(self) -> int:
        ...
    @property
    def returns(self) -> SharedReturn:
        ...
class CandidateState:
    """
    One candidate's part of a portfolio state.
    """
    def __init__(self, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, active: bool, done: bool, busy_until_s: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def active(self) -> bool:
        ...
    @property
    def busy_until_s(self) -> float:
        ...
    @property
    def done(self) -> bool:
        ...
    @property
    def durable(self) -> int:
        ...
    @property
    def progress(self) -> int:
        ...
class PortfolioState:
    """
    The state at the start of a stage.
    """
    def __init__(self, stage: typing.SupportsInt | typing.SupportsIndex, gpu_s: typing.SupportsFloat | typing.SupportsIndex, candidates: collections.abc.Sequence[CandidateState]) -> None:
        ...
    @property
    def candidates(self) -> list[CandidateState]:
        ...
    @property
    def gpu_s(self) -> float:
        ...
    @property
    def stage(self) -> int:
        ...
class PortfolioAction:
    """
    A stage's choice: candidate -1 waits.
    """
    def __eq__(self, arg0: typing.Any) -> typing.Any:
        ...
    def __hash__(self) -> int:
        ...
    def __init__(self, candidate: typing.SupportsInt | typing.SupportsIndex, action: Action) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def action(self) -> Action:
        ...
    @property
    def candidate(self) -> int:
        ...
class PortfolioStep:
    """
    One stage of a portfolio plan.
    """
    @property
    def candidate(self) -> int:
        ...
    @property
    def gpu(self) -> int:
        ...
    @property
    def gpu_s(self) -> float:
        ...
    @property
    def segment(self) -> Segment:
        ...
    @property
    def stage(self) -> int:
        ...
class PortfolioPlan:
    """
    A portfolio policy's plan.
    """
    @property
    def benefit(self) -> float:
        ...
    @property
    def cost(self) -> CostSplit:
        ...
    @property
    def gpu_s(self) -> float:
        ...
    @property
    def policy(self) -> PortfolioPolicy:
        ...
    @property
    def publish_s(self) -> list[float]:
        """
        Per candidate; NaN if unpublished.
        """
    @property
    def steps(self) -> list[PortfolioStep]:
        """
        One per stage (copied per read).
        """
    @property
    def value(self) -> float:
        ...
class PortfolioModel:
    """
    A validated, prepared portfolio.
    """
    def __init__(self, portfolio: Portfolio, policies: collections.abc.Sequence[PortfolioPolicy]) -> None:
        ...
    def benefit(self, candidate: typing.SupportsInt | typing.SupportsIndex, publish_s: typing.SupportsFloat | typing.SupportsIndex) -> float:
        """
        Phi_c(t_p): what candidate c earns by publishing at publish_s, s-eq.
        """
    def choices(self, state: PortfolioState) -> list[PortfolioAction]:
        """
        The choices rollout and DP score, in canonical order (wait first unless a candidate is forced; advances without a checkpoint left out).
        """
    def decide(self, state: PortfolioState, policy: PortfolioPolicy) -> PortfolioAction:
        """
        The policy's action in a validated state.
        """
    def initial_state(self) -> PortfolioState:
        ...
    def optimal_value(self, state: PortfolioState) -> float:
        """
        V*: the DP's value of the state (Eq. D.2), s-eq.
        """
    def reference_value(self, state: PortfolioState) -> float:
        """
        V^pi0: value of following the portfolio Costed Window from the state, s-eq.
        """
    def solve(self, policy: PortfolioPolicy) -> PortfolioPlan:
        """
        The policy's plan from the initial state.
        """
    def stage(self, i: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int, float]:
        """
        (gpu, window, start_s) of stage i.
        """
    def step(self, state: PortfolioState, action: PortfolioAction) -> tuple[PortfolioStep, PortfolioState]:
        """
        (step, next state) of a feasible action; ValueError otherwise.
        """
    @property
    def stage_count(self) -> int:
        ...
def causal_moves() -> list[str]:
    """
    The moves of causal decisions, by their index in steps' move column.
    """
def causal_plans() -> list[str]:
    """
    The plan kinds of causal decisions, by their index in steps' plan column.
    """
def causal_portfolio_policies() -> list[str]:
    """
    The causal portfolio policies, in output order.
    """
def cost_fields() -> list[str]:
    """
    The cost causes in the order of solve_batch's cost columns.
    """
def exact_schedule(schedule: UnlentSchedule, candidate: CausalCandidate, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, max_nodes: typing.SupportsInt | typing.SupportsIndex = 20000000) -> dict[str, typing.Any]:
    """
    The clairvoyant: the best schedule knowing the whole trace, replayed (a dict as run_causal's, plus the decision states solved).
    """
def measure_score_error(model: Model, scores: collections.abc.Callable[[State, Action], typing.SupportsFloat | typing.SupportsIndex], epsilon: typing.SupportsFloat | typing.SupportsIndex, reach: Reach) -> ScoreErrorReport:
    """
    The worst |scores(s, a) - Q^pi0(s, a)| over every feasible action of the states reach names (App. D.3's bound), with where it is.
    """
def pack_calendars(name: str, samples: list[typing.Any], check: collections.abc.Callable[[str, typing.Any], typing.Any]) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64]]:
    """
    Calendars (lists of [start, end] pairs) as (windows (M, 2), offsets (N + 1)); a calendar that is not plain lists of finite numbers, sorted, is passed to check.
    """
def policy_name(policy: Policy) -> str:
    """
    The policy's name in the Python API (e.g. 'costed_window').
    """
def run_causal(schedule: UnlentSchedule, jobs: list[tuple[typing.Any, ...]], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> list[dict[str, typing.Any]]:
    """
    Run each job (candidate, from_s, to_s, policy, return_level, pool, tables, seed, keep_steps) over the schedule, on threads; one dict of totals and steps per job.
    """
def run_online(cases: list[tuple[typing.Any, ...]], policies: collections.abc.Sequence[Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> list[list[Plan]]:
    """
    Each case (true scenario, sample windows, offsets: full calendars) run online: one plan per policy, then the clairvoyant's, on threads over the cases.
    """
def run_portfolio_causal(schedule: UnlentSchedule, candidates: collections.abc.Sequence[CausalCandidate], durable: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pools: collections.abc.Sequence[GapPool | None], tables: collections.abc.Sequence[SampleTables | None], from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, portfolio_policy: str, policy: str, return_level: typing.SupportsFloat | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex) -> dict[str, typing.Any]:
    """
    A causal portfolio over [from_s, to_s) of the schedule: totals, per-candidate publish_s (NaN: not published) and loans, and its steps: per decision t, the candidate the GPU is held for (-1: waiting) and the move.
    """
def scenario_rows(windows: collections.abc.Sequence[collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]]], costs: collections.abc.Sequence[HandoffCosts], initial: collections.abc.Sequence[State], window_set: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], work_quanta: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], quantum_s: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], benefit_rate: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], horizon_s: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], cost_set: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], initial_set: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> list[Scenario]:
    """
    Scenarios (not validated until used) that share pieces: row i has windows[window_set[i]], costs[cost_set[i]], initial[initial_set[i]] and the i-th work_quanta, quantum_s, benefit_rate and horizon_s.
    """
def solve_batch(scenarios: collections.abc.Sequence[Scenario], policies: collections.abc.Sequence[Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1, epsilon: typing.SupportsFloat | typing.SupportsIndex = 0.0) -> dict[str, numpy.typing.NDArray[numpy.float64]]:
    """
    Solve every scenario under every policy (guarded: exact scores, bound epsilon); dict of arrays value, benefit, publish_s (n, p) and cost (n, p, 5: in the order of cost_fields()).
    """
def stochastic_dp(branches: collections.abc.Sequence[UnlentSchedule], probabilities: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], candidate: CausalCandidate, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, max_nodes: typing.SupportsInt | typing.SupportsIndex = 1000000, prune: bool = True) -> float:
    """
    The optimal non-anticipative expected value over a scenario tree of traces, s-eq.
    """
def stream_seed(seed: typing.SupportsInt | typing.SupportsIndex, horizon: typing.SupportsInt | typing.SupportsIndex, policy: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    The decision stream of (seed, horizon, policy).
    """
def ties(a: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], b: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> typing.Any:
    """
    Elementwise: a and b equal up to rounding noise (the policies' tie rule).
    """
def validate(scenario: Scenario) -> None:
    """
    Raise ValueError naming the first invalid field of the scenario.
    """
def validate_portfolio(portfolio: Portfolio) -> None:
    """
    ValueError naming the field of the first problem (StateSpaceError when too large).
    """
MAX_CANDIDATES: int = 4096
MAX_DP_STAGES: int = 2048
MAX_DP_STATES: int = 1048576
MAX_GPUS: int = 1024
MAX_SAMPLES: int = 65536
MAX_SAMPLE_STATES: int = 16777216
MAX_STATES: int = 16777216
MAX_THREADS: int = 1024
MAX_TWO_PATH_STATES: int = 8388608
MAX_WINDOWS: int = 131072
RELATIVE_TIE_TOLERANCE: float = 1e-12
TIE_TOLERANCE: float = 1e-09
