"""The engine actions every caller uses: park an idle engine, resume only what was
released, and check that the same model came back.

The probes (:func:`learnsched.handoff.measure_warm_recovery`), the control loop
(:class:`learnsched.control.ServingEngine`) and the gate (:mod:`learnsched.gate`) all
park and resume through these functions, so the calls come in one order everywhere:

:func:`park`
    1. Idleness (:func:`check_idle`): a door in front of the engine (the gate), if any,
       is closed with nothing in flight or held there, and the engine's own gauges say
       0 running and 0 waiting. Otherwise :class:`~..errors.EngineBusy` and nothing is
       touched: no caller can park a busy engine.
    2. Pause, where the engine has one (SGLang ``/pause_generation`` in place: new
       generations wait in its tokenizer manager), then idleness again: a request that
       reached the engine before the pause makes the park continue generation and
       refuse.
    3. The release (vLLM ``/sleep?level=N&mode=wait``, SGLang
       ``/release_memory_occupation``), then the engine's own report where it has one
       (vLLM ``/is_sleeping`` true). If the release fails, only what it may have done is
       undone: vLLM is woken if ``/is_sleeping`` says it sleeps; SGLang continues
       generation and is never resumed (a resume of memory that was not released raises
       in its scheduler and kills the server).

:func:`resume`
    1. vLLM: ``/is_sleeping`` first, and only a sleeping engine is woken. SGLang:
       ``/resume_memory_occupation`` with exactly the tags the park released.
    2. The weights reload, when asked (vLLM level 2), before any request can run.
    3. Generation continues (SGLang, if the park paused it); vLLM reports awake.

:func:`same_model`
    The greedy answer after the resume must be the one taken before the park. It is
    deterministic only at a batch of one: take both while the gate holds traffic, or
    start the engine batch-invariant (``VLLM_BATCH_INVARIANT=1``, SGLang
    ``--enable-deterministic-inference``).

Every stamp is ``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import EngineBusy, HandoffProbeError, ServerConfigError
from ..polling import DEFAULT_POLL_S, poll_until
from .base import Engine, Server
from .load import Load

__all__ = [
    "Door",
    "EngineServer",
    "Parked",
    "check_idle",
    "park",
    "resume",
    "same_model",
]


class EngineServer(Server, Protocol):
    """A server together with its dialect (a :class:`~..endpoint.ServingEndpoint`)."""

    @property
    def dialect(self) -> Engine:
        """The engine's HTTP dialect."""
        ...


class Door(Protocol):
    """The front door requests come through (the gate), closed and drained before a park."""

    @property
    def closed(self) -> bool:
        """Whether new requests are held rather than forwarded."""
        ...

    def load(self) -> Load:
        """Requests forwarded and not finished (``running``) and held (``waiting``)."""
        ...


