"""What every command shares on the way out: exit statuses, JSON and tables.

Exit statuses (one table for every command, listed in each command's ``--help``):

====  ==============================================================
0     ok
1     a check found a violation (or a measurement failed)
2     bad input (one line on stderr)
3     missing hardware or library (one line naming what to install)
====  ==============================================================
"""

from __future__ import annotations

import json
import math
import signal
from typing import Any

from .._extras import install_hint
from .._table import Rows, format_rows

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_MISSING",
    "EXIT_OK",
    "EXIT_STATUSES",
    "EXIT_VIOLATION",
    "PLOT_EXTRA",
    "Rows",
    "emit_json",
    "finite",
    "print_rows",
]

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2
EXIT_MISSING = 3
# Not failures of the command: what shells report for a process ended by the signal.
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130: Ctrl-C (one line on stderr)
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: the reader of stdout left early (quiet)

# The epilog of every command's --help.
EXIT_STATUSES = (
    "exit status: 0 ok, 1 a check found a violation (or a measurement failed), "
    "2 bad input, 3 missing hardware or library"
)


# What --plot needs, in every --plot help.
PLOT_EXTRA = f"needs matplotlib: {install_hint('plot')}"


def emit_json(obj: Any) -> None:
    """Print ``obj`` as strict, indented JSON (``ValueError`` on NaN or infinity)."""
    print(json.dumps(obj, indent=2, allow_nan=False))


def finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded value prints as null."""
    return None if value is None or math.isinf(value) else value


def print_rows(rows: Rows) -> None:
    """Print ``(label, value)`` rows as the shared two-column table."""
    print(format_rows(rows))
