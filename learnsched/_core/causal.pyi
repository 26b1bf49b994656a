"""
Causal scheduling on a request trace: gaps, their forecast, decisions, runs.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['CausalCandidate', 'CausalDecider', 'CausalJob', 'CausalSim', 'GapPool', 'GapRecords', 'UnlentSchedule', 'causal_moves', 'causal_plans', 'causal_policies', 'exact_schedule', 'gap_models', 'run_causal', 'stochastic_dp', 'stream_seed']
class UnlentSchedule:
    """
    A request trace served FIFO with nothing lent, and its idle gaps.
    """
    def __init__(self, arrival: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], service: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], deadline: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> None:
        """
        Requests in arrival order: arrival, service (work / rate) and deadline, seconds.
        """
    def causal_windows(self, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, recovery_s: typing.SupportsFloat | typing.SupportsIndex, overlap: bool = False) -> numpy.typing.NDArray[numpy.float64]:
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
class GapRecords:
    """
    A trace's past gaps, each scanned once, for the pools fitted on them.
    """
    def __init__(self, schedule: UnlentSchedule, from_s: typing.SupportsFloat | typing.SupportsIndex, until_s: typing.SupportsFloat | typing.SupportsIndex, close_s: typing.SupportsFloat | typing.SupportsIndex, reach_s: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
        """
        The gaps arriving at or after from_s and closed (arrival + close_s) by until_s, seconds; each keeps its slacks below reach_s. Scanned on `threads` threads (the records do not depend on it).
        """
    @property
    def size(self) -> int:
        ...
class GapPool:
    """
    Past idle gaps fitted at a time: the current gap's forecast.
    """
    @typing.overload
    def __init__(self, schedule: UnlentSchedule, now_s: typing.SupportsFloat | typing.SupportsIndex, history_s: typing.SupportsFloat | typing.SupportsIndex, close_s: typing.SupportsFloat | typing.SupportsIndex, reach_s: typing.SupportsFloat | typing.SupportsIndex, model: str = 'empirical', repeat_last: typing.SupportsInt | typing.SupportsIndex = 8) -> None:
        ...
    @typing.overload
    def __init__(self, records: GapRecords, now_s: typing.SupportsFloat | typing.SupportsIndex, history_s: typing.SupportsFloat | typing.SupportsIndex, reach_s: typing.SupportsFloat | typing.SupportsIndex | None = None, model: str = 'empirical', repeat_last: typing.SupportsInt | typing.SupportsIndex = 8) -> None:
        """
        The same fit from shared records (their close_s), which must hold every gap it reads; reach_s (seconds, at most the records', None: theirs) bounds the slacks kept (0 where only the gap is forecast, as scores() does).
        """
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
    def windows(self, quantum_s: typing.SupportsFloat | typing.SupportsIndex, recovery_s: typing.SupportsFloat | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
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
    def __init__(self, work_quanta: typing.SupportsInt | typing.SupportsIndex, quantum_s: typing.SupportsFloat | typing.SupportsIndex, benefit_rate: typing.SupportsFloat | typing.SupportsIndex, horizon_s: typing.SupportsFloat | typing.SupportsIndex, recovery_s: typing.SupportsFloat | typing.SupportsIndex, residency_rate: typing.SupportsFloat | typing.SupportsIndex, save_s: typing.SupportsFloat | typing.SupportsIndex, load_s: typing.SupportsFloat | typing.SupportsIndex, lateness_price: typing.SupportsFloat | typing.SupportsIndex, benefit_schedule: collections.abc.Sequence[tuple[typing.SupportsFloat | typing.SupportsIndex, typing.SupportsFloat | typing.SupportsIndex]] = []) -> None:
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
    def recovery_s(self) -> float:
        ...
    @property
    def residency_rate(self) -> float:
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
    def lent_s(self) -> float:
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
class CausalJob:
    """
    One run of run_causal: a policy over one horizon of the schedule.
    """
    def __init__(self, candidate: typing.Any, from_s: typing.Any, to_s: typing.Any, policy: typing.Any, return_level: typing.Any, pool: typing.Any, tables: typing.Any, seed: typing.Any, keep_steps: typing.Any = False) -> None:
        """
        Fields as given (a CausalCandidate, seconds, a policy name, a level in [0, 1], a GapPool or None, SampleTables or None, an int in [0, 2**64), a bool): run_causal checks them.
        """
    @property
    def candidate(self) -> typing.Any:
        ...
    @property
    def from_s(self) -> typing.Any:
        ...
    @property
    def keep_steps(self) -> typing.Any:
        ...
    @property
    def policy(self) -> typing.Any:
        ...
    @property
    def pool(self) -> typing.Any:
        ...
    @property
    def return_level(self) -> typing.Any:
        ...
    @property
    def seed(self) -> typing.Any:
        ...
    @property
    def tables(self) -> typing.Any:
        ...
    @property
    def to_s(self) -> typing.Any:
        ...
def causal_moves() -> list[str]:
    """
    The moves of causal decisions, by their index in steps' move column.
    """
def causal_plans() -> list[str]:
    """
    The plan kinds of causal decisions, by their index in steps' plan column.
    """
def causal_policies() -> list[str]:
    """
    The causal policies, in output order.
    """
def exact_schedule(schedule: UnlentSchedule, candidate: CausalCandidate, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, max_nodes: typing.SupportsInt | typing.SupportsIndex = 20000000) -> dict[str, typing.Any]:
    """
    The clairvoyant: the best schedule knowing the whole trace, replayed (a dict as run_causal's, plus the decision states solved).
    """
def gap_models() -> list[str]:
    """
    How a causal decision can forecast the current idle gap.
    """
def run_causal(schedule: UnlentSchedule, jobs: list[CausalJob], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> list[dict[str, typing.Any]]:
    """
    Run each CausalJob over the schedule, on threads; one dict of totals and steps per job.
    """
def stochastic_dp(branches: collections.abc.Sequence[UnlentSchedule], probabilities: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], candidate: CausalCandidate, from_s: typing.SupportsFloat | typing.SupportsIndex, to_s: typing.SupportsFloat | typing.SupportsIndex, max_nodes: typing.SupportsInt | typing.SupportsIndex = 1000000, prune: bool = True) -> float:
    """
    The optimal non-anticipative expected value over a scenario tree of traces, s-eq.
    """
def stream_seed(seed: typing.SupportsInt | typing.SupportsIndex, horizon: typing.SupportsInt | typing.SupportsIndex, policy: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    The decision stream of (seed, horizon, policy).
    """
