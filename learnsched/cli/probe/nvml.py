"""``learnsched probe nvml``: one GPU's memory, processes, utilisation and clocks."""

from __future__ import annotations

import argparse
from typing import Any

from ...handoff.nvml import device_report, open_device
from ..output import Rows, emit_json, print_rows
from .common import add_common, gib

__all__ = ["register"]


def register(probes: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``probe nvml``."""
    parser = probes.add_parser("nvml", help="GPU memory, processes, clocks via NVML")
    add_common(parser, out=False)
    parser.set_defaults(func=run_nvml)


def nvml_rows(report: dict[str, Any]) -> Rows:
    """The table rows of :func:`~learnsched.handoff.nvml.device_report`'s readings."""
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
    report = device_report(open_device(args.gpu))
    if args.json:
        emit_json(report)
    else:
        print_rows(nvml_rows(report))
    return 0
