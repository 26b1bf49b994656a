"""``learnsched probe nvml | lora | memory | waits | recovery | all``.

Each handler takes the parsed ``args``, prints a table (or JSON with ``--json``) and
returns the exit status: 0, 3 when NVML is needed and unavailable (one line saying
why), 1 when a measurement fails. Bad input raises ``ValueError``/``OSError`` for the
top-level dispatcher (status 2). ``--out FILE`` writes the measured costs as a cost
profile, keeping quantities an existing FILE holds that this run did not measure.

This module only registers the sub-commands; each probe's options, checks, tables and
profile are in ``_cli_<area>.py``, what they share in :mod:`._cli_tables`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ._cli_all import run_all
from ._cli_lora import add_lora_arguments, run_lora
from ._cli_readings import add_memory_arguments, run_memory, run_nvml
from ._cli_recovery import add_recovery_arguments, run_recovery
from ._cli_tables import EXIT_FAILED, EXIT_NO_NVML
from ._cli_waits import add_waits_arguments, run_waits
from .errors import HandoffProbeError, NvmlUnavailable

__all__ = ["register"]

Handler = Callable[[argparse.Namespace], int]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``probe`` sub-command and its own sub-commands to ``commands``."""
    probe = commands.add_parser(
        "probe", help="measure handoff costs on this machine (LoRA, memory, recovery)"
    )
    sub = probe.add_subparsers(dest="probe_command", required=True, metavar="PROBE_COMMAND")

    nvml = sub.add_parser("nvml", help="GPU memory, processes, clocks via NVML")
    _add_common(nvml, out=False)
    nvml.set_defaults(func=_guarded(run_nvml))

    lora = sub.add_parser("lora", help="LoRA adapter save/load microbenchmark")
    add_lora_arguments(lora)
    _add_common(lora, out=True)
    lora.set_defaults(func=_guarded(run_lora))

    memory = sub.add_parser("memory", help="host PSS of a process tree (and GPU memory)")
    add_memory_arguments(memory)
    _add_common(memory, out=False)
    memory.set_defaults(func=_guarded(run_memory))

    waits = sub.add_parser("waits", help="command acknowledgment delay: coarse vs pollable")
    add_waits_arguments(waits)
    _add_common(waits, out=False, gpu=False)
    waits.set_defaults(func=_guarded(run_waits))

    recovery = sub.add_parser("recovery", help="cold start and warm resume of vLLM/SGLang")
    add_recovery_arguments(recovery, required=True)
    _add_common(recovery, out=True)
    recovery.set_defaults(func=_guarded(run_recovery))

    every = sub.add_parser("all", help="every probe this machine can run")
    add_lora_arguments(every)
    add_waits_arguments(every)
    add_recovery_arguments(every, required=False)
    _add_common(every, out=True)
    every.set_defaults(func=_guarded(run_all))


def _add_common(parser: argparse.ArgumentParser, *, out: bool, gpu: bool = True) -> None:
    if gpu:
        parser.add_argument(
            "--gpu",
            default="0",
            metavar="INDEX|UUID",
            help="NVML device to read (default 0; the LoRA probe reads the GPU torch loads onto)",
        )
    parser.add_argument("--json", action="store_true", help="print JSON")
    if out:
        parser.add_argument("--out", metavar="FILE", help="write (or update) a cost profile")


def _guarded(handler: Handler) -> Handler:
    """Turn a failed measurement into one line and a status (bad input stays ValueError)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except NvmlUnavailable as err:
            print(f"learnsched probe {args.probe_command}: {err}", file=sys.stderr)
            return EXIT_NO_NVML
        except HandoffProbeError as err:
            print(f"learnsched probe {args.probe_command}: error: {err}", file=sys.stderr)
            return EXIT_FAILED

    return run
