"""The raw Cython kernels (learnsched._capacity): each checks its sizes and scalar
preconditions itself, so a direct call with wrong sizes raises instead of reading out of
bounds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _capacity

from conftest import run_python


def f64(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def requests(**arrays: np.ndarray) -> dict[str, np.ndarray]:
    """Two requests of unit work at 0 and 1 on a unit rate, plus per-request ``arrays``."""
    return {
        "arrival": f64(0.0, 1.0),
        "work": f64(1.0, 1.0),
        **arrays,
        "starts": f64(0.0),
        "rates": f64(1.0),
        "cum": f64(0.0),
    }


def scan_args(**change: Any) -> dict[str, Any]:
    args = requests(deadline=f64(2.0, 3.0), slack=np.empty(2))
    return {**args, "tolerance": 0.0, **change}


def window_args(**change: Any) -> dict[str, Any]:
    args = requests(deadline=f64(2.0, 3.0), slack=np.empty(2))
    return {**args, "before": 0.0, "best": np.inf, **change}


def replay_args(**change: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        **requests(estimate=f64(0.0, 0.0)),
        "start_s": 0.0,
        "period_s": 0.5,
        "rate_window_s": 1.0,
        "share": 0.0,
        "step": 0.05,
        "factor": 0.5,
        "min_share": 0.0,
        "max_share": 0.9,
        "burst_rate": 10.0,
        "pressure_limit_s": 0.2,
        "admission_kind": 0,
        "admission_limit": np.inf,
        "stage_estimate": 0.0,
        "finish": np.full(2, np.inf),
        "shares": np.empty(8),
    }
    return {**args, **change}


ARGS: dict[Callable[..., Any], Callable[..., dict[str, Any]]] = {
    _capacity.feasibility_scan: scan_args,
    _capacity.scan_window: window_args,
    _capacity.replay: replay_args,
}
"""Each kernel's well-formed arguments, with keyword changes."""


def call(kernel: Callable[..., Any], **change: Any) -> Any:
    """``kernel`` on its well-formed arguments with ``change`` applied."""
    return kernel(**ARGS[kernel](**change))


def assert_rejects(kernel: Callable[..., Any], change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call(kernel, **change)


def test_well_formed_calls_run() -> None:
    args = scan_args()
    assert _capacity.feasibility_scan(**args) == -1
    assert args["slack"].tolist() == [1.0, 1.0]
    window = window_args(arrival=f64(1.0), work=f64(1.0), deadline=f64(3.0), slack=np.empty(1))
    window["before"], window["best"] = 1.0, 0.0  # continues after request 0 of the above
    assert _capacity.scan_window(**window) == 0.0
    assert window["slack"].tolist() == [1.0]
    progress = call(_capacity.replay)
    assert progress > 0
    out = np.empty(2, dtype=np.intp)
    _capacity.tail_counts(f64(0.5, 1.5), f64(0.0, 1.0), out)
    assert out.tolist() == [2, 1]


BAD_SIZES = [
    ({"work": f64(1.0)}, "work has 1 entries but arrival has 2"),
    ({"deadline": f64(1.0, 2.0, 3.0)}, "deadline has 3 entries but arrival has 2"),
    ({"slack": np.empty(1)}, "slack has 1 entries but arrival has 2"),
    ({"starts": f64(), "rates": f64(), "cum": f64()}, "starts must have at least one"),
    ({"rates": f64(1.0, 2.0)}, "rates has 2 entries but starts has 1"),
    ({"cum": f64()}, "cum has 0 entries but starts has 1"),
]


@pytest.mark.parametrize("kernel", [_capacity.feasibility_scan, _capacity.scan_window])
@pytest.mark.parametrize(("change", "message"), BAD_SIZES)
def test_scans_check_sizes(
    kernel: Callable[..., Any], change: dict[str, Any], message: str
) -> None:
    assert_rejects(kernel, change, message)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tolerance": -1.0}, "tolerance must be >= 0"),
        ({"tolerance": np.nan}, "tolerance must be >= 0"),
    ],
)
def test_feasibility_scan_checks_scalars(change: dict[str, Any], message: str) -> None:
    assert_rejects(_capacity.feasibility_scan, change, message)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"before": np.nan}, "before must be finite"), ({"best": np.nan}, "best must not be NaN")],
)
def test_scan_window_checks_scalars(change: dict[str, Any], message: str) -> None:
    assert_rejects(_capacity.scan_window, change, message)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"work": f64(1.0)}, "work has 1 entries but arrival has 2"),
        ({"estimate": f64(0.0)}, "estimate has 1 entries but arrival has 2"),
        ({"finish": np.empty(3)}, "finish has 3 entries but arrival has 2"),
        ({"starts": f64(), "rates": f64(), "cum": f64()}, "starts must have at least one"),
        ({"cum": f64(0.0, 1.0)}, "cum has 2 entries but starts has 1"),
        ({"start_s": np.nan}, "start_s must be finite"),
        ({"period_s": np.nan}, "period_s must be finite and > 0"),
        ({"period_s": 0.0}, "period_s must be finite and > 0"),
        ({"rate_window_s": 0.0}, "rate_window_s must be finite and > 0"),
        ({"step": -0.1}, "step must be >= 0"),
        ({"share": 1.5}, r"share must be in \[0, 1\]"),
        ({"factor": np.nan}, r"factor must be in \[0, 1\]"),
        ({"min_share": 0.95}, "min_share must be <= max_share"),
        ({"burst_rate": np.nan}, "burst_rate must not be NaN"),
        ({"pressure_limit_s": np.nan}, "pressure_limit_s must not be NaN"),
        ({"admission_kind": 3}, "admission_kind must be 0, 1 or 2"),
        ({"admission_limit": np.nan}, "admission_limit must not be NaN"),
        ({"stage_estimate": -1.0}, "stage_estimate must be >= 0"),
    ],
)
def test_replay_checks_sizes_and_scalars(change: dict[str, Any], message: str) -> None:
    assert_rejects(_capacity.replay, change, message)


