"""Reading the text files users hand to learnsched: UTF-8 with or without a BOM, bounded.

Every input file (JSON and CSV alike) is read through here, so each is decoded the same
way: UTF-8, a leading byte order mark (as spreadsheet programs and Windows editors
write) skipped, and any byte that is not UTF-8 refused with a ``ValueError`` naming the
file, the line and the byte. A file larger than :data:`MAX_INPUT_BYTES` is refused
before it is read. ``-`` names standard input.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import BinaryIO

__all__ = ["MAX_INPUT_BYTES", "STDIN", "decode", "read_bytes", "read_text", "source_name"]

MAX_INPUT_BYTES = 1 << 28
"""Largest input file read whole (256 MiB): Python's JSON objects take ~10x the text."""

STDIN = "-"
"""The path that names standard input."""


def source_name(path: str | os.PathLike[str]) -> str:
    """How messages name ``path`` (``<stdin>`` for ``-``)."""
    text = os.fspath(path)
    return "<stdin>" if text == STDIN else text


def decode(data: bytes, source: str) -> str:
    """``data`` as text: UTF-8, a leading BOM dropped.

    Raises
    ------
    ValueError
        A byte sequence that is not UTF-8; the message names ``source``, the line and
        the byte's offset in the file.
    """
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as err:
        at = skip + err.start
        line = data.count(b"\n", 0, at) + 1
        raise ValueError(
            f"{source}: line {line}: not UTF-8 text (byte 0x{data[at]:02x} at offset {at}: "
            f"{err.reason}); save the file as UTF-8"
        ) from None


def _read_bounded(file: BinaryIO, source: str, max_bytes: int) -> bytes:
    data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{source}: larger than the limit of {max_bytes} bytes for an input file")
    return data


def read_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path`` (``-``: standard input), refused above ``max_bytes``.

    Raises
    ------
    ValueError
        The file is larger than ``max_bytes`` (checked before reading a regular file).
    OSError
        It cannot be read (missing, a folder, no permission).
    """
    source = source_name(path)
    if os.fspath(path) == STDIN:
        return _read_bounded(sys.stdin.buffer, source, max_bytes)
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > max_bytes:
            raise ValueError(
                f"{source}: {size} bytes exceeds the limit of {max_bytes} bytes for an input file"
            )
        return _read_bounded(file, source, max_bytes)  # a file that grew meanwhile, a FIFO


def read_text(path: str | os.PathLike[str], max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The text of ``path`` (``-``: standard input): UTF-8, with or without a BOM.

    Raises
    ------
    ValueError
        Not UTF-8 (naming the file, line and byte), or larger than ``max_bytes``.
    OSError
        It cannot be read.
    """
    return decode(read_bytes(path, max_bytes), source_name(path))
