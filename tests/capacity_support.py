"""Shared pieces of the capacity tests: Poisson traces, a strategy of exact traces on a
grid of eighths, and a hang guard."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from learnsched.capacity import RateProfile, Trace

MILLION = 1_000_000


def poisson_trace(n: int, tokens: bool = False) -> Trace:
    """Poisson arrivals at 40 req/s, work ~ U(0.5, 1.5), 1.2 s budgets; with ``tokens``,
    prompts ~ U{0..2047} and a 64-token output cap."""
    rng = np.random.default_rng(0)
    arrival = np.cumsum(rng.exponential(1 / 40, n))
    work = rng.uniform(0.5, 1.5, n)
    if not tokens:
        return Trace(arrival, work, arrival + 1.2)
    prompts = rng.integers(0, 2048, n).astype(np.float64)
    return Trace(arrival, work, arrival + 1.2, prompts, np.full(n, 64.0))


def million_request_trace() -> Trace:
    """:func:`poisson_trace` of a million requests (about 7 hours)."""
    return poisson_trace(MILLION)


@st.composite
def eighths_cases(
    draw: st.DrawFn,
    *,
    requests: int,
    gap: int,
    work: int,
    budget: int,
    segments: int,
    first_start: int,
    segment: int,
    rate: int,
) -> tuple[Trace, RateProfile]:
    """A trace and rate profile on a grid of eighths (rates in quarters), so every sum and
    product is exact in float64 and exact fits are common.

    Each argument is the largest draw: ``requests`` requests, gaps and budgets of
    ``0..gap`` and ``0..budget`` eighths, work of ``1..work`` eighths, ``segments``
    segments, the first starting within ``first_start`` eighths of 0 and each lasting
    ``1..segment`` eighths, and rates of ``0..rate`` quarters.
    """
    n = draw(st.integers(1, requests))

    def eighths(low: int, high: int) -> list[float]:
        return [k / 8 for k in draw(st.lists(st.integers(low, high), min_size=n, max_size=n))]

    arrival = np.cumsum(eighths(0, gap))
    works = eighths(1, work)
    deadline = arrival + eighths(0, budget)
    m = draw(st.integers(1, segments))
    starts = np.cumsum(
        [draw(st.integers(-first_start, first_start)) / 8]
        + [draw(st.integers(1, segment)) / 8 for _ in range(m - 1)]
    )
    rates = [draw(st.integers(0, rate)) / 4 for _ in range(m)]
    return Trace(arrival, works, deadline), RateProfile(starts, np.array(rates))


def run_bounded(target: Callable[[], None], timeout_s: float) -> None:
    """Run ``target`` on a daemon thread; fail (rather than hang) after ``timeout_s``."""
    failure: list[Exception] = []

    def body() -> None:
        try:
            target()
        except Exception as err:  # noqa: BLE001 - re-raised in the test thread below
            failure.append(err)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"did not finish within {timeout_s} s"
    if failure:
        raise failure[0]
