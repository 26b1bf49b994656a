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

import numpy as np

from . import _core
from ._checks import positive
from ._lazy import LazyTuple
from .scenario import PAPER_COLD, PAPER_WARM, HandoffCosts, InitialState, Recovery, Scenario
from .scenario_batch import ScenarioBatch

__all__ = [
    "CALENDARS",
    "Grid",
    "GridConfig",
    "GridScenario",
    "GridScenarios",
    "paper_grid",
    "scenario_by_id",
]

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


Labels = tuple[str, float, float, float, Recovery, str]
"""A scenario's labels: calendar, work_s, benefit_rate, tail_s, recovery, initial_state."""
LABEL_FIELDS = ("calendar", "work_s", "benefit_rate", "tail_s", "recovery", "initial_state")


def _windows(durations: tuple[float, ...], gap_s: float) -> tuple[tuple[float, float], ...]:
    windows, start = [], 0.0
    for length in durations:
        windows.append((start, start + float(length)))
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


class _Pieces:
    """The immutable pieces a configuration's scenarios share (windows per calendar,
    costs per recovery, initial states), each converted for the core once."""

    def __init__(self, config: GridConfig) -> None:
        self.config = config
        self.windows = {name: _windows(d, config.gap_s) for name, d in CALENDARS.items()}
        self.initial: dict[tuple[str, int], InitialState] = {}

    def work_quanta(self, work_s: float) -> int:
        quantum_s = self.config.quantum_s
        ratio = work_s / quantum_s
        if not ratio <= _core.finite.MAX_STATES:  # inf too: before round() or the core's int32
            raise ValueError(
                f"quantum_s={quantum_s} makes work_quanta = {work_s} s / quantum_s = {ratio:g} "
                f"quanta, more than the limit of {_core.finite.MAX_STATES}"
            )
        work_quanta = round(ratio)
        if abs(work_quanta * quantum_s - work_s) > 1e-9:
            raise ValueError(f"quantum_s={quantum_s} does not divide the work size {work_s} s")
        return int(work_quanta)

    def initial_state(self, name: str, work_quanta: int) -> InitialState:
        key = (name, work_quanta)
        if key not in self.initial:
            self.initial[key] = _initial(name, work_quanta)
        return self.initial[key]

    def core(self, index: tuple[list[int], ...]) -> list[_core.finite.Scenario]:
        """The validated core scenarios of grid entries, built in one call: ``index`` holds
        one list per label (calendar, work, rate, tail, recovery, initial state) of each
        entry's position in that label's values."""
        c = self.config
        cal, work, rate, tail, recovery, initial = index
        quanta = {w: self.work_quanta(c.work_s[w]) for w in dict.fromkeys(work)}
        states = {
            key: self.initial_state(INITIAL_STATES[key[1]], quanta[key[0]])
            for key in dict.fromkeys(zip(work, initial, strict=True))
        }
        state_set = {key: i for i, key in enumerate(states)}
        calendars = list(CALENDARS)
        ends = np.array([self.windows[name][-1][1] for name in calendars])
        horizon_s = ends[cal] + np.asarray(c.tails_s, dtype=np.float64)[tail]  # last end + tail
        cores = _core.finite.scenario_rows(
            [list(self.windows[name]) for name in calendars],
            [c.costs(r).to_core() for r in c.recoveries],
            [state.to_core() for state in states.values()],
            cal,
            [quanta[w] for w in work],
            [float(c.quantum_s)] * len(cal),
            np.asarray(c.benefit_rates, dtype=np.float64)[rate].tolist(),
            horizon_s.tolist(),
            recovery,
            [state_set[key] for key in zip(work, initial, strict=True)],
        )
        for core in cores:
            _core.finite.validate(core)  # the one check of each scenario (it names the field)
        return cores


