"""Reading the JSON files users hand to learnsched: standard JSON, bounded nesting.

Python's parser recurses once per nesting level (``RecursionError`` near 1000 levels) and
accepts ``NaN`` and ``Infinity``, which standard JSON does not. Every input file this
package reads (scenarios, cost profiles, sweep specs) nests a few levels, so a file nested
deeper than :data:`MAX_DEPTH` is refused with a ``ValueError`` naming the depth.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "parse"]

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
    """The nesting depth of a parsed value, walked with a stack (no recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _too_deep(source: str, found: int, max_depth: int) -> ValueError:
    return ValueError(f"{source}: JSON nesting depth {found} exceeds the limit of {max_depth}")


def parse(text: str | bytes, source: str, max_depth: int = MAX_DEPTH) -> Any:
    """The value of standard JSON ``text`` read from ``source`` (a path, for messages).

    Raises
    ------
    ValueError
        Not valid standard JSON (``NaN`` and ``Infinity`` included), or nested deeper
        than ``max_depth`` levels (the message gives the depth found).
    """
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        decoded = text.decode(errors="replace") if isinstance(text, bytes) else text
        raise _too_deep(source, _text_depth(decoded), max_depth) from None
    except ValueError as err:  # json.JSONDecodeError and UnicodeDecodeError too
        raise ValueError(f"{source} is not valid JSON: {err}") from None
    found = _value_depth(value)
    if found > max_depth:
        raise _too_deep(source, found, max_depth)
    return value
