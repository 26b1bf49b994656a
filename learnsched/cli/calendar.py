"""``learnsched windows | online | synth``: idle windows from traces, scheduling under a
forecast (causal by default), synthetic traces for studies."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, Any

from .._atomic import atomic_write, atomic_write_text
from .._checks import SEED_MAX, integer, positive
from .._renamed import renamed_flag
from ..calendar import AZURE_TRACE, DEFAULT_MIN_USEFUL_S, ServiceModel, idle_windows, load_trace
from ..calendar.causal import DEFAULT_GAP_MODEL, GAP_MODELS
from ..calendar.windows import IdleWindows
from ..capacity import ReturnPath
from ..scenario import HandoffCosts, Recovery
from .costs import add_cost_flags, profile_costs
from .output import emit_json, flag_names, nonnegative_float

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


def _register_online(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..calendar.causal import DEFAULT_LATENESS_PRICE, DEFAULT_RETURN_LEVEL

    online = commands.add_parser(
        "online",
        help="schedule under a forecast against clairvoyance: a SPEC's calendars, or a trace "
        "causally (the idle gap's end unknown)",
    )
    online.add_argument(
        "spec",
        nargs="?",
        help='SPEC.json: scenario object(s) with "forecast", its samples inline or in a .npz '
        "file beside it ('-': stdin)",
    )
    online.add_argument(
        "--trace",
        nargs="?",
        const=str(AZURE_TRACE),
        metavar="TRACE.csv",
        help="horizons over a trace instead of a SPEC (default: the shipped Azure trace)",
    )
    online.add_argument("--seed", type=int, default=0, help="first forecast seed (default 0)")
    online.add_argument(
        "--seeds",
        type=int,
        default=1,
        metavar="K",
        help="run K seeds (seed .. seed+K-1, K <= 10000); intervals stay per case, paired "
        "(default 1)",
    )
    online.add_argument("--threads", type=int, default=1, help="threads over the runs")
    online.add_argument("--json", action="store_true", help="print the results as JSON")
    online.add_argument("--out", metavar="FILE", help="also write the JSON to FILE")
    study = online.add_argument_group("--trace: horizons and the candidate")
    study.add_argument(
        "--known-window",
        action="store_true",
        help="the paper's setting: every policy knows the current idle window's end "
        "(windows from `learnsched windows`); default: causal",
    )
    study.add_argument(
        "--samples",
        default="64",
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
        "--history-s",
        type=float,
        default=3600.0,
        help="fit the forecasts on the last S seconds of history (default 3600)",
    )
    study.add_argument("--work-s", type=float, default=60.0, help="construction work (default 60)")
    study.add_argument("--quantum-s", type=float, default=5.0, help="work quantum (default 5)")
    study.add_argument("--benefit-rate", type=float, default=0.25, help="g, s-eq./s (default 0.25)")
    study.add_argument(
        "--tail-s", type=float, default=480.0, help="benefit continues this long after a horizon"
    )
    study.add_argument(
        "--recovery",
        choices=tuple(sorted(r.value for r in Recovery)),
        default="cold",
        help="the return path: the paper's, or that of --costs PROFILE (the windows' return "
        "path too; default cold)",
    )
    study.add_argument(
        "--forecaster",
        choices=GAP_MODELS,
        default=DEFAULT_GAP_MODEL,
        help="the policies' forecast: the renewal model (default), or a baseline: the last "
        "cycles repeated, or their mean",
    )
    study.add_argument(
        "--lateness-price",
        type=float,
        default=DEFAULT_LATENESS_PRICE,
        metavar="S-EQ",
        help="causal: s-eq. per late request-second (default %(default)g: a second of one "
        "request's lateness costs a second of the GPU)",
    )
    study.add_argument(
        "--return-level",
        type=float,
        default=DEFAULT_RETURN_LEVEL,
        metavar="P",
        help="causal: risk_rollout lends only if P(return in time) >= P (default %(default)g)",
    )
    study.add_argument(
        "--steps",
        metavar="FILE.jsonl",
        help="write every decision as one JSON object per line (one forecast size)",
    )
    study.add_argument("--plot", metavar="FILE.png", help="value per policy against N (matplotlib)")
    add_cost_flags(study)
    _add_trace_options(online)
    online.set_defaults(func=run_online)


def _register_synth(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    synth = commands.add_parser(
        "synth", help="a synthetic multi-day trace fitted on a real one (labelled synthetic)"
    )
    synth.add_argument(
        "trace",
        nargs="?",
        default=str(AZURE_TRACE),
        help="the Azure-format trace to fit (default: the shipped one)",
    )
    synth.add_argument("--out", required=True, metavar="FILE.csv", help="the synthetic trace")
    synth.add_argument("--days", type=float, default=2.0, help="length in days (default 2)")
    synth.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    synth.add_argument(
        "--amplitude",
        type=float,
        default=0.5,
        help="daily swing of the burst frequency, an assumption (default 0.5)",
    )
    synth.add_argument(
        "--peak-hour", type=float, default=14.0, help="hour of the busiest time (default 14)"
    )
    synth.add_argument(
        "--bin-s", type=float, default=10.0, help="bin length of the calm/busy labels (10)"
    )
    synth.add_argument("--sort", action="store_true", help="sort out-of-order rows of TRACE")
    synth.add_argument("--json", action="store_true", help="print the model and size as JSON")
    synth.set_defaults(func=run_synth)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``windows``, ``online`` and ``synth`` commands."""
    windows = commands.add_parser(
        "windows", help="idle windows and their return deadlines from a request trace"
    )
    windows.add_argument(
        "trace",
        help="TRACE.csv: Azure 2023/2024 (TIMESTAMP,ContextTokens,GeneratedTokens), BurstGPT "
        "(Timestamp,Request tokens,Response tokens) or arrival,work,deadline; or TRACE.jsonl "
        "(timestamp in ms and token counts per line)",
    )
    windows.add_argument(
        "--recovery-s",
        type=nonnegative_float,
        default=HandoffCosts.paper("warm").recovery_s,
        metavar="S",
        help="return path tau_r: capacity ready S seconds after the reclaim (default %(default)g, warm)",
    )
    windows.add_argument(
        "--return-s",
        dest="recovery_s",
        type=nonnegative_float,
        action=renamed_flag("--recovery-s"),
        help=argparse.SUPPRESS,
    )
    _add_trace_options(windows)
    windows.add_argument("--json", action="store_true", help="print the windows as JSON")
    windows.add_argument("--out", metavar="FILE", help="also write the JSON to FILE")
    windows.set_defaults(func=run_windows)
    _register_online(commands)
    _register_synth(commands)


