"""``learnsched probe all``: every probe this machine can run, one report.

All input is checked before any part runs; a part that then fails is reported on its
own row while the others still run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from ...handoff.host_memory import read_host_memory
from ...handoff.nvml import device_report
from ...handoff.profile import LORA_QUANTITIES, RECOVERY_QUANTITIES, CostProfile
from ...serving.errors import HandoffProbeError
from ..output import EXIT_VIOLATION, Rows, emit_json, print_rows
from .common import add_common, check_out, gib, optional_device, write_profile
from .lora import add_lora_arguments, check_lora, lora_benchmark, lora_rows, lora_target
from .memory import check_pid
from .recovery import (
    add_recovery_arguments,
    check_recovery,
    recovery_rows,
    recovery_runs,
    run_json,
)
from .waits import add_waits_arguments, check_waits, waits, waits_rows

__all__ = ["register"]


def register(probes: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``probe all``."""
    parser = probes.add_parser("all", help="every probe this machine can run")
    add_lora_arguments(parser)
    add_waits_arguments(parser)
    add_recovery_arguments(parser, required=False)
    add_common(parser, out=True)
    parser.set_defaults(func=run_all)


# What a part of `probe all` may fail with at run time (bad input is checked up front):
# a failed measurement, an unreachable server, a timeout (both OSError), a vanished PID.
PART_ERRORS = (HandoffProbeError, OSError)


class _AllReport:
    """The parts of `probe all`: rows, JSON, the merged profile and failures."""

    def __init__(self) -> None:
        self.rows: Rows = []
        self.json: dict[str, Any] = {}
        self.profile = CostProfile({})
        self.failed = False

    def fail(self, part: str, err: BaseException) -> None:
        self.rows.append((part, f"failed: {err}"))
        self.json[part] = {"error": str(err)}
        self.failed = True

    def add_profile(self, part: str, profile: CostProfile) -> None:
        try:
            self.profile = self.profile.merged(profile)
        except ValueError as err:
            self.fail(f"{part} profile", err)


def _check_all(args: argparse.Namespace) -> bool:
    """Check every part's input before any part runs; whether recovery is asked for."""
    check_lora(args)
    check_waits(args)
    if args.pid is not None:
        check_pid(args.pid)
    if (args.engine is None) != (args.url is None):
        raise ValueError("recovery needs both --engine and --url")
    recovery = args.engine is not None
    if recovery:
        check_recovery(args)
    _check_out_all(args, recovery)
    return recovery


def _check_out_all(args: argparse.Namespace, recovery: bool) -> None:
    """``--out`` must take every part's results (checked before any part runs)."""
    if args.out is None:
        return
    planned: dict[str, str | None] = {}
    try:
        _, device, name = lora_target(args)
        planned.update(dict.fromkeys(LORA_QUANTITIES, name))
    except PART_ERRORS:  # no torch: the LoRA part will say so and write nothing
        device = None
    if recovery:
        device = optional_device(args)[0] or device
        planned.update(dict.fromkeys(RECOVERY_QUANTITIES, None if device is None else device.name))
    check_out(args, planned, device)


def _all_nvml(args: argparse.Namespace, report: _AllReport) -> None:
    device, why = optional_device(args)
    if device is None:
        report.rows.append(("nvml", f"skipped: {why}"))
        report.json["nvml"] = None
        return
    report.json["nvml"] = device_report(device)
    report.rows.append(("nvml", f"{device.name} ({device.uuid})"))


def _all_lora(args: argparse.Namespace, report: _AllReport) -> None:
    lora, nvml, name = lora_benchmark(args)
    report.json["lora"] = lora.summary()
    report.rows += lora_rows(lora)
    report.add_profile("lora", CostProfile.from_lora(lora, nvml, name))


def _all_waits(args: argparse.Namespace, report: _AllReport) -> None:
    results = waits(args)
    report.json["waits"] = results
    report.rows += waits_rows(results)


def _all_memory(args: argparse.Namespace, report: _AllReport) -> None:
    if args.pid is None:
        return
    host = read_host_memory(args.pid)
    report.json["memory"] = asdict(host)
    report.rows.append((f"host PSS of {args.pid} and children", gib(host.pss)))


def _all_recovery(args: argparse.Namespace, report: _AllReport) -> None:
    runs, device = recovery_runs(args)
    report.json["recovery"] = [run_json(r) for r in runs]
    report.rows += recovery_rows(runs)
    report.add_profile("recovery", CostProfile.from_recoveries(runs, device))


def run_all(args: argparse.Namespace) -> int:
    """Every probe this machine can run; parts that need a GPU or a server say so.

    All input is checked first (bad input: ``ValueError``/``OSError``, nothing runs). A
    part that then fails is reported on its own row, the others still run, the
    profile of what succeeded is written, and the exit status is 1.
    """
    recovery = _check_all(args)
    report = _AllReport()
    parts: list[tuple[str, Callable[[argparse.Namespace, _AllReport], None]]] = [
        ("nvml", _all_nvml),
        ("lora", _all_lora),
        ("waits", _all_waits),
        ("memory", _all_memory),
    ]
    if recovery:
        parts.append(("recovery", _all_recovery))
    else:
        report.rows.append(("recovery", "skipped: give --engine and --url (and --launch for cold)"))
    for part, run in parts:
        try:
            run(args, report)
        except PART_ERRORS as err:
            report.fail(part, err)
    if args.json:
        emit_json(report.json)
    else:
        print_rows(report.rows)
    if report.profile.measurements:
        try:
            write_profile(args, report.profile)
        except (ValueError, OSError) as err:  # e.g. an existing --out from another device
            print(f"learnsched probe all: profile not written: {err}", file=sys.stderr)
            return EXIT_VIOLATION
    return EXIT_VIOLATION if report.failed else 0
