"""The one reader of the JSON users hand to learnsched: standard JSON, bounded nesting.

Python's parser recurses once per nesting level (``RecursionError`` near 1000 levels) and
accepts ``NaN`` and ``Infinity``, which standard JSON does not. Every input this package
reads (scenarios, SPECs, calendars, cost profiles, trainer options) nests a few levels,
so a value nested deeper than :data:`MAX_DEPTH` is refused with a ``ValueError`` naming
the depth. Files are read by :func:`read_json` (UTF-8 with or without a BOM, bounded in
size, see :mod:`learnsched._text`); text given on a command line by :func:`parse`.
Integers are read as Python ints (exact at any size; a check later refuses what does
not fit), numbers with a fraction or exponent as doubles (``1e400`` is infinite, which
every field refuses by name).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

from ._text import decode, read_bytes, source_name

__all__ = ["MAX_DEPTH", "exact_keys", "parse", "read_json"]

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (a list of scenarios nests 4 levels)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


def _text_depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``text`` outside strings."""
    deepest = level = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest


def _value_depth(value: Any) -> int:
    """The nesting depth of a value ``json.loads`` made (only plain dicts and lists nest),
    walked a level at a time (no recursion). A level of numbers, or of lists only, is
    taken in by C loops (``map``, ``chain``): a SPEC's millions of inline numbers would
    otherwise cost more than parsing them."""
    depth, level = 0, [value]
    while True:
        kinds = set(map(type, level))
        if dict not in kinds and list not in kinds:
            return depth
        depth += 1
        if kinds != {list}:
            level = [
                item.values() if type(item) is dict else item
                for item in level
                if type(item) is dict or type(item) is list
            ]
        level = list(chain.from_iterable(level))


def _too_deep(source: str, found: int, max_depth: int) -> ValueError:
    return ValueError(f"{source}: JSON nesting depth {found} exceeds the limit of {max_depth}")


def exact_keys(name: str, obj: object, keys: Sequence[str]) -> Mapping[str, Any]:
    """``obj`` as a JSON object holding exactly ``keys``.

    Parameters
    ----------
    name
        What ``obj`` is, for the messages (``"SPEC"``, ``"candidate"`` ...).
    obj
        A value read from JSON.
    keys
        The keys it must hold, no more and no fewer.

    Returns
    -------
    Mapping[str, Any]
        ``obj`` itself.

    Raises
    ------
    TypeError
        ``obj`` is not an object.
    ValueError
        A key is missing or unknown (each named).
    """
    if not isinstance(obj, Mapping):
        raise TypeError(f"{name} must be a JSON object, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    unknown = sorted(set(obj) - set(keys))
    if missing:
        raise ValueError(f"{name} is missing key(s) {', '.join(missing)}")
    if unknown:
        raise ValueError(f"{name} has unknown key(s) {', '.join(map(str, unknown))}")
    return obj


def parse(text: str | bytes, source: str, max_depth: int = MAX_DEPTH) -> Any:
    """The value of standard JSON ``text`` read from ``source`` (a path or a flag, for
    messages); bytes are decoded as UTF-8 with or without a BOM.

    Raises
    ------
    ValueError
        Not UTF-8, not valid standard JSON (``NaN`` and ``Infinity`` included; the
        message names ``source``, the line and the column), or nested deeper than
        ``max_depth`` levels (the message gives the depth found).
    """
    if isinstance(text, bytes):
        text = decode(text, source)
    elif text.startswith("\ufeff"):  # a BOM decoded as text
        text = text[1:]
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _too_deep(source, _text_depth(text), max_depth) from None
    except ValueError as err:  # json.JSONDecodeError, int digit limits, NaN/Infinity
        raise ValueError(f"{source} is not valid JSON: {err}") from None
    found = _value_depth(value)
    if found > max_depth:
        raise _too_deep(source, found, max_depth)
    return value


def read_json(
    path: str | os.PathLike[str], what: str | None = None, max_depth: int = MAX_DEPTH
) -> Any:
    """The JSON value in the file ``path`` (``-``: standard input).

    Parameters
    ----------
    path
        The file.
    what
        How messages name it (default: the path), e.g. ``"--calendar cal.json"``.
    max_depth
        Deepest nesting accepted.

    Raises
    ------
    ValueError
        The file is not UTF-8, not standard JSON, too deep or too large; the message
        names it (and the line and column of a syntax error).
    OSError
        It cannot be read.
    """
    source = what if what is not None else source_name(path)
    return parse(decode(read_bytes(path), source), source, max_depth)
