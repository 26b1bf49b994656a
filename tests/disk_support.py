"""A full disk without root: a byte budget on one folder's files, in this process."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest


class FullDisk:
    """``os.write`` and ``os.posix_fallocate`` on the files directly in ``folder`` see a
    disk that holds the bytes they hold now (their sizes) and no more, from :meth:`fill`
    until :meth:`free`: a write gets what room is left (a short write), then ``ENOSPC``.
    Space freed in the folder (a file truncated or removed) is room again, as on a real
    disk. Writes elsewhere (pipes, sockets, other folders) pass through.

    Parameters
    ----------
    folder
        The folder whose files the budget covers.
    monkeypatch
        Patches ``os.write`` and ``os.posix_fallocate`` for the test.
    after_kind
        Fill the disk right after the first ledger record of this kind is written
        (``None``: only :meth:`fill` fills it).
    taken
        Bytes that another writer takes of the space freed after the disk fills.
    """

    def __init__(
        self,
        folder: Path,
        monkeypatch: pytest.MonkeyPatch,
        after_kind: str | None = None,
        taken: int = 0,
    ) -> None:
        self.folder = folder.resolve()
        self.capacity: int | None = None  # bytes; None: not full
        self.taken = taken
        self.trigger = None if after_kind is None else f'"kind": "{after_kind}"'.encode()
        self.refused = 0  # writes refused for want of room
        self._write = os.write
        self._fallocate = os.posix_fallocate
        monkeypatch.setattr(os, "write", self.write)
        monkeypatch.setattr(os, "posix_fallocate", self.posix_fallocate)

    def used(self) -> int:
        """Bytes the folder's files hold."""
        return sum(entry.stat().st_size for entry in os.scandir(self.folder) if entry.is_file())

    def fill(self) -> None:
        """From now on the folder holds no more than it does now."""
        self.capacity = self.used() - self.taken

    def free(self) -> None:
        """Room again (an operator freed space)."""
        self.capacity = None

    def _room(self, fd: int) -> int | None:
        """Bytes ``fd``'s file may still grow by (``None``: no limit applies)."""
        if self.capacity is None:
            return None
        try:
            target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return None
        if target.parent != self.folder:
            return None
        return max(self.capacity - self.used(), 0)

    def write(self, fd: int, data: Any) -> int:
        """``os.write`` on this disk."""
        room = self._room(fd)
        if room is not None and len(data) > room:
            if room == 0:
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            data = bytes(data[:room])
        written = self._write(fd, data)
        if self.trigger is not None and self.trigger in bytes(data):
            self.trigger = None
            self.fill()
        return written

    def posix_fallocate(self, fd: int, offset: int, length: int) -> None:
        """``os.posix_fallocate`` on this disk."""
        room = self._room(fd)
        if room is not None and offset + length - os.fstat(fd).st_size > room:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._fallocate(fd, offset, length)


def main(argv: list[str]) -> int:
    """``python disk_support.py FOLDER AFTER_KIND TAKEN ARGS...``: ``learnsched ARGS`` in
    this process on a :class:`FullDisk` over ``FOLDER`` (a test's subprocess hook)."""
    from learnsched.cli import main as learnsched

    folder, after_kind, taken, *args = argv
    with pytest.MonkeyPatch.context() as patch:
        FullDisk(Path(folder), patch, after_kind=after_kind, taken=int(taken))
        return learnsched(args)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
