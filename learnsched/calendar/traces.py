"""Request traces as GPU work: the Azure LLM trace format and a stated service model.

Two CSV formats are read:

* the Azure LLM inference trace (``TIMESTAMP,ContextTokens,GeneratedTokens``, e.g. the
  shipped :data:`AZURE_TRACE`), turned into work by a :class:`ServiceModel`;
* the project's own trace CSV (``arrival,work,deadline``, read by
  :func:`learnsched.capacity.read_trace_csv`), whose work is already in work units.

Service model (assumptions, stated so they can be changed): one GPU serves requests
first come, first served as a fluid queue of rate 1 work unit per second, so a request's
work is its GPU seconds; a request needs ``ContextTokens / prefill_tokens_per_s +
GeneratedTokens / decode_tokens_per_s`` seconds (defaults 40,000 prefill tokens/s and
2,000 decode tokens/s: the batched throughput of a 3B-class model on one A100), or a fixed
``request_s``; its deadline is its arrival plus its own service time plus a latency budget
``slo_s`` (default 20 s: the shipped trace's worst burst queues 17.4 s under these rates,
so the unlent trace meets every deadline; a budget that it cannot meet is refused).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray, nonnegative, positive
from .._csvcolumns import BLOCK_ROWS, POWERS_OF_TEN, Table, numbers, read_table
from .._csvfile import csv_header, read_csv
from ..capacity import TRACE_COLUMNS, Trace, read_trace_csv

__all__ = [
    "AZURE_COLUMNS",
    "AZURE_TRACE",
    "SYNTHETIC_COLUMN",
    "SYNTHETIC_LABEL",
    "ServiceModel",
    "TokenTrace",
    "is_synthetic",
    "load_trace",
    "read_azure_trace",
]

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
IntArray = npt.NDArray[np.int64]

SYNTHETIC_COLUMN = "Synthetic"
"""The column every row of a synthesized trace carries (:mod:`.synth`)."""
SYNTHETIC_LABEL = "learnsched-synth"
"""Its value."""


def _shipped_trace() -> Path:
    folder = resources.files("learnsched") / "data" / "azure-llm-2023"
    return Path(str(folder / "AzureLLMInferenceTrace_code.csv"))


AZURE_TRACE = _shipped_trace()
"""The shipped Azure LLM inference trace (code service, 2023-11-16, 8,819 requests, CC-BY
4.0: see the README and LICENSE beside it)."""

# "2023-11-16 18:17:03.9799600": seconds with any number of fractional digits.
_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$")
# The same, byte by byte, for the columnar read: 19 characters to the seconds.
_CLOCK_CHARS = 19
_CLOCK_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
_CLOCK_MARKS = [4, 7, 13, 16]
_CLOCK_MARK_BYTES = np.frombuffer(b"--::", dtype=np.uint8)
_DATE_TIME_SEPARATORS = np.frombuffer(b" T", dtype=np.uint8)


@dataclass(frozen=True)
class ServiceModel:
    """How requests become GPU work (see the module docstring for the assumptions).

    Parameters
    ----------
    prefill_tokens_per_s
        Prompt tokens processed per second, tokens/s.
    decode_tokens_per_s
        Output tokens generated per second (batched throughput), tokens/s.
    request_s
        If given, every request takes this many seconds instead, s.
    slo_s
        Latency budget beyond a request's own service time, s: deadline = arrival +
        service + ``slo_s``.
    """

    prefill_tokens_per_s: float = 40_000.0
    decode_tokens_per_s: float = 2_000.0
    request_s: float | None = None
    slo_s: float = 20.0

    def __post_init__(self) -> None:
        positive("prefill_tokens_per_s", self.prefill_tokens_per_s)
        positive("decode_tokens_per_s", self.decode_tokens_per_s)
        if self.request_s is not None:
            positive("request_s", self.request_s)
        nonnegative("slo_s", self.slo_s)

    def work_s(self, context_tokens: FloatArray, generated_tokens: FloatArray) -> FloatArray:
        """GPU seconds of each request, s."""
        if self.request_s is not None:
            return np.full(context_tokens.shape[0], self.request_s)
        return np.asarray(
            context_tokens / self.prefill_tokens_per_s
            + generated_tokens / self.decode_tokens_per_s,
            dtype=np.float64,
        )

    def to_json(self) -> dict[str, float | None]:
        """The model's parameters (tokens/s and seconds)."""
        return {
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "request_s": self.request_s,
            "slo_s": self.slo_s,
        }


