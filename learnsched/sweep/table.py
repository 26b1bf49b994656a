"""Sweep rows as CSV or Parquet (by file suffix), written atomically, read back exactly.

Columns: ``point``, one per varied field, ``scenario``, ``status`` (``ok`` or
``invalid``), ``error`` (the core's reason, empty when solved) and ``value_<policy>``
(s-eq.; empty in CSV / NaN in Parquet for an invalid row). CSV floats are written with
``repr`` so that they read back bit for bit. Parquet needs pyarrow (the ``ray`` extra).
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._atomic import atomic_write
from .._checks import FloatArray
from .._csvfile import read_csv
from .._extras import require
from .rows import Rows
from .spec import SweepSpec

__all__ = ["FORMATS", "columns", "file_format", "read_rows", "write_rows"]

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def file_format(path: str | os.PathLike[str]) -> str:
    """``"csv"`` or ``"parquet"`` from the suffix; ``ValueError`` for any other.

    Raises :class:`~learnsched._extras.MissingExtra` for Parquet without pyarrow, so that
    a sweep fails before it starts rather than at its first chunk.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"--out must end in .csv or .parquet, got {os.fspath(path)!r}")
    if FORMATS[suffix] == "parquet":
        _pyarrow()
    return FORMATS[suffix]


def columns(spec: SweepSpec) -> list[str]:
    """Column names in file order."""
    values = [f"value_{p.value}" for p in spec.policies]
    return ["point", *spec.fields, "scenario", "status", "error", *values]


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or :class:`~learnsched._extras.MissingExtra` (exit 3)."""
    return require("pyarrow", "ray"), require("pyarrow.parquet", "ray")


def _floats(column: FloatArray) -> list[str]:
    """Each value's ``repr`` (read back bit for bit), ``""`` for NaN: one C-level pass."""
    text = list(map(repr, column.tolist()))
    for i in np.flatnonzero(np.isnan(column)).tolist():
        text[i] = ""
    return text


def _write_csv(file: IO[bytes], rows: Rows, spec: SweepSpec) -> None:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns(spec))
    # Column by column, then every row in one writerows: the same bytes as a writerow per
    # row of formatted values, at a fraction of the calls.
    writer.writerows(
        zip(
            map(str, rows.point.tolist()),
            *(_floats(rows.params[:, j]) for j in range(rows.params.shape[1])),
            rows.scenario,
            rows.status,
            rows.error,
            *(_floats(rows.value[:, j]) for j in range(rows.value.shape[1])),
            strict=True,
        )
    )
    file.write(text.getvalue().encode())


def _write_parquet(file: IO[bytes], rows: Rows, spec: SweepSpec) -> None:
    pa, pq = _pyarrow()
    names = columns(spec)
    data: list[Any] = [pa.array(rows.point, pa.int64())]
    data += [pa.array(rows.params[:, j], pa.float64()) for j in range(len(spec.fields))]
    data += [pa.array(list(c), pa.string()) for c in (rows.scenario, rows.status, rows.error)]
    data += [pa.array(rows.value[:, j], pa.float64()) for j in range(len(spec.policies))]
    pq.write_table(pa.table(data, names=names), file)


def write_rows(
    path: str | os.PathLike[str], rows: Rows, spec: SweepSpec, durable: bool = True
) -> None:
    """Write ``rows`` to ``path`` atomically (and durably unless told not to, see
    :func:`~learnsched._atomic.atomic_write`), in the format of its suffix."""
    writer = _write_parquet if file_format(path) == "parquet" else _write_csv
    atomic_write(path, lambda file: writer(file, rows, spec), durable=durable)


def _rows(start: int, spec: SweepSpec, table: dict[str, list[Any]]) -> Rows:
    n = len(table["point"])
    fields = [np.asarray(table[f], dtype=np.float64) for f in spec.fields]
    values = [np.asarray(table[f"value_{p.value}"], dtype=np.float64) for p in spec.policies]
    return Rows(
        start=start,
        point=np.asarray(table["point"], dtype=np.int64),
        params=np.stack(fields, axis=1) if fields else np.empty((n, 0)),
        scenario=tuple(table["scenario"]),
        error=tuple(table["error"]),
        value=np.stack(values, axis=1),
    )


def _read_csv(path: Path, spec: SweepSpec) -> dict[str, list[Any]]:
    records = read_csv(path)
    _, header = next(records, (0, []))
    if header != columns(spec):
        raise ValueError(f"{path} has columns {header}, expected {columns(spec)}")
    table: dict[str, list[Any]] = {name: [] for name in header}
    numeric = {"point", *spec.fields, *(f"value_{p.value}" for p in spec.policies)}
    for line, row in records:
        if len(row) != len(header):
            raise ValueError(f"{path}: line {line}: {len(row)} fields, expected {len(header)}")
        for name, cell in zip(header, row, strict=True):
            table[name].append((float(cell) if cell else np.nan) if name in numeric else cell)
    return table


def read_rows(path: str | os.PathLike[str], spec: SweepSpec, start: int = 0) -> Rows:
    """Read rows written by :func:`write_rows`; ``start`` is the first row's sweep index."""
    path = Path(path)
    if file_format(path) == "csv":
        return _rows(start, spec, _read_csv(path, spec))
    _, pq = _pyarrow()
    table = pq.read_table(path)
    if table.column_names != columns(spec):
        raise ValueError(f"{path} has columns {table.column_names}, expected {columns(spec)}")
    return _rows(start, spec, table.to_pydict())
