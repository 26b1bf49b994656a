"""``learnsched capacity check | lend | replay``: capacity control over a trace CSV.

``check`` and ``lend`` exit with status 1 when deadlines are missed even without lending,
so scripts can branch on feasibility; bad input raises ``ValueError``/``OSError``, which
the top-level command turns into status 2.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..capacity.admission import CountThresholdAdmission, WorkBudgetAdmission
from ..capacity.aimd import AIMDConfig
from ..capacity.feasibility import DEFAULT_TOLERANCE, check_feasibility
from ..capacity.lending import ReturnPath, max_share, max_share_schedule, return_deadline
from ..capacity.rates import RateProfile
from ..capacity.replay import ReplayResult, replay
from ..capacity.traces import Trace, read_rate_csv, read_trace_csv, write_csv
from .output import EXIT_OK, EXIT_VIOLATION, Rows, emit_json, finite, print_rows

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``capacity`` sub-command with ``check``, ``lend`` and ``replay``."""
    capacity = commands.add_parser(
        "capacity", help="deadline feasibility, lendable capacity and trace replay"
    )
    actions = capacity.add_subparsers(dest="capacity_command", required=True, metavar="ACTION")

    check = actions.add_parser("check", help="check every deadline of a trace (Eq. 6)")
    _add_common(check)
    _add_tolerance(check)
    check.set_defaults(func=run_check)

    lend = actions.add_parser("lend", help="the largest background share that keeps deadlines")
    _add_common(lend)
    _add_tolerance(lend)
    lend.add_argument(
        "--per-interval", action="store_true", help="one share per rate-file interval"
    )
    lend.add_argument(
        "--share", type=float, help="also report when capacity lent at this share must return"
    )
    lend.add_argument("--actuation", type=float, default=0.0, help="tau_act, s (default 0)")
    lend.add_argument("--release", type=float, default=0.0, help="tau_release, s (default 0)")
    lend.add_argument("--ready", type=float, default=0.0, help="tau_ready, s (default 0)")
    lend.set_defaults(func=run_lend)

    rerun = actions.add_parser("replay", help="replay a trace beside background evolution")
    _add_common(rerun)
    rerun.add_argument(
        "--share", type=float, help="static background share (default: AIMD, options below)"
    )
    defaults = AIMDConfig()
    rerun.add_argument("--step", type=float, default=defaults.step, help="AIMD increase")
    rerun.add_argument("--factor", type=float, default=defaults.factor, help="AIMD decrease")
    rerun.add_argument("--min-share", type=float, default=defaults.min_share)
    rerun.add_argument("--max-share", type=float, default=defaults.max_share)
    rerun.add_argument(
        "--burst-rate", type=float, default=defaults.burst_rate, help="burst above this, req/s"
    )
    rerun.add_argument(
        "--pressure-limit",
        type=float,
        default=defaults.pressure_limit_s,
        help="deadline risk above this backlog drain time, s",
    )
    gate = rerun.add_mutually_exclusive_group()
    gate.add_argument("--work-budget", type=float, help="admit stages by estimated work")
    gate.add_argument(
        "--count-threshold",
        type=int,
        help="admit stages while at most this many requests are in flight",
    )
    rerun.add_argument(
        "--stage-estimate", type=float, default=0.0, help="stage work estimate, tokens"
    )
    rerun.add_argument("--period", type=float, default=0.1, help="control period, s")
    rerun.add_argument("--rate-window", type=float, default=1.0, help="arrival-rate window, s")
    rerun.add_argument("--output", metavar="FILE", help="write per-request finish times (CSV)")
    rerun.set_defaults(func=run_replay)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="CSV with columns arrival, work, deadline")
    rate = parser.add_mutually_exclusive_group(required=True)
    rate.add_argument("--rate", type=float, help="constant service rate, work/s")
    rate.add_argument("--rate-file", metavar="FILE", help="CSV with columns start, rate")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_tolerance(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help="slack tolerance as a fraction of total work",
    )


