"""Parking and returning a serving engine, through the handoff probes' HTTP dialects.

The calls are :mod:`learnsched.handoff`'s (one implementation of each engine's routes):
vLLM ``/sleep`` and ``/wake_up`` (with ``/is_sleeping`` confirmed), SGLang
``/release_memory_occupation`` and ``/resume_memory_occupation``. Capacity is back only
when a real generation request completes after the resume
(:func:`~learnsched.handoff.readiness.wait_first_request`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from .._checks import integer, positive
from ..handoff.endpoint import ServingEndpoint
from ..handoff.readiness import DEFAULT_POLL_S, Deadline, wait_first_request
from ..handoff.recovery import _park, _unpark
from .metrics import Load, read_load

__all__ = ["EngineControl", "ServingEngine"]


class EngineControl(Protocol):
    """What the scheduler needs of a serving engine."""

    engine: str

    def load(self) -> Load:
        """Requests in the engine now."""
        ...

    def park(self) -> dict[str, int]:
        """Release the engine's device memory; ``perf_counter_ns`` stamps."""
        ...

    def unpark(self) -> dict[str, int]:
        """Resume it and wait for a completed request; stamps incl. ``request_done``."""
        ...

    def ready(self) -> dict[str, int]:
        """Wait for a completed request only (nothing to resume); stamps."""
        ...


class ServingEngine:
    """A vLLM or SGLang server the scheduler parks and returns.

    Parameters
    ----------
    endpoint
        The server.
    level
        vLLM sleep level (1 keeps the weights in host memory).
    tags
        Memory kinds to release and resume (empty: all).
    timeout_s
        Bound on each call and on readiness, seconds.
    max_tokens
        Tokens in the readiness request.
    poll_s
        Poll interval of the waits, seconds.
    """

    def __init__(
        self,
        endpoint: ServingEndpoint,
        *,
        level: int = 1,
        tags: Sequence[str] = (),
        timeout_s: float = 30.0,
        max_tokens: int = 4,
        poll_s: float = DEFAULT_POLL_S,
    ) -> None:
        self.endpoint = endpoint
        self.engine = endpoint.engine
        self.level = integer("level", level, low=1, high=2)
        self.tags = tuple(tags)
        self.timeout_s = positive("timeout_s", timeout_s)
        self.max_tokens = integer("max_tokens", max_tokens, low=1)
        self.poll_s = poll_s

    def load(self) -> Load:
        """``/metrics``' running and waiting requests."""
        return read_load(self.endpoint, min(self.timeout_s, 5.0))

    def park(self) -> dict[str, int]:
        """Release (vLLM: until ``/is_sleeping`` says so); stamps ``release_*``."""
        stamps: dict[str, int] = {}
        _park(self.endpoint, stamps, self.level, self.tags, self.timeout_s, self.poll_s)
        return stamps

    def unpark(self) -> dict[str, int]:
        """Resume, then send real requests until one completes; stamps to ``request_done``."""
        stamps: dict[str, int] = {}
        # Level 2 dropped the weights: reload them on the way back (vLLM reload_weights).
        _unpark(self.endpoint, stamps, self.tags, self.level == 2, self.timeout_s, self.poll_s)
        return self._ready(stamps)

    def ready(self) -> dict[str, int]:
        """Send real requests until one completes; stamps (``resume_sent`` = the start)."""
        return self._ready({"resume_sent": time.perf_counter_ns()})

    def _ready(self, stamps: dict[str, int]) -> dict[str, int]:
        deadline = Deadline(self.timeout_s, f"{self.endpoint.url} after resume")
        wait_first_request(self.endpoint, stamps, deadline, self.poll_s, self.max_tokens)
        return stamps