def test_tail_counts_checks_sizes() -> None:
    with pytest.raises(ValueError, match="out has 1 entries but points has 2"):
        _capacity.tail_counts(f64(1.0), f64(0.0, 1.0), np.empty(1, dtype=np.intp))


@pytest.mark.parametrize("kernel", list(ARGS))
def test_none_arrays_are_rejected(kernel: Callable[..., Any]) -> None:
    with pytest.raises(TypeError):
        call(kernel, work=None)


def test_empty_request_arrays_are_fine() -> None:
    empty = {"arrival": f64(), "work": f64(), "deadline": f64(), "slack": np.empty(0)}
    assert call(_capacity.feasibility_scan, **empty) == -1


def test_sizes_that_disagree_raise_rather_than_crash(tmp_path: Path) -> None:
    """Sizes that disagree (arrival of 10^6, work of 3, slack of 2) would read past the
    short arrays (a segfault, exit 139): run apart so a regression fails this test rather
    than the whole run."""
    code = (
        "import numpy as np\n"
        "from learnsched import _capacity\n"
        "one = np.ones(1)\n"
        "try:\n"
        "    _capacity.feasibility_scan(np.zeros(10**6), np.ones(3), np.ones(10**6),\n"
        "                               np.zeros(1), one, np.zeros(1), 0.0, np.empty(2))\n"
        "except ValueError as err:\n"
        "    print(err)\n"
    )
    done = run_python(["-c", code], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "work has 3 entries but arrival has 1000000" in done.stdout


# --- argument conversion and names ------------------------------------------------------------


def kernel_args() -> list[Any]:
    arrival = np.array([0.0, 1.0])
    return [
        arrival,
        np.ones(2),
        arrival + 2.0,
        np.zeros(1),
        np.ones(1),
        np.zeros(1),
        0.0,
        np.empty(2),
    ]


def test_kernels_convert_lossless_inputs() -> None:
    args = kernel_args()
    assert _capacity.feasibility_scan(*args) == -1
    expected = args[7].copy()
    args[0] = [0, 1]  # a list of ints
    args[1] = np.ones(4)[::2]  # strided
    args[2] = np.array([2.0, 3.0], dtype=np.float32)
    args[6] = np.float32(0.0)
    assert _capacity.feasibility_scan(*args) == -1
    np.testing.assert_array_equal(args[7], expected)


@pytest.mark.parametrize(
    ("index", "value", "error", "message"),
    [
        (0, b"\x00" * 16, TypeError, "arrival must be a sequence of numbers, got bytes"),
        (1, np.array([True, False]), TypeError, "work must hold real numbers"),
        (2, np.ones((2, 1)), ValueError, r"deadline must be one-dimensional, got shape \(2, 1\)"),
        (3, None, TypeError, "starts must be a sequence of numbers, got NoneType"),
        (4, np.array([2**62]), ValueError, r"rates\[0\] = 4611686018427387904 is not exact"),
        (5, ["x"], TypeError, "cum must hold real numbers"),
        (6, "0", TypeError, "tolerance must be a number, got '0'"),
        (6, True, TypeError, "tolerance must be a number, got True"),
        (6, 10**400, ValueError, "tolerance must be finite"),
        (7, np.empty(2, dtype=np.float32), TypeError, "slack must be a writable, 1-D"),
        (7, np.empty(4)[::2], TypeError, "slack must be a writable, 1-D"),
        (7, [0.0, 0.0], TypeError, "slack must be a writable, 1-D"),
    ],
)
def test_kernel_errors_name_the_argument(
    index: int, value: object, error: type[Exception], message: str
) -> None:
    args = kernel_args()
    args[index] = value
    with pytest.raises(error, match=message):
        _capacity.feasibility_scan(*args)


def test_read_only_output_and_other_kernels_are_named() -> None:
    args = kernel_args()
    args[7].flags.writeable = False
    with pytest.raises(TypeError, match=r"slack must be a writable"):
        _capacity.feasibility_scan(*args)
    with pytest.raises(TypeError, match=r"out must be a writable, 1-D, C-contiguous intp"):
        _capacity.tail_counts(np.ones(2), np.ones(2), np.empty(2))
    with pytest.raises(TypeError, match=r"best must be a number, got None"):
        _capacity.scan_window(*kernel_args()[:6], 0.0, None, np.empty(2))
    trace = ls.capacity.burst_trace()
    replay = [
        trace.arrival,
        trace.work,
        trace.work,
        np.zeros(1),
        np.ones(1),
        np.zeros(1),
        0.0,
        1.0,
        1.0,
        0.5,
        0.1,
        0.5,
        0.0,
        1.0,
        10.0,
        1.0,
        2**40,
        0.0,
        0.0,
        np.full(len(trace), np.inf),
        np.empty(40),
    ]
    with pytest.raises(ValueError, match=r"admission_kind must be 0, 1 or 2, got 1099511627776"):
        _capacity.replay(*replay)
    replay[16] = 0.0
    with pytest.raises(TypeError, match=r"admission_kind must be an integer, got 0.0"):
        _capacity.replay(*replay)


def test_an_empty_trace_through_idle_window_bounds() -> None:
    """Empty arrays are valid input, and cloning one must not pass a null pointer to
    ``memset`` (undefined behaviour, which UBSan reports)."""
    empty = np.zeros(0)
    assert _capacity.idle_window_bounds(empty, empty, empty, 1.0, 0.0, 0.0, 0.1, 0.0) == (
        [],
        [],
        -1,
    )
