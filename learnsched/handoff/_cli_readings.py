"""``learnsched probe nvml`` and ``learnsched probe memory``: one-shot readings."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from .._checks import integer
from ._cli_tables import Rows, gib, optional_device, print_rows
from .host_memory import process_tree, read_host_memory
from .nvml import NvmlDevice, driver_version, open_device

__all__ = ["add_memory_arguments", "check_pid", "nvml_report", "run_memory", "run_nvml"]


def add_memory_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``memory`` probe's own options."""
    parser.add_argument("--pid", type=int, required=True, help="process to read")
    parser.add_argument("--no-children", action="store_true", help="this process only")


def nvml_report(device: NvmlDevice) -> dict[str, Any]:
    """One GPU's NVML readings as plain JSON."""
    clocks = device.clocks()
    util = device.utilisation()
    return {
        "index": device.index,
        "uuid": device.uuid,
        "name": device.name,
        "driver": driver_version(),
        "memory": asdict(device.memory()),
        "processes": [asdict(p) for p in device.processes()],
        "utilisation_percent": None if util is None else {"gpu": util[0], "memory": util[1]},
        "clocks": asdict(clocks),
    }


def _nvml_rows(report: dict[str, Any]) -> Rows:
    memory, clocks = report["memory"], report["clocks"]
    util = report["utilisation_percent"]
    reasons = clocks["event_reasons"]
    rows: Rows = [
        ("device", f"{report['index']}  {report['name']}  {report['uuid']}"),
        ("driver", report["driver"]),
        ("memory total", gib(memory["total"])),
        ("memory reserved", gib(memory["reserved"])),
        ("memory used", gib(memory["used"])),
        ("memory free", gib(memory["free"])),
        ("utilisation", "n/a" if util is None else f"{util['gpu']}% gpu, {util['memory']}% mem"),
        ("clocks", f"SM {clocks['sm_mhz']} MHz, memory {clocks['memory_mhz']} MHz"),
        ("clock events", "n/a" if reasons is None else (", ".join(reasons) or "none")),
        ("pstate", "n/a" if clocks["pstate"] is None else f"P{clocks['pstate']}"),
    ]
    rows += [(f"process {p['pid']}", gib(p["used_bytes"])) for p in report["processes"]]
    return rows


def run_nvml(args: argparse.Namespace) -> int:
    """Print one GPU's NVML readings."""
    report = nvml_report(open_device(args.gpu))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_rows(_nvml_rows(report))
    return 0


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
        print(json.dumps(report, indent=2))
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
