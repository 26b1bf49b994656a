"""The simulated engine's state: what is parked, paused, held, running, and whether it died.

Each behaviour copies the engine it names (sources read for this module, vLLM 0.32 and
SGLang 0.5.23; ``tests/test_engine_conformance.py`` checks the vLLM side against a
running vLLM):

- vLLM (``v1/engine/core.py`` ``EngineCore.sleep``/``wake_up``/``pause_scheduler``,
  ``v1/executor/abstract.py``, ``entrypoints/serve/dev/sleep/api_router.py``,
  ``entrypoints/rl/online/api_router.py``): ``sleep(level, mode)`` pauses the scheduler
  first (``mode`` ``abort``, the default: in-flight requests end with
  ``finish_reason: "abort"``; ``wait`` drains them; ``keep`` freezes them), then puts
  both ``weights`` and ``kv_cache`` to sleep (no tags; a no-op when already asleep);
  level 0 only pauses. ``/pause`` and ``/resume`` pause and resume the scheduler alone.
  ``wake_up(tags)`` wakes the tags given (all when none; the pseudo-tag ``scheduling``
  is not the executor's), ignores (logs) a call that names a tag not sleeping, and
  resumes the scheduler once every tag is awake; ``is_sleeping`` is true while a tag
  sleeps or the scheduler is paused. A request sent while paused or asleep is queued,
  not refused, and no gauge counts it; ``/abort_requests`` aborts it too. The
  ``vllm:engine_sleep_state`` gauge shows the level of the last ``/sleep`` until a
  wake-up leaves every tag awake (a ``/pause`` does not touch it). Level 1 keeps the
  weights in host memory; level 2 discards them, and the model answers garbage until
  ``collective_rpc("reload_weights")``.
- SGLang (``scheduler_update_weights_mixin``, ``scheduler.pause_generation``,
  ``http_server.health_generate``): ``release_memory_occupation`` asserts the
  scheduler is idle (``assert self.is_fully_idle()``: on a busy engine the assertion
  escapes the event loop and kills the server), adds its tags (default all) to
  ``offload_tags``; ``resume_memory_occupation`` removes them with ``set.remove``, so
  a tag never released raises ``KeyError`` in the scheduler. ``/pause_generation``
  (``mode`` ``abort``, the default, ``retract`` or ``in_place``) stops the scheduler
  forming batches; new requests wait in the tokenizer manager, invisible to
  ``/metrics``, until ``/continue_generation``. A generation that reaches the
  scheduler while memory is released runs on unmapped memory (a dead server).
  ``/health`` is itself such a generation. Without ``--enable-memory-saver`` the
  release is accepted and frees nothing; without ``--enable-weights-cpu-backup`` the
  weights' pages come back without their content.

Which of these behaviours are on is :class:`~._config.EngineConfig`'s (vLLM's are on by
default; SGLang's fatal ones answer 400 or 503 and live on unless ``strict``).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ._config import EngineConfig
from ._memory import Buffer, fingerprint

__all__ = [
    "HEALTH_TIMEOUT_S",
    "TAGS",
    "EngineDied",
    "EngineError",
    "EngineState",
    "NoRoute",
    "Request",
]

TAGS = ("weights", "kv_cache")
MIB = 2**20
# SGLang's HEALTH_CHECK_TIMEOUT: a health generation held by a pause answers 503 then.
HEALTH_TIMEOUT_S = 20.0
# How often a held or frozen request looks again (and notices a death), seconds.
_WAKE_S = 0.05
PAUSE_MODES = ("abort", "retract", "in_place")
# vLLM's PauseMode, for /sleep and /pause.
SLEEP_MODES = ("abort", "wait", "keep")
# The "tag" vLLM's wake_up reads as the scheduler's, not the executor's.
SCHEDULING_TAG = "scheduling"


class EngineError(Exception):
    """A call the engine refuses, with the HTTP status its real counterpart answers.

    Parameters
    ----------
    status
        The HTTP status.
    message
        What the engine says.
    kind
        vLLM's error ``type`` (``None``: the one vLLM gives this status, e.g.
        ``BadRequestError``; FastAPI's own checks say ``Bad Request``).
    param
        vLLM's error ``param``: the request field at fault (``None``: none named).
    """

    def __init__(
        self, status: int, message: str, *, kind: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.param = param


def check_sleep_mode(mode: str) -> None:
    """Refuse a ``mode`` that is not one of vLLM's pause modes, with the 400 its query
    check answers."""
    if mode not in SLEEP_MODES:
        allowed = "'abort', 'wait' or 'keep'"
        raise EngineError(
            400,
            f"1 validation error:\n  {{'type': 'literal_error', 'loc': 'query.mode', "
            f"'msg': \"Input should be {allowed}\", 'input': {mode!r}}}",
            kind="Bad Request",
            param="query.mode",
        )


class NoRoute(EngineError):
    """A path (or method) the engine does not serve: 404."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(404, f"no route {method} {path}")


