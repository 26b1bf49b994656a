"""Request traces as GPU work: the public trace formats and a stated service model.

The formats read, told apart by the header (CSV) or the file name (``.jsonl``):

* the Azure LLM inference traces of 2023 and 2024 (``TIMESTAMP,ContextTokens,
  GeneratedTokens``, e.g. the shipped :data:`AZURE_TRACE`; a 2024 timestamp's UTC offset
  is applied);
* BurstGPT's CSV (``Timestamp`` in seconds from its start, ``Request tokens``, ``Response
  tokens``);
* JSON Lines, one request per line: ``timestamp`` in milliseconds and the prompt and output
  token counts (``input_length``/``output_length`` as Mooncake's traces name them, or
  ``input_tokens``/``output_tokens``, or ``prompt_tokens``/``completion_tokens``);
* the project's own trace CSV (``arrival,work,deadline``, read by
  :func:`learnsched.capacity.read_trace_csv`), whose work is already in work units.

All but the last are token traces, turned into work by a :class:`ServiceModel`.

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

import json
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
from .._text import MAX_INPUT_BYTES, read_text
from ..capacity import TRACE_COLUMNS, Trace, read_trace_csv

__all__ = [
    "AZURE_COLUMNS",
    "AZURE_TRACE",
    "BURSTGPT_COLUMNS",
    "JSONL_TOKEN_KEYS",
    "SYNTHETIC_COLUMN",
    "SYNTHETIC_LABEL",
    "ServiceModel",
    "TokenTrace",
    "is_synthetic",
    "load_trace",
    "read_azure_trace",
    "read_burstgpt_trace",
    "read_jsonl_trace",
]

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
BURSTGPT_COLUMNS = ("Timestamp", "Request tokens", "Response tokens")
"""BurstGPT's columns: seconds from the trace's start, prompt and response tokens."""
JSONL_TOKEN_KEYS = (
    ("input_length", "output_length"),
    ("input_tokens", "output_tokens"),
    ("prompt_tokens", "completion_tokens"),
)
"""The (prompt, output) token keys a JSON Lines trace may use, beside ``timestamp`` (ms)."""
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

# "2023-11-16 18:17:03.9799600": seconds with any number of fractional digits; Azure's 2024
# traces add a UTC offset ("2024-05-10 00:00:00.009930+00:00").
_TIMESTAMP = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$"
)
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
    day, hour, minute, second, fraction, offset = match.groups()
    stamp = datetime.fromisoformat(f"{day}T{hour}:{minute}:{second}").replace(tzinfo=timezone.utc)
    shift = 0.0
    if offset not in (None, "Z"):  # local time = UTC + offset
        sign = -1.0 if offset[0] == "-" else 1.0
        digits = offset[1:].replace(":", "")
        shift = sign * (int(digits[:2]) * 3600.0 + int(digits[2:]) * 60.0)
    return stamp.timestamp() - shift + (float(f"0.{fraction}") if fraction else 0.0)


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
    context, generated = (numbers(table, name) for name in AZURE_COLUMNS[1:])
    return _columns_taken(times, context, generated, sort)


def _columns_taken(
    times: FloatArray | None, prompt: FloatArray | None, output: FloatArray | None, sort: bool
) -> tuple[FloatArray, FloatArray] | None:
    """A columnar read's times and ``(prompt, output)`` counts, if every value is what the
    checked read would take: finite times in order (unless ``sort``), finite counts >= 0;
    None where the checked read must name a bad row."""
    if times is None or prompt is None or output is None:
        return None
    counts = np.stack([prompt, output], axis=1)
    valid = np.all(np.isfinite(times)) and np.all(np.isfinite(counts)) and np.all(counts >= 0)
    if not valid or (not sort and np.any(np.diff(times) < 0)):
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
    return _sorted_trace(path, stamps, tokens)


def _sorted_trace(path: object, stamps: FloatArray, counts: FloatArray) -> TokenTrace:
    """Times (s) and (prompt, output) counts by row, in time order (stable), from the
    first request; an empty trace refused."""
    if len(stamps) == 0:
        raise ValueError(f"{path}: the trace holds no requests")
    order = np.argsort(stamps, kind="stable")
    counts = counts[order]
    return TokenTrace(stamps[order] - stamps[order[0]], counts[:, 0].copy(), counts[:, 1].copy())


def is_synthetic(path: str | os.PathLike[str]) -> bool:
    """Whether the trace CSV at ``path`` was synthesized (its header has a
    :data:`SYNTHETIC_COLUMN`)."""
    return SYNTHETIC_COLUMN in csv_header(path)


def _rows_trace(
    path: str | os.PathLike[str], rows: list[tuple[int, float, float, float]], sort: bool
) -> TokenTrace:
    """A token trace from ``(line, time_s, prompt, output)`` rows already parsed as numbers:
    times finite and in order (unless ``sort``), counts finite and >= 0; the first bad
    row named by its line (checked in whole columns, then found)."""
    table = np.array(rows, dtype=np.float64).reshape(-1, 4)
    lines, stamps, counts = table[:, 0], table[:, 1], table[:, 2:]
    bad_time = ~np.isfinite(stamps)
    earlier = np.zeros(len(stamps), dtype=bool)
    if not sort:
        earlier[1:] = stamps[1:] < np.maximum.accumulate(np.where(bad_time, -np.inf, stamps))[:-1]
    bad_count = ~(np.isfinite(counts) & (counts >= 0))
    bad = bad_time | earlier | bad_count.any(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        at = f"{path}: line {int(lines[k])}:"
        if bad_time[k]:
            raise ValueError(f"{at} the timestamp must be finite, got {float(stamps[k])!r}")
        if earlier[k]:
            raise ValueError(
                f"{at} the timestamp {float(stamps[k])!r} is earlier than the row before it (rows "
                "must be in time order; pass sort=True / --sort)"
            )
        name, count = (
            ("prompt tokens", counts[k, 0]) if bad_count[k, 0] else ("output tokens", counts[k, 1])
        )
        raise ValueError(f"{at} {name} must be a finite count >= 0, got {float(count)!r}")
    return _sorted_trace(path, stamps.copy(), counts)


def _burstgpt_columns(path: str | os.PathLike[str], sort: bool) -> TokenTrace | None:
    """A regular BurstGPT file read column by column (the same values as row by row);
    None where the row-by-row read must name a bad cell or row."""
    table = read_table(path)
    if table is None:
        return None
    times, prompt, output = (numbers(table, name) for name in BURSTGPT_COLUMNS)
    taken = _columns_taken(times, prompt, output, sort)
    return None if taken is None else _sorted_trace(path, *taken)


def read_burstgpt_trace(path: str | os.PathLike[str], sort: bool = False) -> TokenTrace:
    """Read a BurstGPT CSV (``Timestamp`` in seconds, ``Request tokens``, ``Response
    tokens``; other columns ignored). A regular file is read column by column, any other
    row by row; both give the same values.

    Raises
    ------
    ValueError
        A missing column, a non-numeric cell, a negative count, an empty trace, or (unless
        ``sort``) a row earlier than the one before it; the message names the line.
    """
    header = csv_header(path)
    missing = [name for name in BURSTGPT_COLUMNS if name not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    fast = _burstgpt_columns(path, sort)
    if fast is not None:
        return fast
    records = read_csv(path)
    next(records)  # the header, checked above
    at = [header.index(name) for name in BURSTGPT_COLUMNS]
    rows = []
    for line, row in records:
        stamp, prompt, output = (row[i] if i < len(row) else "" for i in at)
        rows.append((
            line,
            _seconds(path, line, BURSTGPT_COLUMNS[0], stamp),
            _tokens(path, line, BURSTGPT_COLUMNS[1], prompt),
            _tokens(path, line, BURSTGPT_COLUMNS[2], output),
        ))  # fmt: skip
    return _rows_trace(path, rows, sort)


def _seconds(path: object, line: int, name: str, cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{path}: line {line}: {name} must be a number, got {cell!r}") from None


def read_jsonl_trace(path: str | os.PathLike[str], sort: bool = False) -> TokenTrace:
    """Read a JSON Lines trace: per line an object with ``timestamp`` (milliseconds) and a
    pair of token counts from :data:`JSONL_TOKEN_KEYS` (other keys ignored; blank lines
    skipped). A file of at most :data:`learnsched._text.MAX_INPUT_BYTES` is parsed at once
    and read column by column, a larger one line by line; both give the same values.

    Raises
    ------
    ValueError
        A line that is not a JSON object, a missing key or count, a negative or non-numeric
        value, an empty trace, or (unless ``sort``) a row earlier than the one before it;
        the message names the line.
    """
    if os.path.getsize(path) <= MAX_INPUT_BYTES:
        text = read_text(path)
        lines = [(k, line) for k, line in enumerate(text.split("\n"), start=1) if line.strip()]
        fast = _jsonl_columns(path, lines, sort)
        if fast is not None:
            return fast
        return _rows_trace(path, [_jsonl_row(path, k, line) for k, line in lines], sort)
    with open(path, encoding="utf-8") as file:
        rows = [_jsonl_row(path, k, line) for k, line in enumerate(file, start=1) if line.strip()]
    return _rows_trace(path, rows, sort)


def _jsonl_row(path: object, line: int, text: str) -> tuple[int, float, float, float]:
    """``(line, time_s, prompt, output)`` of one line; a bad one named."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: line {line}: not JSON ({err.msg})") from None
    if not isinstance(record, dict):
        raise ValueError(  # noqa: TRY004 (a bad file, not a bad argument)
            f"{path}: line {line}: each line must be a JSON object"
        )
    keys = next((k for k in JSONL_TOKEN_KEYS if k[0] in record and k[1] in record), None)
    if "timestamp" not in record or keys is None:
        pairs = " or ".join("/".join(k) for k in JSONL_TOKEN_KEYS)
        raise ValueError(f"{path}: line {line}: needs timestamp (ms) and {pairs}")
    stamp, prompt, output = record["timestamp"], record[keys[0]], record[keys[1]]
    if not all(type(v) in (int, float) for v in (stamp, prompt, output)):
        raise ValueError(f"{path}: line {line}: timestamp and token counts must be numbers")
    try:
        return line, float(stamp) / 1000.0, float(prompt), float(output)
    except OverflowError:
        raise ValueError(f"{path}: line {line}: a number beyond any double") from None


