"""Bounded polling: call a check every few milliseconds until it sees a condition.

Every wait on an engine (a park's release, a resume's first request, an idle queue)
polls with :func:`poll_until`, which stamps the first poll that saw the condition and
the poll before it, so a measured phase ends within one poll of when it did. Every
stamp is ``time.perf_counter_ns()``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .._checks import number, positive

__all__ = ["DEFAULT_POLL_S", "Polled", "check_poll", "poll_until"]

T = TypeVar("T")
# Inside the 10-50 ms band: fine enough for sub-second resumes, light on the engine.
DEFAULT_POLL_S = 0.02
POLL_RANGE_S = (0.010, 0.050)


def check_poll(poll_s: float) -> float:
    """``poll_s`` in seconds, or ``ValueError`` unless within 10-50 ms."""
    low, high = POLL_RANGE_S
    value = number("poll_s", poll_s)
    if not low <= value <= high:
        raise ValueError(f"poll_s must be within {low:g}-{high:g} s (10-50 ms), got {poll_s!r}")
    return value


@dataclass(frozen=True)
class Polled(Generic[T]):
    """The first poll that saw a condition.

    Parameters
    ----------
    value
        What the check returned.
    t_ns
        When that poll's check returned, ``perf_counter_ns``: the condition held by then.
    previous_ns
        When the poll before it started, or ``None`` if the first poll already saw it. The
        condition became true in ``(previous_ns, t_ns]``: a check that saw it may have started
        just before it happened, so its own start would be early.
    polls
        Polls made, including the last.
    """

    value: T
    t_ns: int
    previous_ns: int | None
    polls: int


def poll_until(
    check: Callable[[], T | None], *, what: str, timeout_s: float, poll_s: float
) -> Polled[T]:
    """Call ``check`` every ``poll_s`` seconds until it returns something not ``None``.

    Raises
    ------
    TimeoutError
        Not seen within ``timeout_s`` seconds; the message names ``what``.
    """
    positive("timeout_s", timeout_s)
    positive("poll_s", poll_s)
    start = time.perf_counter_ns()
    deadline = start + int(timeout_s * 1e9)
    previous: int | None = None
    polls = 0
    while True:
        started = time.perf_counter_ns()
        polls += 1
        value = check()
        if value is not None:
            return Polled(value, time.perf_counter_ns(), previous, polls)
        previous = started
        remaining_ns = deadline - time.perf_counter_ns()
        if remaining_ns <= 0:
            raise TimeoutError(f"{what}: not seen within {timeout_s:g} s ({polls} polls)")
        time.sleep(min(poll_s, remaining_ns / 1e9))
