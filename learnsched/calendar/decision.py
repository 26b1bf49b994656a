"""Decisions at the current window under a forecast, made in the C++ core.

The scheduler knows the current window ``[l_k, d_k]`` and sees the later windows only
through ``N`` sampled calendars. :class:`ForecastDecision` builds each sample's exact
continuation tables (``V_G``, ``V^pi0``, ``V*``, O(K*J) each) on threads with the GIL
released, and scores the current window's actions by ``R(a) + mean_i V_i(s')``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import _core
from .._checks import integer
from ..scenario import Scenario
from ..solver import Action, Policy, core_policy
from .forecast import Calendar, Packed, packed

__all__ = [
    "FORECAST_NAMES",
    "FORECAST_POLICIES",
    "ForecastDecision",
    "SampleTables",
    "forecast_policy",
    "packed_tables",
    "sample_tables",
]

FORECAST_POLICIES = (Policy.WINDOW, Policy.COSTED_WINDOW, Policy.ROLLOUT, Policy.DP)
"""The policies that decide under a forecast, in output order."""

FORECAST_NAMES = {
    Policy.WINDOW: "window",
    Policy.COSTED_WINDOW: "costed_window",
    Policy.ROLLOUT: "rollout",
    Policy.DP: "mean_dp",
}
"""Their names under a forecast: DP's continuation is each sample's own optimum (it knows
its sample's future), averaged, so it is called ``mean_dp``, not an optimum."""


def forecast_policy(policy: str | Policy) -> Policy:
    """A policy under a forecast from its name (``mean_dp`` or ``dp`` for DP) or value."""
    if policy == "mean_dp":
        return Policy.DP
    parsed = Policy.parse(policy)
    if parsed not in FORECAST_POLICIES:
        names = ", ".join(FORECAST_NAMES.values())
        raise ValueError(f"policy under a forecast must be one of {names}, got {policy!r}")
    return parsed


SampleTables = _core.forecast.SampleTables
"""Continuation tables of fixed sampled calendars, built once (see :func:`sample_tables`)."""


def _current(scenario: Scenario, window: tuple[float, float]) -> _core.finite.Scenario:
    """The candidate with only the current window known."""
    core = scenario.to_core()
    return _core.finite.Scenario(
        [window],
        core.work_quanta,
        core.quantum_s,
        core.benefit_rate,
        core.horizon_s,
        core.costs,
        _core.finite.State(0, 0, 0, False),
        core.benefit_schedule,
    )


def _core_policies(policies: Sequence[str | Policy]) -> list[_core.finite.Policy]:
    return [core_policy(forecast_policy(p)) for p in policies]


def sample_tables(
    scenario: Scenario,
    calendars: Sequence[Calendar],
    policies: Sequence[str | Policy] = FORECAST_POLICIES,
    threads: int = 1,
) -> SampleTables:
    """The tables of ``N`` full sampled calendars, for forecasts that do not change.

    Tables are computed backwards, so the continuation after any current window is the
    row of each sample's first window starting at or after that window's end: one build
    serves every window of a true calendar (:meth:`ForecastDecision.from_tables`).

    Parameters
    ----------
    scenario
        The candidate (work, benefit, costs); its windows are not used.
    calendars
        ``N >= 1`` calendars, seconds.
    policies
        The policies decisions will be asked for (only their tables are built).
    threads
        Threads over the samples (the result does not depend on it).
    """
    return packed_tables(scenario, packed(calendars), policies, threads)


def packed_tables(
    scenario: Scenario,
    calendars: Packed,
    policies: Sequence[str | Policy] = FORECAST_POLICIES,
    threads: int = 1,
) -> SampleTables:
    """:func:`sample_tables` of calendars already packed (:func:`~.forecast.packed`)."""
    windows, offsets = calendars
    threads = integer("threads", threads, low=1)
    return _core.forecast.SampleTables(
        scenario.to_core(), windows, offsets, _core_policies(policies), threads
    )


class ForecastDecision:
    """The current window's decisions under a forecast.

    Parameters
    ----------
    scenario
        The candidate (work, benefit, costs); its windows are not used.
    window
        The current window ``(l_k, d_k)``: its start and return deadline, seconds.
    futures
        ``N >= 1`` sampled calendars of the windows after ``d_k`` (each may be empty),
        seconds, e.g. from :meth:`Forecaster.sample`.
    policies
        The policies :meth:`decide` will be asked for (only their tables are built).
    threads
        Threads over the samples (the result does not depend on it).

    Raises
    ------
    ValueError
        A sample that is unsorted, overlapping, not finite or starts before ``d_k``
        (``samples[i]: ...``), or a current window the scenario cannot use.
    """

    __slots__ = ("_model",)

    def __init__(
        self,
        scenario: Scenario,
        window: tuple[float, float],
        futures: Sequence[Calendar],
        policies: Sequence[str | Policy] = FORECAST_POLICIES,
        threads: int = 1,
    ) -> None:
        windows, offsets = packed(futures)
        threads = integer("threads", threads, low=1)
        self._model = _core.forecast.ForecastModel(
            _current(scenario, window), windows, offsets, _core_policies(policies), threads
        )

    @classmethod
    def from_tables(
        cls, scenario: Scenario, window: tuple[float, float], tables: SampleTables
    ) -> ForecastDecision:
        """Decisions at ``window`` from prebuilt :func:`sample_tables` (O(N*J))."""
        decision = object.__new__(cls)
        decision._model = _core.forecast.ForecastModel(_current(scenario, window), tables)
        return decision

    @property
    def sample_count(self) -> int:
        """``N``."""
        return self._model.sample_count

    def decide(
        self,
        progress: int,
        durable: int,
        active: bool = False,
        policy: str | Policy = Policy.ROLLOUT,
    ) -> Action:
        """The policy's action in the current window for the state ``(p, pbar, active)``.

        ``window`` needs no forecast; ``costed_window`` gates Window by the mean priced
        Window plan; ``rollout`` (default) maximises ``R(a) + mean_i V_i^pi0(s')``
        keeping pi0's action on ties (Eq. 11); ``mean_dp`` (or ``dp``) maximises
        ``R(a) + mean_i V_i*(s')``, the per-sample optimum averaged.
        The action fits the current window (Eq. 10): capacity is back by ``d_k``.
        """
        return self._model.decide(progress, durable, active, core_policy(forecast_policy(policy)))

    def take(self, progress: int, durable: int, active: bool, action: Action) -> _core.finite.Segment:
        """The segment ``action`` makes of the current window: timeline, cost, benefit and
        the next state (``ValueError`` if the action does not fit, Eq. 10)."""
        return self._model.take(progress, durable, active, action)

    def mean_window_plan_values(self) -> list[float]:
        """``mean_i V_G,i`` after the current window, per durable progress 0..J, s-eq."""
        return self._model.mean_window_plan_values()

    def mean_reference_values(self) -> list[float]:
        """``mean_i V_i^pi0`` after the current window, per durable progress 0..J, s-eq."""
        return self._model.mean_reference_values()

    def mean_optimal_values(self) -> list[float]:
        """``mean_i V_i*`` after the current window, per durable progress 0..J, s-eq."""
        return self._model.mean_optimal_values()
