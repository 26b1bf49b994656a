"""The simulated engine's state: what is parked, what is held, what is running.

Each behaviour copies the engine it names (sources read for this module):

- vLLM (``vllm/executor`` ``Executor.sleep``/``wake_up``): ``sleep(level)`` takes no
  tags and puts both ``weights`` and ``kv_cache`` to sleep; ``wake_up(tags)`` wakes the
  tags given (all when none), ignores (logs) a tag that is not sleeping, and
  ``is_sleeping`` stays true until every sleeping tag is woken. Level 1 keeps the
  weights in host memory; level 2 discards them, and the model answers garbage until
  ``collective_rpc("reload_weights")`` (the docs' level-2 recipe: wake ``weights``,
  reload, wake ``kv_cache``).
- SGLang (``scheduler_update_weights_mixin``): ``release_memory_occupation`` asserts
  the scheduler is idle ("should be called only when server is idle"), adds its tags
  (default all) to ``offload_tags``; ``resume_memory_occupation`` removes them with
  ``set.remove``, so a tag never released fails (a ``KeyError``, answered 400 by the
  HTTP server's ``_create_error_response``). Without ``--enable-memory-saver`` the
  memory-saver adapter is a no-op: the release is accepted and nothing is freed.
  Without ``--enable-weights-cpu-backup`` the weights' pages come back without their
  content.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from .._checks import integer, nonnegative
from ._memory import Buffer, check_device, fingerprint

__all__ = ["DIALECTS", "TAGS", "EngineConfig", "EngineError", "EngineState"]

DIALECTS = ("vllm", "sglang")
TAGS = ("weights", "kv_cache")
MIB = 2**20
NONNEGATIVE = (
    *("weights_mib", "kv_mib", "resident_mib", "token_s", "slow_health_s", "ready_delay_s"),
    *("release_s", "resume_s", "free_delay_s"),
)


class EngineError(Exception):
    """A call the engine refuses, with the HTTP status its real counterpart answers."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class EngineConfig:
    """How the simulated engine behaves (every field has a command-line flag).

    Parameters
    ----------
    dialect
        ``"vllm"`` or ``"sglang"``: which HTTP routes and which park semantics.
    model
        The served model's name (``/v1/models``).
    seed
        Draws the weights' bytes, hence the text (same seed: same answers).
    weights_mib, kv_mib
        Memory held for the weights and the KV cache while awake, MiB.
    resident_mib
        Memory held even while parked, MiB (a sleeping engine keeps its CUDA context
        and some buffers: the paper saw 3.74 GiB of ~70 stay).
    device
        ``cpu`` (host memory) or ``cuda[:N]`` (device memory through torch).
    token_s
        Decode time per generated token, seconds.
    max_running
        Requests decoded at once; later ones wait (``num_requests_waiting``).
    weights_backup
        Keep a host copy of the weights while parked (vLLM level 1; SGLang
        ``--enable-weights-cpu-backup``). ``False``: a resume returns fresh memory.
    memory_saver
        Release frees memory (vLLM ``--enable-sleep-mode``, SGLang
        ``--enable-memory-saver``). ``False``: a release is accepted, nothing freed.
    refuse_busy
        Refuse a release while requests run or wait (SGLang asserts idleness).
    slow_health_s
        ``/health`` answers after this long (SGLang's is a generation: >= 1 s).
    ready_delay_s
        ``/health`` and generation answer 503 for this long after start.
    release_s, resume_s
        Time the release and resume calls take before answering, seconds.
    free_delay_s
        Memory goes this long *after* the release was acknowledged, seconds.
    resume_status, generate_status
        Answer resumes / generation requests with this status instead (200: normal).
    stream
        ``"ok"``, or a broken generation stream: ``"error"`` event or ``"garbage"``.
    """

    dialect: str
    model: str = "sim-model"
    seed: int = 0
    weights_mib: float = 8.0
    kv_mib: float = 8.0
    resident_mib: float = 2.0
    device: str = "cpu"
    token_s: float = 0.002
    max_running: int = 8
    weights_backup: bool = True
    memory_saver: bool = True
    refuse_busy: bool = True
    slow_health_s: float = 0.0
    ready_delay_s: float = 0.0
    release_s: float = 0.0
    resume_s: float = 0.0
    free_delay_s: float = 0.0
    resume_status: int = 200
    generate_status: int = 200
    stream: str = "ok"

    def __post_init__(self) -> None:
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, got {self.dialect!r}")
        if not self.model:
            raise ValueError("model must be a non-empty name")
        check_device(self.device)
        integer("seed", self.seed, low=None)
        integer("max_running", self.max_running, low=1)
        for name in NONNEGATIVE:
            nonnegative(name, getattr(self, name))
        integer("resume_status", self.resume_status, low=100, high=599)
        integer("generate_status", self.generate_status, low=100, high=599)
        if self.stream not in ("ok", "error", "garbage"):
            raise ValueError(f"stream must be ok, error or garbage, got {self.stream!r}")

    @property
    def vllm(self) -> bool:
        """Whether this engine speaks vLLM's dialect."""
        return self.dialect == "vllm"


