"""The sweep SPEC: a base set of scenarios, the fields to vary, and the policies to solve.

``{"base": "paper_grid" | [scenario objects], "vary": {FIELD: [values], ...},
"policies": [names]}``, read from JSON and checked before any work starts; every error
is a ``ValueError`` naming the key and the bad value.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import bounded, indexed, number
from .._json import exact_keys, read_json
from ..scenario import Scenario
from ..solver import Policy

__all__ = [
    "GRID_FIELDS",
    "MAX_ROWS",
    "PAPER_GRID",
    "SCENARIO_FIELDS",
    "SweepSpec",
    "load_spec",
    "parse_spec",
]

PAPER_GRID = "paper_grid"
PAPER_GRID_SCENARIOS = 1920
"""Base scenarios of ``"paper_grid"`` (``learnsched.paper_grid()``; a test checks it)."""
MAX_ROWS = 1 << 22
"""Most rows (points x base scenarios) of one sweep: 4,194,304. Every row is kept in
memory until the result is written (about 100 bytes each with six policies)."""
SPEC_KEYS = ("base", "vary", "policies")
# Fields of a scenario (its own, or of its handoff costs) that a sweep may set.
SCENARIO_FIELDS = ("benefit_rate", "quantum_s", "horizon_s", "residency_rate", "save_s", "load_s")
# The paper grid's recovery paths, each set only on the scenarios that take that path.
GRID_FIELDS = ("cold_recovery_s", "warm_recovery_s")


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep.

    Attributes
    ----------
    base
        ``"paper_grid"`` or the base scenarios in order.
    vary
        Field name to its values (seconds, s-eq./s or s-eq. per parked second, as the
        field), in the SPEC's order; their cartesian product makes the points.
    policies
        Policies solved for every (point, scenario), in column order.
    """

    base: str | tuple[Scenario, ...]
    vary: tuple[tuple[str, tuple[float, ...]], ...]
    policies: tuple[Policy, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """The varied fields, in the SPEC's order."""
        return tuple(name for name, _ in self.vary)

    def to_json(self) -> dict[str, Any]:
        """The SPEC as plain JSON (base scenarios written out in full)."""
        base: Any = self.base if isinstance(self.base, str) else [s.to_json() for s in self.base]
        return {
            "base": base,
            "vary": {name: list(values) for name, values in self.vary},
            "policies": [p.value for p in self.policies],
        }

    @property
    def hash(self) -> str:
        """SHA-256 of the canonical JSON SPEC: a rerun resumes only the same sweep."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()


def _base(value: object) -> str | tuple[Scenario, ...]:
    if value == PAPER_GRID:
        return PAPER_GRID
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"base must be {PAPER_GRID!r} or a list of scenario objects, got {value!r}")
    if not value:
        raise ValueError("base must hold at least one scenario, got []")
    return tuple(indexed("base", value, Scenario.from_json))


def _values(name: str, values: object) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"vary.{name} must be a list of numbers, got {values!r}")
    if not values:
        raise ValueError(f"vary.{name} must list at least one value, got []")
    out: list[float] = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"vary.{name} must hold numbers, got {value!r}")
        # number(): an integer beyond any double (10**400) is a named error, not an
        # OverflowError, and inf (JSON's 1e400) is refused like NaN.
        parsed = number(f"vary.{name}[{i}]", value)
        if parsed in out:
            raise ValueError(f"vary.{name} lists {value!r} twice")
        out.append(parsed)
    return tuple(out)


def _vary(value: object, grid: bool) -> tuple[tuple[str, tuple[float, ...]], ...]:
    if not isinstance(value, Mapping):
        raise TypeError(f"vary must be an object of FIELD: [values], got {value!r}")
    allowed = SCENARIO_FIELDS + GRID_FIELDS if grid else SCENARIO_FIELDS
    for name in value:
        if name in GRID_FIELDS and not grid:
            raise ValueError(f"vary field {name!r} applies only to base {PAPER_GRID!r}")
        if name not in allowed:
            raise ValueError(f"vary has unknown field {name!r}; fields are {', '.join(allowed)}")
    return tuple((str(name), _values(str(name), values)) for name, values in value.items())


def _policies(value: object) -> tuple[Policy, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"policies must be a list of policy names, got {value!r}")
    if not value:
        raise ValueError("policies must name at least one policy, got []")
    policies: list[Policy] = []
    for name in value:
        policy = Policy.parse(name)
        if policy in policies:
            raise ValueError(f"policies lists {name!r} twice")
        policies.append(policy)
    return tuple(policies)


def parse_spec(data: object) -> SweepSpec:
    """Check a SPEC object (as read from JSON) and build the :class:`SweepSpec`.

    Raises
    ------
    ValueError
        Missing or unknown keys, an unknown field, an empty or duplicated list, a
        non-numeric value, an unknown policy or an invalid base scenario; the message
        names it.
    """
    try:
        return _spec(data)
    except TypeError as err:  # JSON input: a wrong type is a bad value
        raise ValueError(str(err)) from err


def _spec(obj: object) -> SweepSpec:
    data = exact_keys("SPEC", obj, SPEC_KEYS)
    base = _base(data["base"])
    vary = _vary(data["vary"], base == PAPER_GRID)
    _bound_rows(base, vary)
    return SweepSpec(base, vary, _policies(data["policies"]))


def _bound_rows(
    base: str | tuple[Scenario, ...], vary: tuple[tuple[str, tuple[float, ...]], ...]
) -> None:
    """Refuse a sweep of more than :data:`MAX_ROWS` rows before any point is built."""
    scenarios = PAPER_GRID_SCENARIOS if isinstance(base, str) else len(base)
    count = 1
    for _, values in vary:
        count *= len(values)
    bounded(
        f"sweep rows: points x base scenarios = {count} x {scenarios}",
        count * scenarios,
        MAX_ROWS,
    )


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read and check a SPEC JSON file (see :func:`parse_spec`)."""
    return parse_spec(read_json(path))
