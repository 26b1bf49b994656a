"""``learnsched econ``: break-even, waiting value, pricing, alert experiment, paper figures.

Each handler takes the parsed ``args``, prints a table (or JSON with ``--json``) and
returns the exit status; bad input raises ``ValueError`` for the top-level dispatcher.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from .._checks import integer
from .._json import read_json
from .._table import format_rows
from ..economics.alert_calibration import (
    FAMILIES,
    calibrate_alerts,
    calibration_table,
    held_alerts,
)
from ..economics.alert_experiment import MAX_SEEDS, AlertExperiment, run_alert_experiment
from ..economics.alerts import ALERT_RULES, MAX_ALERTS
from ..economics.breakeven import ReusePath, payback_uses
from ..economics.paper import paper_economics
from ..economics.pricing import GUIDANCE_LEDGER, TABLE_B1, table_b1_utility
from ..economics.waiting import WaitingComparison
from .output import PLOT_EXTRA, Rows, emit_json, print_rows

__all__ = ["register"]

# Policy Q of ``econ utility --demand`` when --baseline is not given. The paper compares
# LearnSched with Window under sustained demand (App. B.1: 847 tokens, 7 answers), where
# Cal.* was not run, and with Cal.* under stopped and sparse demand (Eq. B.2).
DEFAULT_BASELINE = {"sustained": "window", "stopped": "calendar", "sparse": "calendar"}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``econ`` sub-command and its own sub-commands to ``commands``."""
    econ = commands.add_parser(
        "econ", help="investment economics: break-even, waiting, pricing, alerts"
    )
    sub = econ.add_subparsers(dest="econ_command", required=True, metavar="ECON_COMMAND")
    _add_breakeven(sub)
    _add_wait(sub)
    _add_utility(sub)
    _add_alerts(sub)
    _add_calibrate_alerts(sub)
    paper = sub.add_parser("paper", help="recompute the paper's economics figures")
    _finish(paper, run_paper)


def _required_floats(parser: argparse.ArgumentParser, options: Sequence[tuple[str, str]]) -> None:
    """Add each ``(flag, help)`` of ``options`` as a required float option."""
    for flag, text in options:
        parser.add_argument(flag, type=float, required=True, help=text)


