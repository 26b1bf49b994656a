"""Small helpers the probes share: the lazy torch import, percentiles, the CPU's name."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median
from typing import Any

from ..serving.errors import missing_extra

__all__ = ["CPU", "median", "p95", "torch_module"]

# The device name a profile records for measurements taken on the host (no GPU).
CPU = "cpu"


def torch_module() -> Any:
    """``torch``, or the error saying to install the GPU extra."""
    try:
        import torch
    except ImportError as err:
        raise missing_extra("torch", err) from err
    return torch


def p95(samples: Sequence[float]) -> float:
    """The 95th percentile of ``samples`` by nearest rank (at least one)."""
    if not samples:
        raise ValueError("95th percentile of no samples")
    ordered = sorted(samples)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]
