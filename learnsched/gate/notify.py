"""Arrivals for users without the gate: a tiny endpoint their own router POSTs to, and a
forwarder that POSTs to one.

``learnsched run --notify HOST:PORT`` serves ``POST /arrival``: one request arrived
(the body, if any, is ignored; the answer is ``204``). A router that sends its traffic
straight to the engine calls it as each request comes in, so the scheduler returns
capacity early although the engine's gauges cannot show the arrival while it is parked
(vLLM queues it unseen, a paused SGLang holds it in its tokenizer manager). Standard
library only, on a daemon thread; loopback by default. :class:`ArrivalForwarder` is the
other end (``learnsched gate --notify URL``).
"""

from __future__ import annotations

import http.client
import queue
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING

from .._http_server import SideServer
from .._url import http_url

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

__all__ = ["ARRIVAL_PATH", "ArrivalForwarder", "NotifyServer"]

ARRIVAL_PATH = "/arrival"
# A router's notification carries nothing the scheduler reads: read at most this much.
MAX_BODY_BYTES = 1 << 16


class NotifyServer(SideServer):
    """``POST /arrival`` calls ``on_arrival()``; a context manager.

    Parameters
    ----------
    on_arrival
        Called once per notification, on a server thread; it must not block.
    host, port
        Where to listen (port 0: a free one).
    """

    def __init__(
        self, on_arrival: Callable[[], None], host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.on_arrival = on_arrival
        self.received = 0
        self._lock = threading.Lock()
        super().__init__(host, port, self._handler(), "learnsched-notify")

    @property
    def url(self) -> str:
        """``http://HOST:PORT/arrival``."""
        return super().url + ARRIVAL_PATH

    def _arrived(self) -> None:
        with self._lock:
            self.received += 1
        self.on_arrival()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        notify = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "learnsched-notify"

            def log_message(self, format: str, *args: object) -> None:
                return  # the scheduler's progress line owns stderr

            def do_POST(self) -> None:
                length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)
                self.rfile.read(length)
                if self.path.split("?", 1)[0] != ARRIVAL_PATH:
                    self._answer(404, b'{"error": "POST /arrival only"}')
                    return
                notify._arrived()
                self._answer(204, b"")

            def do_GET(self) -> None:
                self._answer(405, b'{"error": "POST /arrival"}')

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                if body:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


class ArrivalForwarder:
    """POST one notification per arrival to ``url``, from a thread of its own, so the
    caller (the gate's event loop) never waits on it.

    Parameters
    ----------
    url
        ``http://HOST:PORT/arrival`` of a :class:`NotifyServer`.
    timeout_s
        Bound on each POST, seconds.

    Attributes
    ----------
    sent, errors
        Notifications answered, and those that failed (counted, never raised).
    """

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        parts = http_url("notify url", url, schemes=("http",), path=True)
        self.host, self.port = parts.host, parts.port
        self.path = parts.path or ARRIVAL_PATH
        self.timeout_s = timeout_s
        self.sent = self.errors = 0
        self._queue: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="learnsched-forward", daemon=True)

    def start(self) -> Self:
        """Start the sending thread."""
        self._thread.start()
        return self

    def arrived(self, held: bool = False) -> None:
        """One arrival (a gate's ``on_arrival``): queued, sent by the thread."""
        self._queue.put(True)

    def stop(self) -> None:
        """Send what is queued, then end the thread."""
        self._queue.put(False)
        self._thread.join(self.timeout_s + 5.0)

    def _run(self) -> None:
        while self._queue.get():
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            try:
                conn.request("POST", self.path, body=b"")
                ok = conn.getresponse().status == 204
            except (OSError, http.client.HTTPException):
                ok = False
            finally:
                conn.close()
            self.sent += ok
            self.errors += not ok
