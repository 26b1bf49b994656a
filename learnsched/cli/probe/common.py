"""What the ``learnsched probe`` sub-commands share: options, units in tables, profiles."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from ...handoff.nvml import NvmlDevice, device_info, open_device
from ...handoff.profile import (
    GIB,
    QUANTITIES,
    CostProfile,
    Measurement,
    load_cost_profile,
    update_cost_profile,
)
from ...serving.errors import NvmlUnavailable

__all__ = ["add_common", "check_out", "gib", "ms", "optional_device", "write_profile"]


def add_common(parser: argparse.ArgumentParser, *, out: bool, gpu: bool = True) -> None:
    """The options every probe has: ``--gpu`` (where a GPU is read), ``--json``, ``--out``."""
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


def ms(value: float) -> str:
    """``value`` milliseconds, as shown in tables."""
    return f"{value:.3f} ms"


def gib(value: int | None) -> str:
    """``value`` bytes in GiB, as shown in tables (``n/a`` for ``None``)."""
    return "n/a" if value is None else f"{value / GIB:.3f} GiB"


def optional_device(args: argparse.Namespace) -> tuple[NvmlDevice | None, str | None]:
    """The NVML device ``--gpu`` names, or ``None`` and why not."""
    try:
        return open_device(args.gpu), None
    except NvmlUnavailable as err:
        return None, str(err)


def check_out(
    args: argparse.Namespace, planned: Mapping[str, str | None], device: NvmlDevice | None
) -> None:
    """Before measuring: ``ValueError`` if ``--out`` could not take this run's results.

    ``planned`` maps each quantity this run will write to where it is measured (a GPU's
    name, ``"cpu"``, or ``None``); ``device`` is the GPU it runs on. An existing
    ``--out`` file must be a readable profile they merge into (the check
    :meth:`CostProfile.merged` makes afterwards), so a long run is never measured and
    then lost to an incompatible file.
    """
    if getattr(args, "out", None) is None:
        return
    out = Path(args.out)
    if not out.parent.is_dir():
        raise NotADirectoryError(f"--out {out}: its folder does not exist")
    if not out.exists():
        return
    measurements = {q: Measurement(0.0, QUANTITIES[q], device=d) for q, d in planned.items()}
    try:
        load_cost_profile(out).merged(CostProfile(measurements, device=device_info(device)))
    except ValueError as err:
        raise ValueError(f"--out {out}: {err} (nothing was measured)") from None


def write_profile(args: argparse.Namespace, profile: CostProfile) -> None:
    """Write ``profile`` to ``--out`` (if given), kept merged with what the file holds;
    a warning on stderr names the figures it flags unconfirmed."""
    if getattr(args, "out", None) is None:
        return
    out = Path(args.out)
    update_cost_profile(out, profile)
    print(f"cost profile: {out}", file=sys.stderr)
    flagged = profile.unconfirmed()
    if flagged:
        print(
            f"{args.command_prog}: warning: {', '.join(flagged)} flagged unconfirmed in "
            f"{out} ({next(iter(flagged.values()))}): grid, solve and explain --costs "
            "refuse them without --accept-unconfirmed",
            file=sys.stderr,
        )
