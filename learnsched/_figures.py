"""matplotlib for every figure: imported only when one is drawn, written atomically.

matplotlib is an optional extra (``pip install "learnsched[plot]"``, or from a source
tree ``pip install ".[plot]"``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._atomic import atomic_write
from ._extras import require

__all__ = ["pyplot", "save_figure"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend; ``MissingExtra`` if not installed."""
    require("matplotlib", "plot").use("Agg")  # files only: never needs a display
    return require("matplotlib.pyplot", "plot")


def save_figure(fig: Any, path: str | os.PathLike[str]) -> None:
    """Write ``fig`` atomically in the format of the suffix (``.png``, ``.svg``, ``.pdf``) and close it."""
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    try:
        atomic_write(path, lambda file: fig.savefig(file, format=fmt, dpi=150, bbox_inches="tight"))
    finally:
        pyplot().close(fig)
