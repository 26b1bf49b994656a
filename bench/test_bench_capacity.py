"""Benchmarks of learnsched.capacity: the O(n) feasibility scan against the O(n^2) pure-Python
reference (Eq. 6), and replay throughput in requests per second.

Run with ``pytest bench/test_bench_capacity.py --benchmark-only`` from the repository root;
pyproject's ``pythonpath = ["tests"]`` makes the reference in tests/ importable.
"""

from __future__ import annotations

import capacity_reference as ref
import numpy as np
import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from learnsched.capacity import (
    AIMDConfig,
    RateProfile,
    Trace,
    check_feasibility,
    replay,
)

RATE = 45.0  # work/s
BUDGET_S = 1.2
OVERSIZED = 60.0  # one request needing more work than a budget's service (54)
SCAN_SIZES = [1_000, 10_000, 100_000, 1_000_000]
REFERENCE_SIZES = [1_000]  # 10^4 would take minutes: the reference is O(n^2) in Python
REPLAY_SIZES = [100_000, 1_000_000]


def steady_trace(n: int) -> Trace:
    """40 req/s of unit work on 45 work/s: every slack is 54 - 1 = 53 (the pair k = i binds),
    except one oversized request at n // 2, the first violation."""
    arrival = np.arange(n) / 40.0
    work = np.ones(n)
    work[n // 2] = OVERSIZED
    return Trace(arrival, work, arrival + BUDGET_S)


def assert_scan(slack: np.ndarray, first: int | None, n: int) -> None:
    assert first == n // 2
    assert float(slack.min()) == pytest.approx(RATE * BUDGET_S - OVERSIZED)
    assert float(slack[: n // 2].min()) == pytest.approx(RATE * BUDGET_S - 1.0)


@pytest.mark.benchmark(group="feasibility scan (Eq. 6)")
@pytest.mark.parametrize("n", SCAN_SIZES)
def test_scan_cython(benchmark: BenchmarkFixture, n: int) -> None:
    trace = steady_trace(n)
    capacity = RateProfile.constant(RATE)
    result = benchmark(check_feasibility, trace, capacity)
    assert_scan(result.slack, result.first_violation, n)


@pytest.mark.benchmark(group="feasibility scan (Eq. 6)")
@pytest.mark.parametrize("n", REFERENCE_SIZES)
def test_scan_python_reference(benchmark: BenchmarkFixture, n: int) -> None:
    trace = steady_trace(n)
    args = (trace.arrival.tolist(), trace.work.tolist(), trace.deadline.tolist(), [0.0], [RATE])
    slack = benchmark.pedantic(ref.slack, args, rounds=3, iterations=1)
    assert_scan(np.array(slack), ref.first_violation(slack), n)


@pytest.mark.benchmark(group="replay throughput")
@pytest.mark.parametrize("n", REPLAY_SIZES)
def test_replay_aimd(benchmark: BenchmarkFixture, n: int) -> None:
    rng = np.random.default_rng(0)
    arrival = np.cumsum(rng.exponential(1 / 40, n))
    trace = Trace(arrival, rng.uniform(0.5, 1.5, n), arrival + BUDGET_S)
    result = benchmark(replay, trace, RateProfile.constant(RATE), AIMDConfig())
    assert result.finish.shape == (n,)
    assert np.all(result.finish >= trace.arrival)
    assert 0.0 < result.background_progress < RATE * result.duration_s
    if not benchmark.disabled:  # no timings under --benchmark-disable
        benchmark.extra_info["requests_per_s"] = n / benchmark.stats.stats.median
