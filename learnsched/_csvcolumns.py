"""Columnar reading of the CSV files learnsched reads: a regular file is split and its
numbers parsed in a few numpy passes over its bytes, with the values that
:mod:`._csvfile`'s row-by-row reader and ``float`` give, bit for bit.

A file is regular when the row-by-row reader would read it without a question: printable
ASCII (a UTF-8 BOM first allowed) with no quote, lines ended by ``\\n`` or ``\\r\\n``, no
blank line, every line holding the header's number of fields, no line longer than a field
may be, at most ``max_rows`` rows, and no larger than :data:`._text.MAX_INPUT_BYTES` (a
larger file is streamed row by row). For anything else :func:`read_table` returns None,
and so does :func:`numbers` for a cell that is not a number: the caller then reads the file
row by row, whose messages name the bad line and field.

A cell of at most 15 digits and no exponent is parsed in one division: its digits as an
integer ``m < 2**53`` and ``10**k`` (``k`` digits after the point) are both exact doubles,
and IEEE division rounds ``m / 10**k`` correctly, as ``float`` rounds the decimal (the
fast path of correctly rounded decimal parsers). Any other cell goes through numpy's
bytes-to-float cast, which calls ``float`` on it.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._checks import FloatArray
from ._csvfile import MAX_FIELD_CHARS, MAX_ROWS
from ._text import MAX_INPUT_BYTES

__all__ = [
    "BLOCK_ROWS",
    "MAX_NUMBER_CHARS",
    "POWERS_OF_TEN",
    "Table",
    "numbers",
    "read_table",
]

Int64Array = npt.NDArray[np.int64]
ByteArray = npt.NDArray[np.uint8]

MAX_NUMBER_CHARS = 64
"""Widest cell the columnar parse reads, characters (a wider one is read row by row)."""

BLOCK_ROWS = 1 << 16
"""Rows parsed at a time: the matrices of their cells stay small."""

POWERS_OF_TEN = 10.0 ** np.arange(23)
"""``10**k`` for ``k <= 22``: every one an exact double."""

_EXACT_DIGITS = 15  # 10**15 < 2**53: any 15 digits are an exact double
_PLACES = _EXACT_DIGITS + 2  # a simple cell's digits, point and sign
_INTEGER_POWERS = 10 ** np.arange(_PLACES, dtype=np.int64)
_PLACE_VALUES = _INTEGER_POWERS.astype(np.float64)  # exact doubles, as 10**k for k <= 22
_SCAN_BYTES = 1 << 16  # bytes scanned for separators at a time (their mask stays in cache)
_NEWLINE, _RETURN, _COMMA = ord("\n"), ord("\r"), ord(",")
# Bytes deleted from a regular file leave only its BOM, its \r's and the padding's zeros:
# printable ASCII but the quote, and the newline.
_PLAIN = bytes(b for b in range(0x20, 0x7F) if b != ord('"')) + b"\n"


@dataclass(frozen=True, eq=False)
class Table:
    """A regular CSV file's bytes and where each field lies.

    Attributes
    ----------
    header
        The column names, each stripped.
    data
        The file's bytes between :data:`MAX_NUMBER_CHARS` bytes of padding on each side,
        so that the bytes around a cell can be gathered without a bounds check.
    bounds
        ``(rows, fields + 1)`` byte offsets: field ``j`` of data row ``r`` is
        ``data[bounds[r, j] + 1 : bounds[r, j + 1]]``.
    """

    header: list[str]
    data: ByteArray
    bounds: Int64Array

    def __len__(self) -> int:
        return int(self.bounds.shape[0])

    def field(self, name: str) -> tuple[Int64Array, Int64Array]:
        """Each row's cell in column ``name``: its first byte's offset and its length, bytes."""
        j = self.header.index(name)
        start = self.bounds[:, j] + 1
        return start, self.bounds[:, j + 1] - start

    def cells(self, start: Int64Array, width: int) -> ByteArray:
        """``(len(start), width)`` bytes from each offset in ``start``, a cell's first or
        up to :data:`MAX_NUMBER_CHARS` before it (``width`` at most that): each row a
        cell and the bytes around it."""
        return np.lib.stride_tricks.sliding_window_view(self.data, width)[start]


def _file_bytes(path: str | os.PathLike[str]) -> bytearray | None:
    """The bytes of a regular file of at most MAX_INPUT_BYTES between MAX_NUMBER_CHARS
    zeros on each side; None for another file."""
    with open(path, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INPUT_BYTES:
            return None
        data = bytearray(info.st_size + 2 * MAX_NUMBER_CHARS)
        size = file.readinto(memoryview(data)[MAX_NUMBER_CHARS:-MAX_NUMBER_CHARS])
        if size != info.st_size or file.read(1):  # changed while read
            return None
    return data


def _separators(data: ByteArray, count: int) -> Int64Array:
    """Offsets of the ``count`` commas and newlines in ``data``, in order."""
    found = np.empty(count, dtype=np.int64)
    done = 0
    for at in range(0, data.shape[0], _SCAN_BYTES):
        part = data[at : at + _SCAN_BYTES]
        offsets = np.flatnonzero((part == _COMMA) | (part == _NEWLINE))
        found[done : done + offsets.shape[0]] = offsets + at
        done += offsets.shape[0]
    return found


def read_table(path: str | os.PathLike[str], max_rows: int = MAX_ROWS) -> Table | None:
    """The fields of the CSV file ``path`` if it is regular (see the module docstring),
    else None; a regular file with no data row is None too.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    raw = _file_bytes(path)
    if raw is None:
        return None
    first = MAX_NUMBER_CHARS
    if raw.startswith(codecs.BOM_UTF8, first):
        first += len(codecs.BOM_UTF8)
    left = raw.translate(None, _PLAIN)
    returns = left.count(b"\r")
    if left.replace(b"\r", b"") != bytes(MAX_NUMBER_CHARS) + raw[MAX_NUMBER_CHARS:first] + bytes(
        MAX_NUMBER_CHARS
    ):
        return None
    padded = np.frombuffer(raw, dtype=np.uint8)
    end = len(raw) - MAX_NUMBER_CHARS
    if end == first or padded[end - 1] != _NEWLINE:
        padded[end] = _NEWLINE  # end the last line in the padding
        end += 1
    header_end = raw.find(b"\n", first)
    header = raw[first:header_end].decode("ascii").split(",")
    count = raw.count(b",") + raw.count(b"\n")
    separators = _separators(padded[first:end], count) + first
    fields = len(header)
    lines = separators.shape[0] // fields
    if fields < 2 or separators.shape[0] != lines * fields or not 0 < lines - 1 <= max_rows:
        return None
    by_line = separators.reshape(lines, fields)
    newline = by_line[:, -1]
    # A regular line is fields - 1 commas, then its newline; a blank line breaks the pattern.
    if np.any(padded[by_line[:, :-1]] != _COMMA) or np.any(padded[newline] != _NEWLINE):
        return None
    ended_by_return = padded[newline - 1] == _RETURN
    if np.count_nonzero(ended_by_return) != returns:  # a \r elsewhere than before a \n
        return None
    if np.any(np.diff(newline) > MAX_FIELD_CHARS):
        return None
    bounds = np.empty((lines - 1, fields + 1), dtype=np.int64)
    bounds[:, 0] = newline[:-1]
    bounds[:, 1:fields] = by_line[1:, :-1]
    bounds[:, fields] = newline[1:] - ended_by_return[1:]
    return Table([name.strip() for name in header], padded, bounds)


