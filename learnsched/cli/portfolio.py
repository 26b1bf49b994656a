"""``learnsched portfolio``: several candidates sharing the idle windows of GPUs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._atomic import atomic_write_text
from .._checks import integer, number
from .._json import read_json
from .output import emit_json, flag_names

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``portfolio`` command."""
    from ..calendar.causal import CAUSAL_POLICIES, DEFAULT_GAP_MODEL, GAP_MODELS
    from ..portfolio.causal import STUDY_CANDIDATE_POLICY

    parser = commands.add_parser(
        "portfolio",
        help="plan a portfolio of candidates on the idle windows of GPUs, under every policy",
        description=(
            "Plan several self-evolution candidates that share the idle windows of one or "
            "more GPUs (optionally under a GPU-second budget) with every portfolio policy, "
            "or, with --trace, run them causally on a request trace (the idle gap's end "
            "unknown), or run the portfolio study (docs/portfolio.md)."
        ),
    )
    parser.add_argument(
        "spec",
        nargs="?",
        help='SPEC.json ("-": stdin): "windows" or "gpus", the return path, optional '
        '"budget_gpu_s" and "policies", and "candidates"',
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--out", metavar="FILE", help="also write the JSON to FILE")
    causal = parser.add_argument_group(
        "--trace: causal mode (the SPEC's candidates on a request trace, arrivals known up to "
        "now only)"
    )
    causal.add_argument(
        "--trace",
        nargs="?",
        const="",
        metavar="TRACE.csv",
        help="run the SPEC's candidates causally on an Azure-format trace (default: the "
        "shipped one); the SPEC's windows are not used and may be left out",
    )
    causal.add_argument(
        "--from-s",
        type=float,
        default=600.0,
        help="gaps starting from here are decided; the forecasts are fitted on the trace "
        "before it (seconds from the first request; default 600)",
    )
    causal.add_argument(
        "--to-s",
        type=float,
        help="... and before here (default: the trace's last request)",
    )
    causal.add_argument(
        "--candidate-policy",
        default=STUDY_CANDIDATE_POLICY,
        choices=CAUSAL_POLICIES,
        help="each candidate's own causal decision (default %(default)s)",
    )
    causal.add_argument(
        "--samples", type=int, default=16, metavar="N", help="sampled futures per candidate (16)"
    )
    causal.add_argument("--seed", type=int, default=0, help="forecast seed (default 0)")
    causal.add_argument(
        "--forecaster",
        choices=GAP_MODELS,
        default=DEFAULT_GAP_MODEL,
        help="the gap and calendar forecast (default empirical)",
    )
    causal.add_argument(
        "--lateness-price",
        type=float,
        default=1.0,
        metavar="S-EQ",
        help="s-eq. per late request-second (default 1)",
    )
    causal.add_argument(
        "--return-level",
        type=float,
        default=0.95,
        metavar="P",
        help="risk_rollout lends only if P(return in time) >= P (default 0.95)",
    )
    causal.add_argument(
        "--history-s",
        type=float,
        default=3600.0,
        help="fit the gap forecast on the last S seconds before --from-s (default 3600)",
    )
    causal.add_argument(
        "--slo-s", type=float, default=20.0, help="latency budget beyond a request's service (20)"
    )
    study = parser.add_argument_group("--study: the portfolio study instead of a SPEC")
    study.add_argument(
        "--study",
        action="store_true",
        help="every policy on the shipped Azure trace and App. C.2-style synthetic demand",
    )
    study.add_argument(
        "--seeds", type=int, default=10, metavar="K", help="draws per setting (default 10)"
    )
    study.add_argument(
        "--setting",
        action="append",
        metavar="NAME",
        help="only this setting (repeatable): azure_trace, stable, single_burst, recurrent, "
        "decaying, azure_causal, azure_causal_warm",
    )
    parser.set_defaults(func=run_portfolio)


def _write(args: argparse.Namespace, obj: Any) -> None:
    if args.out:
        atomic_write_text(args.out, json.dumps(obj, indent=2, allow_nan=False) + "\n")
    if args.json:
        emit_json(obj)


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}"


def plans_table(plans: dict[str, Any], names: list[str]) -> str:
    """Per policy its value, GPU-seconds and how many candidates it published; then each
    candidate's publication time per policy (seconds, ``-``: not published)."""
    lines = [f"{'policy':<15}{'value':>14}{'GPU-s':>12}{'published':>11}"]
    for name, plan in plans.items():
        published = sum(t is not None for t in plan.publish_s.values())
        lines.append(f"{name:<15}{plan.value:>14.3f}{plan.gpu_s:>12.3f}{published:>7}/{len(names)}")
    width = max(12, *(len(n) + 2 for n in names))
    lines += ["", f"{'publish_s':<{width}}" + "".join(f"{p:>15}" for p in plans)]
    for n in names:
        lines.append(
            f"{n:<{width}}" + "".join(f"{_fmt(p.publish_s[n]):>15}" for p in plans.values())
        )
    return "\n".join(lines)