class GridScenarios(LazyTuple[GridScenario]):
    """A grid's scenarios in id order, built as the core's; each :class:`GridScenario` (and
    its :class:`Scenario`) is made on first access, like the items of a tuple.

    Parameters
    ----------
    config
        The grid's configuration.
    numbers
        The entries' ids as numbers (``S0348`` is 348), indices into the product of the
        labels in :func:`paper_grid`'s order.

    Attributes
    ----------
    batch
        The scenarios as a :class:`~learnsched.ScenarioBatch` for ``solve_batch``.
    """

    __slots__ = ("_dims", "_index", "_numbers", "_pieces", "batch")

    def __init__(self, config: GridConfig, numbers: list[int]) -> None:
        super().__init__(len(numbers))
        self._pieces = _Pieces(config)
        self._numbers = numbers
        self._dims = _dims(config)
        shape = tuple(map(len, self._dims))
        flat = np.asarray(numbers, dtype=np.intp)
        self._index = tuple(a.tolist() for a in np.unravel_index(flat, shape))
        self.batch = ScenarioBatch(self._pieces.core(self._index), self._scenario)

    def _labels(self, index: int) -> Labels:
        cal, work, rate, tail, recovery, initial = (
            dim[at[index]] for dim, at in zip(self._dims, self._index, strict=True)
        )
        return (cal, work, rate, tail, recovery, initial)

    def _scenario(self, index: int) -> Scenario:
        calendar, _, _, _, recovery, initial = self._labels(index)
        core = self.batch.to_core()[index]
        state = self._pieces.initial_state(initial, core.work_quanta)
        costs = self._pieces.config.costs(recovery)
        return Scenario._validated(core, self._pieces.windows[calendar], costs, state)

    def _make(self, index: int) -> GridScenario:
        sid = f"S{self._numbers[index]:04d}"
        return GridScenario(sid, *self._labels(index), scenario=self.batch[index])

    def column(self, name: str) -> tuple[Any, ...]:
        """One label of every scenario, in id order, without building them.

        Parameters
        ----------
        name
            ``"sid"`` or a label: ``"calendar"``, ``"work_s"``, ``"benefit_rate"``,
            ``"tail_s"``, ``"recovery"``, ``"initial_state"``.
        """
        if name == "sid":
            return tuple(f"S{number:04d}" for number in self._numbers)
        if name not in LABEL_FIELDS:
            fields = ", ".join(LABEL_FIELDS)
            raise ValueError(f"name must be 'sid' or one of {fields}, got {name!r}")
        at = LABEL_FIELDS.index(name)
        dim = self._dims[at]
        return tuple(dim[i] for i in self._index[at])

    def __reduce__(self) -> tuple[type[GridScenarios], tuple[GridConfig, list[int]]]:
        return (type(self), (self._pieces.config, self._numbers))


@dataclass(frozen=True)
class Grid:
    """A frozen grid configuration and its scenarios, in id order.

    Attributes
    ----------
    config
        The configuration.
    scenarios
        Every :class:`GridScenario`, made on first access (a sequence like a tuple).
    """

    config: GridConfig
    scenarios: GridScenarios

    def __len__(self) -> int:
        return len(self.scenarios)

    @property
    def batch(self) -> ScenarioBatch:
        """The scenarios for :func:`~learnsched.solve_batch`, without building Python objects."""
        return self.scenarios.batch


def _dims(config: GridConfig) -> tuple[tuple[Any, ...], ...]:
    """The values of each label, in the order the ids nest them."""
    return (
        tuple(CALENDARS),
        config.work_s,
        config.benefit_rates,
        config.tails_s,
        config.recoveries,
        INITIAL_STATES,
    )


def scenario_labels(config: GridConfig) -> list[Labels]:
    """Every scenario's labels, in id order.

    Parameters
    ----------
    config
        The grid's dimensions.

    Returns
    -------
    list[Labels]
        ``(calendar, work_s, benefit_rate, tail_s, recovery, initial)`` per scenario;
        entry ``i`` is ``S{i:04d}``'s.
    """
    return list(product(*_dims(config)))


def grid_scenario(config: GridConfig, index: int) -> GridScenario:
    """Grid entry ``index`` (its id's number) alone, without building the others.

    Parameters
    ----------
    config
        The grid's dimensions and costs.
    index
        The number of the scenario's id (``S0348`` -> 348).

    Raises
    ------
    ValueError
        The quantum does not divide the scenario's work or windows.
    """
    return GridScenarios(config, [index])[0]


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
    numbers = [
        index
        for index, labels in enumerate(scenario_labels(config))
        if not fresh_only or labels[-1] == "fresh"
    ]
    return Grid(config, GridScenarios(config, numbers))


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
    labels = scenario_labels(config)
    match = re.fullmatch(r"S(\d{4})", sid)
    if match is None or int(match.group(1)) >= len(labels):
        raise ValueError(f"scenario id must be one of S0000..S{len(labels) - 1:04d}, got {sid!r}")
    return grid_scenario(config, int(match.group(1)))
