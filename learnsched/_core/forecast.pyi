"""
Forecasts: sampled calendars, their tables and online runs.
"""
from __future__ import annotations
import collections.abc
import learnsched._core.finite
import numpy
import numpy.typing
import typing
__all__: list[str] = ['ForecastModel', 'MAX_SAMPLES', 'MAX_SAMPLE_STATES', 'SampleTables', 'pack_calendars', 'run_online']
class SampleTables:
    """
    Continuation tables of N sampled calendars, built once.
    """
    def __init__(self, candidate: learnsched._core.finite.Scenario, windows: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], policies: collections.abc.Sequence[learnsched._core.finite.Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
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
    def __init__(self, current: learnsched._core.finite.Scenario, windows: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], policies: collections.abc.Sequence[learnsched._core.finite.Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> None:
        """
        current: a one-window scenario; sample i is windows[offsets[i]:offsets[i+1]], all after the current window.
        """
    @typing.overload
    def __init__(self, current: learnsched._core.finite.Scenario, tables: SampleTables) -> None:
        """
        current: a one-window scenario; each sample of `tables` contributes its windows from the current window's end on; O(N*J).
        """
    def decide(self, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, active: bool, policy: learnsched._core.finite.Policy) -> learnsched._core.finite.Action:
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
    def take(self, progress: typing.SupportsInt | typing.SupportsIndex, durable: typing.SupportsInt | typing.SupportsIndex, active: bool, action: learnsched._core.finite.Action) -> learnsched._core.finite.Segment:
        """
        The segment a feasible action makes of the current window.
        """
    @property
    def sample_count(self) -> int:
        ...
    @property
    def scenario(self) -> learnsched._core.finite.Scenario:
        ...
def pack_calendars(name: str, samples: list[typing.Any], check: collections.abc.Callable[[str, typing.Any], typing.Any]) -> tuple[numpy.typing.NDArray[numpy.float64], numpy.typing.NDArray[numpy.int64]]:
    """
    Calendars (lists of [start, end] pairs) as (windows (M, 2), offsets (N + 1)); a calendar that is not plain lists of finite numbers, sorted, is passed to check.
    """
def run_online(cases: list[tuple[typing.Any, ...]], policies: collections.abc.Sequence[learnsched._core.finite.Policy], threads: typing.SupportsInt | typing.SupportsIndex = 1) -> list[list[learnsched._core.finite.Plan]]:
    """
    Each case (true scenario, sample windows, offsets: full calendars) run online: one plan per policy, then the clairvoyant's, on threads over the cases.
    """
MAX_SAMPLES: int = 65536
MAX_SAMPLE_STATES: int = 16777216