@dataclass(frozen=True, eq=False)
class TokenTrace:
    """An Azure-format trace: arrival times and token counts, in row order.

    Attributes
    ----------
    arrival
        Seconds since the first request, non-decreasing.
    context_tokens, generated_tokens
        Prompt and output tokens of each request (``>= 0``).
    """

    arrival: FloatArray
    context_tokens: FloatArray
    generated_tokens: FloatArray

    def to_trace(self, service: ServiceModel | None = None) -> Trace:
        """The requests as GPU work under ``service`` (default :class:`ServiceModel`)."""
        service = ServiceModel() if service is None else service
        work = service.work_s(self.context_tokens, self.generated_tokens)
        # A request with no tokens still occupies the queue for a moment: Eq. 6 needs w > 0.
        work = np.maximum(work, 1e-6)
        return Trace(arrival=self.arrival, work=work, deadline=self.arrival + work + service.slo_s)


def _timestamp(text: str) -> float:
    match = _TIMESTAMP.match(text.strip())
    if match is None:
        raise ValueError(text)
    day, hour, minute, second, fraction = match.groups()
    stamp = datetime.fromisoformat(f"{day}T{hour}:{minute}:{second}").replace(tzinfo=timezone.utc)
    return stamp.timestamp() + (float(f"0.{fraction}") if fraction else 0.0)


