"""matplotlib for every figure: imported only when one is drawn, written atomically.

matplotlib is an optional extra (``pip install "learnsched[plot]"``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._atomic import atomic_write

__all__ = ["pyplot", "save_figure"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend; ``ValueError`` if not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never needs a display
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ValueError('plotting needs matplotlib: pip install "learnsched[plot]"') from err
    return plt


def save_figure(fig: Any, path: str | os.PathLike[str]) -> None:
    """Write ``fig`` atomically in the format of the suffix (``.png``, ``.svg``, ``.pdf``) and close it."""
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    try:
        atomic_write(path, lambda file: fig.savefig(file, format=fmt, dpi=150, bbox_inches="tight"))
    finally:
        pyplot().close(fig)
