"""``learnsched sweep SPEC --out FILE``: a parameter sweep on threads or on a Ray cluster."""

from __future__ import annotations

import argparse
from typing import Any

from ..sweep import BACKENDS, SweepResult, load_spec, sweep
from ..sweep.summary import PointSummary
from .output import EXIT_OK, emit_json, print_rows

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sweep`` command."""
    parser = commands.add_parser(
        "sweep",
        help="solve scenarios over a grid of parameters (resumable; threads or Ray)",
        description=(
            'SPEC is {"base": "paper_grid" | [scenario objects], "vary": {FIELD: [values]}, '
            '"policies": [names]}. A rerun with the same SPEC and --out solves only the '
            "chunks a killed run left unfinished."
        ),
    )
    parser.add_argument("spec", metavar="SPEC.json", help="the sweep to run")
    parser.add_argument(
        "--out", required=True, metavar="FILE", help="result file, .csv or .parquet (ray extra)"
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="local", help="threads here, or Ray tasks"
    )
    parser.add_argument(
        "--address",
        metavar="ADDR",
        help="a Ray cluster's address (ray start --head prints it); default: a local Ray",
    )
    parser.add_argument(
        "--workers", type=int, metavar="N", help="threads, or CPUs of a local Ray (default: all)"
    )
    parser.add_argument(
        "--chunk-rows",
        type=int,
        metavar="N",
        help="rows per task for a new sweep (default: measured, task overhead under 10%%)",
    )
    parser.add_argument("--json", action="store_true", help="print per-point summaries as JSON")
    parser.add_argument(
        "--plot", metavar="FILE.png", help="the swept field against mean value and wins"
    )
    parser.set_defaults(func=run_sweep)


def _point_label(summary: PointSummary) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in summary.params) or "(base)"


def _point_line(summary: PointSummary) -> str:
    values = "  ".join(
        f"{name} {'-' if v is None else format(v, '.3f')}" for name, v in summary.mean_value.items()
    )
    versus = ""
    if summary.wins is not None:
        versus = f"  rollout vs costed_window {summary.wins}/{summary.ties}/{summary.losses}"
    invalid = f"  {summary.invalid} invalid" if summary.invalid else ""
    return values + versus + invalid


def _to_json(result: SweepResult) -> dict[str, Any]:
    return {
        "out": str(result.out),
        "spec_sha256": result.spec.hash,
        "rows": len(result.rows),
        "invalid": result.invalid,
        "chunks": {
            "total": result.chunks,
            "solved": result.solved,
            "skipped": result.skipped,
            "rows": result.chunk_rows,
        },
        "seconds": result.seconds,
        "points": [s.to_json() for s in result.summaries],
    }


def run_sweep(args: argparse.Namespace) -> int:
    """``learnsched sweep``: solve the SPEC into --out, then print the per-point summary."""
    spec = load_spec(args.spec)
    if args.plot:
        if not spec.vary:
            raise ValueError("--plot needs a SPEC that varies at least one field")
        from .._figures import pyplot

        pyplot()  # fail before the sweep, not after it, when matplotlib is missing
    result = sweep(
        spec,
        args.out,
        backend=args.backend,
        address=args.address,
        workers=args.workers,
        chunk_rows=args.chunk_rows,
    )
    if args.plot:
        from ..sweep.plot import plot_sweep

        plot_sweep(result.summaries, args.plot)
    if args.json:
        emit_json(_to_json(result))
        return EXIT_OK
    print(
        f"{len(result.rows)} rows ({len(result.points)} points x "
        f"{len(result.rows) // len(result.points)} scenarios, {result.invalid} invalid) "
        f"in {result.out}; {result.solved} of {result.chunks} chunks solved in "
        f"{result.seconds:.3f} s\n"
    )
    print_rows([(_point_label(s), _point_line(s)) for s in result.summaries])
    return EXIT_OK
