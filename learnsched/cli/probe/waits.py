"""``learnsched probe waits``: command acknowledgment delay, coarse vs pollable waits."""

from __future__ import annotations

import argparse

from ..._checks import integer, positive
from ..._progress import Progress
from ...handoff.waits import MAX_COMMANDS, MAX_STEP_S, measure_ack_delay
from ..output import Rows, emit_json, print_rows
from .common import add_common, ms

__all__ = ["add_waits_arguments", "check_waits", "register", "waits", "waits_rows"]


def register(probes: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``probe waits``."""
    parser = probes.add_parser("waits", help="command acknowledgment delay: coarse vs pollable")
    add_waits_arguments(parser)
    add_common(parser, out=False, gpu=False)
    parser.set_defaults(func=run_waits)


def add_waits_arguments(parser: argparse.ArgumentParser) -> None:
    """The waits probe's options (also on ``probe all``)."""
    parser.add_argument(
        "--step-ms", type=float, default=100.0, help="coarse wait per step, ms (default 100)"
    )
    parser.add_argument(
        "--slice-ms", type=float, default=10.0, help="pollable slice, ms (default 10)"
    )
    parser.add_argument("--commands", type=int, default=40, help="commands per mode (default 40)")


def check_waits(args: argparse.Namespace) -> None:
    """Bad waits input as ``ValueError``, before anything is measured."""
    for flag, value in (("--step-ms", args.step_ms), ("--slice-ms", args.slice_ms)):
        if positive(flag, value) > MAX_STEP_S * 1e3:
            raise ValueError(f"{flag} must be <= {MAX_STEP_S * 1e3:g} ms, got {value!r}")
    integer("--commands", args.commands, low=1, high=MAX_COMMANDS)


def waits(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Measure both modes; per mode its slice, median and p95 delay, ms."""
    check_waits(args)
    step_s, slice_s = args.step_ms / 1e3, args.slice_ms / 1e3
    results = {}
    with Progress(2, "pollable waits") as progress:
        for mode, cut in (("coarse", step_s), ("pollable", slice_s)):
            delays = measure_ack_delay(step_s=step_s, slice_s=cut, commands=args.commands)
            results[mode] = {
                "slice_ms": cut * 1e3,
                "median_ms": delays.median_s * 1e3,
                "p95_ms": delays.p95_s * 1e3,
            }
            progress.advance(1)
    return results


def waits_rows(results: dict[str, dict[str, float]]) -> Rows:
    """The table rows of :func:`waits`' results."""
    rows: Rows = []
    for mode, r in results.items():
        median, p95 = ms(r["median_ms"]), ms(r["p95_ms"])
        rows.append(
            (f"ack delay {mode}", f"median {median}, p95 {p95} (slice {r['slice_ms']:g} ms)")
        )
    return rows


def run_waits(args: argparse.Namespace) -> int:
    """Compare command acknowledgment delays of coarse and pollable waits."""
    results = waits(args)
    if args.json:
        emit_json(results)
    else:
        print_rows(waits_rows(results))
    return 0