def _finish(parser: argparse.ArgumentParser, handler: Callable[[argparse.Namespace], int]) -> None:
    """Add the ``--json`` switch every sub-command has and route the command to ``handler``."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=handler)


def _add_breakeven(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("breakeven", help="effective reuse and break-even start (Eqs. 3-4)")
    _required_floats(
        parser,
        [
            ("--arrival-rate", "lambda, requests/s"),
            ("--use-fraction", "a, in [0, 1]"),
            ("--unit-value", "u, s-eq. per use"),
            ("--horizon", "H, seconds"),
            ("--build-time", "tau_e, seconds"),
            ("--cost", "C_e, s-eq."),
        ],
    )
    parser.add_argument("--start", type=float, default=0.0, help="start time t, seconds")
    parser.add_argument(
        "--payback",
        type=float,
        nargs=2,
        metavar=("CONSTRUCTION", "USE"),
        help="also count the uses to pay back a construction cost at a per-use cost",
    )
    _finish(parser, run_breakeven)


def _add_wait(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("wait", help="value of waiting to publish later (Eq. 13)")
    _required_floats(
        parser,
        [
            ("--cost-now", "C1, s-eq."),
            ("--cost-wait", "C2, s-eq."),
            ("--publish-now", "t1, seconds"),
            ("--publish-wait", "t2, seconds"),
            ("--benefit-rate", "g, s-eq. per second"),
        ],
    )
    _finish(parser, run_wait)


def _add_utility(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("utility", help="incremental utility under common pricing (Eq. 9)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--demand", choices=sorted(TABLE_B1), help="a Table B.1 demand pattern")
    source.add_argument(
        "--guidance", action="store_true", help="the Fig. 12(b) guidance ledger (App. B.2)"
    )
    parser.add_argument("--better", default="learnsched", help="policy P, with --demand")
    parser.add_argument(
        "--baseline",
        help="policy Q, with --demand (default: window for sustained, calendar otherwise)",
    )
    parser.add_argument("--value", type=float, default=0.0, help="W, tokens per timely answer")
    parser.add_argument(
        "--alpha",
        type=float,
        default=GUIDANCE_LEDGER.alpha0,
        help="service-price coefficient, with --guidance",
    )
    _finish(parser, run_utility)


def _add_alerts(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("alerts", help="synthetic alert experiment (Fig. 10, App. C.2)")
    parser.add_argument("--n", type=int, default=100_000, help="alerts per seed")
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--repeats", type=int, default=10, help="seeds seed..seed+repeats-1")
    parser.add_argument(
        "--recovery-samples",
        metavar="FILE",
        help='recovery samples as JSON {"engine": [seconds, ...]}; the paper\'s by default',
    )
    parser.add_argument("--plot", metavar="FILE", help=f"save Fig. 10 style panels ({PLOT_EXTRA})")
    _finish(parser, run_alerts)


def _add_calibrate_alerts(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "calibrate-alerts",
        help="fit the unpublished recovery inputs that would reproduce Fig. 10's bars",
        description=(
            "Fit a recovery family's parameters per engine (offset: a recovery offset in "
            "seconds; offset_spread: an offset and a lognormal log-space s.d.) by least "
            "squares to Fig. 10's printed means, then report each rule's fitted mean, seed "
            "range and residual beside the paper's."
        ),
    )
    parser.add_argument("--family", choices=FAMILIES, default="offset", help="recovery family")
    parser.add_argument("--fit-alerts", type=int, default=200_000, help="alerts per fit seed")
    parser.add_argument("--fit-seeds", type=int, default=4, help="fit on seeds 0..N-1")
    parser.add_argument("--alerts", type=int, default=1_000_000, help="alerts per evaluation seed")
    parser.add_argument("--seeds", type=int, default=10, help="evaluate on seeds 0..N-1")
    _finish(parser, run_calibrate_alerts)


def _alert_sizes(flag: str, n: int, seeds_flag: str, seeds: int) -> tuple[int, range]:
    """Alerts per seed and the seeds 0..N-1, checked under the flags' names before the
    range is read or any alert drawn (the draws of every seed are held at once)."""
    count = integer(seeds_flag, seeds, low=1, high=MAX_SEEDS)
    alerts = integer(flag, n, low=1, high=MAX_ALERTS)
    held_alerts(f"{flag} x {seeds_flag}", alerts, count)
    return alerts, range(count)


def run_calibrate_alerts(args: argparse.Namespace) -> int:
    """``econ calibrate-alerts``: recovery inputs fitted to Fig. 10, with residuals."""
    fit = _alert_sizes("--fit-alerts", args.fit_alerts, "--fit-seeds", args.fit_seeds)
    evaluation = _alert_sizes("--alerts", args.alerts, "--seeds", args.seeds)
    result = calibrate_alerts(args.family, *fit, *evaluation)
    if args.json:
        emit_json(result.to_json())
        return 0
    print(calibration_table(result))
    within = "every" if result.within_seed_ranges else "not every"
    print(
        f"\nrms {result.rms:.3f}, max |residual| {result.max_abs_residual:.3f} s-eq./alert; "
        f"{within} printed mean lies in its seed range"
    )
    return 0


def _emit(args: argparse.Namespace, data: dict[str, Any], rows: Rows) -> int:
    if args.json:
        emit_json(data)
    else:
        print_rows(rows)
    return 0


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.3f} s"


def run_breakeven(args: argparse.Namespace) -> int:
    """``econ breakeven``: uses, direct value and the latest profitable start."""
    path = ReusePath(
        args.arrival_rate,
        args.use_fraction,
        args.unit_value,
        args.horizon,
        args.build_time,
        args.cost,
    )
    deadline = path.latest_start()
    data: dict[str, Any] = {
        "start_s": args.start,
        "uses": path.uses(args.start),
        "value": path.value(args.start),
        "latest_start_s": deadline,
        "profitable": path.profitable(args.start),
    }
    rows = [
        ("start", f"{args.start:.3f} s"),
        ("expected uses M(t)", f"{data['uses']:.3f}"),
        ("direct value V(t)", f"{data['value']:.3f} s-eq."),
        ("latest profitable start t_e*", _seconds(deadline)),
        ("profitable", "yes" if data["profitable"] else "no"),
    ]
    if args.payback is not None:
        data["payback_uses"] = payback_uses(*args.payback)
        rows.append(("uses to pay back", str(data["payback_uses"])))
    return _emit(args, data, rows)


def run_wait(args: argparse.Namespace) -> int:
    """``econ wait``: cost saved, benefit lost and net gain of the delayed plan."""
    cmp = WaitingComparison(
        args.cost_now, args.cost_wait, args.publish_now, args.publish_wait, args.benefit_rate
    )
    data = {"cost_saving": cmp.cost_saving, "benefit_lost": cmp.benefit_lost, "gain": cmp.gain}
    rows = [
        ("cost saved C1 - C2", f"{cmp.cost_saving:.3f} s-eq."),
        ("benefit lost g(t2 - t1)", f"{cmp.benefit_lost:.3f} s-eq."),
        ("V_wait - V_now", f"{cmp.gain:+.3f} s-eq."),
    ]
    return _emit(args, data, rows)


def run_utility(args: argparse.Namespace) -> int:
    """``econ utility``: a Table B.1 comparison or the guidance ledger's price sensitivity."""
    return _guidance_utility(args) if args.guidance else _table_b1_utility(args)


