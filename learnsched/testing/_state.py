"""The simulated engine's state: what is parked, paused, held, running, and whether it died.

Each behaviour copies the engine it names (sources read for this module, vLLM 0.33 and
SGLang 0.5.23):

- vLLM (``vllm/executor`` ``Executor.sleep``/``wake_up``,
  ``entrypoints/serve/dev/sleep/api_router.py``): ``sleep(level, mode)`` takes no tags
  and puts both ``weights`` and ``kv_cache`` to sleep; ``mode`` defaults to ``abort``
  (in-flight requests end with ``finish_reason: "abort"``), ``wait`` drains them
  first, ``keep`` freezes them; level 0 only pauses the scheduler. ``wake_up(tags)``
  wakes the tags given (all when none), ignores (logs) a tag that is not sleeping, and
  ``is_sleeping`` stays true until every sleeping tag is woken (and while paused). A
  request sent while asleep is queued, not refused, and no gauge counts it. Level 1
  keeps the weights in host memory; level 2 discards them, and the model answers
  garbage until ``collective_rpc("reload_weights")``.
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

Which of these failures are on is :class:`~._config.EngineConfig`'s (the defaults
answer 400 or 503 and live on; ``strict`` dies as the engines do).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ._config import EngineConfig
from ._memory import Buffer, fingerprint

__all__ = ["HEALTH_TIMEOUT_S", "TAGS", "EngineDied", "EngineError", "EngineState", "Request"]

TAGS = ("weights", "kv_cache")
MIB = 2**20
# SGLang's HEALTH_CHECK_TIMEOUT: a health generation held by a pause answers 503 then.
HEALTH_TIMEOUT_S = 20.0
# How often a held or frozen request looks again (and notices a death), seconds.
_WAKE_S = 0.05
PAUSE_MODES = ("abort", "retract", "in_place")
SLEEP_MODES = ("abort", "wait", "keep")


class EngineError(Exception):
    """A call the engine refuses, with the HTTP status its real counterpart answers."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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
        self.deprecated_calls = 0  # SGLang /get_server_info (warns on every call)
        self.resumes = 0
        self.death: str | None = None
        self.slots = threading.BoundedSemaphore(config.max_running)

    # --- what is visible -------------------------------------------------------------
    def ready(self) -> bool:
        """Past the start-up delay."""
        return time.monotonic() - self.started >= self.config.ready_delay_s

    def is_sleeping(self) -> bool:
        """vLLM's ``is_sleeping``: a tag asleep, or the scheduler paused by a sleep."""
        return bool(self.sleeping) or self.paused == "sleep"

    def load(self) -> tuple[int, int]:
        """``(running, waiting)`` as the gauges show them (frozen while parked)."""
        with self.lock:
            if self.frozen_load is not None:
                return self.frozen_load
            return self.running, self.waiting

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
        if self.paused is not None:
            return True  # SGLang's tokenizer manager / vLLM's paused scheduler keep it
        return self.config.queue_while_asleep and bool(self.sleeping)

    def admit(self, timeout_s: float | None = None, *, probe: bool = False) -> int:
        """A new request enters the scheduler: held while paused (invisible to the
        gauges), refused or fatal while released; the abort epoch it entered at.

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
            if self._holds_arrivals():
                end = None if timeout_s is None else time.monotonic() + timeout_s
                self.held += 1
                try:
                    while self._holds_arrivals():
                        self._alive()
                        if end is not None and time.monotonic() >= end:
                            raise EngineError(503, "held by a pause past the timeout")
                        self.changed.wait(_WAKE_S)
                finally:
                    self.held -= 1
            if self.sleeping:
                if config.die_on_released_generation:
                    raise self.die(
                        "a generation reached the scheduler while memory was released "
                        "(no /pause_generation): illegal memory access"
                    )
                if not probe:
                    raise EngineError(503, "the model is sleeping")
            return self.epoch

    @contextmanager
    def request(self, timeout_s: float | None = None) -> Iterator[Request]:
        """:meth:`admit`, wait for a decode slot (counted as waiting), then hold it
        (counted as running) while the request decodes."""
        epoch = self.admit(timeout_s)
        with self.lock:
            self.waiting += 1
        try:
            while not self.slots.acquire(timeout=_WAKE_S):
                with self.lock:
                    self._alive()
        except BaseException:
            with self.lock:
                self.waiting -= 1
            raise
        with self.lock:
            self.waiting -= 1
            self.running += 1
        try:
            yield Request(self, epoch)
        finally:
            with self.changed:
                self.running -= 1
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
                    self.running -= 1
                    self.waiting += 1
                self.changed.wait(_WAKE_S)
            if retracted:
                self.waiting -= 1
                self.running += 1
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

    def _thaw(self) -> None:
        """Back from a park or pause: gauges live, frozen requests go on."""
        if self.paused is None and not self.sleeping:
            self.frozen_load = None
            self.frozen_mode = None
        self.changed.notify_all()

    # --- SGLang's pause -------------------------------------------------------------------
    def pause(self, mode: str) -> None:
        """SGLang ``/pause_generation``: hold new requests; abort, retract or freeze the
        running ones."""
        if mode not in PAUSE_MODES:
            raise EngineError(400, f"mode must be one of {', '.join(PAUSE_MODES)}, got {mode!r}")
        with self.changed:
            self._alive()
            self._freeze_gauges()
            self.paused = mode
            if mode == "abort":
                self._abort_in_flight()
            else:
                self.frozen_mode = mode

    def unpause(self) -> None:
        """SGLang ``/continue_generation`` (a no-op when not paused)."""
        with self.changed:
            self._alive()
            self.paused = None
            self.frozen_mode = None
            self._thaw()

    # --- park and resume ---------------------------------------------------------------
    def release(self, level: int, tags: Sequence[str], mode: str = "abort") -> None:
        """Park: vLLM ``sleep(level, mode)`` (all tags) or SGLang
        ``release_memory_occupation(tags)``."""
        config = self.config
        chosen = set(TAGS) if config.vllm or not tags else set(tags)
        unknown = chosen - set(TAGS)
        if unknown:
            raise EngineError(400, f"unknown memory tags {sorted(unknown)}; known: {list(TAGS)}")
        with self.changed:
            self._alive()
            if config.vllm and self.is_sleeping():
                return  # vLLM: "Executor is already sleeping." (a no-op)
            if config.vllm and config.sleep_modes:
                self._vllm_pause(mode)
                if level == 0:
                    return  # level 0 pauses only; nothing is freed
            busy = self.running or self.waiting
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
            self.parks += 1
            park = self.parks
            if config.vllm and config.sleep_modes and self.paused == "sleep":
                self.paused = None  # asleep now: queue_while_asleep says what arrivals get
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

    def _vllm_pause(self, mode: str) -> None:
        """vLLM's ``pause_generation(mode)`` before a sleep (the lock held)."""
        if mode not in SLEEP_MODES:
            raise EngineError(400, f"mode must be one of {', '.join(SLEEP_MODES)}, got {mode!r}")
        self._freeze_gauges()
        self.paused = "sleep"
        if mode == "abort":
            self._abort_in_flight()
            self._drain()
        elif mode == "wait":
            self._drain()
        else:
            self.frozen_mode = "keep"

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

    def resume(self, tags: Sequence[str]) -> None:
        """vLLM ``wake_up(tags)`` or SGLang ``resume_memory_occupation``."""
        config = self.config
        chosen = set(tags) if tags else set(TAGS)
        with self.changed:
            self._alive()
            if config.vllm:
                if self.paused == "sleep" and not self.sleeping:  # level 0: resume the pause
                    self.paused = None
                    self._thaw()
                    return
                if not self.sleeping or not chosen <= self.sleeping:
                    return  # vLLM logs "not sleeping" / "not in sleeping tags" and returns
                chosen = set(tags) if tags else set(self.sleeping)
            else:
                missing = chosen - self.sleeping
                if missing and config.die_on_unreleased_resume:
                    raise self.die(f"KeyError in the scheduler: {min(missing)!r}")
                if missing:  # offload_tags.remove(tag) raises KeyError
                    raise EngineError(400, f"KeyError: {min(missing)!r} was never released")
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
                self._restore(chosen)
            self.sleeping -= chosen
            self._thaw()

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