def _bytes(mib: float) -> int:
    return int(mib * MIB)


class EngineState:
    """Parking, memory and load of one simulated engine; shared by request threads.

    Parameters
    ----------
    config
        The behaviour.
    """

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.started = time.monotonic()
        self.lock = threading.Lock()
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
        self.slots = threading.BoundedSemaphore(config.max_running)

    # --- what is visible -------------------------------------------------------------
    def ready(self) -> bool:
        """Past the start-up delay."""
        return time.monotonic() - self.started >= self.config.ready_delay_s

    def serving(self) -> bool:
        """Ready and nothing parked: generation is possible."""
        return self.ready() and not self.sleeping

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
                "model_fingerprint": self.model_print,
                "weights_intact": self.weights_intact(),
                "running": self.running,
                "waiting": self.waiting,
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

    # --- load ------------------------------------------------------------------------
    @contextmanager
    def request_slot(self) -> Iterator[None]:
        """Wait for a decode slot (counted as waiting), then hold it (counted as running)."""
        with self.lock:
            self.waiting += 1
        self.slots.acquire()
        with self.lock:
            self.waiting -= 1
            self.running += 1
        try:
            yield
        finally:
            with self.lock:
                self.running -= 1
            self.slots.release()

    # --- park and resume ---------------------------------------------------------------
    def release(self, level: int, tags: Sequence[str]) -> None:
        """Park: vLLM ``sleep(level)`` (all tags) or SGLang ``release_memory_occupation``."""
        config = self.config
        chosen = set(TAGS) if config.vllm or not tags else set(tags)
        unknown = chosen - set(TAGS)
        if unknown:
            raise EngineError(400, f"unknown memory tags {sorted(unknown)}; known: {list(TAGS)}")
        with self.lock:
            if config.refuse_busy and (self.running or self.waiting):
                raise EngineError(
                    400,
                    "release_memory_occupation should be called only when server is idle "
                    f"({self.running} running, {self.waiting} waiting)",
                )
            if config.vllm and self.sleeping:
                return  # vLLM: "Executor is already sleeping." (a no-op)
        time.sleep(config.release_s)
        with self.lock:
            self.sleeping |= chosen
            self.level = level
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

    def resume(self, tags: Sequence[str]) -> None:
        """vLLM ``wake_up(tags)`` or SGLang ``resume_memory_occupation``."""
        config = self.config
        chosen = set(tags) if tags else set(TAGS)
        with self.lock:
            if config.vllm:
                if not self.sleeping or not chosen <= self.sleeping:
                    return  # vLLM logs "not sleeping" / "not in sleeping tags" and returns
                chosen = set(tags) if tags else set(self.sleeping)
            else:
                missing = chosen - self.sleeping
                if missing:  # offload_tags.remove(tag) raises KeyError
                    raise EngineError(400, f"KeyError: {min(missing)!r} was never released")
        time.sleep(config.resume_s)
        if config.resume_status != 200:
            raise EngineError(config.resume_status, "resume refused")
        with self.lock:
            if config.memory_saver:
                self._restore(chosen)
            self.sleeping -= chosen

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
            if "weights" in self.sleeping:
                raise EngineError(400, "cannot reload weights while the weights tag is asleep")
            old = self.weights
            config = self.config
            self.weights = Buffer(_bytes(config.weights_mib), config.device, config.seed)
        if old is not None:
            old.free()
