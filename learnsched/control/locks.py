"""One loop per ledger and per engine: an exclusive lock on each, held for the whole run.

Two loops driving one engine park it under each other's requests, and two loops on one
ledger number their runs alike and mix their records. So a run holds, until it exits:

- the **ledger lock**: ``flock`` on ``LEDGER.lock`` beside the ledger (not the ledger
  itself: every append takes a short exclusive ``flock`` on the ledger, which a lock
  held for the run would block);
- the **engine lease**: ``flock`` on a file named after the engine's URL in the lease
  folder (:func:`lease_dir`: ``$LEARNSCHED_LEASE_DIR``, else
  ``$XDG_STATE_HOME/learnsched/leases``, else ``~/.local/state/learnsched/leases``), so
  loops with different ledgers and job folders still meet there.

An ``flock`` is the kernel's: it goes when its holder dies (``kill -9`` included), so a
lock is never stale. Each lock file names its holder (pid, host, start time, what it
guards) for the refusal's message. The URL is compared as written, after lower-casing
and adding the scheme's default port: ``localhost`` and ``127.0.0.1`` are two names.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

from .._atomic import FILE_MODE, naming_file

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

__all__ = ["LEASE_DIR_ENV", "LockHeld", "RunLocks", "engine_key", "lease_dir"]

LEASE_DIR_ENV = "LEARNSCHED_LEASE_DIR"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class LockHeld(RuntimeError):
    """Another process holds the ledger lock or the engine lease.

    Parameters
    ----------
    message
        One line naming what is held and the holder's pid.
    pid
        The holder's process id (``None`` if its lock file names none).
    """

    exit_status = 3  # the command line's status: the engine or ledger is not ours to use

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


def lease_dir() -> Path:
    """The folder engine leases live in (see the module notes)."""
    configured = os.environ.get(LEASE_DIR_ENV)
    if configured:
        return Path(configured)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "learnsched" / "leases"


def engine_key(url: str) -> str:
    """The engine's URL as leases compare it: ``scheme://host:port``, lower case."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(scheme, 0)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def _holder(file: IO[str]) -> tuple[int | None, str]:
    """The pid and a description of who holds a lock file (what its holder wrote)."""
    file.seek(0)
    try:
        data = json.loads(file.read() or "{}")
    except ValueError:
        return None, "an unknown process"
    pid = data.get("pid")
    since = data.get("since_unix")
    when = (
        ""
        if not isinstance(since, (int, float))
        else time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(since))
    )
    pid = pid if isinstance(pid, int) else None
    return pid, f"pid {pid} on {data.get('host', '?')}{when}"


class RunLocks:
    """The ledger lock and the engine lease of one run; a context manager.

    Parameters
    ----------
    ledger
        The run's ledger file.
    engine_url
        The engine's URL (``None``: no lease, e.g. an engine no URL names).
    leases
        The lease folder (default :func:`lease_dir`); created if missing.

    Raises
    ------
    LockHeld
        On entry, if another process holds either (nothing is held then).
    """

    def __init__(
        self,
        ledger: str | os.PathLike[str],
        engine_url: str | None,
        leases: str | os.PathLike[str] | None = None,
    ) -> None:
        ledger_path = Path(ledger)
        self.paths: list[tuple[Path, str]] = [
            (ledger_path.with_name(ledger_path.name + ".lock"), f"the ledger {ledger_path}")
        ]
        if engine_url is not None:
            key = engine_key(engine_url)
            folder = Path(leases) if leases is not None else lease_dir()
            name = hashlib.sha256(key.encode()).hexdigest()[:24] + ".lease"
            self.paths.append((folder / name, f"the engine {key}"))
        self.ledger = str(ledger_path)
        self.engine_url = engine_url
        self._files: list[IO[str]] = []

    def __enter__(self) -> Self:
        try:
            for path, what in self.paths:
                self._files.append(self._take(path, what))
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def _take(self, path: Path, what: str) -> IO[str]:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        file = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, who = _holder(file)
            file.close()
            raise LockHeld(
                f"{what} is held by another learnsched run ({who}): one loop per engine and "
                "per ledger; stop that run first",
                pid,
            ) from None
        except BaseException:
            file.close()
            raise
        try:
            with naming_file(path):  # a full disk names the lock file
                file.seek(0)
                file.truncate()
                file.write(json.dumps({
                    "pid": os.getpid(), "host": socket.gethostname(), "since_unix": time.time(),
                    "ledger": self.ledger, "engine": self.engine_url,
                }))  # fmt: skip
                file.flush()
        except BaseException:
            file.close()
            raise
        return file

    def release(self) -> None:
        """Let both go (closing a file releases its flock)."""
        while self._files:
            with contextlib.suppress(OSError):
                self._files.pop().close()
