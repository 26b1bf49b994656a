"""Atomic result files: a reader sees the old file or the whole new one, never a part.

Every file a user keeps (CSV, figure, cost profile, adapter, ledger) is an ordinary file:
a new one gets the permissions of the user's umask (``0o666 & ~umask``, as ``open()``
gives), and a replaced one keeps its mode.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = ["FILE_MODE", "atomic_write", "atomic_write_text", "fsync_folder"]

FILE_MODE = 0o666
"""Mode passed to ``os.open`` when creating a file; the kernel applies the umask."""

_NAME_ATTEMPTS = 100


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries to disk, so that a new or renamed name survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create_sibling(target: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``target`` with a file's usual mode.

    Not ``tempfile.mkstemp``: it creates 0600 files, and the rename would pass that on to
    the user's result. ``O_EXCL`` with a random name is what makes the name ours.
    """
    for _ in range(_NAME_ATTEMPTS):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            continue
        return fd, tmp
    raise FileExistsError(f"no free temporary name beside {target}")


def _keep_mode(fd: int, target: Path) -> None:
    """Give the temporary file ``target``'s mode if it exists (a replace keeps it)."""
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return  # a new file: the umask already chose its mode
    os.fchmod(fd, mode & 0o7777)


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], durable: bool = True
) -> None:
    """Write ``path`` through ``write(file)`` into a temporary sibling, then rename it over.

    The rename is atomic on POSIX. A new file gets the umask's permissions and an existing
    one keeps its mode. With ``durable`` (the default) the file is fsynced before the
    rename and the folder after it, so the new content survives a crash;
    ``durable=False`` leaves both in the page cache (a buffered write, still atomic).
    """
    target = Path(path)
    fd, tmp = _create_sibling(target)
    try:
        with os.fdopen(fd, "wb") as file:
            _keep_mode(file.fileno(), target)
            write(file)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_folder(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically and durably replace ``path`` with UTF-8 ``text``."""
    atomic_write(path, lambda file: file.write(text.encode()))
