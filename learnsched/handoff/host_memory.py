"""Host memory of a process tree: proportional set size (PSS) and its split.

PSS charges each shared page to its sharers in proportion, so the PSS of an engine and
its workers adds up without double counting (the paper's Section 3.1: warm recovery
raises host PSS from 4.77 to 11.16 GiB). Read from ``/proc/PID/smaps_rollup``; psutil
is the fallback where the kernel lacks it (before Linux 4.14).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .._checks import integer
from ..serving.errors import missing_extra
from ..serving.memory import HostMemory

__all__ = ["PhaseSample", "PhaseSampler", "process_tree", "read_host_memory"]

PROC = Path("/proc")
# smaps_rollup lines read, to HostMemory fields.
SPLIT_KEYS = {
    "Pss:": "pss",
    "Pss_Anon:": "pss_anon",
    "Pss_File:": "pss_file",
    "Pss_Shmem:": "pss_shmem",
}


def _parse_rollup(text: str, pid: int) -> HostMemory:
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        name = SPLIT_KEYS.get(key)
        if name is not None:
            number, unit = rest.split()
            if unit != "kB":
                raise ValueError(f"/proc/{pid}/smaps_rollup: unexpected unit {unit!r} in {line!r}")
            values[name] = int(number) * 1024
    if "pss" not in values:
        raise ValueError(f"/proc/{pid}/smaps_rollup has no Pss line")
    return HostMemory(
        values["pss"],
        values.get("pss_anon"),
        values.get("pss_file"),
        values.get("pss_shmem"),
        (pid,),
    )


def _read_psutil(pid: int) -> HostMemory:
    try:
        import psutil
    except ImportError as err:
        raise missing_extra("psutil (needed without /proc/PID/smaps_rollup)", err) from err
    try:
        info = psutil.Process(pid).memory_full_info()
    except psutil.NoSuchProcess as err:
        raise ProcessLookupError(f"pid {pid}: no such process") from err
    except psutil.AccessDenied as err:
        raise PermissionError(f"pid {pid}: not allowed to read its memory maps") from err
    return HostMemory(int(info.pss), None, None, None, (pid,))


def _read_one(pid: int) -> HostMemory:
    rollup = PROC / str(pid) / "smaps_rollup"
    try:
        text = rollup.read_text()
    except FileNotFoundError as err:
        if (PROC / str(pid)).exists():
            return _read_psutil(pid)  # a kernel without smaps_rollup
        raise ProcessLookupError(f"pid {pid}: no such process") from err
    except PermissionError as err:
        raise PermissionError(
            f"pid {pid}: cannot read {rollup} ({err.strerror}); run as its user or as root"
        ) from err
    except ProcessLookupError as err:  # exited between the open and the read
        raise ProcessLookupError(f"pid {pid}: no such process") from err
    if not text:  # the kernel gives an empty file for a zombie or kernel thread
        raise ProcessLookupError(f"pid {pid}: exited (no memory maps left)")
    return _parse_rollup(text, pid)


def _parent_of(stat: str) -> int:
    # The command name in field 2 may hold spaces and parentheses; fields resume after ')'.
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def process_tree(pid: int) -> list[int]:
    """``pid`` followed by all its live descendants (breadth first).

    Raises
    ------
    TypeError, ValueError
        ``pid`` is not an integer >= 1.
    ProcessLookupError
        No process has this id.
    """
    integer("pid", pid, low=1)
    if not (PROC / str(pid)).exists():
        raise ProcessLookupError(f"pid {pid}: no such process")
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = _parent_of((entry / "stat").read_text())
        except (FileNotFoundError, ProcessLookupError):  # exited while we listed
            continue
        children.setdefault(parent, []).append(int(entry.name))
    tree, queue = [], [pid]
    while queue:
        current = queue.pop(0)
        tree.append(current)
        queue.extend(sorted(children.get(current, ())))
    return tree


def _total(parts: Iterable[int | None]) -> int | None:
    values = list(parts)
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def read_host_memory(pid: int, *, children: bool = True) -> HostMemory:
    """PSS of ``pid`` (and, by default, every live descendant), bytes.

    Parameters
    ----------
    pid
        The process to read.
    children
        Sum over the whole process tree; descendants that exit while being read are
        left out (the result's ``pids`` names those counted).

    Raises
    ------
    TypeError, ValueError
        ``pid`` is not an integer >= 1.
    ProcessLookupError, PermissionError
        ``pid`` does not exist or its memory maps cannot be read (the message says which).
    """
    integer("pid", pid, low=1)
    readings = [_read_one(pid)]
    for child in process_tree(pid)[1:] if children else ():
        try:
            readings.append(_read_one(child))
        except ProcessLookupError:
            continue
    return HostMemory(
        pss=sum(r.pss for r in readings),
        pss_anon=_total(r.pss_anon for r in readings),
        pss_file=_total(r.pss_file for r in readings),
        pss_shmem=_total(r.pss_shmem for r in readings),
        pids=tuple(p for r in readings for p in r.pids),
    )


@dataclass(frozen=True)
class PhaseSample:
    """Host memory at a named phase boundary.

    Parameters
    ----------
    phase
        The boundary, e.g. ``"awake"``, ``"parked"``, ``"resumed"``.
    t_ns
        When it was read, ``time.perf_counter_ns()`` (the probes' one monotonic clock).
    memory
        The reading.
    """

    phase: str
    t_ns: int
    memory: HostMemory


@dataclass
class PhaseSampler:
    """Read a process tree's PSS at phase boundaries.

    Parameters
    ----------
    pid
        Root of the process tree.
    children
        Include descendants.
    """

    pid: int
    children: bool = True
    samples: list[PhaseSample] = field(default_factory=list)

    def mark(self, phase: str) -> PhaseSample:
        """Read now and remember the sample under ``phase``."""
        t_ns = time.perf_counter_ns()
        sample = PhaseSample(phase, t_ns, read_host_memory(self.pid, children=self.children))
        self.samples.append(sample)
        return sample

    def get(self, phase: str) -> HostMemory | None:
        """The last reading taken at ``phase``, or ``None`` if there is none."""
        for sample in reversed(self.samples):
            if sample.phase == phase:
                return sample.memory
        return None
