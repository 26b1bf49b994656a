"""What the ``learnsched probe`` sub-commands share: exit statuses, tables, profiles."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import NvmlUnavailable
from .nvml import NvmlDevice, driver_version, open_device
from .profile import GIB, CostProfile, load_cost_profile

__all__ = [
    "EXIT_FAILED",
    "EXIT_NO_NVML",
    "Rows",
    "device_info",
    "gib",
    "ms",
    "optional_device",
    "print_rows",
    "write_profile",
]

EXIT_FAILED = 1
EXIT_NO_NVML = 3
Rows = list[tuple[str, str]]


def print_rows(rows: Rows) -> None:
    """Print ``(key, value)`` rows as a two-column table (a row without value: its key)."""
    width = max((len(k) for k, _ in rows), default=0)
    for key, value in rows:
        print(f"{key:<{width}}  {value}" if value else key)


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


def device_info(device: NvmlDevice | None) -> dict[str, str | None] | None:
    """The device a cost profile was measured on (``None`` without one)."""
    if device is None:
        return None
    return {"name": device.name, "uuid": device.uuid, "driver": driver_version()}


def write_profile(args: argparse.Namespace, profile: CostProfile) -> None:
    """Write ``profile`` to ``--out`` (if given), kept merged with what the file holds."""
    if getattr(args, "out", None) is None:
        return
    out = Path(args.out)
    if out.exists():
        profile = load_cost_profile(out).merged(profile)
    profile.write(out)
    print(f"cost profile: {out}", file=sys.stderr)
