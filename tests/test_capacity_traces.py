"""Traces: the paper's burst generator and CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from learnsched.capacity import (
    Trace,
    burst_trace,
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
