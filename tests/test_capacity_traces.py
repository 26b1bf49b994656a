"""Traces: the paper's burst generator and CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from learnsched._checks import float64_vector
from learnsched.capacity import (
    RateProfile,
    Trace,
    burst_trace,
    lend,
    read_rate_csv,
    read_trace_csv,
    write_trace_csv,
)


def test_burst_trace_has_paper_shape() -> None:
    trace = burst_trace()
    assert len(trace) == 40 + 400 + 40
    for phase, rate in enumerate((4, 40, 4)):
        inside = (trace.arrival >= 10 * phase) & (trace.arrival < 10 * (phase + 1))
        assert np.count_nonzero(inside) == rate * 10
    np.testing.assert_allclose(trace.deadline - trace.arrival, 1.2)
    assert trace.max_output_tokens is not None
    assert set(trace.max_output_tokens) == {64.0}


def test_burst_trace_rejects_bad_rates() -> None:
    with pytest.raises(ValueError, match="high_rate must be > 0"):
        burst_trace(high_rate=0.0)


def test_csv_round_trip_is_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    arrival = np.cumsum(rng.exponential(0.1, 50))
    trace = Trace(
        arrival,
        rng.uniform(0.1, 2.0, 50),
        arrival + 1.0 / 3.0,
        prompt_tokens=rng.integers(0, 4096, 50),
        max_output_tokens=np.full(50, 64),
    )
    path = tmp_path / "trace.csv"
    write_trace_csv(path, trace)
    back = read_trace_csv(path)
    for name in ("arrival", "work", "deadline", "prompt_tokens", "max_output_tokens"):
        assert np.array_equal(getattr(back, name), getattr(trace, name)), name
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_csv_without_tokens_and_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("id,arrival,work,deadline\na,0,1,2\nb,1,1,3\n")
    trace = read_trace_csv(path)
    assert trace.arrival.tolist() == [0.0, 1.0]
    assert trace.prompt_tokens is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("arrival,work\n0,1\n", "missing column"),
        ("arrival,work,deadline\n0,x,1\n", "line 2: work must be a number, got 'x'"),
        ("arrival,work,deadline\n0,1\n", "line 2: deadline must be a number, got '<missing>'"),
        ("arrival,work,deadline\n1,1,2\n0,1,2\n", "arrival must be sorted"),
        ("arrival,work,deadline,prompt_tokens\n0,1,2,5\n", "must be given together"),
        ("", "missing column"),
    ],
)
def test_bad_trace_csv(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_trace_csv(path)


def test_rate_csv(tmp_path: Path) -> None:
    path = tmp_path / "rate.csv"
    path.write_text("start,rate\n0,45\n10,30\n")
    profile = read_rate_csv(path)
    assert profile.rates.tolist() == [45.0, 30.0]
    path.write_text("start,rate\n0,45\n10,-1\n")
    with pytest.raises(ValueError, match=r"rates\[1\] must be >= 0"):
        read_rate_csv(path)


def test_missing_file_is_os_error(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="No such file"):
        read_trace_csv(tmp_path / "absent.csv")


# --- arrays: converted only when lossless, bounded before they are made -----------------------


def test_huge_integers_in_arrays_are_named() -> None:
    with pytest.raises(ValueError, match=r"arrival\[0\] must be finite"):
        Trace([10**400], [1.0], [1.0])
    with pytest.raises(ValueError, match=r"rates\[1\] must be finite"):
        RateProfile([0.0, 1.0], [1.0, 10**400])
    capacity = RateProfile.constant(1.0)
    with pytest.raises(ValueError, match=r"share must be finite"):
        lend(capacity, 10**400)
    with pytest.raises(ValueError, match=r"shares\[0\] must be finite"):
        lend(capacity, [10**400])
    with pytest.raises(ValueError, match=r"arrival\[0\] = 1152921504606846977 is not exact"):
        Trace(np.array([2**60 + 1]), [1.0], [2.0**61])


def test_arrays_convert_only_when_lossless() -> None:
    trace = Trace(np.arange(3, dtype=np.int32), np.ones(3, dtype=np.float32), [5, 5, 5])
    assert trace.arrival.dtype == np.float64
    assert list(trace.arrival) == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match=r"work\[1\] must be a number, got True"):
        Trace([0.0, 1.0], [1.0, True], [2.0, 2.0])
    with pytest.raises(TypeError, match=r"work must hold real numbers, got an array of dtype bool"):
        Trace([0.0], np.array([True]), [1.0])
    with pytest.raises(TypeError, match=r"dtype timedelta64"):
        Trace(np.array([1], dtype="m8[s]"), [1.0], [2.0])
    with pytest.raises(TypeError, match=r"dtype complex128"):
        Trace([1j], [1.0], [2.0])
    with pytest.raises(TypeError, match=r"arrival must be a sequence of numbers, got bytes"):
        Trace(b"\x00" * 8, [1.0], [2.0])


def test_int64_beyond_2_53_is_refused_not_rounded() -> None:
    """Exactness is checked on the integer itself: compared after its conversion,
    ``2**53 + 1`` would equal ``2**53`` and pass."""
    for values in (np.array([2**53 + 1]), [2**53 + 1], np.array([-(2**63)]), [2**64]):
        with pytest.raises(ValueError, match=r"is not exact as a float64 \(> 2\*\*53\)"):
            float64_vector("arrival", values)
    exact = float64_vector("arrival", np.array([2**53, -(2**53)], dtype=np.int64))
    assert exact.tolist() == [2.0**53, -(2.0**53)]


def test_a_burst_trace_is_bounded_before_its_arrays_are_made() -> None:
    """The request count is checked before numpy is asked for the arrays: ``high_rate=1e12``
    would ask for 80 TB, ``phase_s=1e308`` for an infinite count."""
    from learnsched.capacity.traces import burst_trace

    assert len(burst_trace().arrival) == 480
    with pytest.raises(ValueError, match=r"= 1e\+13 exceeds the limit of 16777216"):
        burst_trace(high_rate=1e12)
    with pytest.raises(ValueError, match=r"= inf exceeds the limit"):
        burst_trace(phase_s=1e308)
