"""Rolling horizons over a real trace: the online policies against clairvoyance.

Each horizon starts at an idle window of the trace (after a warm-up that gives the
forecaster a history) with a fresh candidate; its true calendar is the windows that
start within ``horizon_s``, and the benefit horizon ends ``tail_s`` after it. The
empirical forecaster sees only the trace's past before each horizon plus the windows
of the horizon observed so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import integer, nonnegative, positive
from ..scenario import HandoffCosts, Scenario
from .forecast import EmpiricalForecaster
from .online import OnlineCase, OnlineResult, evaluate_online
from .windows import IdleWindows

__all__ = ["Candidate", "TraceStudy", "rolling_cases", "trace_study"]


@dataclass(frozen=True)
class Candidate:
    """The work planned in every horizon (the paper's LoRA-like defaults).

    Attributes
    ----------
    work_quanta, quantum_s
        ``J`` quanta of ``delta`` seconds.
    benefit_rate
        ``g``, s-eq./s.
    tail_s
        The benefit horizon ends this long after the horizon, s.
    costs
        Handoff costs (its recovery is the windows' return path).
    """

    work_quanta: int
    quantum_s: float
    benefit_rate: float
    tail_s: float
    costs: HandoffCosts

    def __post_init__(self) -> None:
        integer("work_quanta", self.work_quanta, low=1)
        positive("quantum_s", self.quantum_s)
        nonnegative("benefit_rate", self.benefit_rate)
        nonnegative("tail_s", self.tail_s)


def rolling_cases(
    windows: IdleWindows,
    candidate: Candidate,
    samples: int,
    horizon_s: float,
    warmup_s: float,
    history_s: float | None = None,
) -> list[OnlineCase]:
    """One case per window that starts a horizon: after ``warmup_s`` seconds of history
    and with the whole horizon inside the trace.

    Raises
    ------
    ValueError
        If no horizon fits the trace.
    """
    horizon_s = positive("horizon_s", horizon_s)
    warmup_s = nonnegative("warmup_s", warmup_s)
    pairs = windows.pairs()
    cases = []
    for start, _ in pairs:
        end = start + horizon_s
        if start < warmup_s or end > windows.span_s:
            continue
        truth = tuple(w for w in pairs if start <= w[0] < end)
        scenario = Scenario(
            truth,
            candidate.work_quanta,
            candidate.quantum_s,
            candidate.benefit_rate,
            end + candidate.tail_s,
            candidate.costs,
        )
        history = tuple(w for w in pairs if w[0] < start)
        cases.append(OnlineCase(scenario, EmpiricalForecaster(history_s), samples, history, end))
    if not cases:
        raise ValueError(
            f"no horizon of {horizon_s:g} s after a warm-up of {warmup_s:g} s fits the "
            f"trace's {windows.span_s:g} s with {len(pairs)} windows"
        )
    return cases


@dataclass(frozen=True)
class TraceStudy:
    """Online results per number of forecast samples ``N``."""

    results: dict[int, OnlineResult]
    calendars: int

    def to_json(self) -> dict[str, Any]:
        """``{"calendars", "samples": {N: {"policies": {...}}}}``."""
        return {
            "calendars": self.calendars,
            "samples": {str(n): r.to_json() for n, r in self.results.items()},
        }


def trace_study(
    windows: IdleWindows,
    candidate: Candidate,
    samples: Sequence[int],
    horizon_s: float,
    warmup_s: float,
    seed: int = 0,
    threads: int = 1,
    history_s: float | None = None,
) -> TraceStudy:
    """:func:`evaluate_online` over the trace's rolling horizons for each ``N`` in ``samples``."""
    if not samples:
        raise ValueError("samples must list at least one N")
    results = {}
    count = 0
    for n in samples:
        cases = rolling_cases(windows, candidate, n, horizon_s, warmup_s, history_s)
        count = len(cases)
        results[int(n)] = evaluate_online(cases, seed, threads)
    return TraceStudy(results, count)
