"""The ``learnsched`` command line: one dispatcher, one exit-status table, one error wrapper.

Each command group is a module of this package with ``register(commands)``; every parser
it adds calls ``set_defaults(func=handler)`` with ``handler(args) -> int``. :data:`COMMANDS`
maps each top-level command to its module, so a run imports only the module of the
command it runs (``learnsched --version`` imports none). Exit statuses are in
:mod:`.output`.

No traceback by construction: :func:`main` turns every exception into one line on
stderr and an exit status (:func:`exit_status`); one that no rule covers is a bug,
reported as one line with where to send it (exit 70; ``LEARNSCHED_TRACEBACK=1`` prints
the traceback as well, for the report). Handlers raise; they never print errors.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

from .output import (
    BUG_REPORT_URL,
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_ENVIRONMENT,
    EXIT_INTERRUPTED,
    EXIT_MISSING,
    EXIT_STATUSES,
    EXIT_VIOLATION,
)

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["COMMANDS", "build_parser", "error_line", "exit_status", "main"]

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
    "gate": "gate",
    "sweep": "sweep",
    "windows": "calendar",
    "online": "calendar",
    "synth": "calendar",
    "guard-check": "guard",
    "portfolio": "portfolio",
}


class _CommandParser(argparse.ArgumentParser):
    """A parser that reports usage errors in one line and lists the exit statuses in --help.

    Sub-commands are made of this class too (argparse copies the parent's class), and each
    stores its own ``prog`` so errors name the whole command (``learnsched econ wait``).
    The exit statuses end every parser's help, after an ``epilog`` of its own if it has
    one, so a command added later lists them without doing anything.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        epilog = kwargs.get("epilog")
        if not epilog:
            kwargs["epilog"] = EXIT_STATUSES
        elif EXIT_STATUSES not in epilog:
            kwargs["epilog"] = f"{epilog}\n\n{EXIT_STATUSES}"
        super().__init__(*args, **kwargs)
        self.set_defaults(command_prog=self.prog, command_parser=self)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # Python 3.11+ drops a help text it cannot write (`learnsched --help | head -0`
        # exits 0); 3.10 raises BrokenPipeError from print_help. The same on every version:
        with contextlib.suppress(AttributeError, OSError):
            super()._print_message(message, file)


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


# OSErrors that mean a path or process the user named is wrong (bad input); every other
# OSError is the machine's (a full disk, a denied permission, a refused connection).
_BAD_INPUT_OSERRORS = (
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    FileExistsError,
    ProcessLookupError,
)
_BAD_INPUT_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ELOOP})


def _environment(err: BaseException) -> bool:
    """Whether ``err`` is a failure of the machine or its services, not of the input."""
    if isinstance(err, MemoryError):
        return True
    http = sys.modules.get("http.client")  # an engine that answered garbage or hung up
    if http is not None and isinstance(err, http.HTTPException):
        return True
    if not isinstance(err, OSError) or isinstance(err, _BAD_INPUT_OSERRORS):
        return False
    return err.errno not in _BAD_INPUT_ERRNOS


def exit_status(err: BaseException) -> int:
    """The status a command that raised ``err`` exits with.

    In order: ``err.exit_status`` when its class sets one; 3 for a missing library or
    hardware (any ``ImportError``); 1 for a failed probe measurement; 4 for an
    environment failure (an ``OSError`` other than a wrong path or process id,
    ``MemoryError``, an HTTP protocol error); 2 for bad input (``ValueError``,
    ``TypeError``, a path that does not exist or is a folder, a process that does not
    exist); else 70, a bug.
    """
    own = getattr(type(err), "exit_status", None)
    if isinstance(own, int):
        return own
    if isinstance(err, ImportError):  # MissingExtra, or a module that was never built
        return EXIT_MISSING
    # A failed probe measurement. Looked up only once the handoff wing is loaded (an
    # exception of a class never imported cannot be raised), so no command pays for it.
    errors = sys.modules.get("learnsched.serving.errors")
    if errors is not None and isinstance(err, errors.HandoffProbeError):
        return EXIT_VIOLATION
    if _environment(err):
        return EXIT_ENVIRONMENT
    if isinstance(err, (ValueError, TypeError, OSError)):
        return EXIT_BAD_INPUT
    return EXIT_BUG


