"""Atomic result files: a reader sees the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "atomic_write_text", "fsync_folder"]


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries to disk, so that a new or renamed name survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], durable: bool = True
) -> None:
    """Write ``path`` through ``write(file)`` into a temporary sibling, then rename it over.

    The rename is atomic on POSIX. With ``durable`` (the default) the file is fsynced
    before the rename and the folder after it, so the new content survives a crash;
    ``durable=False`` leaves both in the page cache (a buffered write, still atomic).
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_folder(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically and durably replace ``path`` with UTF-8 ``text``."""
    atomic_write(path, lambda file: file.write(text.encode()))