def numbers(table: Table, name: str) -> FloatArray | None:
    """``float`` of each cell of column ``name``, bit for bit; None if any cell is not a
    number, is empty or is wider than :data:`MAX_NUMBER_CHARS`."""
    start, length = table.field(name)
    width = int(length.max())
    if not 0 < width <= MAX_NUMBER_CHARS:
        return None
    end = start + length
    values = np.empty(len(table), dtype=np.float64)
    for at in range(0, len(table), BLOCK_ROWS):
        block = slice(at, at + BLOCK_ROWS)
        cells = table.cells(end[block] - width, width)
        parsed = _parse(cells, length[block], table.data[start[block]])
        if parsed is None:
            return None
        values[block] = parsed
    return values


def _parse(cells: ByteArray, length: Int64Array, first: ByteArray) -> FloatArray | None:
    """``float`` of the last ``length`` bytes of each row of ``cells`` (``first``: the first
    of them); None if one is not a number."""
    width = cells.shape[1]
    inside = np.arange(width) >= width - length[:, None]
    digit = cells - np.uint8(ord("0"))  # wraps below "0": then not < 10
    is_digit = (digit < 10) & inside
    if width <= _EXACT_DIGITS and length.min() > 0 and np.array_equal(is_digit, inside):
        # Counts (tokens): every cell digits alone, the place of each fixed.
        return np.where(is_digit, digit, np.uint8(0)) @ _PLACE_VALUES[width - 1 :: -1]
    return _decimals(cells, length, first)


def _decimals(cells: ByteArray, length: Int64Array, first: ByteArray) -> FloatArray | None:
    """:func:`_parse` for cells that are not all digits."""
    width = cells.shape[1]
    inside = np.arange(width) >= width - length[:, None]
    negative = first == ord("-")
    sign = negative | (first == ord("+"))
    signed = np.flatnonzero(sign)
    text = cells.copy()
    text[signed, width - length[signed]] = ord("0")  # a leading zero for the sign
    digit = text - np.uint8(ord("0"))
    is_digit = (digit < 10) & inside
    is_point = (text == ord(".")) & inside
    digits = np.count_nonzero(is_digit, axis=1)
    # [+-]digits[.digits], at most 15 digits (the sign's zero one more).
    simple = (
        ~np.any(inside & ~is_digit & ~is_point, axis=1)
        & (np.count_nonzero(is_point, axis=1) <= 1)
        & (digits > sign)
        & (digits <= _EXACT_DIGITS + sign)
    )
    # Only the last 17 bytes of a simple cell can be digits, its point or its sign's zero.
    places = min(width, _PLACES)
    whole = (
        np.where(is_digit, digit, np.uint8(0))[:, width - places :]
        @ _INTEGER_POWERS[places - 1 :: -1]
    )
    has_point = np.any(is_point, axis=1)
    after_point = np.where(has_point, width - 1 - np.argmax(is_point, axis=1), 0)
    after_point = np.minimum(after_point, _EXACT_DIGITS)
    shift = _INTEGER_POWERS[after_point]
    mantissa = np.where(has_point, whole // (shift * 10) * shift + whole % shift, whole)
    magnitude = mantissa / POWERS_OF_TEN[after_point]
    values: FloatArray = np.where(negative, -magnitude, magnitude)
    other = np.flatnonzero(~simple)
    if other.size:
        rest = cells[other]
        rest[~inside[other]] = ord(" ")  # Python's float strips spaces
        try:
            with np.errstate(over="ignore"):  # float("1e999") is inf, with no warning
                values[other] = rest.view(f"S{width}").ravel().astype(np.float64)
        except ValueError:
            return None
    return values
