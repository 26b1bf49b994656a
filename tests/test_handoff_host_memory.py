"""PSS reader: the process, its children, the anon/file/shmem split, bad PIDs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from learnsched.handoff import PhaseSampler, process_tree, read_host_memory
from learnsched.handoff.host_memory import _parse_rollup

from conftest import run_python

MIB = 2**20
HAS_ROLLUP = Path(f"/proc/{os.getpid()}/smaps_rollup").exists()
pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")

# Allocates and touches 64 MiB of anonymous memory, then waits for stdin to close.
HOLDER = (
    "import sys; block = bytearray(b'x' * (64 << 20)); print('ready', flush=True); sys.stdin.read()"
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,  # outside the source tree (a flat layout shadows the installed package)
    )
    assert child.stdout is not None
    assert child.stdin is not None
    assert child.stdout.readline() == "ready\n"
    yield child
    child.stdin.close()
    child.wait(timeout=10)
    child.stdout.close()


def test_own_pss_and_split() -> None:
    memory = read_host_memory(os.getpid(), children=False)
    assert memory.pids == (os.getpid(),)
    assert memory.pss > 0
    if HAS_ROLLUP and memory.pss_anon is not None:
        assert memory.pss_file is not None
        assert memory.pss_shmem is not None
        # The kernel reports each part in kB, so the parts add up to the whole.
        assert memory.pss_anon + memory.pss_file + memory.pss_shmem == memory.pss


def test_children_are_summed(holder: subprocess.Popen[str]) -> None:
    assert holder.pid in process_tree(os.getpid())
    alone = read_host_memory(os.getpid(), children=False)
    tree = read_host_memory(os.getpid())
    assert holder.pid in tree.pids
    assert tree.pss - alone.pss >= 60 * MIB
    child = read_host_memory(holder.pid)
    if child.pss_anon is not None:
        assert child.pss_anon >= 60 * MIB


def test_phase_sampler(holder: subprocess.Popen[str]) -> None:
    sampler = PhaseSampler(holder.pid)
    first = sampler.mark("awake")
    second = sampler.mark("parked")
    assert first.t_ns < second.t_ns
    assert sampler.get("parked") == second.memory
    assert sampler.get("resumed") is None


def test_kernel_without_split() -> None:
    text = "00400000-7fff0000 ---p 00000000 00:00 0  [rollup]\nRss:  2048 kB\nPss:  1024 kB\n"
    memory = _parse_rollup(text, 7)
    assert (memory.pss, memory.pss_anon, memory.pss_file, memory.pss_shmem) == (
        1024 * 1024,
        None,
        None,
        None,
    )


@pytest.mark.parametrize("pid", [0, -3])
def test_bad_pid_values(pid: int) -> None:
    with pytest.raises(ValueError, match=f"pid must be >= 1, got {pid}"):
        read_host_memory(pid)


@pytest.mark.parametrize("pid", [True, "12", 1.0])
def test_bad_pid_types(pid: object) -> None:
    with pytest.raises(TypeError, match="pid must be an integer"):
        read_host_memory(pid)  # type: ignore[arg-type]


def test_missing_pid(tmp_path: Path) -> None:
    exited = int(run_python(["-c", "import os; print(os.getpid())"], cwd=tmp_path).stdout)
    with pytest.raises(ProcessLookupError, match=f"pid {exited}: no such process"):
        read_host_memory(exited)
