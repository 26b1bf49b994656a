"""Parking and returning a serving engine, through the public engine layer.

Everything engine-specific is :mod:`learnsched.handoff`'s (one implementation of each
engine's routes, flags and gauges): the start-up check
(:func:`~learnsched.handoff.preflight.check_server_config`: SGLang's memory saver and
weights backup, vLLM's sleep mode), the load (:func:`~learnsched.handoff.preflight.read_load`:
``vllm:num_requests_running``/``_waiting``, ``sglang:num_running_reqs``/``num_queue_reqs``),
and the park and resume themselves (:func:`learnsched.handoff.engines.park`, which
refuses a busy engine and pauses SGLang's generation around the release; vLLM sleeps
with ``mode=wait``; :func:`~learnsched.handoff.engines.resume` undoes only what the park
released). Capacity is back only when a real greedy request completes after the resume
and answers as the same request did when the loop started
(:func:`~learnsched.handoff.engines.same_model`): a resume that lost the weights is a
failed return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from .._checks import integer, nonnegative, positive
from ..handoff.endpoint import ServingEndpoint
from ..handoff.engines import Parked, park, resume, same_model
from ..handoff.preflight import Load, check_server_config, read_load
from ..handoff.readiness import DEFAULT_POLL_S, Deadline, wait_first_request

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

    def park(self, on_mark: Callable[[str], None] | None = None) -> dict[str, int]:
        """Release the idle engine's device memory; ``perf_counter_ns`` stamps
        (``on_mark`` is told each as it is taken)."""
        ...

    def unpark(self) -> dict[str, int]:
        """Resume it and wait for a completed request; stamps incl. ``request_done``.

        Sets :attr:`failure` when the engine came back answering differently.
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
    idle_wait_s
        How long a park waits for the engine's gauges to show idle, seconds (they lag
        the last request's end by a stats interval).

    Attributes
    ----------
    parked
        The park in force (``None`` when serving); a restarted loop may set it from a
        recorded :meth:`~learnsched.handoff.engines.Parked.to_json` before
        :meth:`unpark`.

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
        idle_wait_s: float = 0.5,
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
        self.idle_wait_s = nonnegative("idle_wait_s", idle_wait_s)
        self.reference: str | None = None
        self.failure: str | None = None
        self.parked: Parked | None = None

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

    def park(self, on_mark: Callable[[str], None] | None = None) -> dict[str, int]:
        """Park the idle engine (:func:`~learnsched.handoff.engines.park`); its stamps.

        ``on_mark`` is called with each stamp's name as the park reaches it.

        Raises
        ------
        EngineBusy
            The engine was not idle: nothing was parked.
        """
        self.parked = park(
            self.endpoint, level=self.level, tags=self.tags, timeout_s=self.timeout_s,
            poll_s=self.poll_s, idle_wait_s=self.idle_wait_s, on_mark=on_mark,
        )  # fmt: skip
        return dict(self.parked.stamps)

    def unpark(self) -> dict[str, int]:
        """Resume what the park released, then send real requests until one completes;
        stamps to ``request_done``.

        Without a park in force (a killed run's, not recorded), it resumes as this
        engine parks: vLLM only if ``/is_sleeping`` says so.
        """
        parked = self.parked or self._assumed_park()
        # Level 2 dropped the weights: reload them on the way back (vLLM reload_weights).
        stamps = resume(
            self.endpoint, parked, reload=self.reload, timeout_s=self.timeout_s,
            poll_s=self.poll_s,
        )  # fmt: skip
        self.parked = None
        return self._ready(stamps)

    def _assumed_park(self) -> Parked:
        """What a park of this engine releases, paused where the dialect pauses."""
        dialect = self.endpoint.dialect
        return Parked(
            dialect.name, self.level, self.tags, dialect.released_tags(self.tags),
            paused=dialect.pauses,
        )  # fmt: skip

    def ready(self) -> dict[str, int]:
        """Send real requests until one completes; stamps (``resume_sent`` = the start)."""
        return self._ready({"resume_sent": time.perf_counter_ns()})

    def _ready(self, stamps: dict[str, int]) -> dict[str, int]:
        deadline = Deadline(self.timeout_s, f"{self.endpoint.url} after resume")
        answer = wait_first_request(
            self.endpoint, stamps, deadline, self.poll_s, self.max_tokens, health=False
        )
        reference = self.reference
        self.failure = None if reference is None else same_model(reference, answer.text)
        return stamps
