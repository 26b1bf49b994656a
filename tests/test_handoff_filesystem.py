"""The filesystem type of a checkpoint folder, from the kernel's mount table."""

from __future__ import annotations

from pathlib import Path

import pytest

from learnsched.handoff.filesystem import filesystem_of

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
31 22 0:26 / /scratch\\040space rw - xfs /dev/nvme0n1 rw
32 31 0:27 / /scratch\\040space/ram rw - ramfs none rw
"""


@pytest.mark.parametrize(
    ("path", "fs_type", "mount_point", "volatile"),
    [
        ("/home/user/ckpt", "ext4", "/", False),
        ("/dev/shm/ckpt/adapter.safetensors", "tmpfs", "/dev/shm", True),
        ("/scratch space/run1", "xfs", "/scratch space", False),
        ("/scratch space/ram/run1", "ramfs", "/scratch space/ram", True),
        ("/dev/shmem", "ext4", "/", False),  # a prefix of the name is not a parent
    ],
)
def test_deepest_mount_wins(path: str, fs_type: str, mount_point: str, volatile: bool) -> None:
    found = filesystem_of(path, MOUNTINFO)
    assert (found.fs_type, found.mount_point, found.volatile) == (fs_type, mount_point, volatile)


def test_this_machine(tmp_path: Path) -> None:
    if not Path("/proc/self/mountinfo").exists():
        pytest.skip("no /proc mount table here")
    assert filesystem_of(tmp_path).fs_type != "unknown"
    assert filesystem_of("/proc/self").fs_type == "proc"


def test_unreadable_table_is_unknown(tmp_path: Path) -> None:
    assert filesystem_of(tmp_path, "").fs_type == "unknown"
