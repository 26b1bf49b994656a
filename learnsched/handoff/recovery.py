"""Serving recovery: cold start and warm resume through the engines' real HTTP APIs.

Capacity is ready only when a real generation request completes: vLLM's ``/health``
answers 200 while the engine sleeps, and a resume call's return says nothing about the
first token. Likewise a release call's answer is not the release: where a device can be
watched, the freed memory is confirmed before the parked state is read. Every stamp is
``time.perf_counter_ns()`` of this process.

- vLLM sleep mode (server started with ``--enable-sleep-mode`` and
  ``VLLM_SERVER_DEV_MODE=1``): ``POST /sleep?level=N``, ``POST /wake_up``,
  ``GET /is_sleeping``; generation through ``POST /v1/completions``.
- SGLang (``--enable-memory-saver``): ``POST /release_memory_occupation`` and
  ``POST /resume_memory_occupation`` with body ``{"tags": [...]}``; generation through
  ``POST /generate``.
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode, urlsplit

from .._checks import integer, nonnegative, number, positive
from .errors import HandoffProbeError
from .host_memory import HostMemory, PhaseSampler, process_tree
from .ledger import HandoffRecord
from .nvml import DeviceMemory, GpuProcess
from .release import MemoryReader, wait_for_release
from .waits import poll_until

__all__ = [
    "ENGINES",
    "HttpStatusError",
    "RecoveryRun",
    "ServingEndpoint",
    "launch_engine",
    "measure_warm_recovery",
]

T = TypeVar("T")
ENGINES = ("vllm", "sglang")
VLLM_SLEEP_LEVELS = (1, 2)
PROMPT = "The capital of France is"
# Inside the 10-50 ms band: fine enough for sub-second resumes, light on the engine.
DEFAULT_POLL_S = 0.02
POLL_RANGE_S = (0.010, 0.050)
# Answers worth retrying while an engine comes up: timeout, rate limit, server errors.
RETRY_4XX = (408, 429)
# A park counts as released once this share of the engine's awake device bytes is free:
# sleeping engines keep their CUDA context and some buffers (the paper: 3.74 GiB of ~70).
RELEASE_SHARE = 0.5


def check_poll(poll_s: float) -> float:
    """``poll_s`` in seconds, or ``ValueError`` unless within 10-50 ms."""
    low, high = POLL_RANGE_S
    value = number("poll_s", poll_s)
    if not low <= value <= high:
        raise ValueError(f"poll_s must be within {low:g}-{high:g} s (10-50 ms), got {poll_s!r}")
    return value


class HttpStatusError(HandoffProbeError):
    """An engine answered with a status other than 200.

    Parameters
    ----------
    status
        The HTTP status.
    message
        What was asked and the start of the answer.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    @property
    def retryable(self) -> bool:
        """Whether the engine may still come up: 408, 429 or a 5xx (e.g. 503 while loading)."""
        return self.status in RETRY_4XX or self.status >= 500


class StreamError(HandoffProbeError):
    """A generation stream that answered 200 carried an error event."""


