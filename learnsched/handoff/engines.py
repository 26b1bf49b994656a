"""The serving engines' HTTP dialects: release, resume and one real generation request.

- vLLM sleep mode (server started with ``--enable-sleep-mode`` and
  ``VLLM_SERVER_DEV_MODE=1``): ``POST /sleep?level=N``, ``POST /wake_up``,
  ``GET /is_sleeping``; generation through ``POST /v1/completions``.
- SGLang (``--enable-memory-saver``): ``POST /release_memory_occupation`` and
  ``POST /resume_memory_occupation`` with body ``{"tags": [...]}``; generation through
  ``POST /generate``.

vLLM's ``/health`` answers 200 while the engine sleeps: only a completed generation
request shows capacity is ready (:mod:`.readiness`). Every stamp is
``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode, urlsplit

from .errors import HandoffProbeError

__all__ = ["ENGINES", "HttpStatusError", "ServingEndpoint", "StreamError"]

ENGINES = ("vllm", "sglang")
VLLM_SLEEP_LEVELS = (1, 2)
PROMPT = "The capital of France is"
# Answers worth retrying while an engine comes up: timeout, rate limit, server errors.
RETRY_4XX = (408, 429)


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

    @contextmanager
    def _connection(
        self, method: str, path: str, timeout_s: float, stalled: str
    ) -> Iterator[http.client.HTTPConnection]:
        """A connection for one exchange, closed after it; failures name the URL.

        ``stalled`` ends the ``TimeoutError`` message; other socket and HTTP failures
        become ``ConnectionError``.
        """
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            yield conn
        except TimeoutError as err:
            raise TimeoutError(f"{method} {self.url}{path}: {stalled}") from err
        except (OSError, http.client.HTTPException) as err:
            raise ConnectionError(f"{method} {self.url}{path}: {err}") from err
        finally:
            conn.close()

    def request(self, method: str, path: str, body: object, timeout_s: float) -> tuple[int, bytes]:
        """One HTTP exchange; ``(status, body)``.

        Raises
        ------
        ConnectionError, TimeoutError
            The server cannot be reached or does not answer in time (names the URL).
        """
        with self._connection(method, path, timeout_s, f"no answer in {timeout_s:g} s") as conn:
            payload = None if body is None else json.dumps(body)
            headers = {} if body is None else {"Content-Type": "application/json"}
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()

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

    def _generation(self, max_tokens: int, timeout_s: float) -> tuple[str, dict[str, Any]]:
        """The dialect's streaming generation request: ``(path, JSON body)``."""
        if self.engine == "vllm":
            return "/v1/completions", {
                "model": self.served_model(timeout_s),
                "prompt": PROMPT,
                "max_tokens": max_tokens,
                "temperature": 0,
                "ignore_eos": True,  # a full-length answer: the request is comparable
                "stream": True,
            }
        return "/generate", {
            "text": PROMPT,
            "sampling_params": {"max_new_tokens": max_tokens, "temperature": 0, "ignore_eos": True},
            "stream": True,
        }

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
        path, body = self._generation(max_tokens, timeout_s)
        what = f"POST {self.url}{path}"
        with self._connection("POST", path, timeout_s, f"stalled for {timeout_s:g} s") as conn:
            conn.request(
                "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            if response.status != 200:
                text = response.read()[:200].decode(errors="replace")
                raise HttpStatusError(response.status, f"{what} answered {response.status}: {text}")
            first = self._first_token(response, what)
            if first is None:
                raise HandoffProbeError(f"{what}: the stream carried no token")
            response.read()  # the rest of the stream, up to [DONE]
            return first, time.perf_counter_ns()

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
