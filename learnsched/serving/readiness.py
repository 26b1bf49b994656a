"""Readiness: capacity is back only when a real generation request completes.

A health check answering 200 is not readiness (vLLM answers it while asleep), and a
resume call's return says nothing about the first token. :func:`wait_first_request`
sends real requests until one completes (after ``/health`` answers, for a cold start:
a warm resume skips it, since SGLang's ``/health`` is itself a generation that waits at
least 1 s), within one :class:`Deadline` for the whole phase, and returns what the
request generated so the caller can check the same model is back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from .._checks import positive
from .endpoint import Generation, HttpStatusError, ServingEndpoint, StreamError
from .polling import DEFAULT_POLL_S, check_poll, poll_until

__all__ = ["DEFAULT_POLL_S", "Deadline", "check_poll", "wait_first_request"]

T = TypeVar("T")


class Deadline:
    """One time budget for a whole phase.

    Parameters
    ----------
    timeout_s
        The budget, seconds (> 0).
    what
        The phase, named in the ``TimeoutError``.
    """

    def __init__(self, timeout_s: float, what: str) -> None:
        self.timeout_s = positive("timeout_s", timeout_s)
        self.end_ns = time.perf_counter_ns() + int(self.timeout_s * 1e9)
        self.what = what

    def left(self) -> float:
        """Seconds left, or ``TimeoutError`` once none are."""
        remaining = (self.end_ns - time.perf_counter_ns()) / 1e9
        if remaining <= 0:
            raise TimeoutError(f"{self.what}: not ready within {self.timeout_s:g} s")
        return remaining


def _until(
    check: Callable[[], T | None], what: str, deadline: Deadline, poll_s: float, last: list[str]
) -> tuple[T, int]:
    """:func:`poll_until` within ``deadline``; a timeout names the last error seen."""
    try:
        seen = poll_until(check, what=what, timeout_s=deadline.left(), poll_s=poll_s)
    except TimeoutError as err:
        # Name the whole phase's budget, whichever of the two clocks ran out first.
        message = f"{deadline.what}: {what} not ready within {deadline.timeout_s:g} s"
        if last:
            message += f"; last error: {last[-1]}"
        raise TimeoutError(message) from err
    return seen.value, seen.t_ns


def _wait_health(
    endpoint: ServingEndpoint,
    deadline: Deadline,
    poll_s: float,
    alive: Callable[[], None] | None,
    last: list[str],
) -> int:
    """Poll ``GET /health`` until it answers 200; the stamp it did."""

    def health() -> bool | None:
        if alive is not None:
            alive()
        try:
            status = endpoint.request("GET", "/health", None, min(deadline.left(), 5.0))[0]
        except (ConnectionError, TimeoutError) as err:
            last.append(str(err))
            return None
        if status == 200:
            return True
        last.append(f"GET {endpoint.url}/health answered {status}")
        return None

    return _until(health, f"{endpoint.url}/health", deadline, poll_s, last)[1]


def _wait_generation(
    endpoint: ServingEndpoint,
    deadline: Deadline,
    poll_s: float,
    max_tokens: int,
    alive: Callable[[], None] | None,
    last: list[str],
) -> Generation:
    """Send real requests until one completes; that request."""

    def request() -> Generation | None:
        if alive is not None:
            alive()
        try:
            return endpoint.generate(max_tokens, deadline.left())
        except HttpStatusError as err:
            if not err.retryable:
                raise
            last.append(str(err))
        except (StreamError, ConnectionError) as err:
            last.append(str(err))
        return None  # not serving yet: try again until the deadline

    return _until(request, f"{endpoint.url} first request", deadline, poll_s, last)[0]


def wait_first_request(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    deadline: Deadline,
    poll_s: float,
    max_tokens: int,
    alive: Callable[[], None] | None = None,
    health: bool = True,
) -> Generation:
    """Poll health (if ``health``), then send real requests until one completes.

    Answers that may change while an engine comes up (no connection, 408, 429, 5xx,
    an error event in the stream) are retried until the deadline; any other 4xx is
    permanent and raised at once.

    Parameters
    ----------
    endpoint
        The engine.
    stamps
        Gains ``health_200`` (with ``health``), ``first_token`` and ``request_done``
        (``perf_counter_ns``).
    deadline
        The budget for both waits together.
    poll_s
        Poll interval, seconds.
    max_tokens
        Tokens in the readiness request.
    alive
        Called before each try; raises if the engine can no longer come up.
    health
        Wait for ``GET /health`` first (cold starts); ``False`` goes straight to real
        requests (warm resumes: no ``health_200`` stamp).

    Returns
    -------
    Generation
        The first completed request (its text shows which model answered).
    """
    last: list[str] = []
    if health:
        stamps["health_200"] = _wait_health(endpoint, deadline, poll_s, alive, last)
    done = _wait_generation(endpoint, deadline, poll_s, max_tokens, alive, last)
    stamps["first_token"], stamps["request_done"] = done.first_ns, done.done_ns
    return done
