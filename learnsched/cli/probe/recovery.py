"""``learnsched probe recovery``: cold starts and warm park/resume of vLLM or SGLang."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._checks import integer, nonnegative, positive
from ..._checks import number as finite_number
from ..._progress import Progress
from ...handoff.cold_start import launch_engine
from ...handoff.nvml import NvmlDevice
from ...handoff.phases import RecoveryRun
from ...handoff.profile import GIB, RECOVERY_QUANTITIES, CostProfile
from ...handoff.recovery import DEFAULT_RELEASE_TIMEOUT_S, measure_warm_recovery
from ...scenario import Recovery
from ...serving.endpoint import ServingEndpoint
from ...serving.engines import ENGINES, VLLM_SLEEP_LEVELS
from ...serving.errors import RecoveryFailed
from ...serving.ledger import HandoffLedger
from ...serving.polling import POLL_RANGE_S
from .._engine import add_connection_arguments, endpoint_from_args
from ..output import Rows, emit_json, print_rows
from .common import add_common, check_out, gib, optional_device, write_profile
from .memory import check_pid

MAX_GIB = 1 << 20  # 1 PiB: more than any device's memory, and release bytes fit an int

__all__ = [
    "add_recovery_arguments",
    "check_recovery",
    "recovery_rows",
    "recovery_runs",
    "register",
    "run_json",
]


def register(probes: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``probe recovery``."""
    parser = probes.add_parser("recovery", help="cold start and warm resume of vLLM/SGLang")
    add_recovery_arguments(parser, required=True)
    add_common(parser, out=True)
    parser.set_defaults(func=run_recovery)


def add_recovery_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """The recovery probe's options (optional on ``probe all``)."""
    parser.add_argument("--engine", choices=ENGINES, required=required, help="serving engine")
    parser.add_argument("--url", required=required, help="engine base URL, http(s)://HOST:PORT")
    add_connection_arguments(parser)
    parser.add_argument("--launch", metavar="COMMAND", help="launch command: also time cold starts")
    parser.add_argument("--cold-runs", type=int, default=1, help="launches to time (default 1)")
    parser.add_argument("--warm-runs", type=int, default=3, help="park/resume cycles (default 3)")
    parser.add_argument(
        "--level", type=int, choices=VLLM_SLEEP_LEVELS, default=1, help="vLLM sleep level (1 or 2)"
    )
    parser.add_argument(
        "--tags",
        nargs="*",
        default=[],
        help="memory tags (weights, kv_cache): SGLang releases just these; vLLM sleeps all "
        "and wakes these first, then the rest",
    )
    parser.add_argument(
        "--reload",
        action="store_true",
        help="reload the weights during the resume (SGLang update_weights_from_disk); vLLM "
        "reloads (reload_weights) exactly when --level 2 discarded them",
    )
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
    parser.add_argument(
        "--timeout-s", type=float, default=600.0, help="bound per launch/resume phase, seconds"
    )
    parser.add_argument(
        "--release-timeout-s",
        type=float,
        default=DEFAULT_RELEASE_TIMEOUT_S,
        help="bound per release phase (call, engine's report, memory seen freed), seconds "
        "(default %(default)g)",
    )
    parser.add_argument(
        "--idle-wait-s",
        type=float,
        default=5.0,
        help="wait this long for running requests to drain before parking (default 5)",
    )
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
    low, high = (1e3 * s for s in POLL_RANGE_S)  # check_poll's band, in the flag's ms
    if not low <= finite_number("--poll-ms", args.poll_ms) <= high:
        raise ValueError(f"--poll-ms must be within {low:g}-{high:g} ms, got {args.poll_ms!r}")
    positive("--timeout-s", args.timeout_s)
    nonnegative("--parked-s", args.parked_s)
    positive("--release-timeout-s", args.release_timeout_s)
    nonnegative("--idle-wait-s", args.idle_wait_s)
    if args.release_gib is not None and positive("--release-gib", args.release_gib) > MAX_GIB:
        raise ValueError(f"--release-gib must be <= {MAX_GIB} GiB, got {args.release_gib!r}")
    if args.pid is not None:
        check_pid(args.pid)
    if args.ledger is not None and not Path(args.ledger).parent.is_dir():
        raise NotADirectoryError(f"--ledger {args.ledger}: its folder does not exist")
    endpoint = endpoint_from_args(args)
    if args.engine == "vllm":
        # The level decides: level 2 discards the weights (a return must reload them),
        # level 1 keeps them in host memory (a reload would only add its time).
        if args.reload and args.level == 1:
            raise ValueError(
                "--reload with --level 1: a level-1 sleep keeps the weights in host memory, "
                "so the return has nothing to reload (it would time a needless reload)"
            )
        args.reload = args.level == 2
    endpoint.dialect.check_park(level=args.level, tags=args.tags, reload=args.reload)
    return endpoint


class _Runs:
    """The recoveries measured so far, each also appended to ``--ledger`` if given."""

    def __init__(self, ledger: str | None) -> None:
        self.ledger = HandoffLedger(ledger) if ledger else None
        self.runs: list[RecoveryRun] = []

    def record(self, run: RecoveryRun) -> None:
        self.runs.append(run)
        for note in run.notes:
            print(f"learnsched probe recovery: warning: {note}", file=sys.stderr)
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
            try:
                run = measure_warm_recovery(
                    endpoint,
                    level=args.level,
                    tags=args.tags,
                    reload=args.reload,
                    pid=pid,
                    device=device,
                    release_bytes=release_bytes,
                    parked_s=args.parked_s,
                    timeout_s=args.timeout_s,
                    release_timeout_s=args.release_timeout_s,
                    idle_wait_s=args.idle_wait_s,
                    poll_s=args.poll_ms / 1e3,
                )
            except RecoveryFailed as failed:
                if isinstance(failed.run, RecoveryRun):
                    runs.record(failed.run)  # recorded as failed, never counted as a recovery
                raise
            runs.record(run)
            progress.advance(1)


def recovery_runs(args: argparse.Namespace) -> tuple[list[RecoveryRun], NvmlDevice | None]:
    """Every recovery asked for: cold starts (with ``--launch``), then the warm cycles.

    With ``--launch`` the warm cycles run on the last engine launched (its PID unless
    ``--pid`` is given); without, on the engine already serving at ``--url``.
    """
    endpoint = check_recovery(args)
    device = optional_device(args)[0]
    check_out(
        args, dict.fromkeys(RECOVERY_QUANTITIES, None if device is None else device.name), device
    )
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
    if run.kind is Recovery.WARM:
        report["resume_s"] = run.resume_s
        report["release"] = run.release
        report["release_s"] = run.release_s
    report["notes"] = list(run.notes)
    report["failure"] = run.failure
    return report


def recovery_rows(runs: Sequence[RecoveryRun]) -> Rows:
    """The table rows of ``runs`` (stamps in seconds from each run's start)."""
    rows: Rows = []
    for number, run in enumerate(runs, start=1):
        start = run.stamps_ns[run.start_stamp]
        stamps = ", ".join(f"{name} {(t - start) / 1e9:+.3f}" for name, t in run.stamps_ns.items())
        head = f"ready {run.ready_s:.3f} s"
        if run.kind is Recovery.WARM:
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
        emit_json([run_json(r) for r in runs])
    else:
        print_rows(recovery_rows(runs))
    write_profile(args, CostProfile.from_recoveries(runs, device))
    return 0