def _message(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror and err.filename is not None:
        return f"{err.filename}: {err.strerror}"  # not "[Errno 28] ...: 'out.csv'"
    if isinstance(err, MemoryError):
        return f"out of memory{f' ({err})' if str(err) else ''}"
    return str(err) or type(err).__name__


def error_line(prog: str, err: BaseException) -> tuple[int, str]:
    """The exit status of ``err`` and the one line that reports it."""
    code = exit_status(err)
    text = " ".join(_message(err).split())  # one line, whatever the message holds
    if code == EXIT_BUG:
        from .. import __version__

        return code, (
            f"{prog}: internal error: {type(err).__name__}: {text} (a bug in learnsched "
            f"{__version__}: please report it with this command line at {BUG_REPORT_URL}; "
            "LEARNSCHED_TRACEBACK=1 prints the traceback)"
        )
    kind = "" if code == EXIT_MISSING else "error: "
    return code, f"{prog}: {kind}{text}"


def _report(prog: str, err: BaseException) -> int:
    code, line = error_line(prog, err)
    if code == EXIT_BUG and os.environ.get("LEARNSCHED_TRACEBACK") == "1":
        traceback.print_exception(type(err), err, err.__traceback__, file=sys.stderr)
    print(line, file=sys.stderr)
    return code


def _given_to(args: argparse.Namespace, path: str) -> list[str]:
    """The arguments of ``args`` that were given ``path`` (flags, or positionals' names)."""
    parser: argparse.ArgumentParser = args.command_parser
    return [
        action.option_strings[-1] if action.option_strings else str(action.metavar or action.dest)
        for action in parser._actions
        if getattr(args, action.dest, None) in (path, [path])
    ]


def _unnamed_path(args: argparse.Namespace, err: Exception) -> Exception:
    """``err``, or for an ``OSError`` on a path that names nothing alone the same error
    naming the arguments that gave it: the empty path (": No such file or directory"
    becomes a ``ValueError``), or one that reads as a flag (``--costs -1``, whose
    "-1: No such file or directory" reads as a stray option)."""
    if not isinstance(err, OSError) or not isinstance(err.filename, str):
        return err
    path = err.filename
    if path == "":
        given = _given_to(args, path)
        return ValueError(f"{' or '.join(given) or 'a path'} '': an empty path names no file")
    if not path.startswith("-") or not err.strerror:
        return err
    given = _given_to(args, path)
    if not given:
        return err
    # The same errno keeps the exit status; only the name the line shows changes.
    return OSError(err.errno, err.strerror, f"{' or '.join(given)} {path}")


def run(args: argparse.Namespace) -> int:
    """Call the handler ``args`` was parsed for; a failure becomes one line and its status."""
    try:
        status: int = args.func(args)
    except BrokenPipeError:  # not a failure of the command: main() handles it
        raise
    except Exception as err:  # noqa: BLE001 - the catch-all: every exception is one line
        return _report(args.command_prog, _unnamed_path(args, err))
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
        hardware or library, 4 environment failure, 70 a bug (:mod:`.output`); 130
        after Ctrl-C (one line on stderr), 141 when the reader of stdout has gone
        (``learnsched grid | head -1``: quiet). ``--help``, ``--version`` and usage
        errors exit through ``SystemExit`` (usage: 2); called bare, it prints the help
        and returns 2.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = "learnsched"
    if not argv:  # called bare: what it can do, not only that a command is missing
        build_parser(argv).print_help()
        return EXIT_BAD_INPUT
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
    except Exception as err:  # noqa: BLE001 - building the parser, or flushing: one line
        return _report(prog, err)
    return status
