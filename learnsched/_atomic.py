"""Atomic result files: a reader sees the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "atomic_write_text"]


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Write ``path`` through ``write(file)`` into a temporary sibling, fsync, then rename.

    The rename is atomic on POSIX; the folder is fsynced so the new name survives a crash.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically replace ``path`` with UTF-8 ``text``."""
    atomic_write(path, lambda file: file.write(text.encode()))