def _guidance_utility(args: argparse.Namespace) -> int:
    """``econ utility --guidance``: the Fig. 12(b) ledger at ``--alpha`` and ``--value``."""
    g = GUIDANCE_LEDGER
    data: dict[str, Any] = {
        "alpha": args.alpha,
        "value": args.value,
        "service_cost_ds": g.service_cost,
        "saving": g.saving(args.alpha),
        "service_offset_pct": 100 * g.service_offset(args.alpha),
        "utility": g.utility(args.value, args.alpha),
        "alpha_boundary": g.alpha_boundary(args.value),
    }
    rows = [
        ("unscaled service cost D_s", f"{g.service_cost:.3f}"),
        (f"saving S({args.alpha:g})", f"{data['saving']:.3f}"),
        ("service offset", f"{data['service_offset_pct']:.2f}%"),
        (f"dU(W={args.value:g}, alpha)", f"{data['utility']:.3f}"),
        ("positive iff alpha <", f"{data['alpha_boundary']:.4f}"),
    ]
    return _emit(args, data, rows)


def _table_b1_utility(args: argparse.Namespace) -> int:
    """``econ utility --demand``: ``--better`` over the baseline on a Table B.1 pattern."""
    baseline = DEFAULT_BASELINE[args.demand] if args.baseline is None else args.baseline
    line = table_b1_utility(args.demand, args.better, baseline)
    breakeven = line.breakeven_value
    data: dict[str, Any] = {
        "demand": args.demand,
        "better": args.better,
        "baseline": baseline,
        "dq": line.dq,
        "dc": line.dc,
        "utility": line.describe(),
        "breakeven_w": breakeven,
        "utility_at_value": line.at(args.value),
    }
    rows = [
        ("comparison", f"{args.better} over {baseline} ({args.demand})"),
        ("extra timely correct dQ", f"{line.dq:g}"),
        ("extra cost dC", f"{line.dc:g}"),
        ("dU(W)", line.describe()),
        ("break-even W", _breakeven_text(line.dq, breakeven, args.better)),
        (f"dU({args.value:g})", f"{data['utility_at_value']:g}"),
    ]
    return _emit(args, data, rows)


def _breakeven_text(dq: float, breakeven: float | None, better: str) -> str:
    """The break-even ``W``, saying so when it is negative and so never reached (W >= 0)."""
    if breakeven is None:
        return "none (dQ = 0)"
    if breakeven >= 0:
        return f"{breakeven + 0.0:g}"  # + 0.0: -0.0 prints as 0
    verdict = "better" if dq > 0 else "worse"
    return f"{breakeven:g} (below 0: {better} is {verdict} at every W >= 0)"


def _read_recovery_samples(path: str) -> dict[str, Any]:
    data = read_json(path, f"--recovery-samples {path}")
    if not isinstance(data, dict) or not data:
        raise ValueError(
            f"--recovery-samples {path}: must hold a non-empty JSON object, got {data!r}"
        )
    return data


def alerts_table(result: AlertExperiment) -> str:
    """Mean loss per alert with seed percentile ranges, then the return boundary."""
    low, high = result.percentiles
    rows: Rows = [
        ("loss/alert (s-eq.)", f"mean [p{low:g}, p{high:g}] over {len(result.seeds)} seed(s)")
    ]
    for engine, stats in result.stats.items():
        rows += [
            (f"{engine} {rule}", _range(stats[rule].mean, stats[rule].low, stats[rule].high))
            for rule in ALERT_RULES
        ]
    rows.append(("lead time (s)", "  ".join(f"{x:6.0f}" for x in result.lead_times_s)))
    for engine, threshold in result.boundary.items():
        rows.append((f"{engine} min. confidence", "  ".join(f"{p:6.3f}" for p in threshold)))
    return format_rows(rows)