def run_portfolio(args: argparse.Namespace) -> int:
    """``learnsched portfolio SPEC.json`` or ``learnsched portfolio --study``."""
    # The wing loads here, on first use: no other command pays for it.
    from ..portfolio import Portfolio, PortfolioModel

    if (args.spec is None) == (not args.study):
        raise ValueError("give either SPEC.json or --study, not both or neither")
    if args.study:
        if args.trace is not None:
            raise ValueError(
                "--trace goes with SPEC.json; the study's causal settings are "
                "azure_causal and azure_causal_warm"
            )
        return _run_study(args)
    if args.setting:
        raise ValueError("--setting goes with --study")
    if args.trace is not None:
        return _run_causal(args)
    portfolio, policies = Portfolio.from_json(read_json(args.spec))
    plans = PortfolioModel(portfolio, policies).solve_all()
    _write(args, {"policies": {name: plan.to_json() for name, plan in plans.items()}})
    if not args.json:
        print(plans_table(plans, [c.name for c in portfolio.candidates]))
    return 0


def _horizon_end(from_s: float, to_s: float | None, last_s: float) -> float:
    """The end of the horizon ``[--from-s, --to-s)`` on a trace whose last request
    arrives at ``last_s``, checked under the flags' names (the simulator would name
    "the horizon")."""
    number("--from-s", from_s)
    if to_s is None:
        end, shown = last_s, f"--to-s (default: the trace's last request, {last_s:g} s)"
    else:
        end, shown = number("--to-s", to_s), f"--to-s {to_s:g}"
        if end > last_s:
            raise ValueError(f"--to-s {to_s:g} is after the trace's last request at {last_s:g} s")
    if not end > from_s:
        raise ValueError(
            f"--from-s {from_s:g} and {shown} leave no horizon: --to-s must be > --from-s"
        )
    return end


def _run_causal(args: argparse.Namespace) -> int:
    """``learnsched portfolio SPEC.json --trace [TRACE.csv]``."""
    from ..calendar import AZURE_TRACE, ServiceModel, load_trace
    from ..calendar.causal import CausalRules, CausalTrace
    from ..calendar.study import make_forecaster
    from ..calendar.traces import is_synthetic
    from ..portfolio import Portfolio
    from ..portfolio.causal import CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR, run_portfolio_causal

    spec = read_json(args.spec)
    if not isinstance(spec, dict):  # what Portfolio.from_json says of a non-object
        raise ValueError(f"a SPEC must be a JSON object, got {type(spec).__name__}")  # noqa: TRY004
    names = [*CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR]
    policies = spec.pop("policies", names)
    if not isinstance(policies, list) or not policies:
        raise ValueError(f"policies must be a non-empty list, got {policies!r}")
    if "windows" not in spec and "gpus" not in spec:
        spec["windows"] = [[0.0, 1.0]]  # unused: causal mode's windows are the trace's gaps
    portfolio, _ = Portfolio.from_json(spec)
    path = args.trace or str(AZURE_TRACE)
    with flag_names("slo_s", "lateness_price", "return_level", "history_s"):
        service = ServiceModel(slo_s=args.slo_s)
        rules = CausalRules(
            lateness_price=args.lateness_price,
            return_level=args.return_level,
            history_s=args.history_s,
        )
    trace = CausalTrace(load_trace(path, service), synthetic=is_synthetic(path))
    to_s = _horizon_end(args.from_s, args.to_s, trace.span_s)
    runs = run_portfolio_causal(
        trace,
        portfolio,
        args.from_s,
        to_s,
        make_forecaster(args.forecaster),
        [str(p) for p in dict.fromkeys(policies)],
        candidate_policy=args.candidate_policy,
        samples=integer("--samples", args.samples, low=1),
        seed=integer("--seed", args.seed, low=0),
        rules=rules,
    )
    _write(
        args,
        {"policies": {n: r.to_json() for n, r in runs.items()}, "trace": trace.to_json()},
    )
    if not args.json:
        label = " (SYNTHETIC trace)" if trace.synthetic else ""
        print(f"causal on {path}{label}, gaps starting in [{args.from_s:g}, {to_s:g}) s")
        lines = [f"{'policy':<16}{'value':>12}{'GPU-s':>10}{'published':>11}{'late req.':>11}"]
        for n, r in runs.items():
            done = sum(t is not None for t in r.publish_s.values())
            lines.append(
                f"{n:<16}{r.value:>12.3f}{r.gpu_s:>10.1f}{done:>7}/{len(r.publish_s):<3}"
                f"{r.late_requests:>11}"
            )
        print("\n".join(lines))
    return 0


def _run_study(args: argparse.Namespace) -> int:
    from ..portfolio.causal import CAUSAL_SETTINGS, run_causal_study
    from ..portfolio.study import run_study, study_settings

    seeds = integer("--seeds", args.seeds, low=1)
    chosen = study_settings()
    known = {s.name: s for s in chosen}
    names = list(dict.fromkeys(args.setting)) if args.setting else [*known, *CAUSAL_SETTINGS]
    unknown = [n for n in names if n not in known and n not in CAUSAL_SETTINGS]
    if unknown:
        raise ValueError(
            f"--setting must be one of {', '.join([*known, *CAUSAL_SETTINGS])}, got "
            f"{', '.join(map(repr, unknown))}"
        )
    planned = [known[n] for n in names if n in known]
    causal = [n for n in names if n in CAUSAL_SETTINGS]
    result = run_study(seeds, planned) if planned else None
    causal_result = run_causal_study(seeds, causal) if causal else None
    obj: dict[str, Any] = {"seeds": seeds, "settings": {}}
    for r in (result, causal_result):
        if r is not None:
            obj["settings"].update(r.to_json()["settings"])
    _write(args, obj)
    if not args.json:
        print(f"{seeds} seeds per setting; values in s-eq., intervals Student-t 95%\n")
        print("\n\n".join(r.table() for r in (result, causal_result) if r is not None))
    return 0
