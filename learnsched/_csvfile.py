"""The one reader of the CSV files users hand to learnsched (traces, rates, loads).

Rows are read one at a time (a trace may be far larger than its arrays), decoded as
UTF-8 with or without a BOM. Every failure is a ``ValueError`` naming the file and the
line: a byte that is not UTF-8, a field longer than :data:`MAX_FIELD_CHARS` characters,
malformed quoting, or more than ``max_rows`` rows (:data:`MAX_ROWS` by default).
"""

from __future__ import annotations

import codecs
import csv
import os
from collections.abc import Generator

from ._text import source_name

__all__ = ["MAX_FIELD_CHARS", "MAX_ROWS", "csv_header", "read_csv"]

MAX_FIELD_CHARS = 131_072
"""Longest field accepted, characters (the csv module's own default limit)."""

MAX_ROWS = 1 << 24
"""Most data rows one file may hold (16,777,216; a trace's arrays take 40 bytes a row)."""

_SCAN_BYTES = 1 << 20


def _bad_byte(path: str | os.PathLike[str], source: str) -> ValueError:
    """The error for the first byte of ``path`` that is not UTF-8 (found by a rescan)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    lines = 1
    with open(path, "rb") as file:
        while chunk := file.read(_SCAN_BYTES):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                at = offset + err.start
                lines += chunk.count(b"\n", 0, max(err.start, 0))
                byte = chunk[err.start] if 0 <= err.start < len(chunk) else 0
                return ValueError(
                    f"{source}: line {lines}: not UTF-8 text (byte 0x{byte:02x} at offset "
                    f"{at}: {err.reason}); save the file as UTF-8"
                )
            lines += chunk.count(b"\n")
            offset += len(chunk)
    return ValueError(f"{source}: not UTF-8 text (it ends inside a character)")


def read_csv(
    path: str | os.PathLike[str], max_rows: int = MAX_ROWS
) -> Generator[tuple[int, list[str]], None, None]:
    """``(line, fields)`` of every non-blank record of the CSV file ``path``, in order.

    The first record is the header. ``line`` is the record's last physical line
    (1-based), for messages.

    Raises
    ------
    ValueError
        Not UTF-8, a field over :data:`MAX_FIELD_CHARS` characters, malformed CSV, or
        more than ``max_rows`` data rows; each names the file and the line.
    OSError
        The file cannot be read.
    """
    source = source_name(path)
    with open(path, encoding="utf-8-sig", newline="") as file:
        reader = csv.reader(file)
        rows = -1  # the header is not a data row
        while True:
            try:
                fields = next(reader, None)
            except UnicodeDecodeError:
                raise _bad_byte(path, source) from None
            except csv.Error as err:
                line = reader.line_num
                if "field limit" in str(err):
                    raise ValueError(
                        f"{source}: line {line}: a field is longer than the limit of "
                        f"{MAX_FIELD_CHARS} characters"
                    ) from None
                raise ValueError(f"{source}: line {line}: not valid CSV ({err})") from None
            if fields is None:
                return
            if not fields:
                continue
            rows += 1
            if rows > max_rows:
                raise ValueError(
                    f"{source}: line {reader.line_num}: more than the limit of {max_rows} rows"
                )
            yield reader.line_num, fields


def csv_header(path: str | os.PathLike[str]) -> list[str]:
    """The column names of the CSV file ``path`` (its first record, each name stripped;
    ``[]`` for an empty file); errors as :func:`read_csv`."""
    records = read_csv(path)
    try:
        _, header = next(records, (0, []))
    finally:
        records.close()
    return [name.strip() for name in header]
