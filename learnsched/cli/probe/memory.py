"""``learnsched probe memory``: a process tree's host PSS (and GPU memory when readable)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from ..._checks import integer
from ...handoff.host_memory import process_tree, read_host_memory
from ..output import Rows, emit_json, print_rows
from .common import add_common, gib, optional_device

__all__ = ["check_pid", "register"]


def register(probes: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``probe memory``."""
    parser = probes.add_parser("memory", help="host PSS of a process tree (and GPU memory)")
    parser.add_argument("--pid", type=int, required=True, help="process to read")
    parser.add_argument("--no-children", action="store_true", help="this process only")
    add_common(parser, out=False)
    parser.set_defaults(func=run_memory)


def check_pid(pid: int) -> None:
    """``ValueError`` for a bad PID, ``ProcessLookupError`` for one that does not exist."""
    process_tree(integer("pid", pid, low=1))


def run_memory(args: argparse.Namespace) -> int:
    """Print a process tree's PSS split (and GPU memory when NVML is available)."""
    host = read_host_memory(args.pid, children=not args.no_children)
    device, why = optional_device(args)
    memory = None if device is None else device.memory()
    report: dict[str, Any] = {
        "host": asdict(host),
        "device": None if memory is None else asdict(memory),
        "device_unavailable": why,
    }
    if args.json:
        emit_json(report)
        return 0
    rows: Rows = [
        ("processes", " ".join(map(str, host.pids))),
        ("PSS", gib(host.pss)),
        ("  anon", gib(host.pss_anon)),
        ("  file", gib(host.pss_file)),
        ("  shmem", gib(host.pss_shmem)),
    ]
    if device is None or memory is None:
        rows.append(("GPU", f"not read: {why}"))
    else:
        occupied = f"{gib(memory.occupied)} of {gib(memory.total)} ({device.name})"
        rows.append(("GPU occupied (total - free)", occupied))
    print_rows(rows)
    return 0
