"""
Portfolios: candidates sharing the idle windows of several GPUs.
"""
from __future__ import annotations
import collections.abc
import learnsched._core.causal
import learnsched._core.finite
import learnsched._core.forecast
import typing
__all__: list[str] = ['CandidateState', 'MAX_CANDIDATES', 'MAX_DP_STAGES', 'MAX_DP_STATES', 'MAX_GPUS', 'Portfolio', 'PortfolioAction', 'PortfolioCandidate', 'PortfolioModel', 'PortfolioPlan', 'PortfolioPolicy', 'PortfolioState', 'PortfolioStep', 'SharedReturn', 'StateSpaceError', 'causal_portfolio_policies', 'run_portfolio_causal', 'validate_portfolio']
class StateSpaceError(ValueError):
    pass
class PortfolioPolicy:
    """
    The portfolio's policies.
    
    Members:
    
      SEQUENTIAL
    
      DENSITY
    
      EARLIEST
    
      COSTED_WINDOW
    
      ROLLOUT
    
      DP
    """
    COSTED_WINDOW: typing.ClassVar[PortfolioPolicy]
    DENSITY: typing.ClassVar[PortfolioPolicy]
    DP: typing.ClassVar[PortfolioPolicy]
    EARLIEST: typing.ClassVar[PortfolioPolicy]
    ROLLOUT: typing.ClassVar[PortfolioPolicy]
    SEQUENTIAL: typing.ClassVar[PortfolioPolicy]
    __members__: typing.ClassVar[dict[str, PortfolioPolicy]]
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
    def __init__(self, name: str, work_quanta: typing.SupportsInt | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, benefit_rate: typing.SupportsFloat | typing.SupportsIndex, horizon_s: typing.SupportsFloat | typing.SupportsIndex, save_s: typing.SupportsFloat | typing.SupportsIndex, load_s: typing.SupportsFloat | typing.SupportsIndex, half_life_s: typing.SupportsFloat | typing.SupportsIndex | None, initial: learnsched._core.finite.State, benefit_schedule: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]] = []) -> None:
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
    def initial(self) -> learnsched._core.finite.State:
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
    def __init__(self, candidate: typing.SupportsInt | typing.SupportsIndex, action: learnsched._core.finite.Action) -> None:
        ...
    def __repr__(self) -> str:
        ...
    @property
    def action(self) -> learnsched._core.finite.Action:
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
    def segment(self) -> learnsched._core.finite.Segment:
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
    def cost(self) -> learnsched._core.finite.CostSplit:
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
def causal_portfolio_policies() -> list[str]:
    """
    The causal portfolio policies, in output order.
    """
def run_portfolio_causal(schedule: learnsched._core.causal.UnlentSchedule, candidates: collections.abc.Sequence[learnsched._core.causal.CausalCandidate], durable: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], pools: collections.abc.Sequence[learnsched._core.causal.GapPool | None], tables: collections.abc.Sequence[learnsched._core.forecast.SampleTables | None], from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, portfolio_policy: str, policy: str, return_level: typing.SupportsFloat | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex) -> dict[str, typing.Any]:
    """
    A causal portfolio over [from_s, to_s) of the schedule: totals, per-candidate publish_s (NaN: not published) and loans, and its steps: per decision t, the candidate the GPU is held for (-1: waiting) and the move.
    """
def validate_portfolio(portfolio: Portfolio) -> None:
    """
    ValueError naming the field of the first problem (StateSpaceError when too large).
    """
MAX_CANDIDATES: int = 4096
MAX_DP_STAGES: int = 2048
MAX_DP_STATES: int = 1048576
MAX_GPUS: int = 1024