def _inputs(args: argparse.Namespace) -> tuple[Trace, RateProfile]:
    trace = read_trace_csv(args.trace)
    if args.rate is not None:
        return trace, RateProfile.constant(args.rate)
    return trace, read_rate_csv(args.rate_file)


def _shown(value: Any) -> str:
    """A result value as the table shows it."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return " ".join(f"{v:.6g}" for v in value)
    return str(value)


def _emit(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        emit_json(result)
        return
    rows: Rows = [(key, _shown(value)) for key, value in result.items()]
    print_rows(rows)


def run_check(args: argparse.Namespace) -> int:
    """``capacity check``: per-trace feasibility; status 1 if a deadline is missed."""
    trace, capacity = _inputs(args)
    result = check_feasibility(trace, capacity, args.tolerance)
    _emit(
        args,
        {
            "requests": len(trace),
            "feasible": result.feasible,
            "first_violation": result.first_violation,
            "min_slack": result.min_slack,
            "violations": result.violations,
        },
    )
    return EXIT_OK if result.feasible else EXIT_VIOLATION


def run_lend(args: argparse.Namespace) -> int:
    """``capacity lend``: the largest share; status 1 if even no lending misses deadlines."""
    trace, capacity = _inputs(args)
    share = max_share(trace, capacity, args.tolerance)
    result: dict[str, Any] = {"requests": len(trace), "max_share": share}
    if args.per_interval:
        shares = max_share_schedule(trace, capacity, args.tolerance)
        result["interval_starts"] = capacity.starts.tolist()
        result["interval_shares"] = None if shares is None else shares.tolist()
    if args.share is not None:
        path = ReturnPath(args.actuation, args.release, args.ready)
        deadline = return_deadline(trace, capacity, args.share, path, args.tolerance)
        result["share"] = args.share
        result["return_path_s"] = path.total_s
        result["ready_by_s"] = None if deadline is None else finite(deadline.ready_by_s)
        result["reclaim_by_s"] = None if deadline is None else finite(deadline.reclaim_by_s)
    _emit(args, result)
    return EXIT_OK if share is not None else EXIT_VIOLATION


def _policy(args: argparse.Namespace) -> AIMDConfig | float:
    if args.share is not None:
        return float(args.share)
    return AIMDConfig(
        step=args.step,
        factor=args.factor,
        min_share=args.min_share,
        max_share=args.max_share,
        burst_rate=args.burst_rate,
        pressure_limit_s=args.pressure_limit,
        initial_share=args.min_share,
    )


def _admission(args: argparse.Namespace) -> WorkBudgetAdmission | CountThresholdAdmission | None:
    if args.work_budget is not None:
        return WorkBudgetAdmission(args.work_budget)
    if args.count_threshold is not None:
        return CountThresholdAdmission(args.count_threshold)
    return None


def _write_finish(path: str, trace: Trace, outcome: ReplayResult) -> None:
    rows = (
        (repr(float(a)), repr(float(d)), repr(float(f)), int(f > d))
        for a, d, f in zip(trace.arrival, trace.deadline, outcome.finish, strict=True)
    )
    write_csv(path, ("arrival", "deadline", "finish", "late"), rows)


def run_replay(args: argparse.Namespace) -> int:
    """``capacity replay``: background progress, deadline misses and bad requests."""
    trace, capacity = _inputs(args)
    outcome = replay(
        trace,
        capacity,
        _policy(args),
        admission=_admission(args),
        stage_estimate=args.stage_estimate,
        period_s=args.period,
        rate_window_s=args.rate_window,
    )
    if args.output:
        _write_finish(args.output, trace, outcome)
    risk = outcome.risk
    _emit(
        args,
        {
            "requests": len(trace),
            "policy": "static" if args.share is not None else "aimd",
            "duration_s": outcome.duration_s,
            "background_progress": outcome.background_progress,
            "background_rate": outcome.background_rate,
            "mean_share": float(outcome.shares.mean()),
            "deadline_misses": outcome.deadline_misses,
            "bad_requests": risk.bad,
            "bad_rate": risk.bad_rate,
        },
    )
    return EXIT_OK
