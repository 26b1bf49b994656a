"""``learnsched windows | online``: idle windows from traces, scheduling under a forecast."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .._atomic import atomic_write_text
from .._checks import integer, positive
from .._json import read_json
from ..calendar import AZURE_TRACE, DEFAULT_MIN_USEFUL_S, ServiceModel, idle_windows, load_trace
from ..calendar.online import ONLINE_POLICIES, OnlineResult, evaluate_online
from ..calendar.spec import parse_online_spec
from ..calendar.study import Candidate, TraceStudy, trace_study
from ..calendar.windows import IdleWindows
from ..capacity import ReturnPath
from ..scenario import HandoffCosts
from .output import emit_json, nonnegative_float

__all__ = ["register"]

DEFAULT_SERVICE = ServiceModel()


# (flag, default, metavar, help) of the seconds-and-rates options both commands share.
_TRACE_OPTIONS: tuple[tuple[str, float | None, str, str], ...] = (
    ("--prefill-rate", DEFAULT_SERVICE.prefill_tokens_per_s, "TOK/S", "prompt tokens per second"),
    ("--decode-rate", DEFAULT_SERVICE.decode_tokens_per_s, "TOK/S", "output tokens/s, batched"),
    ("--request-s", None, "S", "every request takes S seconds instead of the token rates"),
    ("--slo-s", DEFAULT_SERVICE.slo_s, "S", "latency budget beyond a request's service time"),
    ("--rate", 1.0, "WORK/S", "service rate, work units per second"),
    ("--min-useful-s", DEFAULT_MIN_USEFUL_S, "S", "keep windows with S seconds before reclaim"),
)


def _add_trace_options(parser: argparse.ArgumentParser) -> None:
    """The service model and window options shared by both commands."""
    group = parser.add_argument_group("service model (Azure traces) and windows")
    for flag, default, metavar, text in _TRACE_OPTIONS:
        shown = "" if default is None else " (default %(default)g)"
        group.add_argument(flag, type=float, default=default, metavar=metavar, help=text + shown)
    group.add_argument(
        "--sort", action="store_true", help="sort out-of-order trace rows instead of refusing"
    )


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``windows`` and ``online`` commands."""
    windows = commands.add_parser(
        "windows", help="idle windows and their return deadlines from a request trace"
    )
    windows.add_argument(
        "trace",
        help="TRACE.csv: Azure (TIMESTAMP,ContextTokens,GeneratedTokens) or arrival,work,deadline",
    )
    windows.add_argument(
        "--return-s",
        type=nonnegative_float,
        default=HandoffCosts.paper("warm").recovery_s,
        metavar="S",
        help="return path tau_r: capacity ready S seconds after the reclaim (default %(default)g, warm)",
    )
    _add_trace_options(windows)
    windows.add_argument("--json", action="store_true", help="print the windows as JSON")
    windows.add_argument("--out", metavar="FILE", help="also write the JSON to FILE")
    windows.set_defaults(func=run_windows)

    online = commands.add_parser(
        "online", help="schedule under a forecast, re-planning every window, against clairvoyance"
    )
    online.add_argument(
        "spec", nargs="?", help="SPEC.json: scenario object(s) with \"forecast\" ('-': stdin)"
    )
    online.add_argument(
        "--trace",
        nargs="?",
        const=str(AZURE_TRACE),
        metavar="TRACE.csv",
        help="rolling horizons over a trace instead of a SPEC (default: the shipped Azure trace)",
    )
    online.add_argument("--seed", type=int, default=0, help="forecast seed (default 0)")
    online.add_argument("--threads", type=int, default=1, help="threads over the samples")
    online.add_argument("--json", action="store_true", help="print the results as JSON")
    online.add_argument("--out", metavar="FILE", help="also write the JSON to FILE")
    study = online.add_argument_group("--trace: rolling horizons and the candidate")
    study.add_argument(
        "--samples",
        default="1,4,16,64",
        metavar="N,N,...",
        help="forecast sample counts to compare (default %(default)s)",
    )
    study.add_argument(
        "--horizon-s", type=float, default=600.0, help="length of each horizon (default 600)"
    )
    study.add_argument(
        "--warmup-s", type=float, default=600.0, help="history before the first horizon (600)"
    )
    study.add_argument(
        "--history-s", type=float, help="fit the forecaster on this much recent history only"
    )
    study.add_argument("--work-s", type=float, default=60.0, help="construction work (default 60)")
    study.add_argument("--quantum-s", type=float, default=5.0, help="work quantum (default 5)")
    study.add_argument("--benefit-rate", type=float, default=0.25, help="g, s-eq./s (default 0.25)")
    study.add_argument(
        "--tail-s", type=float, default=480.0, help="benefit continues this long after a horizon"
    )
    study.add_argument(
        "--recovery",
        choices=("cold", "warm"),
        default="cold",
        help="the paper's recovery path (the windows' return path too; default cold)",
    )
    study.add_argument("--plot", metavar="FILE.png", help="value per policy against N (matplotlib)")
    _add_trace_options(online)
    online.set_defaults(func=run_online)


