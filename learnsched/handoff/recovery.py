"""Serving recovery: cold start and warm resume through the engines' real HTTP APIs.

Capacity is ready only when a real generation request completes: vLLM's ``/health``
answers 200 while the engine sleeps, and a resume call's return says nothing about the
first token. Every stamp is ``time.perf_counter_ns()`` of this process.

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
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from .errors import HandoffProbeError
from .host_memory import HostMemory, PhaseSampler
from .ledger import HandoffRecord
from .nvml import DeviceMemory, NvmlDevice
from .waits import check_count, check_positive, poll_until

__all__ = [
    "ENGINES",
    "RecoveryRun",
    "ServingEndpoint",
    "launch_engine",
    "measure_warm_recovery",
]

ENGINES = ("vllm", "sglang")
PROMPT = "The capital of France is"
# Above the 10-50 ms poll and below any engine's request timeout.
DEFAULT_POLL_S = 0.02


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
            raise HandoffProbeError(f"{method} {self.url}{path} answered {status}: {text}")
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
        HandoffProbeError
            Non-200 answer, or a stream without a token.
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
                raise HandoffProbeError(f"POST {self.url}{path} answered {response.status}: {text}")
            first = self._first_token(response)
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

    def _first_token(self, response: http.client.HTTPResponse) -> int | None:
        """Read server-sent events until one carries generated text; its stamp."""
        for raw in response:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[len(b"data:") :].strip()
            if payload == b"[DONE]":
                return None
            event = json.loads(payload)
            text = event["choices"][0]["text"] if self.engine == "vllm" else event["text"]
            if text:
                return time.perf_counter_ns()
        return None


@dataclass(frozen=True)
class RecoveryRun:
    """One measured recovery.

    Parameters
    ----------
    kind
        ``"cold"`` (launch to first completed request) or ``"warm"`` (resume to first
        completed request).
    engine
        ``"vllm"`` or ``"sglang"``.
    stamps_ns
        ``perf_counter_ns`` stamps. Cold: ``launched``, ``port_open``, ``health_200``,
        ``first_token``, ``request_done``. Warm: ``release_sent``, ``release_ack``
        (and vLLM's ``asleep_reported``), ``resume_sent``, ``resume_ack`` (vLLM's
        ``awake_reported``), ``health_200``, ``first_token``, ``request_done``.
    host
        Host PSS of the engine's process tree at phase boundaries: warm ``"awake"``,
        ``"parked"``, ``"resumed"``; cold ``"ready"`` (empty without a PID).
    device
        Device memory at the same phases (empty without NVML).
    """

    kind: str
    engine: str
    stamps_ns: dict[str, int]
    host: dict[str, HostMemory]
    device: dict[str, DeviceMemory]

    @property
    def start_stamp(self) -> str:
        """Where readiness is counted from."""
        return "launched" if self.kind == "cold" else "resume_sent"

    @property
    def ready_s(self) -> float:
        """Start until the first real request completed (capacity ready), seconds."""
        return (self.stamps_ns["request_done"] - self.stamps_ns[self.start_stamp]) / 1e9

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


class _Phases:
    """Host and device memory read at phase boundaries."""

    def __init__(self, pid: int | None, device: NvmlDevice | None) -> None:
        self.host = PhaseSampler(pid) if pid is not None else None
        self.device_reader = device
        self.device: dict[str, DeviceMemory] = {}

    def mark(self, phase: str) -> None:
        if self.host is not None:
            self.host.mark(phase)
        if self.device_reader is not None:
            self.device[phase] = self.device_reader.memory()

    def host_readings(self) -> dict[str, HostMemory]:
        return {} if self.host is None else {s.phase: s.memory for s in self.host.samples}


class _Deadline:
    def __init__(self, timeout_s: float, what: str) -> None:
        self.end = time.monotonic() + check_positive("timeout_s", timeout_s)
        self.timeout_s = timeout_s
        self.what = what

    def left(self) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{self.what}: not ready within {self.timeout_s:g} s")
        return remaining


def _wait_first_request(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    deadline: _Deadline,
    poll_s: float,
    max_tokens: int,
    alive: Any = None,
) -> None:
    """Poll health, then send real requests until one completes; stamps as seen."""

    def health() -> bool | None:
        if alive is not None:
            alive()
        return True if endpoint.healthy(min(deadline.left(), 5.0)) else None

    stamps["health_200"] = poll_until(
        health, what=f"{endpoint.url}/health", timeout_s=deadline.left(), poll_s=poll_s
    ).t_ns

    def request() -> tuple[int, int] | None:
        if alive is not None:
            alive()
        try:
            return endpoint.generate(max_tokens, deadline.left())
        except (HandoffProbeError, ConnectionError):
            return None  # not serving yet: try again until the deadline

    first, done = poll_until(
        request, what=f"{endpoint.url} first request", timeout_s=deadline.left(), poll_s=poll_s
    ).value
    stamps["first_token"], stamps["request_done"] = first, done


def measure_warm_recovery(
    endpoint: ServingEndpoint,
    *,
    level: int = 1,
    tags: Sequence[str] = (),
    pid: int | None = None,
    device: NvmlDevice | None = None,
    parked_s: float = 1.0,
    max_tokens: int = 8,
    timeout_s: float = 120.0,
    poll_s: float = DEFAULT_POLL_S,
) -> RecoveryRun:
    """Park a serving engine, then time its return to the first completed request.

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
        The engine's process: its tree's PSS is read at each phase.
    device
        Read device memory at each phase.
    parked_s
        Time to stay parked before resuming, seconds.
    max_tokens
        Tokens in the readiness request.
    timeout_s
        Bound on each phase, seconds.
    poll_s
        Poll interval, seconds (10-50 ms).
    """
    check_count("level", level)
    check_count("max_tokens", max_tokens)
    if not parked_s >= 0:
        raise ValueError(f"parked_s must be >= 0, got {parked_s!r}")
    check_positive("poll_s", poll_s)
    if pid is not None:
        check_count("pid", pid)
    stamps: dict[str, int] = {}
    phases = _Phases(pid, device)
    ready = _Deadline(timeout_s, f"{endpoint.url} before release")
    endpoint.generate(max_tokens, ready.left())  # serving now, or an error naming the URL
    phases.mark("awake")
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
    phases.mark("parked")
    time.sleep(parked_s)
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
    _wait_first_request(
        endpoint, stamps, _Deadline(timeout_s, f"{endpoint.url} after resume"), poll_s, max_tokens
    )
    phases.mark("resumed")
    return RecoveryRun("warm", endpoint.engine, stamps, phases.host_readings(), phases.device)


def _stop(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """Terminate the engine's whole process group, then kill what is left."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        except ProcessLookupError:
            process.wait()


@contextmanager
def launch_engine(
    command: str | Sequence[str],
    endpoint: ServingEndpoint,
    *,
    device: NvmlDevice | None = None,
    log_path: str | os.PathLike[str] | None = None,
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
    check_count("max_tokens", max_tokens)
    check_positive("poll_s", poll_s)
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
        yield (
            process,
            RecoveryRun("cold", endpoint.engine, stamps, phases.host_readings(), phases.device),
        )
