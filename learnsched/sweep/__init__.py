"""Sweeps: every base scenario at every point of a parameter grid, on threads or on Ray.

A SPEC names a base (the paper grid or a list of scenarios), the fields to vary and the
policies to solve; :func:`sweep` solves the cartesian product in resumable chunks, on
threads (``backend="local"``) or as Ray tasks (``backend="ray"``, the ``ray`` extra),
and writes one row per (point, scenario) to CSV or Parquet.
"""

from __future__ import annotations

from .points import Point, points
from .rows import INVALID, OK, Rows, solve_rows
from .run import BACKENDS, SweepResult, choose_chunk_rows, sweep
from .spec import GRID_FIELDS, PAPER_GRID, SCENARIO_FIELDS, SweepSpec, load_spec, parse_spec
from .summary import PointSummary, summarize_points
from .table import columns, read_rows

__all__ = [
    "BACKENDS",
    "GRID_FIELDS",
    "INVALID",
    "OK",
    "PAPER_GRID",
    "SCENARIO_FIELDS",
    "Point",
    "PointSummary",
    "Rows",
    "SweepResult",
    "SweepSpec",
    "choose_chunk_rows",
    "columns",
    "load_spec",
    "parse_spec",
    "points",
    "read_rows",
    "solve_rows",
    "summarize_points",
    "sweep",
]
