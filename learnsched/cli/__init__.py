"""The ``learnsched`` command line: one dispatcher, one exit-status table, one error wrapper.

Each command group is a module of this package with ``register(commands)``; every parser
it adds calls ``set_defaults(func=handler)`` with ``handler(args) -> int``. :data:`COMMANDS`
maps each top-level command to its module, so a run imports only the module of the
command it runs (``learnsched --version`` imports none). Exit statuses are in
:mod:`.output`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, cast

from .._extras import MissingExtra
from .output import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_MISSING,
    EXIT_STATUSES,
    EXIT_VIOLATION,
)

__all__ = ["COMMANDS", "build_parser", "main"]

# Top-level command -> the module of learnsched.cli that registers it (in --help order).
COMMANDS: dict[str, str] = {
    "grid": "solve",
    "solve": "solve",
    "explain": "solve",
    "econ": "econ",
    "capacity": "capacity",
    "probe": "probe",
    "run": "control",
    "demo": "control",
    "sweep": "sweep",
    "windows": "calendar",
    "online": "calendar",
    "synth": "calendar",
}


class _CommandParser(argparse.ArgumentParser):
    """A parser that reports usage errors in one line and lists the exit statuses in --help.

    Sub-commands are made of this class too (argparse copies the parent's class), and each
    stores its own ``prog`` so errors name the whole command (``learnsched econ wait``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", EXIT_STATUSES)
        super().__init__(*args, **kwargs)
        self.set_defaults(command_prog=self.prog)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


class _VersionAction(argparse.Action):
    """``--version``: the installed version, read only when asked (metadata is slow)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        from .. import __version__

        print(f"learnsched {__version__}")
        parser.exit()


def _modules(argv: Sequence[str] | None) -> list[str]:
    """The modules ``argv`` needs registered, read left to right as argparse will."""
    everything = list(dict.fromkeys(COMMANDS.values()))
    for token in argv if argv is not None else ():
        if token == "--version":  # argparse prints the version and exits here
            return []
        if not token.startswith("-"):  # the command (the top level takes no values)
            return [COMMANDS[token]] if token in COMMANDS else everything
        if token in ("-h", "--help"):
            break
    return everything


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, with the commands ``argv`` names registered (None: every one)."""
    parser = _CommandParser(
        prog="learnsched",
        description="Plan self-evolution on shared GPUs with the LearnSched finite window model.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    for module in _modules(argv):
        importlib.import_module(f"{__name__}.{module}").register(commands)
    return parser


def _exit_status(err: Exception) -> int | None:
    """The status a command that raised ``err`` exits with (None: a bug, re-raised)."""
    if isinstance(err, MissingExtra):
        return EXIT_MISSING
    # A failed probe measurement. Looked up only once the handoff wing is loaded (an
    # exception of a class never imported cannot be raised), so no command pays for it.
    errors = sys.modules.get("learnsched.handoff.errors")
    if errors is not None and isinstance(err, errors.HandoffProbeError):
        return EXIT_VIOLATION
    if isinstance(err, (ValueError, TypeError, OSError)):
        return EXIT_BAD_INPUT
    return None


def run(args: argparse.Namespace) -> int:
    """Call the handler ``args`` was parsed for; a failure becomes one line and its status."""
    try:
        status: int = args.func(args)
    except BrokenPipeError:  # not bad input: main() handles it
        raise
    except Exception as err:
        code = _exit_status(err)
        if code is None:
            raise
        kind = "" if code == EXIT_MISSING else "error: "
        print(f"{args.command_prog}: {kind}{err}", file=sys.stderr)
        return code
    return status


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the reader is gone, and Python flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``learnsched`` command line on ``argv`` (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 ok, 1 a check found a violation, 2 bad input, 3 missing
        hardware or library (:mod:`.output`); 130 after Ctrl-C (one line on stderr), 141
        when the reader of stdout has gone (``learnsched grid | head -1``: quiet).
        ``--help``, ``--version`` and usage errors exit through ``SystemExit`` (usage: 2).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "learnsched"
    try:
        try:
            args = build_parser(argv).parse_args(argv)
        except SystemExit:
            sys.stdout.flush()  # --help and --version print here: a closed pipe shows now
            raise
        prog = args.command_prog
        status = run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return status
