"""Parking and returning a serving engine, through the public engine layer.

Everything engine-specific is :mod:`learnsched.handoff`'s (one implementation of each
engine's routes, flags and gauges): the start-up check
(:func:`~learnsched.serving.preflight.check_server_config`: SGLang's memory saver and
weights backup, vLLM's sleep mode), the load (:func:`~learnsched.serving.preflight.read_load`:
``vllm:num_requests_running``/``_waiting``, ``sglang:num_running_reqs``/``num_queue_reqs``),
and the park and resume themselves (:func:`learnsched.serving.engines.park`, which
refuses a busy engine and pauses SGLang's generation around the release; vLLM sleeps
with ``mode=wait``; :func:`~learnsched.serving.engines.resume` undoes only what the park
released). Capacity is back only when a real greedy request completes after the resume
and answers as the same request did when the loop started
(:func:`~learnsched.serving.engines.same_model`): a resume that lost the weights is a
failed return.

With a front door (the gate, :class:`learnsched.gate.Gate`) the engine is parked only
after the door is closed and the requests in flight have drained (bounded by
``drain_s``: otherwise the park is refused and the window skipped), requests that arrive
meanwhile are held, and the door opens again only once the return is confirmed: the
door's own counts are exact. Without one, idleness is the engine's ``/metrics`` gauges,
which show a request only :data:`GAUGE_LAG_S` after it arrived (the engine's stats are
refreshed by its own steps, and each read queues behind the requests on the API
server's event loop): an engine that pauses first (SGLang) is checked again that long
after its pause; vLLM's ``mode=wait`` sleep lets a request the gauges did not show yet
finish first.

A park also refuses an engine that says it is not serving when the scheduler did not
park it (:class:`EnginePaused`: vLLM paused by another controller, e.g. an RL weight
sync, whose pause a wake-up would end), and :meth:`ServingEngine.alive` tells whether
the server still lives, without a generation (vLLM ``/health``, 503 once its engine
core died; otherwise ``/v1/models``). Both
greedy answers (the reference and the check after each return) are taken with the door
closed, so the engine serves them alone, at a batch of one, where greedy decoding is
deterministic: a return that finds the door open (a start-up heal, an attached gate whose
lease lapsed) closes it before the resume and lets the requests already past it finish
before its check; without the gate a check under load needs the engines' batch-invariant
modes (``VLLM_BATCH_INVARIANT=1``, SGLang ``--enable-deterministic-inference``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from .._checks import integer, nonnegative, positive
from ..serving.endpoint import ServingEndpoint
from ..serving.engines import Door, Parked, check_idle, park, resume, same_model
from ..serving.errors import EngineBusy
from ..serving.preflight import Load, check_server_config, read_load
from ..serving.readiness import DEFAULT_POLL_S, Deadline, wait_first_request

__all__ = ["GAUGE_LAG_S", "EngineControl", "EnginePaused", "FrontDoor", "ServingEngine"]

GAUGE_LAG_S = 0.5
"""How long an engine's ``/metrics`` load gauges may take to show a request it accepted,
seconds. vLLM 0.32 (CPU build, a tiny model, a shared 2-core machine) showed one a median
0.04-0.16 s after it was sent, up to about 0.5 s on a busy machine; on an overloaded one
up to 1 s, and some requests never showed at all (the gate's counts are exact)."""


class EnginePaused(EngineBusy):
    """The engine says it is parked or paused, and the scheduler did not park it: another
    controller holds it (vLLM ``POST /pause``: an RL weight sync). Nothing is touched: a
    park would sleep it and its wake-up end the other controller's pause."""

    exit_status = 3  # the command line's status: the engine is not ours to use now


class FrontDoor(Door, Protocol):
    """A door requests come through that the scheduler closes and opens (the gate)."""

    def close(self, drain_s: float) -> bool:
        """Hold new requests; whether those in flight finished within ``drain_s``."""
        ...

    def open(self) -> list[float]:
        """Forward the held requests; each one's added latency, seconds."""
        ...

    def release_sent(self) -> None:
        """A park's release is being sent."""
        ...

    def release_done(self) -> None:
        """The park's release answered or failed."""
        ...


class EngineControl(Protocol):
    """What the scheduler needs of a serving engine."""

    engine: str
    url: str
    failure: str | None
    reference: str | None
    last_held_s: list[float]

    def preflight(self) -> list[str]:
        """Refuse a server that cannot park as asked; notes on what went unchecked."""
        ...

    def take_reference(self) -> None:
        """Take the greedy answer every return must reproduce (the engine serving)."""
        ...

    def load(self) -> Load | None:
        """Requests in the engine now (``None``: it exports no load gauges)."""
        ...

    @property
    def reads_gauges(self) -> bool:
        """Whether :meth:`load` reads the engine's ``/metrics`` (no door): each read
        costs the engine's API server CPU, and the gauges cannot move while parked."""
        ...

    def alive(self) -> bool:
        """Whether the server still lives (asked without a generation: safe while
        parked); ``ConnectionError`` where it cannot be reached."""
        ...

    def abandon(self) -> None:
        """The engine died while parked: forget the park and let what the door held go
        on (to fail at once, rather than wait for a return that cannot come)."""
        ...

    def park(self, on_mark: Callable[[str], None] | None = None) -> dict[str, int]:
        """Release the idle engine's device memory; ``perf_counter_ns`` stamps
        (``on_mark`` is told each as it is taken)."""
        ...

    def unpark(self) -> dict[str, int]:
        """Resume it and wait for a completed request; stamps incl. ``request_done``.

        Sets ``failure`` when the engine came back answering differently.
        """
        ...

    def ready(self) -> dict[str, int]:
        """Wait for a completed request only (nothing to resume); stamps."""
        ...

    def is_parked(self) -> bool | None:
        """The engine's own view of whether it is parked (``None``: it has no route
        that says, as SGLang has none)."""
        ...

    def park_state(self) -> str | None:
        """The engine's own view, one of :data:`~learnsched.serving.engines.base.PARK_STATES`
        (``None``: it has no route that says)."""
        ...

    @property
    def reports_parked(self) -> bool:
        """Whether :meth:`is_parked` can answer (vLLM's ``/is_sleeping``; SGLang: no)."""
        ...

    parked: Parked | None

    def unpause(self) -> dict[str, int]:
        """Continue generation after a park that paused and released nothing, then wait
        for a completed request; stamps."""
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
    door
        The gate in front (``None``: clients reach the engine directly).
    drain_s
        How long the requests in flight at the door get to finish before a park,
        seconds (then the park is refused and the window skipped).
    gauge_lag_s
        Without a door: how long after a pause the engine's gauges are read again
        before the release, seconds (:data:`GAUGE_LAG_S`: a request accepted just
        before the pause shows only then).

    Attributes
    ----------
    parked
        The park in force (``None`` when serving); a restarted loop may set it from a
        recorded :meth:`~learnsched.serving.engines.Parked.to_json` before
        :meth:`unpark`.
    last_held_s
        The added latencies of the requests the door held until the last return,
        seconds.

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
        door: FrontDoor | None = None,
        drain_s: float = 5.0,
        gauge_lag_s: float = GAUGE_LAG_S,
    ) -> None:
        self.endpoint = endpoint
        self.engine = endpoint.engine
        self.url = endpoint.url
        self.level = integer("level", level, low=1, high=2)
        self.tags = tuple(tags)
        self.reload = self.level == 2  # level 2 drops the weights: reload them on return
        endpoint.dialect.check_park(level=self.level, tags=self.tags, reload=self.reload)
        self.timeout_s = positive("timeout_s", timeout_s)
        self.max_tokens = integer("max_tokens", max_tokens, low=1)
        self.poll_s = positive("poll_s", poll_s)
        self.idle_wait_s = nonnegative("idle_wait_s", idle_wait_s)
        self.reference: str | None = None
        self.failure: str | None = None
        self.parked: Parked | None = None
        self.door = door
        self.drain_s = positive("drain_s", drain_s)
        self.gauge_lag_s = nonnegative("gauge_lag_s", gauge_lag_s)
        self.last_held_s: list[float] = []

    def preflight(self) -> list[str]:
        """:func:`~learnsched.serving.preflight.check_server_config` for this park, and
        a way to tell idleness (read-only calls: safe before any heal); notes on what
        went unchecked.

        Raises
        ------
        ServerConfigError
            A flag the park needs is missing, or, without a door, the engine exports no
            load gauges (a park could not know it is idle: SGLang ``--enable-metrics``).
        """
        notes = check_server_config(
            self.endpoint, tags=self.tags, reload=self.reload, timeout_s=self.timeout_s
        )
        if read_load(self.endpoint, min(self.timeout_s, 5.0)) is None:
            if self.door is None:
                check_idle(self.endpoint, None, self.timeout_s)  # raises, naming the flag
            names = " and ".join(self.endpoint.dialect.load_metrics)
            notes.append(f"no load gauges ({names}): idleness from the gate's counts alone")
        return notes

    def take_reference(self) -> None:
        """The reference answer every return must reproduce: one greedy request, taken
        once here so that no park adds load the scheduler would see as an arrival; with
        a door, while it holds traffic, so the engine serves it alone.

        Raises
        ------
        EngineBusy
            With a door: the requests in flight never drained within ``timeout_s``.
        """
        door = self.door
        if door is None:
            self.reference = self.endpoint.generate(self.max_tokens, self.timeout_s).text
            return
        deadline = time.monotonic() + self.timeout_s
        while not door.close(min(self.drain_s, self.timeout_s)):
            door.open()
            if time.monotonic() >= deadline:
                raise EngineBusy(
                    f"{self.endpoint.url}: requests never drained at the gate within "
                    f"{self.timeout_s:g} s, so the reference answer cannot be taken alone"
                )
            time.sleep(self.poll_s)
        try:
            self.reference = self.endpoint.generate(self.max_tokens, self.timeout_s).text
        finally:
            door.open()

    @property
    def reports_parked(self) -> bool:
        """Whether the dialect has a route that says it is parked (vLLM's)."""
        return self.endpoint.dialect.reports_parked

    def is_parked(self) -> bool | None:
        """vLLM asleep (a pause is not a park: :meth:`Vllm.park_state
        <learnsched.serving.engines.vllm.Vllm.park_state>`); ``None`` for SGLang (no route
        says)."""
        if not self.reports_parked:
            return None
        return self.endpoint.is_sleeping(self.timeout_s)

    def park_state(self) -> str | None:
        """The engine's own view: ``serving``, ``parked``, ``paused`` (by another
        controller) or ``unconfirmed``; ``None`` for SGLang (no route says)."""
        if not self.reports_parked:
            return None
        return self.endpoint.dialect.park_state(self.endpoint, self.timeout_s)

    def alive(self) -> bool:
        """Whether the server still lives (the dialect's check, without a generation);
        ``ConnectionError`` where it cannot be reached."""
        return self.endpoint.dialect.alive(self.endpoint, min(self.timeout_s, 5.0))

    def load(self) -> Load | None:
        """Requests in flight and held at the door, or without one ``/metrics``' running
        and waiting requests (``None``: no gauges exported)."""
        if self.door is not None:
            return self.door.load()
        return read_load(self.endpoint, min(self.timeout_s, 5.0))

    @property
    def reads_gauges(self) -> bool:
        """Whether :meth:`load` reads the engine's ``/metrics`` (no door in front)."""
        return self.door is None

    def park(self, on_mark: Callable[[str], None] | None = None) -> dict[str, int]:
        """Park the idle engine (:func:`~learnsched.serving.engines.park`); its stamps.

        ``on_mark`` is called with each stamp's name as the park reaches it.

        With a door: it is closed and its requests in flight drained (up to
        ``drain_s``) first; if the park does not happen, the door opens again.

        Raises
        ------
        EnginePaused
            The engine says it is not serving (paused or parked by another controller):
            nothing was touched.
        EngineBusy
            The engine (or the door) was not idle: nothing was parked.
        """
        self.last_held_s = []  # the last return's were counted there
        self._check_serving()
        door = self.door
        if door is not None and not door.close(self.drain_s):
            held = door.load()
            self.last_held_s = door.open()
            raise EngineBusy(
                f"{self.endpoint.url}: {held.running} requests still in flight at the gate "
                f"after {self.drain_s:g} s; the window is skipped"
            )

        def mark(name: str) -> None:
            if door is not None and name == "release_sent":
                door.release_sent()
            elif door is not None and name == "release_ack":
                door.release_done()
            if on_mark is not None:
                on_mark(name)

        try:
            self.parked = park(
                self.endpoint, level=self.level, tags=self.tags, door=door,
                timeout_s=self.timeout_s, poll_s=self.poll_s, idle_wait_s=self.idle_wait_s,
                gauge_lag_s=self.gauge_lag_s, on_mark=mark,
            )  # fmt: skip
        except BaseException:
            if door is not None:
                door.release_done()
                self.last_held_s = door.open()
            raise
        return dict(self.parked.stamps)

    def _check_serving(self) -> None:
        """:class:`EnginePaused` unless the engine says it serves (where it can say)."""
        state = self.park_state()
        if state in (None, "serving"):
            return
        raise EnginePaused(
            f"{self.engine} at {self.url} says it is {state}, and this scheduler did not "
            "park it: another controller holds it (vLLM POST /pause: an RL weight sync?). "
            "Nothing is touched: wait for it, or resume it (POST /resume)"
        )

    def unpark(self) -> dict[str, int]:
        """Resume what the park released, then send real requests until one completes;
        stamps to ``request_done``.

        Without a park in force (a killed run's, not recorded), it resumes as this
        engine parks: vLLM only if ``/is_sleeping`` says so.
        """
        parked = self.parked or self._assumed_park()
        self._hold()
        try:
            # Level 2 dropped the weights: reload them on the way back (vLLM reload_weights).
            stamps = resume(
                self.endpoint, parked, reload=self.reload, timeout_s=self.timeout_s,
                poll_s=self.poll_s,
            )  # fmt: skip
            self.parked = None
            return self._ready(stamps)
        finally:
            self._open_door()

    def _assumed_park(self) -> Parked:
        """What a park of this engine releases, paused where the dialect pauses."""
        dialect = self.endpoint.dialect
        return Parked(
            dialect.name, self.level, self.tags, dialect.released_tags(self.tags),
            paused=dialect.pauses,
        )  # fmt: skip

    def ready(self) -> dict[str, int]:
        """Send real requests until one completes; stamps (``resume_sent`` = the start)."""
        self._hold()
        try:
            return self._ready({"resume_sent": time.perf_counter_ns()})
        finally:
            self._open_door()

    def _hold(self) -> None:
        """Close the door for a return that finds it open (a start-up heal, or one after a
        failed park): no request reaches the engine until it is confirmed back. Those
        already past the door wait in the parked engine; :meth:`_alone` lets them finish."""
        door = self.door
        if door is not None and not door.closed:
            door.close(self.poll_s)  # not drained: what is in flight waits for the resume

    def _alone(self) -> bool:
        """With a door: wait (up to ``timeout_s``) until nothing is in flight through it, so
        the check after a resume runs at a batch of one; whether nothing was."""
        door = self.door
        if door is None or door.load().running == 0:
            return True
        return door.close(self.timeout_s)  # closed already: this waits for the drain

    def _open_door(self) -> None:
        """Forward what the door held (whatever the return did: held forever is worse)."""
        self.last_held_s = self.door.open() if self.door is not None else []

    def abandon(self) -> None:
        """The engine died while parked: nothing to resume; the door opens, so each
        request it held goes on and fails at once (the gate answers 502 for an engine
        that does not answer) instead of waiting for a return that cannot come."""
        self.parked = None
        if self.door is not None:  # a failed return may have let some go already
            self.last_held_s = [*self.last_held_s, *self.door.open()]

    def unpause(self) -> dict[str, int]:
        """A park that died before its release: continue generation where the dialect
        pauses (a resume of memory never released would kill SGLang's scheduler), then
        wait for a completed request."""
        stamps = {"resume_sent": time.perf_counter_ns()}
        self._hold()
        try:
            if self.endpoint.dialect.pauses:
                self.endpoint.dialect.unpause(self.endpoint, self.timeout_s)
                stamps["continued"] = time.perf_counter_ns()
            self.parked = None
            return self._ready(stamps)
        finally:
            self._open_door()

    def _ready(self, stamps: dict[str, int]) -> dict[str, int]:
        alone = self._alone()
        deadline = Deadline(self.timeout_s, f"{self.endpoint.url} after resume")
        answer = wait_first_request(
            self.endpoint, stamps, deadline, self.poll_s, self.max_tokens, health=False
        )
        reference = self.reference
        self.failure = None if reference is None else same_model(reference, answer.text)
        if self.failure is not None and not alone:
            self.failure += (
                f" (requests sent before the door closed were still in flight after "
                f"{self.timeout_s:g} s, so the check may have shared their batch)"
            )
        return stamps