class EngineDied(Exception):
    """The engine's server process died (the request's connection just breaks)."""


class Request:
    """One generation inside the engine: its place in the batch and whether it was aborted.

    Parameters
    ----------
    state
        The engine.
    epoch
        The engine's abort epoch when the request entered the scheduler.
    """

    def __init__(self, state: EngineState, epoch: int) -> None:
        self.state = state
        self.epoch = epoch
        self.aborted = False

    def step(self) -> int:
        """Wait out a pause that froze this request; the batch size it decodes in now.

        Sets :attr:`aborted` (and returns 0) if the engine aborted it.
        """
        return self.state.step(self)


def _bytes(mib: float) -> int:
    return int(mib * MIB)


class EngineState:
    """Parking, memory and load of one simulated engine; shared by request threads.

    Parameters
    ----------
    config
        The behaviour.
    on_death
        Called once with the reason when the engine dies (the server stops it).
    """

    def __init__(self, config: EngineConfig, on_death: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.on_death = on_death
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)  # pause, park, abort, death
        self.weights: Buffer | None = Buffer(_bytes(config.weights_mib), config.device, config.seed)
        self.kv: Buffer | None = Buffer(_bytes(config.kv_mib), config.device)
        self.resident = Buffer(_bytes(config.resident_mib), config.device)
        self.backup: Buffer | None = None
        self.model_print = fingerprint(self.weights)
        self.sleeping: set[str] = set()  # vLLM sleeping_tags / SGLang offload_tags
        self.level = 0
        self.parks = 0  # a late free from an earlier park must not free this one's memory
        self.running = 0
        self.waiting = 0
        self.held = 0  # arrivals waiting outside the scheduler (paused, or vLLM asleep)
        self.paused: str | None = None  # the pause mode (SGLang), or vLLM's "sleep"
        self.frozen_mode: str | None = None  # in-flight requests frozen: retract/in_place/keep
        self.epoch = 0  # bumped by every abort of the in-flight requests
        self.aborted = 0
        self.frozen_load: tuple[int, int] | None = None  # the gauges while parked
        # The gauges' (time, (running, waiting)) history kept for gauge_lag_s.
        self.shown: deque[tuple[float, tuple[int, int]]] = deque([(time.monotonic(), (0, 0))])
        self.sleep_gauge: int | None = None  # vLLM's engine_sleep_state level; None: awake
        self.deprecated_calls = 0  # SGLang /get_server_info (warns on every call)
        self.resumes = 0
        self.death: str | None = None
        self.slots = threading.BoundedSemaphore(config.max_running)

    # --- what is visible -------------------------------------------------------------
    def ready(self) -> bool:
        """Past the start-up delay."""
        return time.monotonic() - self.started >= self.config.ready_delay_s

    def is_sleeping(self) -> bool:
        """vLLM's ``is_sleeping``: a tag asleep, or the scheduler paused."""
        return bool(self.sleeping) or self.paused is not None

    def is_paused(self) -> bool:
        """vLLM's ``is_paused``: the scheduler paused (by ``/pause`` or a ``/sleep``)."""
        return self.paused is not None

    def load(self) -> tuple[int, int]:
        """``(running, waiting)`` as the gauges show them: frozen while parked (SGLang's
        ``frozen_metrics``), ``gauge_lag_s`` late."""
        with self.lock:
            horizon = time.monotonic() - self.config.gauge_lag_s
            shown = self.shown[0][1]
            for at, load in self.shown:
                if at > horizon:
                    break
                shown = load
            return shown

    def _note(self) -> None:
        """Record what the gauges show from now on (the lock held)."""
        load = self.frozen_load if self.frozen_load is not None else (self.running, self.waiting)
        now = time.monotonic()
        self.shown.append((now, load))
        horizon = now - self.config.gauge_lag_s
        while len(self.shown) > 1 and self.shown[1][0] <= horizon:
            self.shown.popleft()  # never shown again: a later entry is already due

    def _count(self, running: int = 0, waiting: int = 0) -> None:
        """Move requests between running and waiting (the lock held)."""
        self.running += running
        self.waiting += waiting
        self._note()

    def device_bytes(self) -> int:
        """Bytes held on the engine's device now (weights, KV cache, resident)."""
        with self.lock:
            held = (self.weights, self.kv, self.resident)
            return sum(b.nbytes for b in held if b is not None)

    def snapshot(self) -> dict[str, object]:
        """The simulator's own view (``GET /sim/state``): memory, tags, load, model."""
        with self.lock:
            held = {
                "weights": self.weights.nbytes if self.weights is not None else 0,
                "kv_cache": self.kv.nbytes if self.kv is not None else 0,
                "resident": self.resident.nbytes,
            }
            return {
                "pid": os.getpid(),
                "dialect": self.config.dialect,
                "device": self.config.device,
                "device_bytes": sum(held.values()),
                "held_bytes": held,
                "host_backup_bytes": self.backup.nbytes if self.backup is not None else 0,
                "sleeping_tags": sorted(self.sleeping),
                "paused": self.paused,
                "model_fingerprint": self.model_print,
                "weights_intact": self.weights_intact(),
                "running": self.running,
                "waiting": self.waiting,
                "held": self.held,
                "aborted": self.aborted,
                "deprecated_calls": self.deprecated_calls,
                "parks": self.parks,
                "resumes": self.resumes,
            }

    def weights_intact(self) -> bool:
        """Whether the model answers as it did at start (same weights' bytes)."""
        return self.weights is not None and fingerprint(self.weights) == self.model_print

    def current_print(self) -> str:
        """The fingerprint generation uses now (the weights' bytes as they are)."""
        with self.lock:
            if self.weights is None:
                raise EngineError(503, "the model's weights are not on the device")
            return fingerprint(self.weights)

    # --- death ---------------------------------------------------------------------------
    def die(self, reason: str) -> EngineDied:
        """The server process dies of ``reason`` (the caller holds the lock); raise the
        returned exception."""
        if self.death is None:
            self.death = reason
            self.changed.notify_all()
            if self.on_death is not None:
                self.on_death(reason)
        return EngineDied(reason)

    def _alive(self) -> None:
        if self.death is not None:
            raise EngineDied(self.death)

    # --- requests --------------------------------------------------------------------------
    def _holds_arrivals(self) -> bool:
        """Whether a new request waits outside the scheduler now (the lock held)."""
        if self.config.vllm and self.sleeping:
            return bool(self.config.queue_while_asleep)  # False: refused (503)
        return self.paused is not None  # SGLang's tokenizer manager / vLLM's scheduler

    def admit(self, timeout_s: float | None = None, *, probe: bool = False) -> int:
        """A new request enters the scheduler: held while paused (invisible to the
        gauges), refused or fatal while released; the abort epoch it arrived at (vLLM:
        an abort while it was held aborts it too).

        ``probe``: SGLang's health generation, which a forgiving engine answers while
        released.

        Raises
        ------
        EngineError
            503 while memory is released (a forgiving engine), or ``timeout_s`` passed
            while held (SGLang's health check).
        EngineDied
            SGLang (``die_on_released_generation``): a generation on released memory.
        """
        config = self.config
        with self.changed:
            self._alive()
            arrived = self.epoch
            if self._holds_arrivals():
                end = None if timeout_s is None else time.monotonic() + timeout_s
                self.held += 1
                try:
                    while self._holds_arrivals() and not self._aborted_since(arrived):
                        self._alive()
                        if end is not None and time.monotonic() >= end:
                            raise EngineError(503, "held by a pause past the timeout")
                        self.changed.wait(_WAKE_S)
                finally:
                    self.held -= 1
            if self._aborted_since(arrived):
                return arrived
            if self.sleeping:
                if config.die_on_released_generation:
                    raise self.die(
                        "a generation reached the scheduler while memory was released "
                        "(no /pause_generation): illegal memory access"
                    )
                if not probe:
                    raise EngineError(503, "the model is sleeping")
            return self.epoch

    def _aborted_since(self, epoch: int) -> bool:
        """vLLM: whether a held request that arrived at ``epoch`` was aborted meanwhile
        (the lock held); SGLang's held requests outlive an abort."""
        return self.config.vllm and self.epoch != epoch

    @contextmanager
    def request(self, timeout_s: float | None = None) -> Iterator[Request]:
        """:meth:`admit`, wait for a decode slot (counted as waiting), then hold it
        (counted as running) while the request decodes; a request aborted while held
        never enters (it is :attr:`Request.aborted` at once)."""
        request = Request(self, self.admit(timeout_s))
        with self.lock:
            if request.epoch != self.epoch:
                request.aborted = True
                self.aborted += 1
            else:
                self._count(waiting=1)
        if request.aborted:
            yield request
            return
        try:
            while not self.slots.acquire(timeout=_WAKE_S):
                with self.lock:
                    self._alive()
        except BaseException:
            with self.lock:
                self._count(waiting=-1)
            raise
        with self.lock:
            self._count(running=1, waiting=-1)
        try:
            yield request
        finally:
            with self.changed:
                self._count(running=-1)
                self.changed.notify_all()
            self.slots.release()

    def step(self, request: Request) -> int:
        """See :meth:`Request.step` (a retracted request counts as waiting meanwhile)."""
        with self.changed:
            retracted = False
            while True:
                self._alive()
                if request.epoch != self.epoch:
                    break
                if self.frozen_mode is None:
                    break
                if self.frozen_mode == "retract" and not retracted:
                    retracted = True
                    self._count(running=-1, waiting=1)
                self.changed.wait(_WAKE_S)
            if retracted:
                self._count(running=1, waiting=-1)
            if request.epoch != self.epoch:
                if not request.aborted:
                    request.aborted = True
                    self.aborted += 1
                return 0
            if self.sleeping and self.config.die_on_released_generation:
                raise self.die("a running request decoded on released memory: illegal address")
            return self.running

    def _abort_in_flight(self) -> None:
        """Abort every request in the scheduler (the lock held): they end at their next
        step with ``finish_reason: "abort"``."""
        self.epoch += 1
        self.changed.notify_all()

    def _drain(self) -> None:
        """Wait until no request is in the scheduler (the lock held)."""
        while self.running or self.waiting:
            self._alive()
            self.changed.wait(_WAKE_S)

    def _freeze_gauges(self) -> None:
        if self.config.frozen_metrics and self.frozen_load is None:
            self.frozen_load = (self.running, self.waiting)
            self._note()

    def _thaw(self) -> None:
        """Back from a park or pause: gauges live, frozen requests go on."""
        if self.paused is None and not self.sleeping:
            self.frozen_load = None
            self.frozen_mode = None
            self._note()
        self.changed.notify_all()

    # --- pause and abort ------------------------------------------------------------------
    def pause(self, mode: str) -> None:
        """SGLang ``/pause_generation`` or vLLM ``/pause``: hold new requests; abort,
        retract (SGLang), drain (vLLM ``wait``) or freeze the running ones."""
        if self.config.vllm:
            check_sleep_mode(mode)
        elif mode not in PAUSE_MODES:
            raise EngineError(400, f"mode must be one of {', '.join(PAUSE_MODES)}, got {mode!r}")
        with self.changed:
            self._alive()
            if self.config.vllm:
                self._vllm_pause(mode)
                return
            self._freeze_gauges()
            self.paused = mode
            if mode == "abort":
                self._abort_in_flight()
            else:
                self.frozen_mode = mode

    def unpause(self) -> None:
        """SGLang ``/continue_generation`` or vLLM ``/resume`` (a no-op when not paused;
        vLLM: the tags asleep stay asleep)."""
        with self.changed:
            self._alive()
            self.paused = None
            self.frozen_mode = None
            self._thaw()

    def abort_all(self) -> int:
        """vLLM ``/abort_requests`` without ids: abort every request it holds or runs,
        the scheduler left as it is; how many there were."""
        with self.changed:
            self._alive()
            count = self.running + self.waiting + self.held
            self._abort_in_flight()
            return count

    def _vllm_pause(self, mode: str) -> None:
        """vLLM's ``pause_scheduler(mode)`` (the lock held): arrivals wait from now on;
        ``abort`` ends the in-flight requests, ``wait`` lets them finish (a ``keep``
        pause's frozen ones too), ``keep`` freezes them until the scheduler resumes."""
        self.paused = mode
        self.frozen_mode = "keep" if mode == "keep" else None
        if mode == "abort":
            self._abort_in_flight()
        self.changed.notify_all()
        if mode != "keep":
            self._drain()

    # --- park and resume ---------------------------------------------------------------
    def release(self, level: int, tags: Sequence[str], mode: str = "abort") -> None:
        """Park: vLLM ``sleep(level, mode)`` (all tags) or SGLang
        ``release_memory_occupation(tags)``."""
        config = self.config
        chosen = set(TAGS) if config.vllm or not tags else set(tags)
        unknown = chosen - set(TAGS)
        if unknown:
            raise EngineError(400, f"unknown memory tags {sorted(unknown)}; known: {list(TAGS)}")
        if config.vllm:
            check_sleep_mode(mode)
        with self.changed:
            self._alive()
            if config.vllm and config.sleep_modes:
                self._vllm_pause(mode)  # vLLM pauses before it sleeps: never busy then
            if config.vllm and (self.sleeping or level == 0):
                self.sleep_gauge = level  # already asleep ("a no-op"), or a pause only
                return
            busy = (self.running or self.waiting) and not (config.vllm and config.sleep_modes)
            if busy and config.die_on_busy_release:
                raise self.die(
                    "AssertionError in the scheduler: release_memory_occupation should be "
                    f"called only when server is idle ({self.running} running, "
                    f"{self.waiting} waiting)"
                )
            if busy and config.refuse_busy:
                raise EngineError(
                    400,
                    "release_memory_occupation should be called only when server is idle "
                    f"({self.running} running, {self.waiting} waiting)",
                )
            self._freeze_gauges()
        time.sleep(config.release_s)
        with self.changed:
            self.sleeping |= chosen
            self.level = level
            if config.vllm:
                self.sleep_gauge = level
            self.parks += 1
            park = self.parks
            if config.memory_saver and "weights" in chosen and self.weights is not None:
                keep = config.weights_backup and not (config.vllm and level == 2)
                self.backup = self.weights.to_host() if keep else None
        if not config.memory_saver:
            return  # the adapter is a no-op: accepted, nothing freed
        if config.free_delay_s > 0:
            timer = threading.Timer(config.free_delay_s, self._free, (park, chosen))
            timer.daemon = True
            timer.start()
        else:
            self._free(park, chosen)

    def _free(self, park: int, tags: set[str]) -> None:
        with self.lock:
            if self.parks != park or not tags <= self.sleeping:
                return  # resumed (or parked again) in the meantime
            freed = []
            if "weights" in tags and self.weights is not None:
                freed.append(self.weights)
                self.weights = None
            if "kv_cache" in tags and self.kv is not None:
                freed.append(self.kv)
                self.kv = None
        for buffer in freed:
            buffer.free()

    def resume(self, tags: Sequence[str]) -> bool:
        """vLLM ``wake_up(tags)`` or SGLang ``resume_memory_occupation``; whether every
        tag is awake after it (vLLM then resumes its scheduler)."""
        config = self.config
        with self.changed:
            self._alive()
            chosen = self._vllm_waking(tags) if config.vllm else self._sglang_resuming(tags)
        if chosen:
            self._wake(chosen)
        with self.changed:
            awake = not self.sleeping
            if config.vllm and awake:
                self.paused = None
                self.sleep_gauge = None
            self._thaw()
            return awake

    def _vllm_waking(self, tags: Sequence[str]) -> set[str]:
        """The tags vLLM's executor wakes for ``wake_up(tags)`` (the lock held): none
        when it is not sleeping or a tag asked is not (it logs and returns), or when
        only ``scheduling`` is asked."""
        asked = {tag for tag in tags if tag != SCHEDULING_TAG}
        if (tags and not asked) or not self.sleeping or not asked <= self.sleeping:
            return set()
        return asked or set(self.sleeping)

    def _sglang_resuming(self, tags: Sequence[str]) -> set[str]:
        """The tags SGLang resumes (the lock held); a tag never released is a
        ``KeyError`` in its scheduler."""
        chosen = set(tags) if tags else set(TAGS)
        missing = chosen - self.sleeping
        if missing and self.config.die_on_unreleased_resume:
            raise self.die(f"KeyError in the scheduler: {min(missing)!r}")
        if missing:  # offload_tags.remove(tag) raises KeyError
            raise EngineError(400, f"KeyError: {min(missing)!r} was never released")
        return chosen

    def _wake(self, tags: set[str]) -> None:
        """Map ``tags`` back after ``resume_s`` (or answer ``resume_status``)."""
        config = self.config
        time.sleep(config.resume_s)
        with self.lock:
            self.resumes += 1
            failing = config.resume_status != 200 and (
                config.resume_failures == 0 or self.resumes <= config.resume_failures
            )
        if failing:
            raise EngineError(config.resume_status, "resume refused")
        with self.changed:
            if config.memory_saver:
                self._restore(tags)
            self.sleeping -= tags

    def _restore(self, tags: set[str]) -> None:
        """Map memory back for ``tags`` (the caller holds the lock)."""
        config = self.config
        if "weights" in tags and self.weights is None:
            if self.backup is not None:
                self.weights = self.backup.to_device(config.device)
                self.backup = None
            else:  # pages back, content gone: the model now answers garbage
                self.weights = Buffer(_bytes(config.weights_mib), config.device)
        elif "weights" in tags and self.backup is not None and self.backup is not self.weights:
            self.backup = None  # freed later than the resume: the weights never left
        if "kv_cache" in tags and self.kv is None:
            self.kv = Buffer(_bytes(config.kv_mib), config.device)

    def reload_weights(self) -> None:
        """Load the weights again from "disk" (vLLM ``reload_weights``, SGLang update)."""
        with self.lock:
            self._alive()
            if "weights" in self.sleeping:
                raise EngineError(400, "cannot reload weights while the weights tag is asleep")
            old = self.weights
            config = self.config
            self.weights = Buffer(_bytes(config.weights_mib), config.device, config.seed)
        if old is not None:
            old.free()
