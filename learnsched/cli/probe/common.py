"""What the ``learnsched probe`` sub-commands share: options, units in tables, profiles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...handoff.errors import NvmlUnavailable
from ...handoff.nvml import NvmlDevice, open_device
from ...handoff.profile import GIB, CostProfile, load_cost_profile

__all__ = ["add_common", "gib", "ms", "optional_device", "write_profile"]


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


def write_profile(args: argparse.Namespace, profile: CostProfile) -> None:
    """Write ``profile`` to ``--out`` (if given), kept merged with what the file holds."""
    if getattr(args, "out", None) is None:
        return
    out = Path(args.out)
    if out.exists():
        profile = load_cost_profile(out).merged(profile)
    profile.write(out)
    print(f"cost profile: {out}", file=sys.stderr)
