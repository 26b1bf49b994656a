"""``learnsched probe nvml | lora | memory | waits | recovery | all``.

Each probe is one module here with ``register(probes)``. A handler prints a table (or
JSON with ``--json``) and returns the exit status; a failed measurement
(:class:`~learnsched.serving.HandoffProbeError`) exits 1, NVML or a GPU extra missing
exits 3, bad input exits 2 (:mod:`learnsched.cli`). ``--out FILE`` writes the measured
costs as a cost profile, keeping quantities an existing FILE holds that this run did not
measure.
"""

from __future__ import annotations

import argparse

from . import all as every
from . import lora, memory, nvml, recovery, waits

__all__ = ["register"]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``probe`` sub-command and its own sub-commands to ``commands``."""
    probe = commands.add_parser(
        "probe", help="measure handoff costs on this machine (LoRA, memory, recovery)"
    )
    probes = probe.add_subparsers(dest="probe_command", required=True, metavar="PROBE_COMMAND")
    for module in (nvml, lora, memory, waits, recovery, every):
        module.register(probes)
