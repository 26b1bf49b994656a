"""Solved rows of a sweep: one per (point, base scenario), and how a row range is solved.

:func:`solve_rows` is the unit of work every backend runs (a thread, a Ray task); it
depends only on the SPEC and the row range, so every backend writes the same bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from .. import _core
from .._checks import FloatArray
from ..solver import core_policy
from .points import base_ids, core_scenario, point_count, point_range
from .spec import SweepSpec

__all__ = ["INVALID", "OK", "Rows", "concat_rows", "rows_of", "solve_rows"]

OK = "ok"
INVALID = "invalid"


@dataclass(frozen=True)
class Rows:
    """Rows ``start .. start + len - 1`` of a sweep, point-major.

    Attributes
    ----------
    start
        Index of the first row in the whole sweep.
    point
        Point index of each row.
    params
        The point's value of each varied field, shape ``(n, fields)`` in SPEC order.
    scenario
        Base scenario id of each row (``S0000``.. or ``scenario[i]``).
    error
        Why the combination is invalid (the core's reason), ``""`` for a solved row.
    value
        Net value per policy, s-eq., shape ``(n, policies)``; NaN in an invalid row.
    """

    start: int
    point: NDArray[np.int64]
    params: FloatArray
    scenario: tuple[str, ...]
    error: tuple[str, ...]
    value: FloatArray

    def __len__(self) -> int:
        return len(self.scenario)

    @property
    def status(self) -> tuple[str, ...]:
        """``"ok"`` or ``"invalid"`` per row."""
        return tuple(INVALID if e else OK for e in self.error)


def solve_rows(spec: SweepSpec, start: int, stop: int, threads: int = 1) -> Rows:
    """Build and solve rows ``start .. stop - 1`` of the sweep under the SPEC's policies.

    An invalid combination does not stop the work: its row keeps the error message
    and NaN values.

    Parameters
    ----------
    spec
        The sweep.
    start, stop
        Row range (point-major: row ``r`` is base scenario ``r % n`` at point ``r // n``).
    threads
        Threads of the core's batch solver (results identical for any count).
    """
    n = len(base_ids(spec))
    _check_range(start, stop, n * point_count(spec))
    first = start // n
    pts = point_range(spec, first, (stop - 1) // n + 1 if stop > start else first)
    errors: list[str] = []
    scenarios, solved = [], []
    for row in range(start, stop):
        p, i = divmod(row, n)
        try:
            scenarios.append(core_scenario(spec, pts[p - first], i))
        except (ValueError, TypeError) as err:
            errors.append(str(err))
            continue
        errors.append("")
        solved.append(row - start)
    value = np.full((stop - start, len(spec.policies)), np.nan)
    if scenarios:
        policies = [core_policy(p) for p in spec.policies]
        value[solved] = _core.finite.solve_batch(scenarios, policies, threads)["value"]
    return rows_of(spec, start, value, tuple(errors))


def _check_range(start: int, stop: int, total: int) -> None:
    if not 0 <= start <= stop <= total:
        raise ValueError(f"row range must lie in [0, {total}], got [{start}, {stop})")


def rows_of(spec: SweepSpec, start: int, value: FloatArray, error: tuple[str, ...]) -> Rows:
    """Rows ``start ..`` of the sweep with their solved ``value`` (n x policies) and
    ``error`` per row; the point, parameters and scenario ids follow from the SPEC."""
    ids = base_ids(spec)
    n = len(ids)
    stop = start + len(error)
    _check_range(start, stop, n * point_count(spec))
    if value.shape != (len(error), len(spec.policies)):
        raise ValueError(f"value must be {len(error)} x {len(spec.policies)}, got {value.shape}")
    point_index = np.arange(start, stop) // n
    # Each point's parameters once (a chunk spans few points), then one row per row.
    first, last = (start // n, (stop - 1) // n + 1) if stop > start else (0, 0)
    params = np.array(
        [[v for _, v in point] for point in point_range(spec, first, last)], dtype=np.float64
    ).reshape(last - first, len(spec.fields))
    return Rows(
        start=start,
        point=point_index,
        params=params[point_index - first],
        scenario=tuple(ids[r % n] for r in range(start, stop)),
        error=error,
        value=value,
    )


def concat_rows(parts: Sequence[Rows]) -> Rows:
    """Consecutive row ranges joined into one (they must follow each other)."""
    if not parts:
        raise ValueError("concat_rows needs at least one part")
    for before, after in pairwise(parts):
        if before.start + len(before) != after.start:
            end = before.start + len(before)
            raise ValueError(f"rows from {after.start} do not follow rows ending at {end}")
    return Rows(
        start=parts[0].start,
        point=np.concatenate([p.point for p in parts]),
        params=np.concatenate([p.params for p in parts]),
        scenario=tuple(s for p in parts for s in p.scenario),
        error=tuple(e for p in parts for e in p.error),
        value=np.concatenate([p.value for p in parts]),
    )