def _tokens(path: object, line: int, name: str, cell: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(f"{path}: line {line}: {name} must be a number, got {cell!r}") from None
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{path}: line {line}: {name} must be a finite count >= 0, got {cell!r}")
    return value


def _checked_columns(
    path: str | os.PathLike[str], at: list[int], sort: bool
) -> tuple[FloatArray, FloatArray]:
    """The rows parsed one by one (times, s, and token counts, one row each); the first bad
    cell raises, naming its line."""
    records = read_csv(path)
    next(records)  # the header, checked by the caller
    rows = list(records)  # every record read (a bad byte refused) before any cell
    times: list[float] = []
    tokens: list[tuple[float, float]] = []
    for line, row in rows:
        cells = [row[i] if i < len(row) else "" for i in at]
        try:
            stamp = _timestamp(cells[0])
        except ValueError:
            raise ValueError(
                f"{path}: line {line}: TIMESTAMP must look like 2023-11-16 18:17:03.97, "
                f"got {cells[0]!r}"
            ) from None
        if times and stamp < times[-1] and not sort:
            raise ValueError(
                f"{path}: line {line}: TIMESTAMP {cells[0].strip()} is earlier than the "
                "row before it (rows must be in time order; pass sort=True / --sort)"
            )
        times.append(stamp)
        tokens.append(
            (
                _tokens(path, line, AZURE_COLUMNS[1], cells[1]),
                _tokens(path, line, AZURE_COLUMNS[2], cells[2]),
            )
        )
    return np.array(times, dtype=np.float64), np.array(tokens, dtype=np.float64).reshape(-1, 2)


def _day_starts(year: IntArray, month: IntArray, day: IntArray) -> FloatArray | None:
    """Seconds since the epoch at 00:00 UTC of each row's day; None for a day that is not
    a date. Rows run in time order, so a day's rows mostly follow each other: each run of
    a day is converted once."""
    key = (year * 100 + month) * 100 + day
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    starts = []
    for y, m, d in zip(year[first], month[first], day[first], strict=True):
        try:
            stamp = datetime.fromisoformat(f"{y:04d}-{m:02d}-{d:02d}T00:00:00")
        except ValueError:
            return None
        starts.append(stamp.replace(tzinfo=timezone.utc).timestamp())
    return np.repeat(starts, np.diff(np.append(first, key.shape[0])))


def _fast_timestamps(table: Table) -> FloatArray | None:
    """The TIMESTAMP column as :func:`_timestamp` reads each cell, bit for bit; None if a
    cell is not a bare ``YYYY-MM-DD HH:MM:SS[.digits]`` (then the checked path names it)."""
    start, length = table.field(AZURE_COLUMNS[0])
    width = int(length.max())
    # At most 15 digits of fraction: all exact.
    if (
        int(length.min()) < _CLOCK_CHARS
        or width > _CLOCK_CHARS + 16
        or np.any(length == _CLOCK_CHARS + 1)
    ):
        return None
    times = np.empty(len(table), dtype=np.float64)
    for at in range(0, len(table), BLOCK_ROWS):
        block = slice(at, at + BLOCK_ROWS)
        # One byte past the widest cell: the point, or what follows a cell without one.
        stamps = _clock(table.cells(start[block], width + 1), length[block])
        if stamps is None:
            return None
        times[block] = stamps
    return times


def _clock(cells: npt.NDArray[np.uint8], length: IntArray) -> FloatArray | None:
    """:func:`_fast_timestamps` of the first ``length`` bytes of each row of ``cells``
    (one byte wider than the widest)."""
    digit = cells[:, :-1] - np.uint8(ord("0"))  # wraps below "0": then > 9
    fraction = np.arange(_CLOCK_CHARS + 1, digit.shape[1]) < length[:, None]
    if (
        np.any(digit[:, _CLOCK_DIGITS] > 9)
        or np.any(cells[:, _CLOCK_MARKS] != _CLOCK_MARK_BYTES)
        or not np.all(np.isin(cells[:, 10], _DATE_TIME_SEPARATORS))
        or np.any((cells[:, _CLOCK_CHARS] != ord(".")) & (length > _CLOCK_CHARS))
        or np.any((digit[:, _CLOCK_CHARS + 1 :] > 9) & fraction)
    ):
        return None
    clock = digit[:, _CLOCK_DIGITS].astype(np.int64)
    century, year, month, day, hour, minute, second = (clock[:, 0::2] * 10 + clock[:, 1::2]).T
    if np.any(hour > 23) or np.any(minute > 59) or np.any(second > 59):
        return None
    day_start = _day_starts(century * 100 + year, month, day)
    if day_start is None:
        return None
    places = fraction.shape[1]
    # The fraction's digits left-aligned as an integer over 10**places: the same quotient,
    # correctly rounded, as float("0." + digits).
    digits = np.where(fraction, digit[:, _CLOCK_CHARS + 1 :], np.uint8(0))
    decimal = (digits @ POWERS_OF_TEN[:places][::-1]) / POWERS_OF_TEN[places]
    # As _timestamp: whole seconds since the epoch (exact), plus the fraction, once rounded.
    stamps: FloatArray = (day_start + (hour * 3600 + minute * 60 + second)) + decimal
    return stamps


def _columns(table: Table, sort: bool) -> tuple[FloatArray, FloatArray] | None:
    """The trace read column by column, the same values as :func:`_checked_columns` bit
    for bit; None if any cell is bad (then the checked path names it)."""
    times = _fast_timestamps(table)
    if times is None or (not sort and np.any(np.diff(times) < 0)):
        return None
    context, generated = (numbers(table, name) for name in AZURE_COLUMNS[1:])
    if context is None or generated is None:
        return None
    counts = np.stack([context, generated], axis=1)
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        return None
    return times, counts


def read_azure_trace(path: str | os.PathLike[str] = AZURE_TRACE, sort: bool = False) -> TokenTrace:
    """Read an Azure LLM inference trace CSV (``TIMESTAMP,ContextTokens,GeneratedTokens``).

    A regular file is read column by column (:mod:`learnsched._csvcolumns`), any other
    row by row; both give the same values.

    Parameters
    ----------
    path
        The CSV; the shipped Azure code trace by default.
    sort
        Sort out-of-order rows by time (stable) instead of refusing them.

    Raises
    ------
    ValueError
        A missing column, an unparseable timestamp, a negative or non-numeric token
        count, an empty trace, or (unless ``sort``) a row earlier than the one before it;
        the message names the line.
    """
    header = csv_header(path)
    missing = [name for name in AZURE_COLUMNS if name not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    table = read_table(path)
    fast = None if table is None else _columns(table, sort)
    at = [header.index(name) for name in AZURE_COLUMNS]
    stamps, tokens = fast if fast is not None else _checked_columns(path, at, sort)
    if len(stamps) == 0:
        raise ValueError(f"{path}: the trace holds no requests")
    order = np.argsort(stamps, kind="stable")
    counts = tokens[order]
    return TokenTrace(stamps[order] - stamps[order[0]], counts[:, 0].copy(), counts[:, 1].copy())


def is_synthetic(path: str | os.PathLike[str]) -> bool:
    """Whether the trace CSV at ``path`` was synthesized (its header has a
    :data:`SYNTHETIC_COLUMN`)."""
    return SYNTHETIC_COLUMN in csv_header(path)


def load_trace(
    path: str | os.PathLike[str] = AZURE_TRACE,
    service: ServiceModel | None = None,
    sort: bool = False,
) -> Trace:
    """A trace CSV in either format as GPU work, told apart by its header.

    The project's format (``arrival,work,deadline``) is read as it is (``service`` is not
    used, and out-of-order rows are refused); the Azure format goes through ``service``.
    """
    header = set(csv_header(path))
    if set(AZURE_COLUMNS) <= header:
        return read_azure_trace(path, sort).to_trace(service)
    if set(TRACE_COLUMNS) <= header:
        return read_trace_csv(path)
    raise ValueError(
        f"{path}: header must hold {','.join(AZURE_COLUMNS)} (Azure) or "
        f"{','.join(TRACE_COLUMNS)} (learnsched), got {','.join(sorted(header)) or 'nothing'}"
    )
