"""Request traces: validation, the paper's 4 -> 40 -> 4 req/s burst, and CSV files.

A trace CSV has a header row and the columns ``arrival``, ``work`` and ``deadline``
(seconds, work units, seconds), optionally ``prompt_tokens`` and ``max_output_tokens``
(both or neither); other columns are ignored. A rate CSV has the columns ``start`` and
``rate`` (seconds, work per second).
"""

from __future__ import annotations

import csv
import io
import math
import os
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, cast

import numpy as np

from .._atomic import atomic_write
from .._checks import FloatArray, nonnegative, positive
from .._csvcolumns import numbers, read_table
from .._csvfile import MAX_ROWS, csv_header, read_csv
from ._checks import (
    deadlines_after_arrivals,
    first_index,
    float_array,
    nonnegative_array,
    same_length,
)
from .admission import estimate_work
from .rates import RateProfile

__all__ = [
    "TOKEN_COLUMNS",
    "TRACE_COLUMNS",
    "Trace",
    "burst_trace",
    "read_rate_csv",
    "read_trace_csv",
    "write_trace_csv",
]

TRACE_COLUMNS = ("arrival", "work", "deadline")
TOKEN_COLUMNS = ("prompt_tokens", "max_output_tokens")
RATE_COLUMNS = ("start", "rate")


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests of a FIFO queue, in arrival order (paper Section 3.3).

    Parameters
    ----------
    arrival
        Scheduled arrival times ``a_i``, seconds, non-decreasing.
    work
        Service work ``w_i > 0``, work units (the unit of the service rate times seconds).
    deadline
        Deadlines ``d_i >= a_i``, seconds. ``d_i = a_i`` is allowed (with ``w_i > 0`` such a
        request always misses, and counts as late in :func:`run_risk`), but normalised
        latency (A.1) needs ``d_i > a_i``.
    prompt_tokens, max_output_tokens
        Prompt length ``P`` and maximum output length ``L_max``, tokens (``>= 0``); both
        or neither. Admission estimates work from them (Section 4.4).
    """

    arrival: FloatArray
    work: FloatArray
    deadline: FloatArray
    prompt_tokens: FloatArray | None = None
    max_output_tokens: FloatArray | None = None

    def __post_init__(self) -> None:
        arrival = float_array("arrival", self.arrival)
        n = arrival.shape[0]
        if n == 0:
            raise ValueError("arrival must hold at least one request, got none")
        work = float_array("work", self.work)
        deadline = float_array("deadline", self.deadline)
        same_length("work", work, "arrival", n)
        same_length("deadline", deadline, "arrival", n)
        _check_order(arrival, work, deadline)
        self._freeze("arrival", arrival)
        self._freeze("work", work)
        self._freeze("deadline", deadline)
        if (self.prompt_tokens is None) != (self.max_output_tokens is None):
            raise ValueError("prompt_tokens and max_output_tokens must be given together")
        if self.prompt_tokens is not None:
            for name in TOKEN_COLUMNS:
                tokens = nonnegative_array(name, getattr(self, name))
                same_length(name, tokens, "arrival", n)
                self._freeze(name, tokens)

    def _freeze(self, name: str, values: FloatArray) -> None:
        values.flags.writeable = False
        object.__setattr__(self, name, values)

    def __len__(self) -> int:
        return int(self.arrival.shape[0])

    def estimated_work(self) -> FloatArray:
        """Admission work estimates ``L_max + 0.0625 P`` per request (Section 4.4), tokens.

        Raises
        ------
        ValueError
            If the trace has no token columns.
        """
        if self.prompt_tokens is None or self.max_output_tokens is None:
            raise ValueError("the trace has no prompt_tokens/max_output_tokens columns")
        return estimate_work(self.prompt_tokens, self.max_output_tokens)


def _check_order(arrival: FloatArray, work: FloatArray, deadline: FloatArray) -> None:
    back = first_index(np.diff(arrival) < 0)
    if back is not None:
        raise ValueError(
            f"arrival must be sorted, got arrival[{back + 1}] = {float(arrival[back + 1])!r} "
            f"after {float(arrival[back])!r}"
        )
    empty = first_index(work <= 0)
    if empty is not None:
        raise ValueError(f"work[{empty}] must be > 0, got {float(work[empty])!r}")
    deadlines_after_arrivals(arrival, deadline)


def burst_trace(
    low_rate: float = 4.0,
    high_rate: float = 40.0,
    phase_s: float = 10.0,
    slo_s: float = 1.2,
    work: float = 1.0,
    prompt_tokens: float = 0.0,
    max_output_tokens: float = 64.0,
) -> Trace:
    """The paper's low-high-low arrivals: 4 -> 40 -> 4 requests/s, 10 s per phase (Sec. 5.1).

    Arrivals are evenly spaced within each phase (an open-loop schedule: 480 requests with
    the defaults), and every request gets the same work and latency budget.

    Parameters
    ----------
    low_rate, high_rate
        Arrival rates of the outer and middle phases, requests per second.
    phase_s
        Length of each phase, seconds.
    slo_s
        Latency budget ``D = d - a > 0``, seconds (1.2 s: MoE 3B on SGLang); positive, so
        latencies normalise (A.1).
    work
        Work per request, work units.
    prompt_tokens, max_output_tokens
        Token lengths recorded for admission (the paper caps output at 64 tokens).
    """
    phase_s = positive("phase_s", phase_s)
    rates = (positive("low_rate", low_rate), positive("high_rate", high_rate))
    # Arrivals j / rate < phase_s; the margin keeps 40.000000000000004 from adding one.
    # Counted (and bounded) before any array is made: rate x phase_s may be huge or inf.
    expected = 2 * rates[0] * phase_s + rates[1] * phase_s
    if not expected <= MAX_ROWS:
        raise ValueError(
            f"burst trace rows: (2 x low_rate + high_rate) x phase_s = {expected:g} exceeds "
            f"the limit of {MAX_ROWS}"
        )
    phases = []
    for p, rate in enumerate((rates[0], rates[1], rates[0])):
        count = math.ceil(rate * phase_s - 1e-9)
        phases.append(p * phase_s + np.arange(count) / rate)
    arrival = np.concatenate(phases)
    n = arrival.shape[0]
    return Trace(
        arrival=arrival,
        work=np.full(n, positive("work", work)),
        deadline=arrival + positive("slo_s", slo_s),
        prompt_tokens=np.full(n, nonnegative("prompt_tokens", prompt_tokens)),
        max_output_tokens=np.full(n, nonnegative("max_output_tokens", max_output_tokens)),
    )


def _read_columns(
    path: str | os.PathLike[str], required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, FloatArray]:
    """Numeric columns of a CSV with a header row: column by column if the file is regular
    (:mod:`learnsched._csvcolumns`), else row by row; both give the same values."""
    header = csv_header(path)
    missing = [name for name in required if name not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    wanted = [*required, *(name for name in optional if name in header)]
    table = read_table(path)
    if table is not None:
        parsed = {name: numbers(table, name) for name in wanted}
        if all(values is not None for values in parsed.values()):
            return cast(dict[str, FloatArray], parsed)
    return _checked_columns(path, {name: header.index(name) for name in wanted})


def _checked_columns(path: str | os.PathLike[str], index: dict[str, int]) -> dict[str, FloatArray]:
    """The columns at ``index`` parsed row by row: the first bad cell raises, naming its line."""
    records = read_csv(path)
    next(records)  # the header, checked by the caller
    columns = {name: array("d") for name in index}  # 8 bytes a value, not a float object
    for line, row in records:
        for name, i in index.items():
            try:
                columns[name].append(float(row[i]))
            except (IndexError, ValueError):
                cell = row[i] if i < len(row) else "<missing>"
                raise ValueError(
                    f"{path}: line {line}: {name} must be a number, got {cell!r}"
                ) from None
    return {name: np.frombuffer(values, dtype=np.float64) for name, values in columns.items()}


def read_trace_csv(path: str | os.PathLike[str]) -> Trace:
    """Read a trace CSV (see the module docstring); validated like :class:`Trace`."""
    columns = _read_columns(path, TRACE_COLUMNS, TOKEN_COLUMNS)
    try:
        return Trace(**columns)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def read_rate_csv(path: str | os.PathLike[str]) -> RateProfile:
    """Read a rate CSV with columns ``start`` (s) and ``rate`` (work/s)."""
    columns = _read_columns(path, RATE_COLUMNS)
    try:
        return RateProfile(columns["start"], columns["rate"])
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def write_csv(
    path: str | os.PathLike[str], header: Sequence[str], rows: Iterable[Sequence[object]]
) -> None:
    """Atomically write a CSV with a header row; ``rows`` is consumed as it is written."""

    def write(binary: IO[bytes]) -> None:
        # Not a with-block: closing the wrapper would close the file before
        # atomic_write's fsync, so flush and detach instead.
        text = io.TextIOWrapper(binary, encoding="utf-8", newline="")
        writer = csv.writer(text)
        writer.writerow(header)
        writer.writerows(rows)
        text.flush()
        text.detach()

    atomic_write(path, write)


def write_trace_csv(path: str | os.PathLike[str], trace: Trace) -> None:
    """Atomically write ``trace`` as a CSV that :func:`read_trace_csv` reads back exactly."""
    names = list(TRACE_COLUMNS)
    if trace.prompt_tokens is not None:
        names += TOKEN_COLUMNS
    columns = [getattr(trace, name).tolist() for name in names]
    write_csv(path, names, zip(*(map(repr, column) for column in columns), strict=True))
