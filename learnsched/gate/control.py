"""The gate's control listener: the door of a long-lived gate, driven by a scheduler in
another process.

``learnsched gate --control [HOST:]PORT`` serves it beside the client port, on a listener
of its own (clients of the gate never reach it), so the gate, and the clients' address,
outlive every ``learnsched run``: a run attaches (``learnsched run --attach URL``,
:class:`~.remote.RemoteGate`), closes the door before a park and opens it after the
return, and when the run ends, whatever ends it, the gate goes on forwarding.

Routes (JSON answers; the standard library's HTTP server, on daemon threads):

- ``GET /door``: the door's state: ``closed``, the gate's client ``url``, its
  ``upstream`` and ``engine``, the lease (``holder``, ``epoch``, ``lease_s``,
  ``lease_left_s``), the ``load`` (``running``, ``waiting``), the arrivals told so far
  (``arrivals``, ``held``) and the ``counts`` (:meth:`~.stats.GateCounts.to_json`);
- ``GET /door/load``: ``closed``, ``running`` and ``waiting`` alone (polled often);
- ``GET /door/counts?latencies_from=K``: every count, the added latencies from the
  ``K``-th kept on;
- ``GET /door/arrivals?arrivals=A&held=H&wait_s=S``: answers ``{"arrivals", "held"}``
  as soon as more than ``A`` arrivals (or ``H`` held ones) were told, or after ``S``
  seconds (at most :data:`MAX_WAIT_S`): the scheduler's early-return signal, long-polled;
- ``POST /door/close`` ``{"drain_s": S, "holder": TEXT}``: close the door, wait up to
  ``S`` seconds for the requests in flight, answer ``{"drained", "epoch"}``;
- ``POST /door/renew`` ``{"epoch": N}``: renew the lease of the closing numbered ``N``
  (``409`` once the door was opened, or closed again by another, since);
- ``POST /door/open``: open the door, answer ``{"added_latency_s": [...]}``;
- ``POST /door/release`` ``{"step": "sent" | "done"}``: a park's release is being sent,
  or has answered (the gate counts parks that meet a request in flight).

The lease. Whoever closes the door holds it closed for ``lease_s`` seconds past the
close (plus the drain), and renews it while it keeps it closed (the run's client does,
from a thread of its own, every third of the lease). A run that vanishes (``kill -9``,
its host gone) stops renewing: when the lease lapses the gate opens the door and the
held requests go on to the engine, which holds them itself while parked (a sleeping
vLLM queues them, a paused SGLang keeps them in its tokenizer manager), until the next
run heals the engine (:mod:`learnsched.control.restart`) and they complete. Held at
the gate forever instead, they would all fail at their clients' timeouts if no run came
back; passed on, an operator's restart serves them. A later close takes the door over
(one run per engine is the engine lease's rule, :mod:`learnsched.control.locks`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from .._checks import integer, nonnegative, positive
from .._http_server import SideServer
from . import DEFAULT_LEASE_S

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

    from .proxy import Gate

__all__ = ["DOOR_PATH", "MAX_WAIT_S", "ControlServer"]

DOOR_PATH = "/door"
"""Where the control listener's routes start."""
MAX_WAIT_S = 30.0
"""The longest an arrivals poll waits for an arrival, seconds."""
# A control request's body carries a few numbers: read at most this much.
MAX_BODY_BYTES = 1 << 16
# How often the lease is checked, seconds (the lapse opens the door this late at most).
LEASE_TICK_S = 0.05


class BadRequest(ValueError):
    """A control request the listener refuses with 400 (the message names the field)."""


class LeaseLost(RuntimeError):
    """A renewal of a closing the door no longer holds (409): it was opened since, or
    closed again by another."""


