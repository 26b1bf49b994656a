"""Shared fixtures of the capacity tests: a million-request trace and a hang guard."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from learnsched.capacity import Trace

MILLION = 1_000_000


def million_request_trace() -> Trace:
    """Poisson arrivals at 40 req/s (about 7 hours), work ~ U(0.5, 1.5), 1.2 s budgets."""
    rng = np.random.default_rng(0)
    arrival = np.cumsum(rng.exponential(1 / 40, MILLION))
    return Trace(arrival, rng.uniform(0.5, 1.5, MILLION), arrival + 1.2)


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
