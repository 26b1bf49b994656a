"""Reading a trace (learnsched.calendar.load_trace on a synthetic Azure-format CSV, as
`learnsched synth` writes it): the columnar read against the row-by-row read it replaces
for regular files, and numpy's own CSV parser (``np.loadtxt``) on the same file's two token
columns, the floor (docs/performance.md has the times).

Run with ``pytest bench/test_bench_traces.py``; each benchmark asserts its answer (the
row-by-row read's values, bit for bit, where it runs). Target: 1.11 M rows in <= 1 s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

from learnsched.calendar import AZURE_TRACE, TokenTrace, load_trace, read_azure_trace, traces
from learnsched.calendar.synth import DAY_S, fit_synthesizer, write_synthetic_trace
from learnsched.capacity import Trace

Benchmark = Callable[..., Any]
REQUESTS_PER_S = 2.568  # the synthetic trace's mean rate (learnsched synth, its default model)
ROW_BY_ROW_SIZES = [100_000]


def azure_file(folder: Path, rows: int) -> Path:
    """The first ``rows`` requests of a synthetic Azure-format trace of whole days (their
    rate follows the daily cycle), written once per folder."""
    path = folder / f"azure-{rows}.csv"
    if not path.exists():
        model = fit_synthesizer(read_azure_trace(AZURE_TRACE))
        days = math.ceil(rows / (REQUESTS_PER_S * DAY_S) * 1.1)
        whole = model.generate(days * DAY_S, np.random.default_rng(0))
        assert len(whole.arrival) >= rows
        first = [
            getattr(whole, n)[:rows] for n in ("arrival", "context_tokens", "generated_tokens")
        ]
        write_synthetic_trace(path, TokenTrace(*first))
    return path


def numpy_floor(path: Path) -> np.ndarray:
    """numpy's CSV parser on the trace's two token columns (no timestamps, no checks)."""
    return np.loadtxt(path, delimiter=",", skiprows=1, usecols=(1, 2))


def row_by_row(path: Path) -> Trace:
    """load_trace as it reads an irregular file: row by row."""
    with mock.patch.object(traces, "read_table", return_value=None):
        return load_trace(path)


def trace_bits(trace: Trace) -> list[list[int]]:
    return [getattr(trace, n).view(np.int64).tolist() for n in ("arrival", "work", "deadline")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traces")


@pytest.mark.benchmark(group="reading a trace")
@pytest.mark.parametrize("rows", [*ROW_BY_ROW_SIZES, 1_109_313])
def test_load_trace(benchmark: Benchmark, folder: Path, rows: int) -> None:
    path = azure_file(folder, rows)
    trace = benchmark(load_trace, path)
    assert len(trace) == rows
    if rows in ROW_BY_ROW_SIZES:
        assert trace_bits(trace) == trace_bits(row_by_row(path))


@pytest.mark.benchmark(group="reading a trace")
@pytest.mark.parametrize("rows", ROW_BY_ROW_SIZES)
def test_load_trace_row_by_row(benchmark: Benchmark, folder: Path, rows: int) -> None:
    path = azure_file(folder, rows)
    trace = benchmark.pedantic(row_by_row, (path,), rounds=1)
    assert len(trace) == rows


@pytest.mark.benchmark(group="reading a trace")
@pytest.mark.parametrize("rows", [*ROW_BY_ROW_SIZES, 1_109_313])
def test_numpy_floor(benchmark: Benchmark, folder: Path, rows: int) -> None:
    path = azure_file(folder, rows)
    tokens = benchmark(numpy_floor, path)
    np.testing.assert_array_equal(tokens[:, 0], read_azure_trace(path).context_tokens)
