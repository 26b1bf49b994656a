"""``learnsched portfolio``: several candidates sharing the idle windows of GPUs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .._atomic import atomic_write_text
from .._checks import integer
from .._json import read_json
from .output import emit_json

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``portfolio`` command."""
    parser = commands.add_parser(
        "portfolio",
        help="plan a portfolio of candidates on the idle windows of GPUs, under every policy",
        description=(
            "Plan several self-evolution candidates that share the idle windows of one or "
            "more GPUs (optionally under a GPU-second budget) with every portfolio policy, "
            "or run the portfolio study (docs/portfolio.md)."
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
        "decaying",
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
        return _run_study(args)
    if args.setting:
        raise ValueError("--setting goes with --study")
    portfolio, policies = Portfolio.from_json(read_json(args.spec))
    plans = PortfolioModel(portfolio, policies).solve_all()
    _write(args, {"policies": {name: plan.to_json() for name, plan in plans.items()}})
    if not args.json:
        print(plans_table(plans, [c.name for c in portfolio.candidates]))
    return 0


def _run_study(args: argparse.Namespace) -> int:
    from ..portfolio.study import run_study, study_settings

    seeds = integer("--seeds", args.seeds, low=1)
    chosen = study_settings()
    if args.setting:
        known = {s.name: s for s in chosen}
        unknown = [n for n in args.setting if n not in known]
        if unknown:
            raise ValueError(
                f"--setting must be one of {', '.join(known)}, got {', '.join(map(repr, unknown))}"
            )
        chosen = [known[n] for n in dict.fromkeys(args.setting)]
    result = run_study(seeds, chosen)
    _write(args, result.to_json())
    if not args.json:
        print(f"{seeds} seeds per setting; values in s-eq., intervals Student-t 95%\n")
        print(result.table())
    return 0
