"""The ``learnsched`` command line.

Each area registers its own sub-command (``register(subparsers)`` setting ``func``);
this module only dispatches and turns bad input into exit status 2 with one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn, cast

from . import __version__, solver_cli
from .capacity import cli as capacity_cli
from .economics import cli as economics_cli
from .handoff import cli as handoff_cli

__all__ = ["main"]

EXIT_BAD_INPUT = 2


class _OneLineParser(argparse.ArgumentParser):
    """Report a usage error in one line (``--help`` still shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = _OneLineParser(
        prog="learnsched",
        description="Plan self-evolution on shared GPUs with the LearnSched finite window model.",
    )
    parser.add_argument("--version", action="version", version=f"learnsched {__version__}")
    # Sub-commands are _OneLineParser too; the registrars accept any ArgumentParser.
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    solver_cli.register(commands)
    economics_cli.register(commands)
    capacity_cli.register(commands)
    handoff_cli.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input, with one line on stderr)."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except (ValueError, OSError) as err:
        print(f"learnsched {args.command}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return status