def _service(args: argparse.Namespace) -> ServiceModel:
    return ServiceModel(args.prefill_rate, args.decode_rate, args.request_s, args.slo_s)


def _windows(args: argparse.Namespace, recovery_s: float) -> IdleWindows:
    trace = load_trace(args.trace, _service(args), args.sort)
    return idle_windows(trace, args.rate, ReturnPath(ready_s=recovery_s), args.min_useful_s)


def _label(path: str) -> str:
    from ..calendar.traces import is_synthetic

    return " (SYNTHETIC trace)" if is_synthetic(path) else ""


def _write(args: argparse.Namespace, obj: Any) -> None:
    if args.out:
        atomic_write_text(args.out, json.dumps(obj, indent=2, allow_nan=False) + "\n")
    if args.json:
        emit_json(obj)


def run_windows(args: argparse.Namespace) -> int:
    """``learnsched windows TRACE.csv``: the lendable windows of a trace."""
    found = _windows(args, args.recovery_s)
    out = found.to_json()
    out["synthetic"] = bool(_label(args.trace))
    _write(args, out)
    if not args.json:
        print(
            f"{found.requests} requests over {found.span_s:.1f} s{_label(args.trace)}: "
            f"{len(found.windows)} windows of >= {found.min_useful_s:g} s useful work, "
            f"{out['idle_s']:.1f} s in all (return path {found.path.total_s:g} s)\n"
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


MAX_SEEDS = 10_000
"""The most ``--seeds`` of one run (each is a whole evaluation: more is a hang)."""


def _seeds(args: argparse.Namespace) -> tuple[int, ...]:
    count = integer("--seeds", args.seeds, low=1, high=MAX_SEEDS)
    first = integer("--seed", args.seed, low=0, high=SEED_MAX - count + 1)
    return tuple(range(first, first + count))


def _fmt_ci(ci: list[float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def _policy_table(policies: dict[str, Any], lateness: bool) -> str:
    """Per policy: mean value, its 95% CI, regret, (lateness), handoffs and checkpoints."""
    head = f"{'policy':<15}{'mean value':>12}{'95% CI':>22}{'regret':>10}"
    if lateness:
        head += f"{'late req':>10}{'late s':>10}{'SLO miss':>10}"
    lines = [head + f"{'handoffs':>10}{'ckpts':>8}"]
    for name, s in policies.items():
        row = f"{name:<15}{s['mean_value']:>12.3f}{_fmt_ci(s['ci95']):>22}{s['mean_regret']:>10.3f}"
        if lateness:
            miss = s["slo_misses"]
            shown = "-" if miss is None else f"{100 * miss:.2f}%"
            row += f"{s['late_requests']:>10.2f}{s['lateness_s']:>10.1f}{shown:>10}"
        lines.append(row + f"{s['handoffs']:>10.2f}{s['checkpoints']:>8.2f}")
    return "\n".join(lines)


def _difference_table(rows: list[dict[str, Any]]) -> str:
    """Paired differences a - b with their intervals and significance."""
    lines = [
        "paired differences a - b, per case (95% CI; * excludes 0, ** also after Holm):",
        f"{'a':<15}{'b':<15}{'mean':>10}{'95% CI':>22}{'':>4}",
    ]
    for d in rows:
        mark = "**" if d["holm_significant"] else "*" if d["significant"] else ""
        lines.append(f"{d['a']:<15}{d['b']:<15}{d['mean']:>10.3f}{_fmt_ci(d['ci95']):>22}{mark:>4}")
    return "\n".join(lines)


def _verdict_table(result: dict[str, Any]) -> str:
    """Per policy: whether lending pays against never lending (paired 95% CI), its value
    per day and the GPU-hours it lends per day."""
    lines = [
        "verdicts against never lending (value - never's per case, paired 95% CI):",
        f"{'policy':<15}{'verdict':<23}{'mean':>12}{'95% CI':>24}{'s-eq./day':>14}{'GPU-h/day':>11}",
    ]
    for name, v in result["verdicts"].items():
        p = result["policies"][name]  # a causal study's: counted per day
        lines.append(
            f"{name:<15}{v['verdict']:<23}{v['mean']:>12.3f}{_fmt_ci(v['ci95']):>24}"
            f"{p['value_per_day']:>14.1f}{p['gpu_hours_per_day']:>11.2f}"
        )
    return "\n".join(lines)


def _calibration_table(calibration: dict[str, dict[str, Any]]) -> str:
    lines = [
        (
            "gap forecast calibration (remaining idle time at each decision age; PIT deciles, "
            "uniform = 0.10 each):"
        ),
        f"{'gap model':<12}{'queries':>9}{'CRPS s':>10}  PIT histogram",
    ]
    for name, c in calibration.items():
        crps = "-" if c["crps_s"] is None else f"{c['crps_s']:.2f}"
        pit = " ".join(f"{x:.2f}" for x in c["pit_histogram"])
        lines.append(f"{name:<12}{c['queries']:>9}{crps:>10}  {pit}")
    return "\n".join(lines)


def _candidate(args: argparse.Namespace) -> Any:
    from ..calendar.study import StudyCandidate

    quanta = args.work_s / positive("--quantum-s", args.quantum_s)
    if not float(quanta).is_integer() or quanta < 1:
        raise ValueError(
            f"--work-s must be a positive multiple of --quantum-s, got {args.work_s} / {args.quantum_s}"
        )
    measured = profile_costs(args, (args.recovery,))
    costs = HandoffCosts.paper(args.recovery) if measured is None else measured[args.recovery]
    return StudyCandidate(int(quanta), args.quantum_s, args.benefit_rate, args.tail_s, costs)


def _settings(args: argparse.Namespace) -> Any:
    from ..calendar.causal import CausalRules
    from ..calendar.study import StudySettings

    rules = CausalRules(args.lateness_price, args.return_level, args.history_s)
    return StudySettings(
        horizon_s=args.horizon_s,
        warmup_s=args.warmup_s,
        samples=tuple(_sample_counts(args.samples)),
        seeds=_seeds(args),
        forecaster=args.forecaster,
        rules=rules,
        history_s=args.history_s,
        threads=integer("--threads", args.threads, low=1),
    )


def _steps_writer(file: IO[bytes]) -> Any:
    def write(lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, allow_nan=False) + "\n" for line in lines)
        file.write(text.encode())

    return write


# The study's parameters that are ``online --trace`` flags of the same name: its errors
# name the flags (``--horizon-s must be > 0``), not the library's fields.
_STUDY_FLAGS = (
    "horizon_s",
    "warmup_s",
    "history_s",
    "tail_s",
    "benefit_rate",
    "lateness_price",
    "return_level",
)


def _study(args: argparse.Namespace) -> Any:
    from ..calendar.causal import HorizonTooLong

    try:
        with flag_names(*_STUDY_FLAGS):
            return _run_study(args)
    except HorizonTooLong as err:
        raise ValueError(
            f"--horizon-s {args.horizon_s:g}: the horizon [{err.from_s:g}, {err.to_s:g}] s "
            f"is too long to solve exactly ({err.reason}); give a shorter --horizon-s"
        ) from None


def _run_study(args: argparse.Namespace) -> Any:
    from ..calendar.causal import CausalTrace
    from ..calendar.study import causal_study, known_window_study

    candidate = _candidate(args)
    settings = _settings(args)
    if args.steps and len(settings.samples) > 1:
        raise ValueError("--steps records one forecast size: give one --samples N")
    synthetic = bool(_label(args.trace))

    def run(steps: Any) -> Any:
        if args.known_window:
            windows = _windows(args, candidate.costs.recovery_s)
            return known_window_study(windows, candidate, settings, steps)
        trace = CausalTrace(load_trace(args.trace, _service(args), args.sort), args.rate, synthetic)
        return causal_study(trace, candidate, settings, steps)

    if not args.steps:
        return run(None)
    found: list[Any] = []
    atomic_write(args.steps, lambda file: found.append(run(_steps_writer(file))))
    return found[0]


def _print_study(args: argparse.Namespace, out: dict[str, Any]) -> None:
    mode = "causal" if out["mode"] == "causal" else "known windows (the paper's setting)"
    seeds = len(out["seeds"])
    label = _label(args.trace)
    print(
        f"{out['horizons']} horizons of {args.horizon_s:g} s x {seeds} seed(s){label}, {mode}, "
        f"{args.recovery} return{'' if args.costs is None else f' of {args.costs}'}, "
        f"{args.work_s:g} s work, g = {args.benefit_rate:g}"
        + (f", lateness {args.lateness_price:g} s-eq./request-s" if out["mode"] == "causal" else "")
    )
    for n, result in out["samples"].items():
        print(f"\nN = {n}\n{_policy_table(result['policies'], out['mode'] == 'causal')}")
        if result["verdicts"]:
            print(f"\n{_verdict_table(result)}")
        print(f"\n{_difference_table(result['differences'])}")
    if out.get("calibration"):
        print(f"\n{_calibration_table(out['calibration'])}")


def run_online(args: argparse.Namespace) -> int:
    """``learnsched online SPEC.json`` or ``learnsched online --trace [TRACE.csv]``."""
    if (args.spec is None) == (args.trace is None):
        raise ValueError("give either SPEC.json or --trace [TRACE.csv], not both or neither")
    if args.trace is None:
        from ..calendar.online import evaluate_online
        from ..calendar.spec import read_online_spec

        for flag in ("plot", "steps", "costs", "base", "accept_unconfirmed"):
            if getattr(args, flag):
                name = flag.replace("_", "-")
                raise ValueError(f"--{name} works over a trace: use it with --trace")
        cases = read_online_spec(args.spec)
        result = evaluate_online(cases, threads=args.threads, seeds=_seeds(args))
        out = result.to_json()
        _write(args, out)
        if not args.json:
            print(f"{len(result.outcomes)} true calendar(s)\n")
            print(_policy_table(out["policies"], lateness=False))
            print(f"\n{_difference_table(out['differences'])}")
        return 0
    study = _study(args)
    if study.gap_room is not None and study.gap_room.warning is not None:
        print(f"{args.command_prog}: warning: {study.gap_room.warning}", file=sys.stderr)
    out = study.to_json()
    _write(args, out)
    if args.plot:
        from ..calendar.plotting import plot_trace_study

        title = f"{Path(args.trace).name}{_label(args.trace)}: {study.calendars} horizons"
        plot_trace_study(study, args.plot, title)
    if not args.json:
        _print_study(args, out)
    return 0


def run_synth(args: argparse.Namespace) -> int:
    """``learnsched synth [TRACE.csv] --out FILE.csv``: a synthetic trace fitted on TRACE."""
    import numpy as np

    from ..calendar.synth import DAY_S, fit_synthesizer, write_synthetic_trace
    from ..calendar.traces import read_azure_trace

    days = float(args.days)
    if not days > 0:
        raise ValueError(f"--days must be > 0, got {args.days!r}")
    source = read_azure_trace(args.trace, args.sort)
    model = fit_synthesizer(source, args.bin_s, args.amplitude, args.peak_hour)
    rng = np.random.default_rng(integer("--seed", args.seed))
    try:
        trace = model.generate(days * DAY_S, rng)
    except ValueError as err:  # its size or emptiness: named by the flag that set it
        raise ValueError(f"--days {args.days!r}: {err}") from None
    write_synthetic_trace(args.out, trace)
    out = {
        **model.to_json(),
        "out": args.out,
        "requests": len(trace.arrival),
        "span_s": float(trace.arrival[-1]),
        "mean_rate": len(trace.arrival) / float(trace.arrival[-1]),
        "source_mean_rate": model.mean_rate,
        "seed": args.seed,
    }
    if args.json:
        emit_json(out)
    else:
        print(
            f"SYNTHETIC trace {args.out}: {out['requests']} requests over {days:g} day(s), "
            f"{out['mean_rate']:.3f} req/s (fitted on {model.source_requests} requests at "
            f"{model.mean_rate:.3f} req/s; daily swing {args.amplitude:g} assumed, peak "
            f"{args.peak_hour:g} h)"
        )
    return 0