def check_engine(engine: str) -> str:
    """``engine``, or ``ValueError`` naming it unless vLLM or SGLang."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


class ServingEndpoint:
    """An engine's HTTP server: ``http://host:port``.

    Parameters
    ----------
    url
        Base URL, e.g. ``http://127.0.0.1:8000``.
    engine
        ``"vllm"`` or ``"sglang"``.
    """

    def __init__(self, url: str, engine: str) -> None:
        self.engine = check_engine(engine)
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"url must be http://HOST:PORT, got {url!r}")
        try:
            port = parts.port
        except ValueError as err:
            raise ValueError(f"url {url!r}: bad port ({err})") from err
        self.url = url.rstrip("/")
        self.host = parts.hostname
        self.port = port if port is not None else 80
        self.model: str | None = None

    def __repr__(self) -> str:
        return f"ServingEndpoint({self.url!r}, {self.engine!r})"

    def request(self, method: str, path: str, body: object, timeout_s: float) -> tuple[int, bytes]:
        """One HTTP exchange; ``(status, body)``.

        Raises
        ------
        ConnectionError, TimeoutError
            The server cannot be reached or does not answer in time (names the URL).
        """
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            payload = None if body is None else json.dumps(body)
            headers = {} if body is None else {"Content-Type": "application/json"}
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        except TimeoutError as err:
            raise TimeoutError(f"{method} {self.url}{path}: no answer in {timeout_s:g} s") from err
        except (OSError, http.client.HTTPException) as err:
            raise ConnectionError(f"{method} {self.url}{path}: {err}") from err
        finally:
            conn.close()

    def call(self, method: str, path: str, body: object, timeout_s: float) -> bytes:
        """:meth:`request` that also requires status 200."""
        status, data = self.request(method, path, body, timeout_s)
        if status != 200:
            text = data[:200].decode(errors="replace")
            raise HttpStatusError(status, f"{method} {self.url}{path} answered {status}: {text}")
        return data

    def port_open(self, timeout_s: float) -> bool:
        """Whether a TCP connection to the server succeeds."""
        try:
            with socket.create_connection((self.host, self.port), timeout=timeout_s):
                return True
        except OSError:
            return False

    def healthy(self, timeout_s: float) -> bool:
        """Whether ``GET /health`` answers 200 (not readiness: see the module notes)."""
        try:
            return self.request("GET", "/health", None, timeout_s)[0] == 200
        except (ConnectionError, TimeoutError):
            return False

    def served_model(self, timeout_s: float) -> str:
        """The model name vLLM's completions need (first of ``GET /v1/models``)."""
        if self.model is None:
            data = json.loads(self.call("GET", "/v1/models", None, timeout_s))
            models = data.get("data") or []
            if not models:
                raise HandoffProbeError(f"{self.url}/v1/models lists no model")
            self.model = str(models[0]["id"])
        return self.model

    def release(self, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """Ask the engine to release its device memory (returns when acknowledged)."""
        if self.engine == "vllm":
            self.call("POST", f"/sleep?{urlencode({'level': level})}", None, timeout_s)
        else:
            body = {"tags": list(tags)} if tags else {}
            self.call("POST", "/release_memory_occupation", body, timeout_s)

    def resume(self, *, tags: Sequence[str], timeout_s: float) -> None:
        """Ask the engine to restore its device state (returns when acknowledged)."""
        if self.engine == "vllm":
            query = f"?{urlencode([('tags', t) for t in tags])}" if tags else ""
            self.call("POST", f"/wake_up{query}", None, timeout_s)
        else:
            body = {"tags": list(tags)} if tags else {}
            self.call("POST", "/resume_memory_occupation", body, timeout_s)

    def is_sleeping(self, timeout_s: float) -> bool:
        """vLLM's own view (``GET /is_sleeping``); SGLang has no such route."""
        data = json.loads(self.call("GET", "/is_sleeping", None, timeout_s))
        return bool(data["is_sleeping"])

    def generate(self, max_tokens: int, timeout_s: float) -> tuple[int, int]:
        """Stream one real request; ``(first_token_ns, done_ns)`` stamps.

        Raises
        ------
        HttpStatusError
            Non-200 answer.
        StreamError
            The stream carried an error event.
        HandoffProbeError
            A stream without a token, or with events this probe cannot read.
        ConnectionError, TimeoutError
            The server cannot be reached or stalls.
        """
        if self.engine == "vllm":
            path = "/v1/completions"
            body: dict[str, Any] = {
                "model": self.served_model(timeout_s),
                "prompt": PROMPT,
                "max_tokens": max_tokens,
                "temperature": 0,
                "ignore_eos": True,  # a full-length answer: the request is comparable
                "stream": True,
            }
        else:
            path = "/generate"
            body = {
                "text": PROMPT,
                "sampling_params": {
                    "max_new_tokens": max_tokens,
                    "temperature": 0,
                    "ignore_eos": True,
                },
                "stream": True,
            }
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            conn.request(
                "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            if response.status != 200:
                text = response.read()[:200].decode(errors="replace")
                raise HttpStatusError(
                    response.status, f"POST {self.url}{path} answered {response.status}: {text}"
                )
            first = self._first_token(response, f"POST {self.url}{path}")
            if first is None:
                raise HandoffProbeError(f"POST {self.url}{path}: the stream carried no token")
            response.read()  # the rest of the stream, up to [DONE]
            return first, time.perf_counter_ns()
        except TimeoutError as err:
            raise TimeoutError(f"POST {self.url}{path}: stalled for {timeout_s:g} s") from err
        except (OSError, http.client.HTTPException) as err:
            raise ConnectionError(f"POST {self.url}{path}: {err}") from err
        finally:
            conn.close()

    def _first_token(self, response: http.client.HTTPResponse, what: str) -> int | None:
        """Read server-sent events until one carries generated text; its stamp."""
        for raw in response:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[len(b"data:") :].strip()
            if payload == b"[DONE]":
                return None
            if self._event_text(payload, what):
                return time.perf_counter_ns()
        return None

    def _event_text(self, payload: bytes, what: str) -> str:
        """The generated text of one stream event; errors named, never a raw KeyError."""
        shown = payload[:200].decode(errors="replace")
        try:
            event = json.loads(payload)
        except ValueError as err:
            raise HandoffProbeError(f"{what}: stream event is not JSON ({err}): {shown}") from err
        if not isinstance(event, dict):
            raise HandoffProbeError(f"{what}: stream event is not a JSON object: {shown}")
        # vLLM sends {"error": {...}} or {"object": "error", ...}; SGLang {"error": {...}}.
        if "error" in event or event.get("object") == "error":
            raise StreamError(f"{what}: the stream carried an error: {shown}")
        try:
            text = event["choices"][0]["text"] if self.engine == "vllm" else event["text"]
        except (KeyError, IndexError, TypeError) as err:
            raise HandoffProbeError(
                f"{what}: stream event without generated text (no {err}): {shown}"
            ) from err
        return str(text or "")


@dataclass(frozen=True)
class RecoveryRun:
    """One measured recovery.

    Parameters
    ----------
    kind
        ``"cold"`` (launch to first completed request) or ``"warm"`` (park, resume).
    engine
        ``"vllm"`` or ``"sglang"``.
    stamps_ns
        ``perf_counter_ns`` stamps. Cold: ``launched``, ``port_open``, ``health_200``,
        ``first_token``, ``request_done``. Warm: ``release_sent``, ``release_ack``
        (vLLM's ``asleep_reported``), ``release_confirmed`` (device memory seen freed),
        ``resume_sent``, ``resume_ack`` (vLLM's ``awake_reported``), ``memory_back``
        (device memory seen re-occupied), ``health_200``, ``first_token``,
        ``request_done``. A stamp that could not be observed is absent.
    host
        Host PSS of the engine's process tree at phase boundaries: warm ``"awake"``,
        ``"parked"``, ``"resumed"``; cold ``"ready"`` (empty without a PID).
    device
        Device memory at the same phases (empty without a device to read).
    engine_device
        Device bytes of the engine's own processes at those phases, from the device's
        per-process figures (empty where the device does not list the engine's
        processes with their memory, e.g. in another PID namespace).
    release
        Warm: how the release was confirmed (``"free-rose"``, ``"process-gone"``,
        ``"process-below-floor"``) or ``"unconfirmed: <why>"``; cold: ``""``.
    """

    kind: str
    engine: str
    stamps_ns: dict[str, int]
    host: dict[str, HostMemory]
    device: dict[str, DeviceMemory]
    engine_device: dict[str, int] = field(default_factory=dict)
    release: str = ""

    @property
    def start_stamp(self) -> str:
        """Where readiness is counted from."""
        return "launched" if self.kind == "cold" else "resume_sent"

    @property
    def ready_s(self) -> float:
        """Start until the first real request completed (capacity ready), seconds."""
        return (self.stamps_ns["request_done"] - self.stamps_ns[self.start_stamp]) / 1e9

    @property
    def resume_s(self) -> float:
        """Warm: resume sent until acknowledged with the memory back, seconds.

        The paper's resume latency (0.487 s with SGLang): the later of the resume
        call's answer, vLLM's ``is_sleeping`` false and device memory seen re-occupied
        (where a device was watched). :attr:`ready_s` adds the first request.
        """
        if self.kind != "warm":
            raise ValueError("resume_s is defined for warm recoveries only")
        ends = [self.stamps_ns[k] for k in RESUMED_STAMPS if k in self.stamps_ns]
        return (max(ends) - self.stamps_ns["resume_sent"]) / 1e9

    @property
    def release_s(self) -> float | None:
        """Warm: release sent until the device showed the memory freed, seconds.

        ``None`` where the release could not be confirmed (see :attr:`release`); the
        release call's own answer (``release_ack``) is not used in its place.
        """
        if "release_confirmed" not in self.stamps_ns:
            return None
        return self.interval_s("release_sent", "release_confirmed")

    @property
    def device_basis(self) -> str | None:
        """What the device figures count: the engine's processes, or the whole device.

        ``"engine-processes"`` (per-process bytes of the engine's tree),
        ``"device-occupied"`` (used plus reserved: everything on the GPU, other
        processes included) or ``None`` without a device.
        """
        if self.engine_device:
            return "engine-processes"
        return "device-occupied" if self.device else None

    def device_bytes(self, phase: str) -> int | None:
        """Device bytes at ``phase`` on :attr:`device_basis` (``None`` if not read)."""
        if self.engine_device:
            return self.engine_device.get(phase)
        memory = self.device.get(phase)
        return None if memory is None else memory.occupied

    def interval_s(self, start: str, end: str) -> float:
        """Seconds between two stamps."""
        return (self.stamps_ns[end] - self.stamps_ns[start]) / 1e9

    def to_record(self) -> HandoffRecord:
        """The ledger record of this recovery."""
        before, after = ("awake", "resumed") if self.kind == "warm" else ("launched", "ready")
        return HandoffRecord(
            kind=f"{self.kind}-recovery",
            engine=self.engine,
            stamps_ns=self.stamps_ns,
            readiness_s=self.ready_s,
            device_before=self.device.get(before),
            device_after=self.device.get(after),
            host_before=self.host.get(before),
            host_after=self.host.get(after),
        )


RESUMED_STAMPS = ("resume_ack", "awake_reported", "memory_back")


class _Phases:
    """Host and device memory read at phase boundaries, and the device watched between."""

    def __init__(self, pid: int | None, device: MemoryReader | None) -> None:
        self.pid = pid
        self.host = PhaseSampler(pid) if pid is not None else None
        self.reader = device
        self.device: dict[str, DeviceMemory] = {}
        self.listed: dict[str, list[GpuProcess]] = {}
        self.engine_device: dict[str, int] = {}
        self.per_process = True  # until a phase shows the engine unlisted or without bytes
        self.expected_bytes: int | None = None

    def _engine_pids(self) -> set[int]:
        if self.pid is None:
            return set()
        try:
            return set(process_tree(self.pid))
        except ProcessLookupError:
            return set()

    def mark(self, phase: str) -> None:
        if self.host is not None:
            self.host.mark(phase)
        if self.reader is None:
            return
        self.device[phase] = self.reader.memory()
        self.listed[phase] = self.reader.processes()
        engine_pids = self._engine_pids()
        mine = [p for p in self.listed[phase] if p.pid in engine_pids]
        # The engine must be listed while awake; later it may have left the device.
        if self.per_process and (mine or self.engine_device) and self.pid is not None:
            used = [p.used_bytes for p in mine]
            if all(u is not None for u in used):
                self.engine_device[phase] = sum(u for u in used if u is not None)
                return
        self.per_process = False
        self.engine_device.clear()

    def confirm_release(
        self, stamps: dict[str, int], release_bytes: int | None, timeout_s: float, poll_s: float
    ) -> str:
        """Wait until the device shows the park's memory freed; stamp ``release_confirmed``.

        Returns the condition seen, or ``"unconfirmed: <why>"`` where the device cannot
        show it (never a made-up stamp).
        """
        if self.reader is None:
            return "unconfirmed: no device to watch (NVML unavailable or not given)"
        awake = self.engine_device.get("awake")
        expected = release_bytes
        if expected is None and awake is not None:
            expected = max(1, int(awake * RELEASE_SHARE))
        if expected is None:
            return (
                "unconfirmed: the device does not list the engine's processes with their "
                "memory (another PID namespace, or no PID given); give release_bytes"
            )
        self.expected_bytes = expected
        engine_pids = self._engine_pids()
        watched = [p.pid for p in self.listed["awake"] if p.pid in engine_pids]
        result = wait_for_release(
            self.reader,
            pid=watched or None,
            floor_bytes=max(awake - expected, 0) if watched and awake is not None else None,
            free_rise_bytes=expected,
            baseline_free_bytes=self.device["awake"].free,
            baseline_processes=self.listed["awake"],
            since_ns=stamps["release_sent"],
            timeout_s=timeout_s,
            poll_s=poll_s,
        )
        stamps["release_confirmed"] = result.seen_ns
        return result.condition

    def confirm_memory_back(self, stamps: dict[str, int], timeout_s: float, poll_s: float) -> None:
        """After a confirmed release: wait until the memory is re-occupied (``memory_back``)."""
        expected, reader = self.expected_bytes, self.reader
        if expected is None or reader is None or "release_confirmed" not in stamps:
            return
        parked_free = self.device["parked"].free
        parked_engine = self.engine_device.get("parked")
        engine_pids = self._engine_pids()

        def back() -> bool | None:
            if parked_free - reader.memory().free >= expected:
                return True
            if parked_engine is None:
                return None
            mine = [p.used_bytes or 0 for p in reader.processes() if p.pid in engine_pids]
            return True if sum(mine) - parked_engine >= expected else None

        stamps["memory_back"] = poll_until(
            back, what="device memory back after resume", timeout_s=timeout_s, poll_s=poll_s
        ).t_ns

    def run(self, kind: str, engine: str, stamps: dict[str, int], release: str) -> RecoveryRun:
        host = {} if self.host is None else {s.phase: s.memory for s in self.host.samples}
        return RecoveryRun(
            kind, engine, stamps, host, self.device, dict(self.engine_device), release
        )


class _Deadline:
    def __init__(self, timeout_s: float, what: str) -> None:
        self.timeout_s = positive("timeout_s", timeout_s)
        self.end_ns = time.perf_counter_ns() + int(self.timeout_s * 1e9)
        self.what = what

    def left(self) -> float:
        remaining = (self.end_ns - time.perf_counter_ns()) / 1e9
        if remaining <= 0:
            raise TimeoutError(f"{self.what}: not ready within {self.timeout_s:g} s")
        return remaining


def _until(
    check: Callable[[], T | None], what: str, deadline: _Deadline, poll_s: float, last: list[str]
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


def _wait_first_request(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    deadline: _Deadline,
    poll_s: float,
    max_tokens: int,
    alive: Callable[[], None] | None = None,
) -> None:
    """Poll health, then send real requests until one completes; stamps as seen.

    Answers that may change while an engine comes up (no connection, 408, 429, 5xx,
    an error event in the stream) are retried until the deadline; any other 4xx is
    permanent and raised at once.
    """
    last: list[str] = []

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

    stamps["health_200"] = _until(health, f"{endpoint.url}/health", deadline, poll_s, last)[1]

    def request() -> tuple[int, int] | None:
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

    first, done = _until(request, f"{endpoint.url} first request", deadline, poll_s, last)[0]
    stamps["first_token"], stamps["request_done"] = first, done


def _check_warm_arguments(
    level: int, max_tokens: int, parked_s: float, poll_s: float, pid: int | None
) -> None:
    integer("level", level, low=1)
    if level not in VLLM_SLEEP_LEVELS:
        raise ValueError(f"level must be 1 or 2 (vLLM sleep levels), got {level!r}")
    integer("max_tokens", max_tokens, low=1)
    nonnegative("parked_s", parked_s)
    check_poll(poll_s)
    if pid is not None:
        integer("pid", pid, low=1)


def _park(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    level: int,
    tags: Sequence[str],
    timeout_s: float,
    poll_s: float,
) -> None:
    """Send the release; stamp it, its acknowledgment and (vLLM) the engine's own view."""
    stamps["release_sent"] = time.perf_counter_ns()
    endpoint.release(level=level, tags=tags, timeout_s=timeout_s)
    stamps["release_ack"] = time.perf_counter_ns()
    if endpoint.engine == "vllm":
        stamps["asleep_reported"] = poll_until(
            lambda: True if endpoint.is_sleeping(timeout_s) else None,
            what=f"{endpoint.url}/is_sleeping true",
            timeout_s=timeout_s,
            poll_s=poll_s,
        ).t_ns


def _unpark(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    tags: Sequence[str],
    timeout_s: float,
    poll_s: float,
) -> None:
    """Send the resume; stamp it, its acknowledgment and (vLLM) the engine's own view."""
    stamps["resume_sent"] = time.perf_counter_ns()
    endpoint.resume(tags=tags, timeout_s=timeout_s)
    stamps["resume_ack"] = time.perf_counter_ns()
    if endpoint.engine == "vllm":
        stamps["awake_reported"] = poll_until(
            lambda: True if not endpoint.is_sleeping(timeout_s) else None,
            what=f"{endpoint.url}/is_sleeping false",
            timeout_s=timeout_s,
            poll_s=poll_s,
        ).t_ns


def _resume_after_failure(
    endpoint: ServingEndpoint, tags: Sequence[str], timeout_s: float, err: BaseException
) -> None:
    """Best effort: do not leave the user's engine parked because a measurement failed."""
    try:
        endpoint.resume(tags=tags, timeout_s=timeout_s)
    except (HandoffProbeError, OSError) as resume_err:
        raise HandoffProbeError(
            f"{err}; resuming {endpoint.url} afterwards failed too, so the engine may still "
            f"be parked: {resume_err}"
        ) from err


def measure_warm_recovery(
    endpoint: ServingEndpoint,
    *,
    level: int = 1,
    tags: Sequence[str] = (),
    pid: int | None = None,
    device: MemoryReader | None = None,
    release_bytes: int | None = None,
    parked_s: float = 1.0,
    max_tokens: int = 8,
    timeout_s: float = 120.0,
    poll_s: float = DEFAULT_POLL_S,
) -> RecoveryRun:
    """Park a serving engine, confirm the release, resume it and time its return.

    The release call's answer is not the release: with a device to watch, the device
    memory is polled (:func:`~learnsched.handoff.wait_for_release`) until it has been
    freed (stamp ``release_confirmed``), and only then is the parked memory read. The
    resume is timed to its acknowledgment with the memory back (``resume_s``) and to the
    first completed request (``ready_s``). If anything fails after the release was sent
    and before the resume was, the engine is resumed before the error is raised.

    Parameters
    ----------
    endpoint
        A running engine that serves now.
    level
        vLLM sleep level (1: weights to host memory; 2: discarded). Unused by SGLang.
    tags
        Memory kinds to release and resume (vLLM ``wake_up`` tags, SGLang ``tags``,
        e.g. ``weights``, ``kv_cache``); empty means all.
    pid
        The engine's process: its tree's PSS is read at each phase, and its processes
        on the device are watched.
    device
        The GPU to watch (an :class:`~learnsched.handoff.NvmlDevice`, or anything with
        ``memory()`` and ``processes()``); ``None`` records that the release could not
        be confirmed.
    release_bytes
        Device bytes a park must free to count as released (default: half of what the
        device lists for the engine's processes while awake).
    parked_s
        Time to stay parked before resuming, seconds.
    max_tokens
        Tokens in the readiness request.
    timeout_s
        Bound on each phase, seconds.
    poll_s
        Poll interval, seconds (10-50 ms).
    """
    _check_warm_arguments(level, max_tokens, parked_s, poll_s, pid)
    if release_bytes is not None:
        integer("release_bytes", release_bytes, low=1)
    stamps: dict[str, int] = {}
    phases = _Phases(pid, device)
    ready = _Deadline(timeout_s, f"{endpoint.url} before release")
    endpoint.generate(max_tokens, ready.left())  # serving now, or an error naming the URL
    phases.mark("awake")
    try:
        _park(endpoint, stamps, level, tags, timeout_s, poll_s)
        release = phases.confirm_release(stamps, release_bytes, timeout_s, poll_s)
        phases.mark("parked")
        time.sleep(parked_s)
        _unpark(endpoint, stamps, tags, timeout_s, poll_s)
    except BaseException as err:
        if "release_sent" in stamps and "resume_sent" not in stamps:
            _resume_after_failure(endpoint, tags, timeout_s, err)
        raise
    phases.confirm_memory_back(stamps, timeout_s, poll_s)
    _wait_first_request(
        endpoint, stamps, _Deadline(timeout_s, f"{endpoint.url} after resume"), poll_s, max_tokens
    )
    phases.mark("resumed")
    return phases.run("warm", endpoint.engine, stamps, release)


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal a process group; whether it still existed."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):  # gone (a reused id is not ours)
        return False
    return True


def _stop(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """Terminate the engine's whole process group, then kill what is left.

    The group is signalled even when its leader has exited: an engine's workers can
    outlive the process that started them (and keep their device memory).
    """
    deadline = time.perf_counter() + grace_s
    _signal_group(process.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    while time.perf_counter() < deadline and _signal_group(process.pid, 0):
        time.sleep(0.05)  # workers finishing after the leader
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


@contextmanager
def launch_engine(
    command: str | Sequence[str],
    endpoint: ServingEndpoint,
    *,
    device: MemoryReader | None = None,
    log_path: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_tokens: int = 8,
    timeout_s: float = 600.0,
    poll_s: float = DEFAULT_POLL_S,
    grace_s: float = 30.0,
) -> Iterator[tuple[subprocess.Popen[bytes], RecoveryRun]]:
    """Start an engine and time its cold start; stop it (and its children) on exit.

    Parameters
    ----------
    command
        The launch command (a string is split like a shell would, without a shell).
    endpoint
        Where it will serve.
    device
        Read device memory at launch and when ready.
    log_path
        Append the engine's output here (default: discarded).
    cwd
        The engine's working directory (default: this process's).
    max_tokens
        Tokens in the readiness request.
    timeout_s
        Bound on the whole start, seconds.
    poll_s
        Poll interval, seconds.
    grace_s
        Time between SIGTERM and SIGKILL when stopping, seconds.

    Yields
    ------
    (process, RecoveryRun)
        The running engine and its cold start.

    Raises
    ------
    HandoffProbeError
        The engine exited before serving (the message gives its status).
    TimeoutError
        Not ready within ``timeout_s``.
    """
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("command must not be empty")
    integer("max_tokens", max_tokens, low=1)
    check_poll(poll_s)
    nonnegative("grace_s", grace_s)
    if endpoint.port_open(poll_s):
        raise HandoffProbeError(f"{endpoint.url} already answers before launch: stop that server")
    deadline = _Deadline(timeout_s, f"{argv[0]} cold start")
    stamps: dict[str, int] = {}
    phases = _Phases(None, device)
    phases.mark("launched")
    with ExitStack() as cleanup:
        log = cleanup.enter_context(open(log_path, "ab")) if log_path is not None else None
        stamps["launched"] = time.perf_counter_ns()
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if log is None else log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,  # its own process group, stopped as a whole
        )
        cleanup.callback(_stop, process, grace_s)  # runs before the log is closed
        phases.host = PhaseSampler(process.pid)

        def alive() -> None:
            status = process.poll()
            if status is not None:
                raise HandoffProbeError(f"{argv[0]} exited with status {status} before serving")

        def port() -> bool | None:
            alive()
            return True if endpoint.port_open(min(poll_s, deadline.left())) else None

        stamps["port_open"] = poll_until(
            port, what=f"{endpoint.url} port", timeout_s=deadline.left(), poll_s=poll_s
        ).t_ns
        _wait_first_request(endpoint, stamps, deadline, poll_s, max_tokens, alive)
        phases.mark("ready")
        yield process, phases.run("cold", endpoint.engine, stamps, "")
