"""A serving engine's HTTP server: release, resume and one real generation request.

The routes and bodies are the engine's dialect (:mod:`.engines`, one module per
engine); this module does the exchanges, over ``http://`` or ``https://`` (the system's
certificate authorities, or ``ca_file``), with ``Authorization: Bearer KEY`` on every
request when the server was started with ``--api-key`` (both engines' scheme).
``/health`` may answer 200 while an engine is parked (vLLM's does): only a completed
generation request shows capacity is ready (:mod:`.readiness`). A stream counts as
completed only if it ends normally: an in-stream error event or a ``finish_reason`` of
``abort`` (vLLM's ``/sleep`` aborts in-flight requests; SGLang's pause can) is a
:class:`StreamError`; vLLM's usage-only last event (``"choices": []``, with
``--enable-force-include-usage``) carries no text and is skipped. Every stamp is
``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

from .._url import http_url, tls_context
from .engines import engine as engine_dialect
from .errors import HandoffProbeError

__all__ = ["Generation", "HttpStatusError", "ServingEndpoint", "StreamError"]

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


class Generation(NamedTuple):
    """One completed streaming request.

    Parameters
    ----------
    first_ns, done_ns
        ``perf_counter_ns`` when the first token and the end of the stream arrived.
    text
        The generated text (greedy: the same model answers the same).
    """

    first_ns: int
    done_ns: int
    text: str


class ServingEndpoint:
    """An engine's HTTP server: ``http://host:port``.

    Parameters
    ----------
    url
        Base URL, ``http://HOST:PORT`` or ``https://HOST:PORT``.
    engine
        A registered engine's name (:data:`~.engines.ENGINES`: ``"vllm"``, ``"sglang"``).
    api_key
        Sent as ``Authorization: Bearer KEY`` (the engines' ``--api-key``); never shown
        in messages or reprs.
    ca_file
        Certificate authorities (PEM) to verify an ``https://`` server with, instead of
        the system's.
    """

    def __init__(
        self,
        url: str,
        engine: str,
        *,
        api_key: str | None = None,
        ca_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self.dialect = engine_dialect(engine)
        self.engine = self.dialect.name
        parts = http_url("url", url)
        if api_key is not None and (not api_key or any(c in api_key for c in "\r\n")):
            raise ValueError("api_key must be a non-empty single line")
        self.tls = tls_context(parts, ca_file)
        self.url = url.rstrip("/")
        self.host = parts.host
        self.port = parts.port
        self._auth = {} if api_key is None else {"Authorization": f"Bearer {api_key}"}
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
        conn: http.client.HTTPConnection
        if self.tls is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        else:
            conn = http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout_s, context=self.tls
            )
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
            headers = {**self._auth}
            if body is not None:
                headers["Content-Type"] = "application/json"
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
        """The model name generation requests need (the first the engine lists; cached)."""
        if self.model is None:
            models = self.dialect.models(self, timeout_s)
            if not models:
                raise HandoffProbeError(f"{self.url}/v1/models lists no model")
            self.model = models[0]
        return self.model

    def release(self, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """Ask the engine to release its device memory (returns when acknowledged)."""
        self.dialect.park(self, level=level, tags=tags, timeout_s=timeout_s)

    def resume(self, *, tags: Sequence[str], timeout_s: float, reload: bool = False) -> None:
        """Ask the engine to restore its device state (returns when acknowledged);
        ``reload`` loads the weights again on the way (see the engine's dialect)."""
        self.dialect.resume(self, tags=tags, reload=reload, timeout_s=timeout_s)

    def is_sleeping(self, timeout_s: float) -> bool:
        """The engine's own view of whether it is parked (vLLM's ``GET /is_sleeping``)."""
        return self.dialect.is_parked(self, timeout_s)

    def generate(self, max_tokens: int, timeout_s: float) -> Generation:
        """Stream one real greedy request: its first-token and end stamps, and its text.

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
        path, body = self.dialect.generation(self, max_tokens, timeout_s)
        what = f"POST {self.url}{path}"
        with self._connection("POST", path, timeout_s, f"stalled for {timeout_s:g} s") as conn:
            headers = {**self._auth, "Content-Type": "application/json"}
            conn.request("POST", path, body=json.dumps(body), headers=headers)
            with conn.getresponse() as response:  # closed even when the stream breaks
                if response.status != 200:
                    text = response.read()[:200].decode(errors="replace")
                    raise HttpStatusError(
                        response.status, f"{what} answered {response.status}: {text}"
                    )
                first, text = self._read_stream(response, what)
            if first is None:
                raise HandoffProbeError(f"{what}: the stream carried no token")
            return Generation(first, time.perf_counter_ns(), text)

    def _read_stream(self, response: http.client.HTTPResponse, what: str) -> tuple[int | None, str]:
        """Read server-sent events up to ``[DONE]``: the first token's stamp, the text."""
        first, text = None, ""
        for raw in response:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[len(b"data:") :].strip()
            if payload == b"[DONE]":
                break
            piece = self._event_text(payload, what)
            if piece and first is None:
                first = time.perf_counter_ns()
            text = self.dialect.accumulate(text, piece)
        return first, text

    def reload(self, timeout_s: float) -> None:
        """Load the weights again (the engine's reload route)."""
        self.dialect.reload(self, timeout_s)

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
        if _aborted(event):
            raise StreamError(f"{what}: the engine aborted the request: {shown}")
        if event.get("choices") == []:  # vLLM's usage-only last event: no text
            return ""
        try:
            return self.dialect.event_text(event)
        except (KeyError, IndexError, TypeError) as err:
            raise HandoffProbeError(
                f"{what}: stream event without generated text (no {err}): {shown}"
            ) from err


def _aborted(event: dict[str, object]) -> bool:
    """Whether a stream event ends its request as aborted (OpenAI ``choices[i]`` or
    SGLang ``meta_info``'s ``finish_reason``)."""
    choices = event.get("choices")
    reasons: list[object] = []
    if isinstance(choices, list):
        reasons += [c.get("finish_reason") for c in choices if isinstance(c, dict)]
    meta = event.get("meta_info")
    if isinstance(meta, dict):
        finish = meta.get("finish_reason")
        reasons.append(finish.get("type") if isinstance(finish, dict) else finish)
    return "abort" in reasons