def _range(mean: float, low: float, high: float) -> str:
    return f"{mean:7.2f} [{low:.2f}, {high:.2f}]"


def run_alerts(args: argparse.Namespace) -> int:
    """``econ alerts``: the paired alert experiment on ``--n`` alerts per seed."""
    # The flags' own names, and before range() would be built or alerts drawn.
    n = integer("--n", args.n, low=1, high=MAX_ALERTS)
    repeats = integer("--repeats", args.repeats, low=1, high=MAX_SEEDS)
    path = args.recovery_samples
    samples = None if path is None else _read_recovery_samples(path)
    result = run_alert_experiment(n, range(args.seed, args.seed + repeats), samples)
    if args.plot:
        from ..economics.plotting import plot_alert_experiment

        plot_alert_experiment(result, args.plot)
    if args.json:
        emit_json(result.to_json())
    else:
        print(alerts_table(result))
    return 0


def run_paper(args: argparse.Namespace) -> int:
    """``econ paper``: the paper's figures, recomputed."""
    figures = paper_economics()
    payback = figures["payback_uses_gpu"]
    rows = [
        ("GPU payback uses (Bits, Pyramid)", f"{payback['bits']}, {payback['pyramid']}"),
        (
            f"waiting gain {figures['waiting_scenario']}",
            f"{figures['waiting_gain_s0348']:+.3f} s-eq.",
        ),
        ("stopped: LearnSched over Cal.*", figures["stopped_utility"]),
        ("sparse: LearnSched over Cal.*", f"{figures['sparse_utility']:g}"),
        ("unscaled service cost D_s", f"{figures['service_cost_ds']:.0f}"),
        ("saving S(0.561)", f"{figures['saving_at_alpha_0561']:.3f}"),
        ("service offset", f"{figures['service_offset_pct']:.2f}%"),
        ("alpha boundary at W = 0", f"{figures['alpha_boundary_w0']:.4f}"),
        *_derived_rows(figures),
    ]
    return _emit(args, figures, rows)


def _beside_print(figure: dict[str, Any], decimals: int, unit: str = "") -> str:
    """``ours (paper X)``, flagging a print rounded from unrounded means."""
    note = ", rounded from unrounded means" if figure["rounded_from_unrounded_means"] else ""
    paper = f"{figure['paper']:.{figure['decimals']}f}"  # as printed: 36.0, not 36
    return f"{figure['value']:.{decimals}f}{unit} (paper {paper}{unit}{note})"


def _derived_rows(figures: dict[str, Any]) -> Rows:
    """Table rows of the figures derived from other printed numbers."""
    rows: Rows = [
        (f"Fig. 5 gain {system}", _beside_print(f, 3, "x"))
        for system, f in figures["fig5_gains"].items()
    ]
    rows += [
        (f"Fig. 8 break-even w, {name}", _beside_print(f, 4))
        for name, f in figures["fig8_breakeven_w"].items()
    ]
    rows += [
        (f"B.1 token saving over {base}", _beside_print(f, 3, "%"))
        for base, f in figures["b1_token_saving_pct"].items()
    ]
    extra = figures["b1_extra_cost_pct"]
    rows.append(
        ("B.1 service share of Window's extra", f"{extra['value']:.2f}% ({extra['paper']})")
    )
    rows.append(("B.1 timely gain over Window", _beside_print(figures["b1_timely_pp"], 3, " pp")))
    rows.append(
        ("nonpositive-build saving", _beside_print(figures["nonpositive_build_saving_pct"], 3, "%"))
    )
    for group, (vllm, sglang) in figures["fig12a_use_ready_pct"].items():
        rows.append(
            (
                f"Fig. 12(a) use/ready {group}",
                f"{_beside_print(vllm, 2, '%')}, {_beside_print(sglang, 2, '%')}",
            )
        )
    rows.append(
        (
            "Fig. C.1 saving over 3072 steps",
            _beside_print(figures["c3_fixed_budget_saving_pct"], 3, "%"),
        )
    )
    claim = figures["fig11_w_over_never"]
    rows.append(("Fig. 11 sparse, LearnSched over Never", claim["claim"]))
    return rows