def _service(args: argparse.Namespace) -> ServiceModel:
    return ServiceModel(args.prefill_rate, args.decode_rate, args.request_s, args.slo_s)


def _windows(args: argparse.Namespace, return_s: float) -> IdleWindows:
    trace = load_trace(args.trace, _service(args), args.sort)
    return idle_windows(trace, args.rate, ReturnPath(ready_s=return_s), args.min_useful_s)


def _write(args: argparse.Namespace, obj: Any) -> None:
    if args.out:
        atomic_write_text(args.out, json.dumps(obj, indent=2, allow_nan=False) + "\n")
    if args.json:
        emit_json(obj)


def run_windows(args: argparse.Namespace) -> int:
    """``learnsched windows TRACE.csv``: the lendable windows of a trace."""
    found = _windows(args, args.return_s)
    out = found.to_json()
    _write(args, out)
    if not args.json:
        print(
            f"{found.requests} requests over {found.span_s:.1f} s: {len(found.windows)} windows "
            f"of >= {found.min_useful_s:g} s useful work, {out['idle_s']:.1f} s in all "
            f"(return path {found.path.total_s:g} s)\n"
        )
        print(f"{'start s':>10}{'ready by s':>12}{'reclaim by s':>14}{'useful s':>10}")
        for w in found.windows:
            print(
                f"{w.start_s:>10.3f}{w.ready_by_s:>12.3f}{w.reclaim_by_s:>14.3f}{w.useful_s:>10.3f}"
            )
    return 0


def _sample_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--samples must be comma-separated integers, got {text!r}") from None
    return [integer("--samples", n, low=1) for n in counts]


def _fmt_ci(ci: list[float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def result_table(result: OnlineResult) -> str:
    """Per policy: mean value, its 95% CI, mean regret, handoffs and checkpoints."""
    lines = [
        (
            f"{'policy':<15}{'mean value':>12}{'95% CI':>22}{'regret':>10}"
            f"{'handoffs':>10}{'ckpts':>8}"
        )
    ]
    for name in ONLINE_POLICIES:
        s = result.policies[name].to_json()
        lines.append(
            f"{name:<15}{s['mean_value']:>12.3f}{_fmt_ci(s['ci95']):>22}"
            f"{s['mean_regret']:>10.3f}{s['handoffs']:>10.2f}{s['checkpoints']:>8.2f}"
        )
    return "\n".join(lines)


def _study(args: argparse.Namespace) -> TraceStudy:
    costs = HandoffCosts.paper(args.recovery)
    windows = _windows(args, costs.recovery_s)
    quanta = args.work_s / positive("--quantum-s", args.quantum_s)
    if not float(quanta).is_integer() or quanta < 1:
        raise ValueError(
            f"--work-s must be a positive multiple of --quantum-s, got {args.work_s} / {args.quantum_s}"
        )
    candidate = Candidate(int(quanta), args.quantum_s, args.benefit_rate, args.tail_s, costs)
    return trace_study(
        windows,
        candidate,
        _sample_counts(args.samples),
        args.horizon_s,
        args.warmup_s,
        args.seed,
        args.threads,
        args.history_s,
    )


def run_online(args: argparse.Namespace) -> int:
    """``learnsched online SPEC.json`` or ``learnsched online --trace [TRACE.csv]``."""
    if (args.spec is None) == (args.trace is None):
        raise ValueError("give either SPEC.json or --trace [TRACE.csv], not both or neither")
    if args.trace is None:
        if args.plot:
            raise ValueError("--plot draws value against N over a trace: use it with --trace")
        result = evaluate_online(parse_online_spec(read_json(args.spec)), args.seed, args.threads)
        _write(args, result.to_json())
        if not args.json:
            print(f"{len(result.outcomes)} true calendar(s)\n\n{result_table(result)}")
        return 0
    study = _study(args)
    _write(args, study.to_json())
    if args.plot:
        from ..calendar.plotting import plot_trace_study

        plot_trace_study(study, args.plot, f"{Path(args.trace).name}: {study.calendars} horizons")
    if not args.json:
        print(f"{study.calendars} rolling horizons of {args.horizon_s:g} s ({args.recovery})")
        for n, result in study.results.items():
            print(f"\nN = {n}\n{result_table(result)}")
    return 0
