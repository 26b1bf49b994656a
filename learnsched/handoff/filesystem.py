"""Which filesystem holds a folder: a durable save on tmpfs survives no reboot.

An ``fsync`` on tmpfs (or ramfs) returns at once and keeps nothing across a power loss,
so a "durable" checkpoint timed there is neither durable nor a measure of a real disk.
:func:`filesystem_of` reads the kernel's mount table (``/proc/self/mountinfo``) and
names the filesystem type of the mount that holds a path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VOLATILE_FILESYSTEMS", "Filesystem", "filesystem_of"]

MOUNTINFO = Path("/proc/self/mountinfo")
# Memory-backed: an fsync there costs nothing and keeps nothing.
VOLATILE_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs"})


@dataclass(frozen=True)
class Filesystem:
    """The mount holding a path.

    Parameters
    ----------
    mount_point
        Where it is mounted.
    fs_type
        The kernel's type name (``ext4``, ``xfs``, ``tmpfs``, ``overlay``, ...), or
        ``"unknown"`` where the mount table cannot be read (not Linux).
    source
        The mounted device or source, as the mount table gives it.
    """

    mount_point: str
    fs_type: str
    source: str

    @property
    def volatile(self) -> bool:
        """Memory-backed (tmpfs, ramfs): a durable save there is not durable."""
        return self.fs_type in VOLATILE_FILESYSTEMS


def _unescape(field: str) -> str:
    """Mount table fields escape space, tab, newline and backslash as octal."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _mounts(text: str) -> list[Filesystem]:
    """Every mount of a ``mountinfo`` text (fields: see proc(5))."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        mounts.append(Filesystem(_unescape(fields[4]), tail[0], _unescape(tail[1])))
    return mounts


def filesystem_of(path: str | os.PathLike[str], mountinfo: str | None = None) -> Filesystem:
    """The mount holding ``path`` (resolved; the deepest mount point containing it wins).

    Parameters
    ----------
    path
        A file or folder (need not exist yet: its nearest existing parent is used).
    mountinfo
        The mount table's text (default: this process's ``/proc/self/mountinfo``).
    """
    target = Path(path).resolve()
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text()
        except OSError:
            return Filesystem("/", "unknown", "")
    best: Filesystem | None = None
    for mount in _mounts(mountinfo):
        point = Path(mount.mount_point)
        holds = target == point or point in target.parents
        # The deepest wins; a later line over-mounts an earlier one at the same point.
        if holds and (best is None or len(point.parts) >= len(Path(best.mount_point).parts)):
            best = mount
    return best if best is not None else Filesystem("/", "unknown", "")
