"""Measured handoff costs on the command line: ``--costs PROFILE`` (a probe's cost
profile), ``--base NAME`` (what it lacks from a named profile) and
``--accept-unconfirmed``, shared by every command that plans (``grid``, ``solve``,
``explain``, ``online --trace``, ``run``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..scenario import HandoffCosts, Recovery

__all__ = ["add_cost_flags", "profile_costs"]


def add_cost_flags(parser: argparse._ActionsContainer) -> None:
    """``--costs PROFILE``, ``--base NAME`` and ``--accept-unconfirmed`` on ``parser``."""
    parser.add_argument(
        "--costs",
        metavar="PROFILE",
        help="plan with the handoff costs of a cost profile (learnsched probe ... --out)",
    )
    parser.add_argument(
        "--base",
        metavar="NAME",
        help="fill what --costs PROFILE lacks from a named profile ('paper': the paper's "
        "A100 figures), saying which number came from where",
    )
    parser.add_argument(
        "--accept-unconfirmed",
        action="store_true",
        help="plan with --costs figures measured on parks whose memory release was never "
        "seen (refused otherwise, exit 2), with a warning on stderr",
    )


def profile_costs(
    args: argparse.Namespace, recoveries: Sequence[str] = tuple(Recovery)
) -> dict[str, HandoffCosts] | None:
    """The costs of the recovery paths asked for, from ``--costs PROFILE`` (None: the paper's).

    Only those paths are read, so a profile that measured only one of them still serves;
    with ``--base NAME`` what the profile lacks comes from that named profile, and one line
    on stderr says which quantity came from where (``args.costs_from`` keeps it). Figures
    measured on parks whose release was never seen are refused
    (:class:`~learnsched.handoff.UnconfirmedRelease`), or with ``--accept-unconfirmed``
    used with a warning on stderr.
    """
    args.costs_from = None
    if args.costs is None:
        if args.base is not None:
            raise ValueError("--base NAME fills a partial --costs PROFILE; give --costs too")
        if args.accept_unconfirmed:
            raise ValueError("--accept-unconfirmed accepts a --costs PROFILE; give --costs too")
        return None
    # The handoff wing loads only for --costs: plain `learnsched grid` never pays for it.
    from ..handoff.profile import (
        UnconfirmedRelease,
        base_profile,
        costs_quantities,
        load_cost_profile,
        provenance,
    )

    profile = load_cost_profile(args.costs)
    if args.base is not None:
        base = base_profile(args.base)
        used = [q for r in recoveries for q in costs_quantities(r)]
        args.costs_from = provenance(
            profile, args.costs, base, args.base, list(dict.fromkeys(used))
        )
        profile = profile.filled_from(base)
        by_source: dict[str, list[str]] = {}
        for name, source in args.costs_from.items():
            by_source.setdefault(source, []).append(name)
        said = "; ".join(f"{', '.join(names)} from {src}" for src, names in by_source.items())
        print(f"costs: {said}", file=sys.stderr)
    profile.require(q for r in recoveries for q in costs_quantities(r))
    accept = args.accept_unconfirmed
    try:
        costs = {r: profile.handoff_costs(r, accept_unconfirmed=accept) for r in recoveries}
    except UnconfirmedRelease as err:
        source, flag = f"--costs {args.costs}", "--accept-unconfirmed"
        raise UnconfirmedRelease(err.flagged, source=source, accept=flag) from None
    flagged = profile.unconfirmed(q for r in recoveries for q in costs_quantities(r))
    if flagged:
        why = "; ".join(dict.fromkeys(flagged.values()))
        print(
            f"{args.command_prog}: warning: --costs {args.costs}: planning with "
            f"{', '.join(flagged)}, measured on parks whose memory release was never seen "
            f"({why}), as --accept-unconfirmed asks",
            file=sys.stderr,
        )
    return costs
