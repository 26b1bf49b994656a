"""Whether a forwarded answer failed: an error status, an error event, an aborted stream.

An engine can fail a request inside a ``200``: vLLM's ``/sleep?mode=abort`` ends every
in-flight stream normally, with ``finish_reason: "abort"`` and then ``[DONE]``; both
engines send ``{"error": {...}}`` events mid-stream; SGLang's ``/generate`` names an
abort in ``meta_info.finish_reason.type``. The gate reads the answer as it copies it,
byte for byte unchanged, and counts such a request as failed; the load generator reads
its answers the same way. The usage-only last event
of vLLM's ``--enable-force-include-usage`` (``"choices": []``) is an ordinary event.

An answer whose end is its connection's close (no ``Content-Length``, not chunked: an
HTTP/1.0 server's stream) looks the same whether it ended or its engine died; such an event
stream that closes before its last event (``data: [DONE]`` of the OpenAI routes and
SGLang's ``/generate``, the Responses API's ``response.completed``/``incomplete``/``failed``,
the Messages API's ``message_stop``) was ``"cut off"``. A framed body cut short is the
HTTP reader's error.

Only lines that could carry a failure (they contain ``abort`` or ``error``) are parsed,
so a stream costs a substring search per line.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

__all__ = ["CUT_OFF", "MAX_BODY_BYTES", "AnswerScanner", "ends_at_close", "failure_of"]

# A plain (non-stream) JSON answer longer than this is not parsed (counted as it stands).
MAX_BODY_BYTES = 1 << 20
MARKERS = (b"abort", b"error")
CUT_OFF = "cut off"
"""Why an event stream that closed before its last event failed."""
LAST_EVENTS = frozenset(
    {b"response.completed", b"response.incomplete", b"response.failed", b"message_stop"}
)


def ends_at_close(content_length: str | None, transfer_encoding: str | None) -> bool:
    """Whether an answer with these headers ends only at its connection's close (its
    body framed neither by a length nor by chunks)."""
    chunked = transfer_encoding is not None and "chunked" in transfer_encoding.lower()
    return content_length is None and not chunked


def failure_of(event: Any) -> str | None:
    """Why one decoded answer or stream event failed (``None``: it did not).

    Parameters
    ----------
    event
        An OpenAI-style completion/chat answer or chunk, or an SGLang ``/generate`` one.
    """
    if not isinstance(event, dict):
        return None
    if "error" in event or event.get("object") == "error":
        return "error event"
    choices = event.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if isinstance(choice, dict) and choice.get("finish_reason") == "abort":
                return "aborted"
    meta = event.get("meta_info")
    finish = meta.get("finish_reason") if isinstance(meta, dict) else None
    if isinstance(finish, dict) and finish.get("type") == "abort":
        return "aborted"
    return None


class AnswerScanner:
    """Reads an answer's bytes in the chunks they arrive in; why it failed at the end.

    Server-sent events are read line by line (a line may span chunks); any other body
    is kept (up to :data:`MAX_BODY_BYTES`) and read as one JSON value at :meth:`close`.

    Parameters
    ----------
    event_stream
        Whether the answer is ``text/event-stream``.
    until_close
        Whether the answer ends only at its connection's close (:func:`ends_at_close`):
        an event stream must then reach its last event, or it was :data:`CUT_OFF`.

    Attributes
    ----------
    failure : str or None
        Why the answer failed (``"error event"``, ``"aborted"``, ``"cut off"``) once seen,
        else ``None``.
    """

    def __init__(self, event_stream: bool, *, until_close: bool = False) -> None:
        self.event_stream = event_stream
        self.until_close = until_close
        self.failure: str | None = None
        self.ended = False  # an event stream's last event came
        self._pending = b""
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        """The next bytes of the answer."""
        if self.failure is not None:
            return
        if not self.event_stream:
            self._size += len(chunk)
            if self._size <= MAX_BODY_BYTES:
                self._pending += chunk
            return
        data = self._pending + chunk
        *lines, self._pending = data.split(b"\n")
        for line in lines:
            self._line(line)

    def close(self) -> str | None:
        """The end of the answer: why it failed, or ``None``."""
        if self.event_stream:
            if self._pending:
                self._line(self._pending)
            if self.failure is None and self.until_close and not self.ended:
                self.failure = CUT_OFF
        elif self.failure is None and self._size <= MAX_BODY_BYTES and _marked(self._pending):
            with contextlib.suppress(ValueError):  # not JSON: the status says the rest
                self.failure = failure_of(json.loads(self._pending))
        self._pending = b""
        return self.failure

    def _line(self, line: bytes) -> None:
        if self.failure is not None:
            return
        field, _, value = line.partition(b":")
        if (field == b"data" and value.strip() == b"[DONE]") or (
            field == b"event" and value.strip() in LAST_EVENTS
        ):
            self.ended = True
        if field != b"data" or not _marked(line):
            return
        try:
            self.failure = failure_of(json.loads(line[len(b"data:") :]))
        except ValueError:
            return  # [DONE], or an event this gate need not read


def _marked(data: bytes) -> bool:
    return any(marker in data for marker in MARKERS)
