"""Returning the engine whatever happens: bounded retries, and quarantine when it fails.

A return that fails (a resume answered 500, the engine unreachable for a moment) is
tried again with exponential backoff (:class:`Backoff`: 5 tries, 0.5 s doubling to at
most 8 s, about 15 s of waiting in all) before the loop gives up with
:class:`EngineUnreturnable` (``learnsched run`` exits 3 naming the engine). An engine
that may still be parked, or that came back answering differently (weights not
restored), is *quarantined*: a ``quarantine`` record in the ledger stops every later
run on that ledger from lending until an operator has looked at the engine and run
``learnsched run --clear-quarantine`` (a ``quarantine-cleared`` record). An engine
that dies while lent (:class:`EngineLost`: its server gone, or vLLM's engine core dead)
has nothing to return to: the run records it and stops at once (``learnsched run`` exits
4), and the next run confirms the restarted engine serves before it lends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .._checks import integer, nonnegative, positive
from .._errors import EXIT_ENVIRONMENT
from ..serving.endpoint import HttpStatusError, StreamError
from ..serving.errors import HandoffProbeError

__all__ = ["Backoff", "EngineLost", "EngineUnreturnable", "Quarantined", "retryable"]

T = TypeVar("T")


class EngineUnreturnable(HandoffProbeError):
    """The engine could not be returned to serving (it may still be parked)."""

    exit_status = 3  # the command line's status: the engine or ledger is not ours to use


class EngineLost(HandoffProbeError):
    """The engine died while lent: there is nothing to return, and no more lending."""

    exit_status = EXIT_ENVIRONMENT  # the command line's status: the engine does not answer


class Quarantined(HandoffProbeError):
    """The ledger holds an uncleared quarantine: no lending until it is cleared."""

    exit_status = 3  # the command line's status: the engine or ledger is not ours to use


def retryable(err: BaseException) -> bool:
    """Whether a failed return is worth trying again: the engine unreachable or slow, a
    server error or rate limit (5xx, 408, 429), a broken readiness stream."""
    if isinstance(err, HttpStatusError):
        return err.retryable
    return isinstance(err, (ConnectionError, TimeoutError, StreamError))


@dataclass(frozen=True)
class Backoff:
    """Bounded exponential backoff.

    Parameters
    ----------
    tries
        Attempts in all (the first included).
    first_s
        Wait after the first failure, seconds.
    factor
        Each wait is this times the last.
    max_s
        No wait longer than this, seconds.
    """

    tries: int = 5
    first_s: float = 0.5
    factor: float = 2.0
    max_s: float = 8.0

    def __post_init__(self) -> None:
        integer("tries", self.tries, low=1)
        nonnegative("first_s", self.first_s)
        positive("factor", self.factor)
        nonnegative("max_s", self.max_s)

    def waits(self) -> list[float]:
        """The waits between the attempts, seconds (``tries - 1`` of them)."""
        return [min(self.first_s * self.factor**i, self.max_s) for i in range(self.tries - 1)]

    def run(
        self,
        call: Callable[[], T],
        *,
        what: str,
        on_retry: Callable[[int, BaseException, float], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> T:
        """``call()`` until it succeeds or the tries run out.

        Parameters
        ----------
        call
            The attempt.
        what
            Names the engine in the final error (e.g. ``"vllm at http://..."``).
        on_retry
            Called with the attempt number, its error and the wait before the next.
        sleep
            How to wait (tests pass a recorder).

        Raises
        ------
        EngineUnreturnable
            The last attempt failed with a retryable error (the message names ``what``,
            the tries and the last error).
        Exception
            A non-retryable error, at once.
        """
        waits = self.waits()
        for attempt in range(1, self.tries + 1):
            try:
                return call()
            except Exception as err:  # sorted by retryable() just below
                if not retryable(err):
                    raise
                if attempt == self.tries:
                    raise EngineUnreturnable(
                        f"{what}: not returned to serving after {self.tries} tries "
                        f"({err}); it may still be parked"
                    ) from err
                wait = waits[attempt - 1]
                if on_retry is not None:
                    on_retry(attempt, err, wait)
                sleep(wait)
        raise AssertionError("unreachable: the last try returns or raises")
