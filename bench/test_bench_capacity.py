"""Benchmarks of learnsched.capacity against pure-Python baselines, each pair in one group:
the O(n) feasibility scan against the O(n^2) reference (Eq. 6) and, with 100 rate segments, against the constant rate and
the binary-search reference; replay throughput against the request-by-request reference
replay; the static-share closed form against the period-by-period kernel; and the per-segment lendable schedule against
bisecting every segment with full rescans.

Run with ``pytest bench/test_bench_capacity.py --benchmark-only`` from the repository root;
pyproject's ``pythonpath = ["tests"]`` makes the references in tests/ importable. Every
benchmark checks its answer, and all of them also run under ``--benchmark-disable``.
"""

from __future__ import annotations

import capacity_reference as ref
import numpy as np
import pytest
from capacity_support import poisson_trace
from pytest_benchmark.fixture import BenchmarkFixture

from learnsched import _capacity
from learnsched.capacity import (
    DEFAULT_RESOLUTION,
    DEFAULT_TOLERANCE,
    AIMDConfig,
    RateProfile,
    Trace,
    check_feasibility,
    lend,
    max_share_schedule,
    next_share,
    replay,
)

RATE = 45.0  # work/s
BUDGET_S = 1.2
OVERSIZED = 60.0  # one request needing more work than a budget's service (54)
# Geometric sizes; the two kernels share 250-2000 so the curves overlap. The reference is
# O(n^2) in Python (2000 requests: about 2 s a round), the scan O(n log m).
REFERENCE_SIZES = [250, 500, 1_000, 2_000]
SCAN_SIZES = [*REFERENCE_SIZES, 10_000, 100_000, 1_000_000]
REPLAY_REFERENCE_SIZES = [500, 1_000, 2_000]  # brute force per period: O(periods * n)
REPLAY_SIZES = [*REPLAY_REFERENCE_SIZES, 100_000, 1_000_000]
SCHEDULE_SEGMENTS = 100
SCHEDULE_REFERENCE_SIZES = [1_000, 10_000]  # 100 segments x ~40 full scans each
SCHEDULE_SIZES = [*SCHEDULE_REFERENCE_SIZES, 100_000, 1_000_000]


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


def record_rate(benchmark: BenchmarkFixture, n: int) -> None:
    if not benchmark.disabled:  # no timings under --benchmark-disable
        benchmark.extra_info["requests_per_s"] = n / benchmark.stats.stats.median


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


SEGMENTS = 100
SEGMENTED_REFERENCE_SIZES = [1_000, 10_000]  # the reference is Python, about 2 us a request


def segmented_rates(trace: Trace) -> RateProfile:
    """100 equal segments of the constant rate over the trace: the same slack, so the two
    scans differ only in finding each request's segments."""
    return RateProfile(
        np.linspace(0.0, float(trace.arrival[-1]), SEGMENTS), np.full(SEGMENTS, RATE)
    )


@pytest.mark.benchmark(group="feasibility scan, 100 segments (Eq. 6)")
@pytest.mark.parametrize("n", [10_000, 1_000_000])
def test_scan_constant_rate(benchmark: BenchmarkFixture, n: int) -> None:
    trace = steady_trace(n)
    result = benchmark(check_feasibility, trace, RateProfile.constant(RATE))
    assert_scan(result.slack, result.first_violation, n)
    record_rate(benchmark, n)


@pytest.mark.benchmark(group="feasibility scan, 100 segments (Eq. 6)")
@pytest.mark.parametrize("n", [*SEGMENTED_REFERENCE_SIZES, 1_000_000])
def test_scan_segment_cursor(benchmark: BenchmarkFixture, n: int) -> None:
    trace = steady_trace(n)
    result = benchmark(check_feasibility, trace, segmented_rates(trace))
    assert_scan(result.slack, result.first_violation, n)
    record_rate(benchmark, n)


@pytest.mark.benchmark(group="feasibility scan, 100 segments (Eq. 6)")
@pytest.mark.parametrize("n", SEGMENTED_REFERENCE_SIZES)
def test_scan_binary_search_reference(benchmark: BenchmarkFixture, n: int) -> None:
    """The scan with two binary searches per request (the kernel before its cursors), in
    Python: the kernel's slack must be bitwise its slack."""
    trace = steady_trace(n)
    capacity = segmented_rates(trace)
    slack = benchmark.pedantic(ref.relative_scan, (trace, capacity), rounds=3, iterations=1)
    assert np.array(slack).tobytes() == check_feasibility(trace, capacity).slack.tobytes()
    record_rate(benchmark, n)


REPLAY_CONFIG = AIMDConfig()


def python_replay(trace: Trace) -> tuple[list[float], list[float]]:
    """The reference replay with the same AIMD rule and periods as ``replay``'s defaults."""
    periods = max(1, int(np.ceil((trace.deadline.max() - trace.arrival[0]) / 0.1)))
    return ref.replay(
        trace.arrival.tolist(),
        trace.work.tolist(),
        [0.0] * len(trace),
        rate=RATE,
        period_s=0.1,
        periods=periods,
        rate_window_s=1.0,
        next_share=lambda share, rate, backlog: next_share(REPLAY_CONFIG, share, rate, backlog),
        initial_share=REPLAY_CONFIG.initial_share,
        admits=lambda in_flight, count: True,
    )


