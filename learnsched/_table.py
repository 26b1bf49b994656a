"""The one two-column table every report prints: a label, then its value."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Rows", "format_rows"]

Rows = list[tuple[str, str]]


def format_rows(rows: Sequence[tuple[str, str]]) -> str:
    """``(label, value)`` rows, labels left-aligned to the longest (no value: the label alone)."""
    width = max((len(label) for label, _ in rows), default=0)
    return "\n".join(f"{label:<{width}}  {value}" if value else label for label, value in rows)
