"""The gate: an OpenAI-compatible reverse proxy in front of a vLLM or SGLang server.

Clients send their requests to the gate instead of the engine; the gate forwards each
request for a route clients use unchanged (method, query, headers but the hop-by-hop
ones, body; the path normalised as the engine routes it:
:mod:`~learnsched.gate.routes`) and copies the answer back unchanged as it arrives,
server-sent event streams included. It counts what it sees
(:class:`~.stats.GateStats`): arrivals of requests that run the model, requests in
flight, completions and failures, so the scheduler's load signal does not depend on the
engine's gauges, which stand still while the engine is parked.

The door. Before a park the scheduler closes the door (:meth:`Gate.close`): new
requests are held at the gate, none is failed, and the requests in flight get a bounded
time to finish. Only an engine that is idle with its door closed is parked
(:func:`learnsched.serving.engines.park` checks both). A request that arrives while the
door is closed is held and reported at once (``on_arrival``), so the scheduler returns
capacity early; when the return is confirmed by a completed request the door opens
(:meth:`Gate.open`) and the held requests are forwarded, each one's time at the door
recorded as its added latency. The hold is bounded (``max_held``): a request past it
is answered ``503`` with ``Retry-After`` (:data:`RETRY_AFTER_S`) and an OpenAI-shaped
error, counted as ``overflowed``; it never reaches the engine, so nothing queues inside a
parked engine, where it would share a batch with the return's same-model check. A gate
may start with its door closed (``closed=True``, as ``learnsched run --gate`` starts it):
then nothing reaches the engine until the scheduler has confirmed it serves.

What passes. Only the routes the engine's dialect lists
(:meth:`~learnsched.serving.Engine.forwards`: generation, models,
health, tokenizer ...); every other one, each control route that parks, pauses, aborts
or reloads the engine above all, is refused with 403 and an OpenAI-shaped error: the
scheduler owns them. A redirect to the engine's own address comes back as one to the
gate's.

Bounds, as a trusted proxy's (:mod:`~learnsched.gate.limits`): a request's body is read
only once the request is admitted (a held one's stays unread), within a bound per request
(``413``) and a budget across requests (``503``); headers, bodies and the engine's
silences are timed (the connection closed, ``408``, ``504``: a request the engine never
answers frees its place in flight); client connections stay under the open-file limit
(``503``).

Why aiohttp. The gate must hold many idle connections cheaply, copy streams chunk by
chunk as they arrive, and be told to close or open its door from the scheduler's
threads; an asyncio server does the first two on one thread, and
``asyncio.run_coroutine_threadsafe`` the third. aiohttp is one well-kept library for
both the server and the streaming client (starlette with uvicorn would need httpx as
well, and uvicorn owns its event loop, which a gate started inside ``learnsched run``
must not give up); it has no C build step of its own to fail on a user's machine. It
is the optional extra ``serve`` (``pip install "learnsched[serve]"``), imported only when
a gate starts. The gate runs its event loop on a daemon thread of the process that
starts it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .._checks import integer, positive
from .._extras import require
from .._url import http_url, tls_context
from ..serving.engines import CUT_OFF, AnswerScanner, Engine, Load, ends_at_close
from ..serving.engines import engine as engine_dialect
from . import DEFAULT_MAX_HELD
from .limits import BodyBudget, GateLimits, open_files
from .routes import Target, local_location
from .stats import GateCounts, GateStats

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from aiohttp import ClientSession, web
    from typing_extensions import Self

__all__ = ["HOP_BY_HOP", "RETRY_AFTER_S", "Gate"]

T = TypeVar("T")
# Headers that describe one connection, not the request (RFC 9110 7.6.1), and the
# ones the HTTP libraries set from the body.
HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length",
    }
)  # fmt: skip
STATS_PATH = "/gate/stats"
# Requests still answering at a stop get this long, seconds.
SHUTDOWN_S = 5.0
# How often a held request looks whether its client is still there, seconds.
HANGUP_CHECK_S = 0.25
# What aiohttp buffers of a body not being read (a held request's) before it stops
# reading that connection: twice this, and one receive of up to 256 KiB.
READ_BUFFER_BYTES = 64 << 10
RETRY_AFTER_S = 1
"""The ``Retry-After`` of the ``503`` a request past ``max_held`` gets, seconds: the door
opens as soon as the return is confirmed, which the gate cannot foresee."""


class Gate:
    """A reverse proxy with a door, on its own event-loop thread; a context manager.

    Parameters
    ----------
    upstream
        The engine's ``http://HOST:PORT`` (or ``https://``).
    engine
        Its dialect's name (``"vllm"``, ``"sglang"``): which routes run the model and
        which park it.
    host, port
        Where the gate listens (loopback by default; port 0: a free one).
    max_held
        Requests held at the closed door at most (later ones are answered ``503`` with
        ``Retry-After``).
    on_arrival
        Called, on the gate's thread, for each arrival of a request that runs the
        model, with whether it was held (the door was closed): the scheduler's signal
        to return early. It must not block.
    connect_timeout_s
        Bound on connecting to the engine, seconds (the answer itself is not bounded:
        generations take as long as they take).
    closed
        Start with the door closed: requests are held until :meth:`open`.
    ca_file
        PEM certificate authorities that sign an ``https://`` engine's certificate (a
        private CA), in place of the system's.
    limits
        Its bounds on bodies, waits and connections (:class:`~.limits.GateLimits`;
        ``None``: the defaults).
    """

    def __init__(
        self,
        upstream: str,
        engine: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_held: int = DEFAULT_MAX_HELD,
        on_arrival: Callable[[bool], None] | None = None,
        connect_timeout_s: float = 10.0,
        closed: bool = False,
        ca_file: str | os.PathLike[str] | None = None,
        limits: GateLimits | None = None,
    ) -> None:
        self._tls = tls_context(http_url("upstream", upstream), ca_file)
        self.upstream = upstream.rstrip("/")
        self.dialect: Engine = engine_dialect(engine)
        self.host = host
        self.port = integer("port", port, low=0, high=65535)
        self.max_held = integer("max_held", max_held, low=0)
        self.on_arrival = on_arrival
        self.connect_timeout_s = positive("connect_timeout_s", connect_timeout_s)
        self.stats = GateStats()
        self.limits = GateLimits() if limits is None else limits
        self._budget = BodyBudget(self.limits.body_budget_bytes)
        self._max_connections = 0  # set at the start, from the open-file limit
        self._door_open = not closed
        self._holding: dict[int, float] = {}  # held request -> arrival (monotonic s)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        # Bound to the gate's loop on first use (Python 3.10+).
        self._opened = asyncio.Event()  # set while the door is open
        self._idle = asyncio.Event()  # set while nothing is in flight
        if not closed:
            self._opened.set()
        self._idle.set()
        self._session: ClientSession | None = None
        self._runner: web.AppRunner | None = None

    # --- life ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Where clients send their requests: ``http://HOST:PORT``."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> Self:
        """Listen (on a daemon thread); returns once the port is bound.

        Raises
        ------
        MissingExtra
            aiohttp is not installed (the ``serve`` extra).
        OSError
            The address cannot be bound (the message names it).
        ValueError
            ``max_connections`` is more than the open-file limit allows.
        """
        require("aiohttp", "serve")
        self._max_connections = self.limits.connections(open_files())
        self._thread = threading.Thread(target=self._run, name="learnsched-gate", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"the gate did not start listening within {timeout_s:g} s")
        if self._failure is not None:
            raise OSError(f"the gate cannot listen on {self.url}: {self._failure}")
        if self._runner is None:
            raise RuntimeError("the gate's thread ended before it listened")
        return self

    def stop(self) -> None:
        """Stop listening (held requests are forwarded first) and end the thread."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        if loop.is_running():
            # aiohttp waits SHUTDOWN_S for a request still answering, then as long again
            # for its cancelled handler (an engine that stalls it: paused, hung).
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(2 * SHUTDOWN_S + 5.0)
            loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._setup())
        except OSError as err:  # the address cannot be bound: start() says so
            self._failure = err
        finally:
            self._ready.set()
        if self._failure is not None or self._runner is None:
            loop.close()
            return
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _setup(self) -> None:
        from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

        self._session = ClientSession(
            # The engine decides how many run at once; https verified (True: the system's CAs).
            connector=TCPConnector(limit=0, ssl=self._tls if self._tls is not None else True),
            timeout=ClientTimeout(
                total=None,
                sock_connect=self.connect_timeout_s,
                sock_read=self.limits.upstream_timeout_s,
            ),
            auto_decompress=False,  # bytes through unchanged
        )
        app = web.Application()  # bodies are bounded as they are read (_read_body)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_S,
            # aiohttp closes a connection whose request headers have not all come this
            # long after it opened or after its last answer, however slowly they trickle.
            keepalive_timeout=self.limits.header_timeout_s,
            read_bufsize=READ_BUFFER_BYTES,
        )
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except BaseException:
            await self._runner.cleanup()
            await self._session.close()
            raise
        self.port = int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        await self._open()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    # --- the door (from any thread) -------------------------------------------------------
    def _call(self, coroutine: Coroutine[Any, Any, T], timeout_s: float) -> T:
        if self._loop is None:
            coroutine.close()
            raise RuntimeError("the gate has not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout_s)

    @property
    def closed(self) -> bool:
        """Whether new requests are held rather than forwarded."""
        return not self._door_open

    def load(self) -> Load:
        """Requests forwarded and not finished (``running``) and held (``waiting``)."""
        return Load(self.stats.get("in_flight"), self.stats.get("holding"))

    def counts(self) -> GateCounts:
        """Everything counted so far."""
        return self.stats.snapshot()

    def close(self, drain_s: float) -> bool:
        """Close the door (new requests are held) and wait up to ``drain_s`` seconds for
        the requests in flight to finish; whether they all did (the door stays closed
        either way: :meth:`open` it)."""
        positive("drain_s", drain_s)
        return self._call(self._close(drain_s), drain_s + 30.0)

    def open(self) -> list[float]:
        """Open the door: the held requests go on; each one's added latency, seconds."""
        return self._call(self._open(), 30.0)

    def release_sent(self) -> None:
        """A park's release is being sent (counts a park on a busy engine)."""
        self.stats.release_sent()

    def release_done(self) -> None:
        """The park's release has answered or failed."""
        self.stats.release_done()

    async def _close(self, drain_s: float) -> bool:
        self._door_open = False
        self._opened.clear()
        try:
            await asyncio.wait_for(self._idle.wait(), drain_s)
        except asyncio.TimeoutError:
            return False
        return True

    async def _open(self) -> list[float]:
        now = time.monotonic()
        added = [now - arrival for arrival in self._holding.values()]
        self._holding.clear()
        self.stats.held_for(added)
        self._door_open = True
        self._opened.set()
        return added

    # --- requests ------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        from aiohttp import web

        # Decided on the path the engine will route, and that path is what goes on.
        target = Target.of(request.raw_path)
        if target.path == STATS_PATH and request.method == "GET":
            return web.json_response(self.stats.snapshot().to_json())
        if not self.dialect.forwards(target.path):
            self.stats.add("refused")
            message = (
                f"{target.path} is not forwarded: the gate passes on only the routes clients "
                f"use ({self.dialect.name}'s generation, models, health, tokenizer); control "
                "routes (park, pause, abort, reload ...) are the scheduler's"
            )
            return _error(403, "PermissionDeniedError", message)
        refusal = self._beyond_limits(request)
        if refusal is not None:
            self.stats.add("shed")
            return refusal
        if not self.dialect.generates(request.method, target.path):
            return await self._forward(request, target, work=False)
        admitted = await self._admit(request)
        if admitted is None:  # held, and its client hung up: nothing to answer
            return web.Response(status=499)
        if not admitted:
            message = (
                f"the engine is lent or being returned, and {self.max_held} requests are "
                f"already held at the gate (its --max-held): try again in {RETRY_AFTER_S} s"
            )
            return _unavailable(message)
        return await self._forward(request, target, work=True)

    def _beyond_limits(self, request: web.Request) -> web.Response | None:
        """The answer to a request the gate's bounds refuse from its headers alone (one
        connection too many, a declared body too large), or ``None``."""
        assert self._runner is not None
        assert self._runner.server is not None
        if len(self._runner.server.connections) > self._max_connections:
            answer = _unavailable(
                f"the gate serves {self._max_connections} connections at once (its "
                f"--max-connections): try again in {RETRY_AFTER_S} s"
            )
            answer.force_close()
            return answer
        declared = request.content_length
        if declared is not None and declared > self.limits.max_body_bytes:
            return self._too_large(declared)
        return None

    def _too_large(self, size: int) -> web.Response:
        message = (
            f"a request body of {size} bytes or more is over the gate's bound of "
            f"{self.limits.max_body_bytes} bytes (its --max-body-mib)"
        )
        answer = _error(413, "RequestTooLargeError", message)
        answer.force_close()  # the body is left unread
        return answer

    async def _read_body(self, request: web.Request, body: _Body) -> web.Response | None:
        """Read ``request``'s body into ``body``, within the per-request bound, the body
        budget and the body timeout; the refusal to answer instead, or ``None``."""
        if not request.body_exists:
            return None
        declared = request.content_length
        if declared is not None and not body.take(declared):
            return self._over_budget()
        try:
            return await asyncio.wait_for(
                self._fill(request, body, reserved=declared is not None),
                self.limits.body_timeout_s,
            )
        except asyncio.TimeoutError:
            message = (
                f"the request body did not arrive within {self.limits.body_timeout_s:g} s "
                "(the gate's --body-timeout-s)"
            )
            answer = _error(408, "RequestTimeoutError", message)
            answer.force_close()
            return answer

    async def _fill(
        self, request: web.Request, body: _Body, *, reserved: bool
    ) -> web.Response | None:
        async for chunk in request.content.iter_any():
            if body.size + len(chunk) > self.limits.max_body_bytes:
                return self._too_large(body.size + len(chunk))
            if not reserved and not body.take(len(chunk)):
                return self._over_budget()
            body.add(chunk)
        return None

    def _over_budget(self) -> web.Response:
        answer = _unavailable(
            f"the gate buffers {self.limits.body_budget_bytes} bytes of request bodies at "
            f"once (its --body-budget-mib), all in use: try again in {RETRY_AFTER_S} s"
        )
        answer.force_close()  # the body is left unread
        return answer

    async def _admit(self, request: web.Request) -> bool | None:
        """Count an arrival; hold it while the door is closed; whether it may go on
        (``False``: past ``max_held``, to be refused; ``None``: held, and its client hung
        up, so it must not reach the engine)."""
        arrival = time.monotonic()
        self.stats.add("arrivals")
        held = not self._door_open
        if held and len(self._holding) >= self.max_held:
            self.stats.add("overflowed")
            self._notify(held=True)  # load all the same: the scheduler returns early
            return False
        if held:
            key = id(asyncio.current_task())
            self._holding[key] = arrival
            self.stats.add("held")
            self.stats.add("holding")
            self._notify(held=True)
            try:
                if not await self._held(request):
                    self.stats.add("abandoned")
                    return None
            finally:
                self._holding.pop(key, None)  # counted at the open (or dropped)
                self.stats.add("holding", -1)
            return True
        self._notify(held=False)
        return True

    async def _held(self, request: web.Request) -> bool:
        """Wait at the closed door until it opens; ``False`` once the client has hung up
        (looked at every :data:`HANGUP_CHECK_S`: a handler is not cancelled when its
        client goes)."""
        while not self._door_open:
            try:
                await asyncio.wait_for(self._opened.wait(), HANGUP_CHECK_S)
            except asyncio.TimeoutError:
                transport = request.transport
                if transport is None or transport.is_closing():
                    return False
        return True

    def _notify(self, *, held: bool) -> None:
        if self.on_arrival is not None:
            self.on_arrival(held)

    def _started(self) -> None:
        self.stats.add("in_flight")
        self._idle.clear()

    def _finished(self, outcome: str) -> None:
        self.stats.add(outcome)
        self.stats.add("in_flight", -1)
        if self.stats.get("in_flight") == 0:
            self._idle.set()

    async def _forward(
        self, request: web.Request, target: Target, *, work: bool
    ) -> web.StreamResponse:
        """Read ``request``'s body (within the bounds) and send the request on to the
        engine, at ``target``; copy its answer back as it arrives (a redirect to the
        engine's own address made one to the gate's)."""
        from aiohttp import ClientError, web
        from yarl import URL

        assert self._session is not None
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
        url = URL(self.upstream + target.raw, encoded=True)
        if work:
            self._started()  # before its body is read: a closing door waits for it
        outcome = "failed"
        response: web.StreamResponse | None = None
        body = _Body(self._budget)
        try:
            refusal = await self._read_body(request, body)
            if refusal is not None:
                outcome = "shed"
                return refusal
            if body.size:
                headers.append(("Content-Length", str(body.size)))
            async with self._session.request(
                request.method, url, headers=headers, data=body.payload(), allow_redirects=False
            ) as answer:
                body.release()  # the engine has it: it answered
                response = web.StreamResponse(status=answer.status, reason=answer.reason)
                origin = f"{request.scheme}://{request.host}"
                for key, value in answer.headers.items():
                    if key.lower() == "location":
                        value = local_location(value, self.upstream, origin)
                    if key.lower() not in HOP_BY_HOP or key.lower() == "content-length":
                        response.headers.add(key, value)
                kind = answer.headers.get("Content-Type", "")
                until_close = ends_at_close(
                    answer.headers.get("Content-Length"), answer.headers.get("Transfer-Encoding")
                )
                scanner = AnswerScanner(
                    kind.startswith("text/event-stream"), until_close=until_close
                )
                failure = None
                delivered = False
                try:
                    await response.prepare(request)
                    async for chunk in answer.content.iter_any():
                        if work:
                            scanner.feed(chunk)
                        await response.write(chunk)
                    failure = scanner.close() if work else None
                    if failure == CUT_OFF:
                        # The engine died mid-stream: break off the client's stream too.
                        if request.transport is not None:
                            request.transport.close()
                        return response
                    delivered = True
                    await response.write_eof()
                except ConnectionResetError:
                    # The client hung up: after the whole answer (it read to [DONE] and
                    # closed before the last chunk's terminator) it was served; before
                    # (even before the answer began), it gave up on the request.
                    if not delivered:
                        outcome = "cancelled"
                        return response
                outcome = _outcome(answer.status, failure)
                return response
        except (ClientError, asyncio.TimeoutError) as err:
            silent = isinstance(err, asyncio.TimeoutError)
            if silent:
                self.stats.add("timed_out")
            if response is not None and response.prepared:
                # The engine broke off an answer under way: break off the client's too.
                if request.transport is not None:
                    request.transport.close()
                return response
            if silent:
                message = (
                    f"{self.upstream} did not answer within {self.limits.upstream_timeout_s:g} s "
                    f"(the gate's --upstream-timeout-s; connecting: {self.connect_timeout_s:g} s)"
                )
                return _error(504, "GatewayTimeoutError", message)
            message = f"the gate could not reach {self.upstream}: {err}"
            return _error(502, "BadGatewayError", message)
        except (asyncio.CancelledError, ConnectionResetError):
            # The client went away (while its body came, too), or the gate is stopping.
            outcome = "cancelled"
            raise
        finally:
            body.release()
            if work:
                self._finished(outcome)
            elif outcome == "shed":
                self.stats.add("shed")


class _Body:
    """A request body, read in the chunks it came in, and the bytes it holds of the
    gate's body budget."""

    def __init__(self, budget: BodyBudget) -> None:
        self.parts: list[bytes] = []
        self.size = 0  # bytes read
        self._budget = budget
        self._taken = 0  # bytes reserved

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes of the budget; whether they fit."""
        if not self._budget.take(size):
            return False
        self._taken += size
        return True

    def add(self, chunk: bytes) -> None:
        """Keep one more chunk (reserved before)."""
        self.parts.append(chunk)
        self.size += len(chunk)

    def payload(self) -> AsyncIterator[bytes] | None:
        """What the client session sends: the chunks as they came (no copy), or none."""
        if not self.size:
            return None
        return _chunks(self.parts)

    def release(self) -> None:
        """Give the reservation back and let go of the chunks (idempotent)."""
        self._budget.give(self._taken)
        self._taken = 0
        self.parts = []


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _unavailable(message: str) -> web.Response:
    """The gate's ``503`` with ``Retry-After``: it cannot take the request now."""
    answer = _error(503, "ServiceUnavailableError", message)
    answer.headers["Retry-After"] = str(RETRY_AFTER_S)
    return answer


def _error(status: int, kind: str, message: str) -> web.Response:
    """The gate's own error answer, shaped as the OpenAI API's (and vLLM's) errors are."""
    from aiohttp import web

    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return web.json_response(body, status=status)


def _outcome(status: int, failure: str | None) -> str:
    """How an answer counts: a 5xx or a failed 2xx stream ``failed``, another 4xx
    ``rejected`` (the request as sent was refused), else ``completed``."""
    if status >= 500 or (status < 400 and failure is not None):
        return "failed"
    return "rejected" if status >= 400 else "completed"