@pytest.mark.benchmark(group="replay throughput")
@pytest.mark.parametrize("n", REPLAY_SIZES)
def test_replay_aimd(benchmark: BenchmarkFixture, n: int) -> None:
    trace = poisson_trace(n)
    result = benchmark(replay, trace, RateProfile.constant(RATE), REPLAY_CONFIG)
    assert result.finish.shape == (n,)
    assert np.all(result.finish >= trace.arrival)
    assert 0.0 < result.background_progress < RATE * result.duration_s
    record_rate(benchmark, n)


@pytest.mark.benchmark(group="replay throughput")
@pytest.mark.parametrize("n", REPLAY_REFERENCE_SIZES)
def test_replay_python_reference(benchmark: BenchmarkFixture, n: int) -> None:
    trace = poisson_trace(n)
    finish, shares = benchmark.pedantic(python_replay, (trace,), rounds=3, iterations=1)
    expected = replay(trace, RateProfile.constant(RATE), REPLAY_CONFIG)
    np.testing.assert_allclose(shares, expected.shares, rtol=0, atol=1e-12)
    np.testing.assert_allclose(finish, expected.finish, rtol=1e-9, atol=1e-9)
    record_rate(benchmark, n)


STATIC_SHARE = 0.25
STATIC_SIZES = [100_000, 1_000_000]


def kernel_static_replay(trace: Trace, capacity: RateProfile) -> tuple[np.ndarray, float]:
    """The period-by-period kernel under the static share (how replay ran it before its
    closed form): finish times and background progress."""
    start = float(trace.arrival[0])
    periods = max(1, int(np.ceil((float(trace.deadline.max()) - start) / 0.1)))
    finish, shares = np.full(len(trace), np.inf), np.empty(periods)
    s = STATIC_SHARE
    progress = _capacity.replay(
        trace.arrival, trace.work, trace.work, capacity.starts, capacity.rates,
        capacity.cumulative, start, 0.1, 1.0, s, 0.0, 1.0, s, s, 10.0, 0.2, 0, np.inf, 0.0,
        finish, shares,
    )  # fmt: skip
    return finish, progress


def static_profile(trace: Trace, segments: int) -> RateProfile:
    """A constant 60 work/s, as one segment or as ``segments`` equal ones."""
    if segments == 1:
        return RateProfile.constant(60.0)
    return RateProfile(
        np.linspace(0.0, float(trace.arrival[-1]), segments), np.full(segments, 60.0)
    )


@pytest.mark.benchmark(group="static-share replay")
@pytest.mark.parametrize("segments", [1, 100])
@pytest.mark.parametrize("n", STATIC_SIZES)
def test_static_replay_closed_form(benchmark: BenchmarkFixture, n: int, segments: int) -> None:
    trace = poisson_trace(n)
    capacity = static_profile(trace, segments)
    result = benchmark(replay, trace, capacity, STATIC_SHARE)
    finish, progress = kernel_static_replay(trace, capacity)
    assert result.background_progress == progress
    np.testing.assert_allclose(result.finish, finish, rtol=0, atol=1e-6)
    record_rate(benchmark, n)


@pytest.mark.benchmark(group="static-share replay")
@pytest.mark.parametrize("segments", [1, 100])
@pytest.mark.parametrize("n", STATIC_SIZES)
def test_static_replay_kernel(benchmark: BenchmarkFixture, n: int, segments: int) -> None:
    trace = poisson_trace(n)
    finish, _ = benchmark(kernel_static_replay, trace, static_profile(trace, segments))
    assert np.all(finish >= trace.arrival)
    record_rate(benchmark, n)


def schedule_rates(trace: Trace) -> RateProfile:
    """100 equal segments of 60 work/s over the trace: about a third is lendable."""
    edges = np.linspace(0.0, float(trace.arrival[-1]), SCHEDULE_SEGMENTS)
    return RateProfile(edges, np.full(SCHEDULE_SEGMENTS, 60.0))


@pytest.mark.benchmark(group="lendable schedule (100 segments)")
@pytest.mark.parametrize("n", SCHEDULE_SIZES)
def test_schedule_windowed(benchmark: BenchmarkFixture, n: int) -> None:
    trace = poisson_trace(n)
    capacity = schedule_rates(trace)
    shares = benchmark.pedantic(max_share_schedule, (trace, capacity), rounds=3, iterations=1)
    assert shares is not None
    assert shares.shape == (SCHEDULE_SEGMENTS,)
    assert check_feasibility(trace, lend(capacity, shares)).feasible
    assert np.all((shares >= 0.0) & (shares <= 1.0))
    assert float(shares.mean()) > 0.2  # 40 of 60 work/s is busy on average


@pytest.mark.benchmark(group="lendable schedule (100 segments)")
@pytest.mark.parametrize("n", SCHEDULE_REFERENCE_SIZES)
def test_schedule_full_rescan_reference(benchmark: BenchmarkFixture, n: int) -> None:
    trace = poisson_trace(n)
    capacity = schedule_rates(trace)
    args = (trace, capacity, DEFAULT_TOLERANCE, DEFAULT_RESOLUTION)
    shares = benchmark.pedantic(ref.max_share_schedule_bisect, args, rounds=1, iterations=1)
    assert shares is not None
    fast = max_share_schedule(trace, capacity)
    assert fast is not None
    np.testing.assert_allclose(fast, shares, rtol=0, atol=1e-6)
