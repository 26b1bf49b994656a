"""Parking and returning a serving engine, through the handoff probes' HTTP dialects.

Everything engine-specific is :mod:`learnsched.handoff`'s (one implementation of each
engine's routes, flags and gauges): the start-up check
(:func:`~learnsched.handoff.preflight.check_server_config`: SGLang's memory saver and
weights backup, vLLM's sleep mode), the load (:func:`~learnsched.handoff.preflight.read_load`:
``vllm:num_requests_running``/``_waiting``, ``sglang:num_running_reqs``/``num_queue_reqs``),
vLLM ``/sleep`` and ``/wake_up`` (with ``/is_sleeping`` confirmed), SGLang
``/release_memory_occupation`` and ``/resume_memory_occupation``. Capacity is back only
when a real greedy request completes after the resume and answers as the same request
did when the loop started: a resume that lost the weights is a failed return.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from .._checks import integer, positive
from ..handoff.endpoint import ServingEndpoint
from ..handoff.preflight import Load, check_server_config, read_load
from ..handoff.readiness import DEFAULT_POLL_S, Deadline, wait_first_request
from ..handoff.recovery import _park, _same_model, _unpark

__all__ = ["EngineControl", "ServingEngine"]


class EngineControl(Protocol):
    """What the scheduler needs of a serving engine."""

    engine: str
    failure: str | None

    def preflight(self) -> list[str]:
        """Refuse a server that cannot park as asked; notes on what went unchecked."""
        ...

    def load(self) -> Load | None:
        """Requests in the engine now (``None``: it exports no load gauges)."""
        ...

    def park(self) -> dict[str, int]:
        """Release the engine's device memory; ``perf_counter_ns`` stamps."""
        ...

    def unpark(self) -> dict[str, int]:
        """Resume it and wait for a completed request; stamps incl. ``request_done``.

        Sets ``failure`` when the engine came back answering differently.
        """
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
        vLLM sleep level (1 keeps the weights in host memory; 2 drops them, and the
        return reloads them before the KV cache wakes).
    tags
        Memory kinds to release and resume (empty: all).
    timeout_s
        Bound on each call and on readiness, seconds.
    max_tokens
        Tokens in the reference and readiness requests.
    poll_s
        Poll interval of the waits, seconds.

    Raises
    ------
    ValueError
        A park the engine cannot undo as asked (e.g. unknown memory tags).
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
        self.reload = self.level == 2  # level 2 drops the weights: reload them on return
        endpoint.dialect.check_park(level=self.level, tags=self.tags, reload=self.reload)
        self.timeout_s = positive("timeout_s", timeout_s)
        self.max_tokens = integer("max_tokens", max_tokens, low=1)
        self.poll_s = poll_s
        self.reference: str | None = None
        self.failure: str | None = None

    def preflight(self) -> list[str]:
        """:func:`~learnsched.handoff.preflight.check_server_config` for this park, then
        the reference answer every return must reproduce (one greedy request, taken once
        here so that no park adds load the scheduler would see as an arrival)."""
        notes = check_server_config(
            self.endpoint, tags=self.tags, reload=self.reload, timeout_s=self.timeout_s
        )
        self.reference = self.endpoint.generate(self.max_tokens, self.timeout_s).text
        return notes

    def load(self) -> Load | None:
        """``/metrics``' running and waiting requests (``None``: no gauges exported)."""
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
        _unpark(self.endpoint, stamps, self.tags, self.reload, self.timeout_s, self.poll_s)
        return self._ready(stamps)

    def ready(self) -> dict[str, int]:
        """Send real requests until one completes; stamps (``resume_sent`` = the start)."""
        return self._ready({"resume_sent": time.perf_counter_ns()})

    def _ready(self, stamps: dict[str, int]) -> dict[str, int]:
        deadline = Deadline(self.timeout_s, f"{self.endpoint.url} after resume")
        answer = wait_first_request(
            self.endpoint, stamps, deadline, self.poll_s, self.max_tokens, health=False
        )
        reference = self.reference
        self.failure = None if reference is None else _same_model(reference, answer.text)
        return stamps
