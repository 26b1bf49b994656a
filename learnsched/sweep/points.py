"""Sweep points (the cartesian product of ``vary``) and the scenario each point makes.

Rows are numbered point-major: row ``r`` is base scenario ``r % n`` at point ``r // n``
for ``n`` base scenarios, so a row range names the same work on every machine.

Each row's scenario is built straight as the core's (from a validated base scenario
with the point's fields replaced) and checked by the core, whose message is the row's
error: a Python :class:`~learnsched.Scenario` per row would cost several times its solve.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from itertools import product

from .. import _core
from ..grid import GridConfig, GridScenario, GridScenarios, grid_scenario, scenario_labels
from ..scenario import HandoffCosts, Recovery, Scenario
from .spec import SweepSpec

__all__ = ["Point", "base_ids", "core_scenario", "point_count", "point_range", "points"]

Point = tuple[tuple[str, float], ...]
"""One point: ``(field, value)`` pairs in the SPEC's field order."""

COST_FIELDS = ("residency_rate", "save_s", "load_s")


def points(spec: SweepSpec) -> tuple[Point, ...]:
    """Every point of the sweep, the first varied field slowest (one empty point if none)."""
    names = spec.fields
    return tuple(
        tuple(zip(names, values, strict=True))
        for values in product(*(values for _, values in spec.vary))
    )


def point_count(spec: SweepSpec) -> int:
    """How many points the sweep has (``len(points(spec))`` without building them)."""
    return math.prod(len(values) for _, values in spec.vary)


def point_range(spec: SweepSpec, first: int, stop: int) -> list[Point]:
    """Points ``first .. stop - 1`` (``points(spec)[first:stop]``), built alone: a chunk's
    task needs its own few points, not all of them (10^6 per task made sweeps quadratic)."""
    sizes = [len(values) for _, values in spec.vary]
    out = []
    for index in range(first, stop):
        digits = []
        for size in reversed(sizes):  # the last field fastest, as itertools.product
            index, digit = divmod(index, size)
            digits.append(digit)
        digits.reverse()
        out.append(
            tuple((name, values[d]) for (name, values), d in zip(spec.vary, digits, strict=True))
        )
    return out


@cache
def _grid_labels() -> tuple[tuple[str, float, float, float, Recovery, str], ...]:
    return tuple(scenario_labels(GridConfig()))


@cache
def _ids(template: str, n: int) -> tuple[str, ...]:
    return tuple(template.format(i) for i in range(n))  # built once: every chunk needs them


def base_ids(spec: SweepSpec) -> tuple[str, ...]:
    """The id of every base scenario: ``S0000``.. for the paper grid, else ``scenario[i]``."""
    if isinstance(spec.base, str):  # the paper grid
        return _ids("S{:04d}", len(_grid_labels()))
    return _ids("scenario[{}]", len(spec.base))


def _grid_item(config: GridConfig, index: int) -> tuple[GridScenario | None, str]:
    try:
        return grid_scenario(config, index), ""
    except ValueError as err:  # the quantum does not divide this work size
        return None, str(err)


@cache
def _grid_at(quantum_s: float) -> tuple[tuple[GridScenario | None, str], ...]:
    """The paper grid at a quantum (work sizes stay in seconds), or why a scenario fails."""
    config = GridConfig(quantum_s=quantum_s)
    numbers = list(range(len(_grid_labels())))
    try:  # the whole grid in one core call when every work size divides
        return tuple((item, "") for item in GridScenarios(config, numbers))
    except ValueError:
        return tuple(_grid_item(config, i) for i in numbers)


def _costs(
    base: HandoffCosts, params: Mapping[str, float], recovery_field: str | None = None
) -> _core.finite.HandoffCosts:
    recovery_s = base.recovery_s
    if recovery_field is not None:
        recovery_s = params.get(recovery_field, recovery_s)
    return _core.finite.HandoffCosts(
        recovery_s,
        params.get("residency_rate", base.residency_rate),
        params.get("save_s", base.save_s),
        params.get("load_s", base.load_s),
        base.cold_recovery_s,  # a two-path base keeps its cold path (None: one path)
    )


@cache
def _grid_costs(point: Point, recovery: Recovery) -> _core.finite.HandoffCosts:
    """The handoff costs of a grid recovery path at a point (shared by 960 scenarios)."""
    return _costs(GridConfig().costs(recovery), dict(point), f"{recovery}_recovery_s")


def _with_fields(
    scenario: Scenario, params: Mapping[str, float], costs: _core.finite.HandoffCosts
) -> _core.finite.Scenario:
    base = scenario.to_core()
    # A swept benefit_rate is a constant rate, in place of the base's rate or schedule.
    swept = "benefit_rate" in params
    core = _core.finite.Scenario(
        list(scenario.windows),
        scenario.work_quanta,
        params.get("quantum_s", scenario.quantum_s),
        params["benefit_rate"] if swept else base.benefit_rate,
        params.get("horizon_s", scenario.horizon_s),
        costs,
        scenario.initial.to_core(),
        [] if swept else base.benefit_schedule,
    )
    _core.finite.validate(core)
    return core


def core_scenario(spec: SweepSpec, point: Point, index: int) -> _core.finite.Scenario:
    """Base scenario ``index`` with the point's fields set, validated by the core.

    On the paper grid, ``quantum_s`` keeps each work size in seconds (as ``learnsched grid
    --quantum``) and ``cold_recovery_s`` / ``warm_recovery_s`` set the return time of the
    scenarios on that recovery path; on a list of scenarios, ``quantum_s`` keeps
    ``work_quanta``. ``residency_rate``, ``save_s`` and ``load_s`` apply to every scenario.

    Raises
    ------
    ValueError
        The combination is invalid; the message is the core's reason (or, on the grid,
        that the quantum does not divide the work size).
    """
    params = dict(point)
    if isinstance(spec.base, str):  # the paper grid
        item, error = _grid_at(params.get("quantum_s", GridConfig.quantum_s))[index]
        if item is None:
            raise ValueError(error)
        return _with_fields(item.scenario, params, _grid_costs(point, item.recovery))
    scenario = spec.base[index]
    return _with_fields(scenario, params, _costs(scenario.costs, params))
