"""What every command shares on the way out: exit statuses, JSON and tables.

Exit statuses (one table for every command, listed in each command's ``--help``):

====  ==============================================================
0     ok
1     a check found a violation (or a measurement failed)
2     bad input (one line on stderr naming the field, value or file)
3     missing hardware or library (one line naming what to install)
4     environment failure: disk full, permission denied, an engine or host that
      does not answer (one line naming what failed)
70    internal error: a bug in learnsched (one line and where to report it)
====  ==============================================================

130 follows Ctrl-C (one line) and 141 a reader of stdout that left early (quiet).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .._errors import EXIT_ENVIRONMENT
from .._extras import install_hint
from .._table import Rows, format_rows

__all__ = [
    "BUG_REPORT_URL",
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_BUG",
    "EXIT_ENVIRONMENT",
    "EXIT_INTERRUPTED",
    "EXIT_MISSING",
    "EXIT_OK",
    "EXIT_STATUSES",
    "EXIT_VIOLATION",
    "PLOT_EXTRA",
    "Rows",
    "emit_json",
    "finite",
    "flag_names",
    "nonnegative_float",
    "print_rows",
    "print_values",
    "text_value",
]

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2
EXIT_MISSING = 3
EXIT_BUG = 70  # EX_SOFTWARE of sysexits.h: an internal software error
# Not failures of the command: what shells report for a process ended by the signal.
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130: Ctrl-C (one line on stderr)
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: the reader of stdout left early (quiet)

BUG_REPORT_URL = "https://github.com/learnsched/learnsched/issues"

# The epilog of every command's --help (added by the dispatcher's parser class).
EXIT_STATUSES = (
    "exit status: 0 ok, 1 a check found a violation (or a measurement failed), "
    f"2 bad input, 3 missing hardware or library, {EXIT_ENVIRONMENT} environment failure "
    f"(disk full, permission denied, engine unreachable), {EXIT_BUG} internal error (a bug: "
    "please report it)"
)


# What --plot needs, in every --plot help.
PLOT_EXTRA = f"needs matplotlib: {install_hint('plot')}"


def emit_json(obj: Any) -> None:
    """Print ``obj`` as strict, indented JSON.

    Raises
    ------
    ValueError
        A NaN or infinity in ``obj`` (standard JSON has neither), naming its place:
        ``--json: the result's points[2].gain is inf``.
    """
    try:
        text = json.dumps(obj, indent=2, allow_nan=False)
    except ValueError:
        raise ValueError(
            f"--json: the result's {_non_finite(obj)} (the inputs overflow a double)"
        ) from None
    print(text)


def _non_finite(obj: Any) -> str:
    """Where the first NaN or infinity in ``obj`` is, and its value (walked with a stack)."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"{path.lstrip('.') or 'value'} is {item!r}"
        if isinstance(item, dict):
            stack += [(f"{path}.{k}", v) for k, v in reversed(list(item.items()))]
        elif isinstance(item, (list, tuple)):
            stack += [(f"{path}[{i}]", v) for i, v in reversed(list(enumerate(item)))]
    return "value is not finite"


def finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded value prints as null."""
    return None if value is None or math.isinf(value) else value


def print_rows(rows: Rows) -> None:
    """Print ``(label, value)`` rows as the shared two-column table."""
    print(format_rows(rows))


def text_value(value: Any) -> str:
    """A JSON value as the text tables show it: ``-`` for none, ``yes``/``no``, numbers
    to six significant digits, lists comma-separated (never Python's ``None``/``True``)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(text_value(item) for item in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {text_value(v)}" for k, v in value.items()) or "-"
    return str(value)


def print_values(values: Mapping[str, Any]) -> None:
    """Print a JSON object's keys and values (:func:`text_value`) as the two-column table."""
    print_rows([(key, text_value(value)) for key, value in values.items()])


def nonnegative_float(text: str) -> float:
    """An argparse ``type``: a finite number ``>= 0``, so a bad value is reported under
    the flag's own name (``argument --return-s: must be ...``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


@contextmanager
def flag_names(*fields: str) -> Iterator[None]:
    """Bad input raised inside names the command's flags, not the library's parameters:
    each whole word ``FIELD`` of ``fields`` in a ``ValueError``/``TypeError`` becomes
    ``--FIELD`` with dashes (``horizon_s must be > 0`` -> ``--horizon-s must be > 0``);
    the library keeps its own names for its callers."""
    try:
        yield
    except (ValueError, TypeError) as err:
        words = re.compile(r"\b(" + "|".join(map(re.escape, fields)) + r")\b")
        message = str(err)
        renamed = words.sub(lambda m: "--" + m.group(1).replace("_", "-"), message)
        if renamed == message:
            raise
        raise (TypeError if isinstance(err, TypeError) else ValueError)(renamed) from None
