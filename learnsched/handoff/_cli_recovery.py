"""``learnsched probe recovery``: cold starts and warm park/resume of vLLM or SGLang."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._checks import integer, nonnegative, positive
from .._progress import Progress
from ._cli_readings import check_pid
from ._cli_tables import Rows, device_info, gib, optional_device, print_rows, write_profile
from .cold_start import launch_engine
from .engines import ENGINES, VLLM_SLEEP_LEVELS, ServingEndpoint
from .ledger import HandoffLedger
from .nvml import NvmlDevice
from .phases import RecoveryRun
from .profile import GIB, CostProfile, Measurement, now_iso, package_versions
from .readiness import check_poll
from .recovery import measure_warm_recovery

__all__ = [
    "add_recovery_arguments",
    "check_recovery",
    "recovery_profile",
    "recovery_rows",
    "recovery_runs",
    "run_json",
    "run_recovery",
]


def add_recovery_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """The recovery probe's options (optional on ``probe all``)."""
    parser.add_argument("--engine", choices=ENGINES, required=required, help="serving engine")
    parser.add_argument("--url", required=required, help="engine base URL, http://HOST:PORT")
    parser.add_argument("--launch", metavar="COMMAND", help="launch command: also time cold starts")
    parser.add_argument("--cold-runs", type=int, default=1, help="launches to time (default 1)")
    parser.add_argument("--warm-runs", type=int, default=3, help="park/resume cycles (default 3)")
    parser.add_argument(
        "--level", type=int, choices=VLLM_SLEEP_LEVELS, default=1, help="vLLM sleep level (1 or 2)"
    )
    parser.add_argument("--tags", nargs="*", default=[], help="memory tags to release/resume")
    parser.add_argument(
        "--pid", type=int, help="engine PID for host PSS and its GPU processes (default: launched)"
    )
    parser.add_argument(
        "--release-gib",
        type=float,
        help="device memory a park must free to count as released, GiB "
        "(default: half of what NVML lists for the engine's processes)",
    )
    parser.add_argument("--parked-s", type=float, default=1.0, help="time parked, seconds")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="bound per phase, seconds")
    parser.add_argument("--poll-ms", type=float, default=20.0, help="poll interval, ms (10-50)")
    parser.add_argument("--ledger", metavar="FILE", help="append one record per recovery")
    parser.add_argument("--engine-log", metavar="FILE", help="append the engine's output here")


def check_recovery(args: argparse.Namespace) -> ServingEndpoint:
    """Every recovery argument checked (``ValueError``/``OSError``); the endpoint."""
    if args.launch is None and args.cold_runs != 1:
        raise ValueError("--cold-runs needs --launch")
    if args.launch is not None and not shlex.split(args.launch):
        raise ValueError("--launch must not be empty")
    integer("--cold-runs", args.cold_runs, low=1)
    integer("--warm-runs", args.warm_runs, low=0 if args.launch else 1)
    check_poll(args.poll_ms / 1e3)
    positive("--timeout-s", args.timeout_s)
    nonnegative("--parked-s", args.parked_s)
    if args.release_gib is not None:
        positive("--release-gib", args.release_gib)
    if args.pid is not None:
        check_pid(args.pid)
    if args.ledger is not None and not Path(args.ledger).parent.is_dir():
        raise NotADirectoryError(f"--ledger {args.ledger}: its folder does not exist")
    return ServingEndpoint(args.url, args.engine)


class _Runs:
    """The recoveries measured so far, each also appended to ``--ledger`` if given."""

    def __init__(self, ledger: str | None) -> None:
        self.ledger = HandoffLedger(ledger) if ledger else None
        self.runs: list[RecoveryRun] = []

    def record(self, run: RecoveryRun) -> None:
        self.runs.append(run)
        if self.ledger is not None:
            self.ledger.append(run.to_record())


def _warm_runs(
    args: argparse.Namespace,
    endpoint: ServingEndpoint,
    device: NvmlDevice | None,
    pid: int | None,
    runs: _Runs,
) -> None:
    """``--warm-runs`` park/resume cycles of the engine ``pid`` runs."""
    release_bytes = None if args.release_gib is None else max(1, int(args.release_gib * GIB))
    with Progress(args.warm_runs, "warm recovery") as progress:
        for _ in range(args.warm_runs):
            run = measure_warm_recovery(
                endpoint,
                level=args.level,
                tags=args.tags,
                pid=pid,
                device=device,
                release_bytes=release_bytes,
                parked_s=args.parked_s,
                timeout_s=args.timeout_s,
                poll_s=args.poll_ms / 1e3,
            )
            runs.record(run)
            progress.advance(1)


def recovery_runs(args: argparse.Namespace) -> tuple[list[RecoveryRun], NvmlDevice | None]:
    """Every recovery asked for: cold starts (with ``--launch``), then the warm cycles.

    With ``--launch`` the warm cycles run on the last engine launched (its PID unless
    ``--pid`` is given); without, on the engine already serving at ``--url``.
    """
    endpoint = check_recovery(args)
    device = optional_device(args)[0]
    runs = _Runs(args.ledger)
    if args.launch is None:
        _warm_runs(args, endpoint, device, args.pid, runs)
        return runs.runs, device
    for index in range(args.cold_runs):
        with launch_engine(
            args.launch,
            endpoint,
            device=device,
            log_path=args.engine_log,
            timeout_s=args.timeout_s,
            poll_s=args.poll_ms / 1e3,
        ) as (process, cold):
            runs.record(cold)
            if index == args.cold_runs - 1:
                pid = args.pid if args.pid is not None else process.pid
                _warm_runs(args, endpoint, device, pid, runs)
    return runs.runs, device