@dataclass(frozen=True)
class Parked:
    """What one park did: all, and only, what :func:`resume` undoes.

    Parameters
    ----------
    engine
        The dialect's name.
    level
        vLLM's sleep level (unused by SGLang).
    tags
        The tags the park asked to release (empty: every tag, the engine's default).
    released
        The memory tags the release frees (vLLM: always both).
    paused
        Whether generation was paused before the release (SGLang).
    stamps
        ``perf_counter_ns`` stamps: ``idle_checked``, ``paused``, ``release_sent``,
        ``release_ack`` and, where reported, ``asleep_reported``.
    """

    engine: str
    level: int
    tags: tuple[str, ...]
    released: tuple[str, ...]
    paused: bool
    stamps: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON object (e.g. for a ledger record); :meth:`from_json` reads it back."""
        return {
            "engine": self.engine,
            "level": self.level,
            "tags": list(self.tags),
            "released": list(self.released),
            "paused": self.paused,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Parked:
        """The park :meth:`to_json` wrote (stamps are not kept: they are this process's).

        Raises
        ------
        ValueError
            A field is missing (named).
        TypeError
            A field has the wrong type (named, with its value).
        """
        missing = [
            key for key in ("engine", "level", "tags", "released", "paused") if key not in data
        ]
        if missing:
            raise ValueError(f"a recorded park lacks {', '.join(missing)}")
        engine, level, paused = data["engine"], data["level"], data["paused"]
        tags, released = data["tags"], data["released"]
        if not isinstance(engine, str):
            raise TypeError(f"a recorded park's engine must be a name, got {engine!r}")
        if isinstance(level, bool) or not isinstance(level, int):
            raise TypeError(f"a recorded park's level must be an integer, got {level!r}")
        if not isinstance(paused, bool):
            raise TypeError(f"a recorded park's paused must be true or false, got {paused!r}")
        for name, value in (("tags", tags), ("released", released)):
            if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                raise TypeError(f"a recorded park's {name} must be a list of names, got {value!r}")
        return cls(engine, level, tuple(tags), tuple(released), paused)


def check_idle(
    server: EngineServer,
    door: Door | None,
    timeout_s: float,
    *,
    wait_s: float = 0.0,
    poll_s: float = DEFAULT_POLL_S,
) -> Load | None:
    """Refuse unless nothing runs: the door (if any) closed and empty, the engine idle.

    The engine's gauges are read for up to ``wait_s`` seconds (they lag the last
    request's end by a stats interval); the door's counts are exact and read once.

    Returns
    -------
    Load or None
        The engine's load (idle), or ``None`` where it exports no gauges and the door
        vouched for it.

    Raises
    ------
    EngineBusy
        The door is open, or requests are in flight or held at it, or the engine still
        reports running or waiting requests after ``wait_s``.
    ServerConfigError
        Neither a door nor the engine can tell (no gauges: SGLang needs
        ``--enable-metrics``).
    """
    if door is not None:
        if not door.closed:
            raise EngineBusy(f"{server.url}: the gate in front is open; close it before a park")
        at_door = door.load()
        if not at_door.idle:
            raise EngineBusy(
                f"{server.url}: {at_door.running} requests in flight and {at_door.waiting} "
                "held at the gate; a park waits for none"
            )
    dialect = server.dialect
    end = time.monotonic() + wait_s
    while True:
        load = dialect.load(server, timeout_s)
        if load is None and door is None:
            raise ServerConfigError(
                f"{dialect.name} at {server.url} exports no load gauges "
                f"({' and '.join(dialect.load_metrics)} on /metrics), so a park cannot know "
                "it is idle: start SGLang with --enable-metrics (vLLM: without "
                "--disable-log-stats), or put the gate in front (learnsched run --gate)"
            )
        if load is None or load.idle:
            return load
        if time.monotonic() >= end:
            raise EngineBusy(
                f"{server.url} is not idle ({load.running} running, {load.waiting} waiting): "
                "a release now would kill SGLang (it asserts idleness) or hold vLLM's "
                "sleep until they finish; park when the load has drained"
            )
        time.sleep(poll_s)


def _reported(server: EngineServer, sleeping: bool, timeout_s: float, poll_s: float) -> int:
    """Poll the engine's own view until it reports ``sleeping``; the stamp it did."""
    return poll_until(
        lambda: True if server.dialect.is_parked(server, timeout_s) == sleeping else None,
        what=f"{server.dialect.name} at {server.url} reporting "
        + ("parked" if sleeping else "awake"),
        timeout_s=timeout_s,
        poll_s=poll_s,
    ).t_ns


def park(
    server: EngineServer,
    *,
    level: int = 1,
    tags: Sequence[str] = (),
    door: Door | None = None,
    timeout_s: float,
    poll_s: float = DEFAULT_POLL_S,
    idle_wait_s: float = 0.0,
    gauge_lag_s: float = 0.0,
    stamps: dict[str, int] | None = None,
    on_mark: Callable[[str], None] | None = None,
) -> Parked:
    """Park an idle engine: check idleness, pause, check again, release (module notes).

    Parameters
    ----------
    server
        The engine (a :class:`~..endpoint.ServingEndpoint`).
    level
        vLLM's sleep level (1: weights to host memory; 2: discarded).
    tags
        Memory tags to release (SGLang; vLLM always releases both). Empty: all.
    door
        The gate in front, closed and drained by the caller; its counts must be zero.
    timeout_s
        Bound on each call and on the engine's report, seconds.
    poll_s
        Poll interval, seconds.
    idle_wait_s
        How long the engine's gauges may take to show idle, seconds.
    gauge_lag_s
        Without a door: how late the gauges show a request the engine accepted just
        before its pause, seconds, waited out before the check after the pause (after
        ``paused`` is marked, so a caller killed meanwhile knows to undo the pause).
    stamps
        Filled as the park goes (also when it raises), if given.
    on_mark
        Called with each stamp's name right after it is taken (``idle_checked``,
        ``paused``, ``release_sent``, ``release_ack``), e.g. to journal how far a park
        got: a release that was sent but not acknowledged may or may not have happened.

    Returns
    -------
    Parked
        What was released, for :func:`resume`.

    Raises
    ------
    EngineBusy
        Not idle (nothing was released; a pause was undone).
    ServerConfigError
        No way to tell idleness, or an SGLang without ``/pause_generation``.
    """
    dialect = server.dialect
    marks: dict[str, int] = {} if stamps is None else stamps

    def mark(name: str) -> None:
        marks[name] = time.perf_counter_ns()
        if on_mark is not None:
            on_mark(name)

    check_idle(server, door, timeout_s, wait_s=idle_wait_s, poll_s=poll_s)
    mark("idle_checked")
    paused = dialect.pause(server, timeout_s)
    try:
        if paused:
            mark("paused")
            if door is None:
                time.sleep(gauge_lag_s)
            check_idle(server, door, timeout_s, wait_s=idle_wait_s, poll_s=poll_s)
        mark("release_sent")
        dialect.park(server, level=level, tags=tags, timeout_s=timeout_s)
        mark("release_ack")
    except BaseException as err:
        _undo_failed_park(server, paused, "release_sent" in marks, timeout_s, err)
        raise
    parked = Parked(dialect.name, level, tuple(tags), dialect.released_tags(tags), paused, marks)
    if dialect.reports_parked:
        marks["asleep_reported"] = _reported(server, True, timeout_s, poll_s)
    return parked


def _undo_failed_park(
    server: EngineServer, paused: bool, sent: bool, timeout_s: float, err: BaseException
) -> None:
    """After a failed park: wake only an engine that says it sleeps; continue a pause."""
    dialect = server.dialect
    try:
        if sent and dialect.reports_parked and dialect.is_parked(server, timeout_s):
            dialect.resume(server, tags=(), reload=False, timeout_s=timeout_s)
        if paused:
            dialect.unpause(server, timeout_s)
    except (HandoffProbeError, OSError) as undo_err:
        raise HandoffProbeError(
            f"{err}; undoing the park of {server.url} failed too, so it may still be "
            f"parked or paused: {undo_err}"
        ) from err


def resume(
    server: EngineServer,
    parked: Parked,
    *,
    reload: bool = False,
    timeout_s: float,
    poll_s: float = DEFAULT_POLL_S,
    stamps: dict[str, int] | None = None,
) -> dict[str, int]:
    """Undo ``parked``: resume what it released, reload if asked, continue generation.

    Parameters
    ----------
    server
        The engine.
    parked
        What :func:`park` returned (or :meth:`Parked.from_json` of its record).
    reload
        Load the weights again on the way (vLLM after the weights wake; SGLang
        ``update_weights_from_disk``), before generation continues.
    timeout_s
        Bound on each call and on the engine's report, seconds.
    poll_s
        Poll interval, seconds.
    stamps
        Filled as the resume goes, if given (the same dict is returned).

    Returns
    -------
    dict
        ``resume_sent``, ``resume_ack``, and ``found_awake`` (vLLM was not asleep:
        nothing woken) or ``awake_reported``; ``continued`` after a pause.

    Raises
    ------
    ValueError
        ``parked`` is another engine's.
    """
    dialect = server.dialect
    if parked.engine != dialect.name:
        raise ValueError(f"parked is a {parked.engine} park, the server is {dialect.name}")
    marks: dict[str, int] = {} if stamps is None else stamps
    marks["resume_sent"] = time.perf_counter_ns()
    if dialect.reports_parked and not dialect.is_parked(server, timeout_s):
        marks["found_awake"] = marks["resume_ack"] = time.perf_counter_ns()
    else:
        dialect.resume(server, tags=parked.tags, reload=reload, timeout_s=timeout_s)
        marks["resume_ack"] = time.perf_counter_ns()
        if dialect.reports_parked:
            marks["awake_reported"] = _reported(server, False, timeout_s, poll_s)
    if parked.paused:
        dialect.unpause(server, timeout_s)
        marks["continued"] = time.perf_counter_ns()
    return marks


def same_model(reference: str, answer: str) -> str | None:
    """``None`` if the greedy answers match, else the reason a return failed.

    Parameters
    ----------
    reference
        The greedy answer taken before the park (at a batch of one).
    answer
        The same request's answer after the resume.
    """
    if answer == reference:
        return None
    return (
        f"weights not restored: the first request after the resume answered {answer[:80]!r}, "
        f"the same greedy request before the park {reference[:80]!r}"
    )