def _jsonl_columns(
    path: str | os.PathLike[str], lines: list[tuple[int, str]], sort: bool
) -> TokenTrace | None:
    """Every line parsed at once (one JSON array) and read column by column, the values of
    :func:`_jsonl_row`; None where the line-by-line read must name a bad line."""
    try:
        records = json.loads("[" + ",".join(line for _, line in lines) + "]")
    except (json.JSONDecodeError, RecursionError):
        return None
    if not records or len(records) != len(lines) or set(map(type, records)) != {dict}:
        return None
    first = records[0]
    keys = next((k for k in JSONL_TOKEN_KEYS if k[0] in first and k[1] in first), None)
    if keys is None:
        return None
    try:
        columns = [[r[name] for r in records] for name in ("timestamp", *keys)]
        if any(not set(map(type, c)) <= {int, float} for c in columns):
            return None
        stamps, prompt, output = (np.array(c, dtype=np.float64) for c in columns)
    except (KeyError, OverflowError):
        return None
    taken = _columns_taken(stamps / 1000.0, prompt, output, sort)
    return None if taken is None else _sorted_trace(path, *taken)


def load_trace(
    path: str | os.PathLike[str] = AZURE_TRACE,
    service: ServiceModel | None = None,
    sort: bool = False,
) -> Trace:
    """A trace in any of the module's formats as GPU work, told apart by the file name
    (``.jsonl``) or the CSV header.

    The project's format (``arrival,work,deadline``) is read as it is (``service`` is not
    used, and out-of-order rows are refused); the token traces (Azure, BurstGPT, JSON
    Lines) go through ``service``.
    """
    if str(path).endswith(".jsonl"):
        return read_jsonl_trace(path, sort).to_trace(service)
    header = set(csv_header(path))
    if set(AZURE_COLUMNS) <= header:
        return read_azure_trace(path, sort).to_trace(service)
    if set(BURSTGPT_COLUMNS) <= header:
        return read_burstgpt_trace(path, sort).to_trace(service)
    if set(TRACE_COLUMNS) <= header:
        return read_trace_csv(path)
    raise ValueError(
        f"{path}: header must hold {','.join(AZURE_COLUMNS)} (Azure), "
        f"{','.join(BURSTGPT_COLUMNS)} (BurstGPT) or {','.join(TRACE_COLUMNS)} (learnsched), "
        f"got {','.join(sorted(header)) or 'nothing'}; a JSON Lines trace ends in .jsonl"
    )