def _measured(
    values: Sequence[float], unit: str, device: str | None, note: str = ""
) -> Measurement | None:
    return Measurement.of(tuple(values), unit, device=device, note=note) if values else None


def _parked_device(warm: Sequence[RecoveryRun], device: str | None) -> Measurement | None:
    """Device memory held while parked, on one basis for all runs (the note says which)."""
    bases = {r.device_basis for r in warm if "parked" in r.device}
    if not bases:
        return None
    # Mixed bases (the engine listed in some runs only) fall back to the whole device.
    basis = bases.pop() if len(bases) == 1 else "device-occupied"
    values = []
    for run in warm:
        if "parked" not in run.device:
            continue
        if basis == "engine-processes":
            values.append(run.engine_device["parked"] / GIB)
        else:
            values.append(run.device["parked"].occupied / GIB)
    note = (
        "the engine's processes' own device bytes (NVML per-process)"
        if basis == "engine-processes"
        else "the whole device's used+reserved bytes (other processes included): NVML "
        "does not list the engine's processes with their memory"
    )
    return _measured(values, "GiB", device, note)


def recovery_profile(runs: Sequence[RecoveryRun], device: NvmlDevice | None) -> CostProfile:
    """The recovery costs ``runs`` measured, as a cost profile."""
    warm = [r for r in runs if r.kind == "warm"]
    name = None if device is None else device.name
    candidates = {
        "cold_recovery_s": _measured([r.ready_s for r in runs if r.kind == "cold"], "s", name),
        "warm_recovery_s": _measured(
            [r.resume_s for r in warm],
            "s",
            name,
            "resume sent to acknowledged with the device memory back"
            if all("memory_back" in r.stamps_ns for r in warm)
            else "resume sent to acknowledged (device memory not watched)",
        ),
        "warm_ready_s": _measured([r.ready_s for r in warm], "s", name),
        "host_pss_awake_gib": _measured(
            [r.host["awake"].pss / GIB for r in warm if "awake" in r.host], "GiB", name
        ),
        "host_pss_parked_gib": _measured(
            [r.host["parked"].pss / GIB for r in warm if "parked" in r.host], "GiB", name
        ),
        "device_parked_gib": _parked_device(warm, name),
    }
    return CostProfile(
        measurements={k: m for k, m in candidates.items() if m is not None},
        device=device_info(device),
        packages=package_versions(),
        created=now_iso(),
        source=f"learnsched probe recovery ({runs[0].engine})" if runs else "",
    )


def run_json(run: RecoveryRun) -> dict[str, Any]:
    """One recovery as plain JSON (stamps in ms from the first)."""
    base = min(run.stamps_ns.values())
    report = {
        "kind": run.kind,
        "ready_s": run.ready_s,
        "stamps_ms": {k: (v - base) / 1e6 for k, v in run.stamps_ns.items()},
        "host_pss_gib": {k: m.pss / GIB for k, m in run.host.items()},
        "device_basis": run.device_basis,
        "device_gib": {
            phase: bytes_ / GIB
            for phase in run.device
            if (bytes_ := run.device_bytes(phase)) is not None
        },
    }
    if run.kind == "warm":
        report["resume_s"] = run.resume_s
        report["release"] = run.release
        report["release_s"] = run.release_s
    return report


def recovery_rows(runs: Sequence[RecoveryRun]) -> Rows:
    """The table rows of ``runs`` (stamps in seconds from each run's start)."""
    rows: Rows = []
    for number, run in enumerate(runs, start=1):
        start = run.stamps_ns[run.start_stamp]
        stamps = ", ".join(f"{name} {(t - start) / 1e9:+.3f}" for name, t in run.stamps_ns.items())
        head = f"ready {run.ready_s:.3f} s"
        if run.kind == "warm":
            released = "" if run.release_s is None else f" after {run.release_s:.3f} s"
            head = f"resume {run.resume_s:.3f} s, {head}, release {run.release}{released}"
        rows.append((f"{run.kind} #{number}", f"{head}  ({stamps} s)"))
        for phase, memory in run.host.items():
            rows.append((f"  host PSS {phase}", gib(memory.pss)))
        for phase in run.device:
            rows.append((f"  device {phase} ({run.device_basis})", gib(run.device_bytes(phase))))
    return rows


def run_recovery(args: argparse.Namespace) -> int:
    """Time cold starts (with ``--launch``) and warm park/resume cycles."""
    runs, device = recovery_runs(args)
    if args.json:
        print(json.dumps([run_json(r) for r in runs], indent=2))
    else:
        print_rows(recovery_rows(runs))
    write_profile(args, recovery_profile(runs, device))
    return 0
