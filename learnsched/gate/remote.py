"""A scheduler's end of a long-lived gate: :class:`RemoteGate`, the door of a
``learnsched gate --control`` driven over its control listener
(:mod:`learnsched.gate.control`).

It has the in-process :class:`~.proxy.Gate`'s door (``close``, ``open``, ``load``,
``counts``, ``closed``, ``release_sent``, ``release_done``, ``on_arrival``), so the
control loop cannot tell them apart; what differs is the lifetime: the gate runs on
when the run ends, and the run's client only holds the door while it keeps it closed
(it renews the gate's lease). Standard library only: a run that attaches needs no
extra.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from .._checks import positive
from .._url import http_url
from ..serving.endpoint import HttpStatusError
from ..serving.preflight import Load
from .control import DOOR_PATH
from .stats import GateCounts

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

__all__ = ["RemoteGate"]

# The longest one arrivals poll waits, seconds: how long a stop may wait for the thread.
POLL_WAIT_S = 1.0
# After a failed poll (the gate restarting), wait this long before the next, seconds.
RETRY_S = 0.2
# A door found closed at the start is taken over with this drain, seconds: what was in
# flight when its holder closed it has long finished or never will.
ADOPT_DRAIN_S = 0.1


class RemoteGate:
    """The door of a gate in another process, at its control listener; a context manager.

    Parameters
    ----------
    control_url
        The gate's control listener, ``http://HOST:PORT`` (``learnsched gate --control``).
    engine
        The dialect the scheduler parks (the gate must front the same).
    upstream
        The engine's URL the scheduler parks (the gate must forward to the same server).
    timeout_s
        Bound on each control call, seconds (a close adds its drain).
    on_arrival
        Called, on the client's thread, when arrivals were told since the last poll,
        with whether one of them was held: the scheduler's signal to return early. It
        must not block.

    Attributes
    ----------
    url
        Where clients send their requests, the gate's ``http://HOST:PORT`` (known once
        started).
    """

    def __init__(
        self,
        control_url: str,
        engine: str,
        upstream: str,
        *,
        timeout_s: float = 10.0,
        on_arrival: Callable[[bool], None] | None = None,
    ) -> None:
        parts = http_url("control_url", control_url, schemes=("http",))
        self.control_url = control_url.rstrip("/")
        self.host, self.port = parts.host, parts.port
        self.engine = engine
        self.upstream = upstream
        self.timeout_s = positive("timeout_s", timeout_s)
        self.on_arrival = on_arrival
        self.url = ""
        self.holder = f"pid {os.getpid()} on {socket.gethostname()}"
        self._start: dict[str, Any] = {}  # the gate's counts when this client started
        self._told = (0, 0)  # (arrivals, held) told so far
        self._epoch: int | None = None  # the closing this client holds (renews)
        self._wait_s = POLL_WAIT_S  # one arrivals poll's wait, seconds
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="learnsched-attach", daemon=True)

    # --- life ----------------------------------------------------------------------------
    def start(self) -> Self:
        """Read the gate's state, check it fronts ``upstream`` as ``engine``, and start
        polling for arrivals (and renewing the lease while the door is held). A door
        found closed (its holder was killed) is taken over: its requests stay held until
        this run opens it, after its heal (:mod:`learnsched.control.restart`).

        Raises
        ------
        ValueError
            The gate forwards to another server, or speaks another dialect.
        ConnectionError
            The control listener does not answer (the message names it).
        """
        state = self._call("GET", DOOR_PATH)
        if state["engine"] != self.engine or not _same_server(state["upstream"], self.upstream):
            raise ValueError(
                f"the gate at {self.control_url} fronts {state['engine']} at "
                f"{state['upstream']}, not {self.engine} at {self.upstream}"
            )
        self.url = str(state["url"])
        # Renewed at least three times a lease, however short the gate's is.
        self._wait_s = min(POLL_WAIT_S, float(state["lease_s"]) / 3)
        self._start = state["counts"]
        self._told = (int(state["arrivals"]), int(state["held"]))
        self._thread.start()
        if state["closed"]:
            # Closed by a run that died (one engine, one run): hold what it held until
            # this run has returned the engine, rather than let its lease lapse.
            self.close(ADOPT_DRAIN_S)
        return self

    def stop(self) -> None:
        """Stop polling; a door this client still holds closed is opened (as the lease
        would, sooner)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(POLL_WAIT_S + self.timeout_s)
        if self._epoch is not None:
            with contextlib.suppress(OSError, HttpStatusError):
                self.open()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the door ------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """Whether new requests are held rather than forwarded (asked of the gate)."""
        return bool(self._call("GET", f"{DOOR_PATH}/load")["closed"])

    def load(self) -> Load:
        """Requests forwarded and not finished (``running``) and held (``waiting``)."""
        load = self._call("GET", f"{DOOR_PATH}/load")
        return Load(int(load["running"]), int(load["waiting"]))

    def counts(self) -> GateCounts:
        """What the gate counted since this client started (:meth:`GateCounts.since`)."""
        start = self._start
        path = f"{DOOR_PATH}/counts?latencies_from={int(start['added_latency_s'])}"
        data = self._call("GET", path)
        data["added_latency_s"] = tuple(data["added_latency_s"])
        return GateCounts(**data).since(start)

    def close(self, drain_s: float) -> bool:
        """Close the door (new requests are held) and wait up to ``drain_s`` seconds for
        the requests in flight to finish; whether they all did (the door stays closed,
        under this client's lease, either way: :meth:`open` it)."""
        positive("drain_s", drain_s)
        body = {"drain_s": drain_s, "holder": self.holder}
        answer = self._call("POST", f"{DOOR_PATH}/close", body, self.timeout_s + drain_s)
        with self._lock:
            self._epoch = int(answer["epoch"])
        return bool(answer["drained"])

    def open(self) -> list[float]:
        """Open the door: the held requests go on; each one's added latency, seconds."""
        with self._lock:
            self._epoch = None
        return [float(s) for s in self._call("POST", f"{DOOR_PATH}/open", {})["added_latency_s"]]

    def release_sent(self) -> None:
        """A park's release is being sent (the gate counts a park on a busy engine)."""
        self._call("POST", f"{DOOR_PATH}/release", {"step": "sent"})

    def release_done(self) -> None:
        """The park's release has answered or failed."""
        self._call("POST", f"{DOOR_PATH}/release", {"step": "done"})

    # --- the thread: arrivals and the lease ----------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._renew()
                self._poll()
            except (OSError, HttpStatusError, ValueError):
                # The gate restarting, or an answer cut off: the lease lapses on the
                # gate's side if this goes on; the next poll tries again.
                self._stop.wait(RETRY_S)

    def _renew(self) -> None:
        """Renew the lease of the door this client holds closed (a 409: it was opened,
        the lease having lapsed, or another closed it: this client holds it no more)."""
        with self._lock:
            epoch = self._epoch
        if epoch is None:
            return
        try:
            self._call("POST", f"{DOOR_PATH}/renew", {"epoch": epoch})
        except HttpStatusError as err:
            if err.status != 409:
                raise
            with self._lock:
                if self._epoch == epoch:
                    self._epoch = None

    def _poll(self) -> None:
        """Wait for arrivals (a third of the lease at most, to renew it in time) and tell
        ``on_arrival`` of any."""
        arrivals, held = self._told
        query = urlencode({"arrivals": arrivals, "held": held, "wait_s": self._wait_s})
        answer = self._call("GET", f"{DOOR_PATH}/arrivals?{query}", None, self.timeout_s + 1.0)
        now = (int(answer["arrivals"]), int(answer["held"]))
        self._told = now
        if now[0] > arrivals and self.on_arrival is not None:
            self.on_arrival(now[1] > held)

    # --- HTTP ----------------------------------------------------------------------------
    def _call(
        self, method: str, path: str, body: object = None, timeout_s: float | None = None
    ) -> Any:
        """One exchange with the control listener: its JSON answer (``None``: 204).

        Raises
        ------
        ConnectionError
            No answer (the message names the listener).
        HttpStatusError
            An answer other than 200 or 204.
        """
        conn = http.client.HTTPConnection(
            self.host, self.port, timeout=self.timeout_s if timeout_s is None else timeout_s
        )
        data = None if body is None else json.dumps(body).encode()
        headers = {} if data is None else {"Content-Type": "application/json"}
        try:
            conn.request(method, path, body=data, headers=headers)
            answer = conn.getresponse()
            text = answer.read()
        except (OSError, http.client.HTTPException) as err:
            raise ConnectionError(f"the gate's control listener {self.control_url}: {err}") from err
        finally:
            conn.close()
        if answer.status not in (200, 204):
            raise HttpStatusError(
                answer.status, f"{method} {self.control_url}{path} answered {answer.status}: "
                f"{text[:200].decode(errors='replace')}"
            )  # fmt: skip
        return json.loads(text) if text else None


def _same_server(a: str, b: str) -> bool:
    """Whether two ``http(s)://HOST:PORT`` URLs name one server (scheme, host in lower
    case and port, the scheme's default when absent)."""
    one, two = http_url("upstream", a), http_url("upstream", b)
    return (one.scheme, one.host.lower(), one.port) == (two.scheme, two.host.lower(), two.port)
