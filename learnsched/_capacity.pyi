"""Types of the Cython kernels in _capacity.pyx (arrays: float64 C-contiguous, or converted
when lossless; outputs must already be writable C-contiguous float64 or intp)."""

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from learnsched.capacity.aimd import AIMDConfig

_F: TypeAlias = npt.NDArray[np.float64]

def feasibility_scan(
    arrival: _F,
    work: _F,
    deadline: _F,
    starts: _F,
    rates: _F,
    cum: _F,
    tolerance: float,
    slack: _F,
) -> int: ...
def scan_window(
    arrival: _F,
    work: _F,
    deadline: _F,
    starts: _F,
    rates: _F,
    cum: _F,
    before: float,
    best: float,
    slack: _F,
) -> float: ...
def next_share(
    share: float, arrival_rate: float, backlog_s: float, config: AIMDConfig
) -> float: ...
def replay(
    arrival: _F,
    work: _F,
    estimate: _F,
    starts: _F,
    rates: _F,
    cum: _F,
    start_s: float,
    period_s: float,
    rate_window_s: float,
    share: float,
    step: float,
    factor: float,
    min_share: float,
    max_share: float,
    burst_rate: float,
    pressure_limit_s: float,
    admission_kind: int,
    admission_limit: float,
    stage_estimate: float,
    finish: _F,
    shares: _F,
) -> float: ...
def tail_counts(ascending: _F, points: _F, out: npt.NDArray[np.intp]) -> None: ...
def idle_window_bounds(
    arrival: _F,
    work: _F,
    deadline: _F,
    rate: float,
    recovery_s: float,
    min_useful_s: float,
    resolution: float,
    tolerance: float,
) -> tuple[list[float], list[float], int]: ...
