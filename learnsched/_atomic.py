"""Atomic result files: a reader sees the old file or the whole new one, never a part.

Every file a user keeps (CSV, figure, cost profile, adapter, ledger) is an ordinary file:
a new one gets the permissions of the user's umask (``0o666 & ~umask``, as ``open()``
gives), and a replaced one keeps its mode.

No temporary file outlives its writer for long: it is removed when the write fails, at
interpreter exit if a write is still open then, and, after a ``kill -9``, by the next write
into the same folder: a temporary is named ``.NAME.learnsched-PID-XXXXXXXXXXXXXXXX.tmp``
after the process writing it, and one whose process no longer exists is stale. Only
learnsched's own temporaries are removed: the name must carry the ``learnsched-`` marker
and the file must belong to the user running the cleanup, so another program's
look-alike (``.NAME.123.abcdef01.tmp``) is never touched. (The folder is assumed to be
written from one host: a process id means nothing across machines sharing a file system.)
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import os
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = [
    "FILE_MODE",
    "atomic_write",
    "atomic_write_text",
    "fsync_folder",
    "locked",
    "naming_file",
    "remove_stale_temps",
]

FILE_MODE = 0o666
"""Mode passed to ``os.open`` when creating a file; the kernel applies the umask."""

_NAME_ATTEMPTS = 100
_TEMP_MARKER = "learnsched"
_TEMP_NAME = re.compile(rf"\..+\.{_TEMP_MARKER}-(?P<pid>[0-9]+)-[0-9a-f]{{16}}\.tmp")
_open_temps: set[Path] = set()  # this process's temporaries, removed at exit
_open_temps_lock = threading.Lock()


def _writer_gone(pid: int) -> bool:
    """Whether no process ``pid`` exists (another user's live process does exist; an id
    no process can have is not taken for a writer that is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False
    return False


def remove_stale_temps(folder: Path) -> int:
    """Remove temporaries of :func:`atomic_write` in ``folder`` whose writer is gone.

    Returns the number removed. A file of this user named
    ``.NAME.learnsched-PID-XXXXXXXXXXXXXXXX.tmp`` whose process no longer exists was left
    by a writer killed mid-write; no other file is touched.
    """
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        match = _TEMP_NAME.fullmatch(entry.name)
        if match is None or not _writer_gone(int(match["pid"])):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue  # not a file this user's writer left
            os.unlink(entry.path)
            removed += 1
        except FileNotFoundError:  # another writer removed it first
            pass
    return removed


@atexit.register
def _remove_open_temps() -> None:
    """At exit, remove the temporaries of writes still open (a daemon thread's)."""
    with _open_temps_lock:
        for tmp in _open_temps:
            tmp.unlink(missing_ok=True)
        _open_temps.clear()


@contextmanager
def naming_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """An operating-system error raised inside (one with an ``errno``) names ``path`` if
    it names no file: ``os.write``, ``os.fsync`` and a buffered file's writes name none,
    so a full disk's ``ENOSPC`` would not say which file it stopped."""
    try:
        yield
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(err.errno, err.strerror, os.fspath(path)) from err


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries to disk, so that a new or renamed name survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        with naming_file(folder):
            os.fsync(fd)
    finally:
        os.close(fd)


def _create_sibling(target: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``target`` with a file's usual mode.

    Not ``tempfile.mkstemp``: it creates 0600 files, and the rename would pass that on to
    the user's result. ``O_EXCL`` with a random name is what makes the name ours.
    """
    for _ in range(_NAME_ATTEMPTS):
        token = secrets.token_hex(8)
        tmp = target.with_name(f".{target.name}.{_TEMP_MARKER}-{os.getpid()}-{token}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            continue
        with _open_temps_lock:
            _open_temps.add(tmp)
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
    Temporaries that killed writers left in the folder are removed first.
    """
    target = Path(path)
    if not target.name:  # "." or "/": no sibling name to write beside, a folder
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    remove_stale_temps(target.parent)
    fd, tmp = _create_sibling(target)
    try:
        with naming_file(target), os.fdopen(fd, "wb") as file:
            _keep_mode(file.fileno(), target)
            write(file)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        with _open_temps_lock:
            _open_temps.discard(tmp)
    if durable:
        fsync_folder(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically and durably replace ``path`` with UTF-8 ``text``."""
    atomic_write(path, lambda file: file.write(text.encode()))


@contextmanager
def locked(
    path: str | os.PathLike[str], waiting: Callable[[Path], object] | None = None
) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the lock file ``.NAME.lock`` beside ``path``.

    For read-modify-write updates (a cost profile merged by several probes, a sweep
    writing its output folder): two processes that both hold the lock in turn cannot
    lose each other's update. ``waiting(lock_file)`` is called first when another
    process holds the lock (e.g. to say so), then the call blocks until it is free. The
    lock file stays (removing it would race with a waiting process) and is released
    when the block ends or the process dies.
    """
    target = Path(path)
    lock_file = target.with_name(f".{target.name}.lock")
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting(lock_file)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
