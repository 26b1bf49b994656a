"""The paper's frozen 1920-scenario grid (Section 6.1, Table D.1).

Scenario ids ``S0000``..``S1919`` nest calendar, work, benefit rate, tail, recovery
(warm before cold) and initial state, each in the order listed below. The 1 s fresh-only
check keeps the id of the matching fresh 5 s scenario.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

from ._checks import positive
from .scenario import PAPER_COLD, PAPER_WARM, HandoffCosts, InitialState, Recovery, Scenario

__all__ = ["CALENDARS", "Grid", "GridConfig", "GridScenario", "paper_grid", "scenario_by_id"]

# Table D.1: window durations in seconds, 20 s gaps, first window at 0.
CALENDARS: dict[str, tuple[float, ...]] = {
    "front_loaded": (240, 80, 80, 80),
    "back_loaded": (80, 80, 80, 240),
    "alternating": (120, 240, 120, 240),
    "fragmented": (80, 80, 80, 80),
    "uniform": (160, 160, 160, 160),
    "continuous": (480,),
}
INITIAL_STATES = ("fresh", "unsaved_active", "saved_active", "saved_service")


@dataclass(frozen=True)
class GridConfig:
    """Every parameter of the grid; its :attr:`hash` identifies a frozen configuration."""

    quantum_s: float = 5.0
    fresh_only: bool = False
    gap_s: float = 20.0
    work_s: tuple[float, ...] = (30, 60, 120, 180)
    benefit_rates: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2)
    tails_s: tuple[float, ...] = (120, 480)
    warm: HandoffCosts = PAPER_WARM
    cold: HandoffCosts = PAPER_COLD
    recoveries: tuple[Recovery, ...] = (Recovery.WARM, Recovery.COLD)

    def __post_init__(self) -> None:
        positive("quantum_s", self.quantum_s)  # checked, not converted: the hash keeps its type

    def costs(self, recovery: str | Recovery) -> HandoffCosts:
        """The handoff costs of ``"warm"`` or ``"cold"`` recovery."""
        return self.warm if Recovery.parse(recovery) is Recovery.WARM else self.cold

    def to_json(self) -> dict[str, Any]:
        """Every parameter, the calendars and the handoff costs, as plain JSON."""
        return {
            "quantum_s": self.quantum_s,
            "fresh_only": self.fresh_only,
            "gap_s": self.gap_s,
            "calendars": {name: list(d) for name, d in CALENDARS.items()},
            "work_s": list(self.work_s),
            "benefit_rates": list(self.benefit_rates),
            "tails_s": list(self.tails_s),
            "recoveries": {r: self.costs(r).to_json() for r in self.recoveries},
            "initial_states": list(INITIAL_STATES),
        }

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON configuration (stable across runs and versions)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class GridScenario:
    """One grid scenario with the labels it was built from."""

    sid: str
    calendar: str
    work_s: float
    benefit_rate: float
    tail_s: float
    recovery: Recovery
    initial_state: str
    scenario: Scenario


@dataclass(frozen=True)
class Grid:
    """A frozen grid configuration and its scenarios, in id order."""

    config: GridConfig
    scenarios: tuple[GridScenario, ...]

    def __len__(self) -> int:
        return len(self.scenarios)


def _windows(durations: tuple[float, ...], gap_s: float) -> tuple[tuple[float, float], ...]:
    windows, start = [], 0.0
    for length in durations:
        windows.append((start, start + length))
        start += length + gap_s
    return tuple(windows)


def _initial(name: str, work_quanta: int) -> InitialState:
    half = work_quanta // 2
    if name != "fresh" and 2 * half != work_quanta:
        raise ValueError(f"a half-complete state needs an even work_quanta, got {work_quanta}")
    return {
        "fresh": InitialState(0, 0, False),
        "unsaved_active": InitialState(half, 0, True),
        "saved_active": InitialState(half, half, True),
        "saved_service": InitialState(half, half, False),
    }[name]


def _labels(config: GridConfig) -> list[tuple[str, float, float, float, Recovery, str]]:
    """Every scenario's labels, in id order."""
    return list(
        product(
            CALENDARS,
            config.work_s,
            config.benefit_rates,
            config.tails_s,
            config.recoveries,
            INITIAL_STATES,
        )
    )


def _grid_scenario(
    config: GridConfig, index: int, labels: tuple[str, float, float, float, Recovery, str]
) -> GridScenario:
    calendar, work_s, rate, tail_s, recovery, initial = labels
    windows = _windows(CALENDARS[calendar], config.gap_s)
    work_quanta = round(work_s / config.quantum_s)
    if abs(work_quanta * config.quantum_s - work_s) > 1e-9:
        raise ValueError(f"quantum_s={config.quantum_s} does not divide the work size {work_s} s")
    scenario = Scenario(
        windows=windows,
        work_quanta=work_quanta,
        quantum_s=config.quantum_s,
        benefit_rate=rate,
        horizon_s=windows[-1][1] + tail_s,
        costs=config.costs(recovery),
        initial=_initial(initial, work_quanta),
    )
    return GridScenario(
        f"S{index:04d}", calendar, work_s, rate, tail_s, recovery, initial, scenario
    )


def paper_grid(
    quantum_s: float = 5.0,
    fresh_only: bool = False,
    costs: Mapping[str, HandoffCosts] | None = None,
) -> Grid:
    """The paper's grid: 1920 scenarios at 5 s, or 480 fresh ones with ``fresh_only``.

    Parameters
    ----------
    quantum_s
        Work quantum, seconds (the paper uses 5, and 1 for the fresh-only check).
    fresh_only
        Keep only fresh initial states (the paper's 1 s check).
    costs
        Handoff costs keyed ``"warm"`` and ``"cold"`` (e.g. from a measured
        :class:`~learnsched.handoff.CostProfile`); the paper's A100 costs by default.
    """
    warm, cold = _recovery_costs(costs)
    config = GridConfig(quantum_s=quantum_s, fresh_only=fresh_only, warm=warm, cold=cold)
    items = tuple(
        _grid_scenario(config, index, labels)
        for index, labels in enumerate(_labels(config))
        if not fresh_only or labels[-1] == "fresh"
    )
    return Grid(config, items)


def _recovery_costs(
    costs: Mapping[str, HandoffCosts] | None,
) -> tuple[HandoffCosts, HandoffCosts]:
    """(warm, cold) costs: the paper's, or the given mapping's."""
    if costs is None:
        return PAPER_WARM, PAPER_COLD
    if set(costs) != set(Recovery):
        raise ValueError(f"costs must be keyed 'warm' and 'cold', got {sorted(costs)}")
    return costs[Recovery.WARM], costs[Recovery.COLD]


def scenario_by_id(sid: str, quantum_s: float = 5.0) -> GridScenario:
    """The grid scenario with id ``sid`` (``S0000``..``S1919``) at the given quantum.

    It is built alone (not the whole grid), with the paper's costs; plan it with measured
    ones through :meth:`Scenario.with_costs`.
    """
    config = GridConfig(quantum_s=quantum_s)
    labels = _labels(config)
    match = re.fullmatch(r"S(\d{4})", sid)
    if match is None or int(match.group(1)) >= len(labels):
        raise ValueError(f"scenario id must be one of S0000..S{len(labels) - 1:04d}, got {sid!r}")
    index = int(match.group(1))
    return _grid_scenario(config, index, labels[index])