class ControlServer(SideServer):
    """The door API of ``gate`` on a listener of its own; a context manager.

    Parameters
    ----------
    gate
        The gate (started or not; the routes need it started).
    host, port
        Where to listen (port 0: a free one).
    lease_s
        How long a closed door stays closed without a renewal, seconds.
    report
        Told one line when a lease lapses and the door opens (``learnsched gate``
        prints it on stderr).
    """

    def __init__(
        self,
        gate: Gate,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        report: Callable[[str], None] | None = None,
    ) -> None:
        self.gate = gate
        self.lease_s = positive("lease_s", lease_s)
        self.report = report
        self._told = threading.Condition()  # guards what follows; notified per arrival
        self.arrivals = self.held = 0
        self.epoch = 0
        self.holder: str | None = None
        self._lease_end: float | None = None  # monotonic s; None: no one holds the door
        self._stopping = False
        previous = gate.on_arrival

        def on_arrival(held: bool) -> None:
            self._arrived(held)
            if previous is not None:
                previous(held)

        gate.on_arrival = on_arrival
        super().__init__(host, port, self._handler(), "learnsched-door")
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._watch_lease, name="learnsched-lease",
                                       daemon=True)  # fmt: skip

    def start(self) -> Self:
        """Serve, and watch the lease, on daemon threads (:attr:`url` is what
        ``learnsched run --attach`` takes)."""
        super().start()
        self._watch.start()
        return self

    def stop(self) -> None:
        """Stop serving (the door stays as it is: stopping the gate opens it)."""
        with self._told:
            self._stopping = True
            self._told.notify_all()  # end the arrivals polls under way
        self._stop.set()
        super().stop()
        if self._watch.is_alive():
            self._watch.join(5.0)

    # --- the door ------------------------------------------------------------------------
    def _arrived(self, held: bool) -> None:
        """The gate's ``on_arrival`` (its event loop's thread): count and wake the polls."""
        with self._told:
            self.arrivals += 1
            self.held += held
            self._told.notify_all()

    def state(self) -> dict[str, Any]:
        """What ``GET /door`` answers."""
        load = self.gate.load()
        with self._told:
            left = None if self._lease_end is None else max(self._lease_end - time.monotonic(), 0)
            lease = {"holder": self.holder, "epoch": self.epoch, "lease_left_s": left}
            told = {"arrivals": self.arrivals, "held": self.held}
        return {
            "closed": self.gate.closed,
            "url": self.gate.url,
            "upstream": self.gate.upstream,
            "engine": self.gate.dialect.name,
            "lease_s": self.lease_s,
            **lease,
            **told,
            "load": {"running": load.running, "waiting": load.waiting},
            "counts": self.gate.counts().to_json(),
        }

    def counts(self, latencies_from: int) -> dict[str, Any]:
        """Every count, the added latencies from the ``latencies_from``-th kept on."""
        data = asdict(self.gate.counts())
        data["added_latency_s"] = data["added_latency_s"][latencies_from:]
        return data

    def wait_arrivals(self, arrivals: int, held: int, wait_s: float) -> dict[str, int]:
        """The arrivals told, once more than ``arrivals`` (or ``held``) were, or after
        ``wait_s`` seconds."""
        with self._told:
            self._told.wait_for(
                lambda: self.arrivals > arrivals or self.held > held or self._stopping,
                timeout=min(wait_s, MAX_WAIT_S),
            )
            return {"arrivals": self.arrivals, "held": self.held}

    def close(self, drain_s: float, holder: str) -> dict[str, Any]:
        """Close the door for ``holder`` (a lease of :attr:`lease_s` past the drain) and
        wait up to ``drain_s`` seconds for the requests in flight."""
        with self._told:
            self.epoch += 1
            epoch = self.epoch
            self.holder = holder
            self._lease_end = time.monotonic() + drain_s + self.lease_s
        drained = self.gate.close(drain_s)
        self.renew(epoch)  # the lease counts from the answer, when the holder can renew it
        return {"drained": drained, "epoch": epoch}

    def renew(self, epoch: int) -> float | None:
        """Renew the lease of closing ``epoch``; the seconds left (``None``: the door was
        opened, or closed again by another, since)."""
        with self._told:
            if epoch != self.epoch or self._lease_end is None:
                return None
            self._lease_end = time.monotonic() + self.lease_s
            return self.lease_s

    def open(self) -> list[float]:
        """Open the door (whoever closed it); each held request's added latency, seconds."""
        with self._told:
            self.holder = self._lease_end = None
        return self.gate.open()

    def _watch_lease(self) -> None:
        """Open the door when its lease lapses (its holder stopped renewing)."""
        while not self._stop.wait(LEASE_TICK_S):
            with self._told:
                lapsed = self._lease_end is not None and time.monotonic() > self._lease_end
                holder = self.holder
                if lapsed:
                    self.holder = self._lease_end = None
            if lapsed:
                held = self.gate.open()
                if self.report is not None:
                    self.report(
                        f"the lease of {holder} lapsed: the door is open, {len(held)} held "
                        "requests went on to the engine"
                    )

    # --- HTTP ----------------------------------------------------------------------------
    def _route(self, method: str, path: str, query: Mapping[str, str], body: Any) -> Any:
        """The answer to one control request (``None``: 204); :class:`BadRequest` (400),
        :class:`LeaseLost` (409), or ``LookupError`` for a route that does not exist."""
        if method == "GET" and path == DOOR_PATH:
            return self.state()
        if method == "GET" and path == f"{DOOR_PATH}/load":
            load = self.gate.load()
            return {"closed": self.gate.closed, "running": load.running, "waiting": load.waiting}
        if method == "GET" and path == f"{DOOR_PATH}/counts":
            return self.counts(_count(query, "latencies_from"))
        if method == "GET" and path == f"{DOOR_PATH}/arrivals":
            wait_s = _seconds(query, "wait_s", nonnegative)
            return self.wait_arrivals(_count(query, "arrivals"), _count(query, "held"), wait_s)
        if method != "POST":
            raise LookupError(f"{method} {path}")
        if path == f"{DOOR_PATH}/close":
            holder = body.get("holder", "an unnamed client")
            if not isinstance(holder, str):
                raise BadRequest(f"holder must be a string, got {holder!r}")
            return self.close(_seconds(body, "drain_s", positive), holder)
        if path == f"{DOOR_PATH}/renew":
            left = self.renew(_count(body, "epoch"))
            if left is None:
                raise LeaseLost("the door was opened (or closed by another) since")
            return {"lease_left_s": left}
        if path == f"{DOOR_PATH}/open":
            return {"added_latency_s": self.open()}
        if path == f"{DOOR_PATH}/release":
            step = body.get("step")
            if step == "sent":
                self.gate.release_sent()
            elif step == "done":
                self.gate.release_done()
            else:
                raise BadRequest(f'step must be "sent" or "done", got {step!r}')
            return None
        raise LookupError(f"{method} {path}")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        control = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "learnsched-door"

            def log_message(self, format: str, *args: object) -> None:
                return  # the gate's stderr holds its own lines only

            def do_GET(self) -> None:
                self._serve("GET", {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY_BYTES:
                    self._answer(413, {"error": f"a body of at most {MAX_BODY_BYTES} bytes"})
                    return
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError as err:
                    self._answer(400, {"error": f"the body is not JSON: {err}"})
                    return
                if not isinstance(body, dict):
                    self._answer(400, {"error": "the body must be a JSON object"})
                    return
                self._serve("POST", body)

            def _serve(self, method: str, body: dict[str, Any]) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                try:
                    answer = control._route(method, parts.path, query, body)
                except BadRequest as err:
                    self._answer(400, {"error": str(err)})
                except LeaseLost as err:
                    self._answer(409, {"error": str(err)})
                except LookupError:
                    self._answer(404, {"error": f"no route {method} {parts.path}"})
                else:
                    self._answer(204 if answer is None else 200, answer)

            def _answer(self, status: int, answer: object) -> None:
                data = b"" if answer is None else json.dumps(answer).encode()
                # A caller that went away (a run killed during its arrivals poll) is
                # not the gate's failure: its answer is dropped.
                with contextlib.suppress(ConnectionError):
                    self.send_response(status)
                    if data:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        return Handler


def _count(values: Mapping[str, object], name: str) -> int:
    """A count ``name`` of a query (text) or a body (a JSON integer), 0 if absent."""
    value = values.get(name, 0)
    try:
        return integer(name, int(value) if isinstance(value, str) else value, low=0)
    except (TypeError, ValueError):
        raise BadRequest(f"{name} must be a count (0, 1, ...), got {value!r}") from None


def _seconds(
    values: Mapping[str, object], name: str, check: Callable[[str, object], float]
) -> float:
    """Seconds ``name`` of a query (text) or a body (a JSON number), as ``check``
    (:func:`~learnsched._checks.positive`, ``nonnegative``) accepts them (absent: 0)."""
    value = values.get(name, 0)
    try:
        seconds = float(value) if isinstance(value, str) else value
    except ValueError:
        raise BadRequest(f"{name} must be a number of seconds, got {value!r}") from None
    try:
        return check(name, seconds)
    except (TypeError, ValueError) as err:
        raise BadRequest(str(err)) from None
