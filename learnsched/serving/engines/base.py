"""What a serving engine's HTTP dialect provides: park, resume, is-parked, load, readiness.

A dialect only says which routes to call with which bodies; the HTTP exchange itself
(connections, status checks, stream reading, error messages) is
:class:`~learnsched.serving.endpoint.ServingEndpoint`'s, passed in as ``server``. The
order of the calls around a park (idleness, pause, release; resume, continue) is the
engine layer's (:mod:`.actions`), the same for probes, the control loop and the gate.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from ..errors import HandoffProbeError
from .load import Load, load_of
from .routes import route_matches

__all__ = ["MEMORY_TAGS", "PARK_STATES", "PROMPT", "Engine", "Server", "server_json"]

PROMPT = "The capital of France is"
# The memory kinds both engines release and resume by name.
MEMORY_TAGS = ("weights", "kv_cache")
PARK_STATES = ("serving", "parked", "paused", "unconfirmed")
"""What an engine that reports it says of itself (:meth:`Engine.park_state`): serving;
parked (its memory released); paused (generation held by another controller, nothing
released: vLLM's ``POST /pause``); unconfirmed (parked or paused, and it cannot tell
which)."""


class Server(Protocol):
    """The HTTP side a dialect talks through (a :class:`ServingEndpoint`)."""

    url: str

    def request(self, method: str, path: str, body: object, timeout_s: float) -> tuple[int, bytes]:
        """One exchange; ``(status, body)``."""
        ...

    def call(self, method: str, path: str, body: object, timeout_s: float) -> bytes:
        """One exchange that must answer 200; the response body."""
        ...

    def served_model(self, timeout_s: float) -> str:
        """The model the server serves (cached :meth:`Engine.models`' first)."""
        ...


class Engine(ABC):
    """One serving engine's HTTP dialect. Subclass it in one module and register it.

    Attributes
    ----------
    name
        The registry name (``--engine NAME``).
    reports_parked
        Whether the engine has its own route saying it is parked (:meth:`is_parked`).
    load_metrics
        The Prometheus gauges of running and waiting requests on ``/metrics``.
    generation_routes
        The routes whose requests run the model (:meth:`generates`), as the engine's
        router writes them (:mod:`~learnsched.serving.engines.routes`: ``{name}`` parameters).
    forwarded_routes
        Every route a front door passes on from clients (:meth:`forwards`): the
        generation routes and the read-only ones clients use (models, health, tokenizer).
        Every other route, each control route above all, is refused: parking, pausing,
        aborting and reloading are the scheduler's.
    pauses
        Whether :meth:`pause` has a call (every park of this engine pauses first).
    pool_resolution_bytes
        How finely :meth:`released_bytes` reports each pool, bytes (0: exactly).
    """

    name: ClassVar[str]
    reports_parked: ClassVar[bool] = False
    load_metrics: ClassVar[tuple[str, str]]
    generation_routes: ClassVar[frozenset[str]] = frozenset()
    forwarded_routes: ClassVar[frozenset[str]] = frozenset()
    pauses: ClassVar[bool] = False
    pool_resolution_bytes: ClassVar[int] = 0

    def check_park(self, *, level: int, tags: Sequence[str], reload: bool) -> None:
        """``ValueError`` for a park this engine cannot undo as asked (before any call)."""
        unknown = sorted(set(tags) - set(MEMORY_TAGS))
        if unknown:
            raise ValueError(f"tags must be among {', '.join(MEMORY_TAGS)}, got {unknown}")

    def check_config(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> list[str]:
        """Refuse (:class:`~..errors.ServerConfigError`, naming the flag to add) a park
        the server's start-up flags cannot honour; notes on what could not be checked."""
        return [f"{self.name}: server configuration not checked"]

    def released_tags(self, tags: Sequence[str]) -> tuple[str, ...]:
        """The memory tags a park asked for ``tags`` releases (empty: all of them)."""
        return tuple(tags) or MEMORY_TAGS

    def released_bytes(self, server: Server, tags: Sequence[str], timeout_s: float) -> int | None:
        """Device bytes a park of ``tags`` frees by the engine's own account (``None``:
        it gives none, or the park frees everything)."""
        return None

    def reload(self, server: Server, timeout_s: float) -> None:
        """Load the weights again from where the server loaded them (after a resume that
        did not keep them)."""
        raise HandoffProbeError(f"{self.name} has no weights reload route")

    def accumulate(self, text: str, piece: str) -> str:
        """The generated text so far after one stream event's ``piece`` (deltas)."""
        return text + piece

    def generates(self, method: str, path: str) -> bool:
        """Whether a request ``method path`` (path decoded and normalised) runs the model
        (load; held while parked). A CORS preflight (``OPTIONS``) never does."""
        return method != "OPTIONS" and route_matches(self.generation_routes, path)

    def forwards(self, path: str) -> bool:
        """Whether a front door passes a request for ``path`` (decoded, normalised) on to
        the engine, whatever its method (the engine answers a wrong one itself)."""
        return route_matches(self.forwarded_routes, path)

    def load(self, server: Server, timeout_s: float) -> Load | None:
        """Running and waiting requests from ``/metrics`` (``None``: no such gauges)."""
        status, data = server.request("GET", "/metrics", None, timeout_s)
        if status != 200:
            return None
        return load_of(data.decode(errors="replace"), self.load_metrics)

    def pause(self, server: Server, timeout_s: float) -> bool:
        """Stop the engine scheduling new work before a release, without aborting any;
        whether it paused (the dialect has such a call). Default: no such call."""
        return False

    def unpause(self, server: Server, timeout_s: float) -> None:
        """Undo :meth:`pause` (only called after a pause that answered)."""
        raise HandoffProbeError(f"{self.name} has no pause to undo")

    @abstractmethod
    def park(self, server: Server, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """Ask the engine to release its device memory (returns when acknowledged).

        ``level`` is vLLM's sleep level and ``tags`` the memory tags to release (all when
        empty); a dialect ignores what it has no use for. Call it through
        :func:`.actions.park`, which checks idleness and pauses first.
        """

    @abstractmethod
    def resume(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> None:
        """Ask the engine to restore its device state (returns when acknowledged);
        with ``reload`` the weights are loaded again (:meth:`reload`) on the way."""

    def is_parked(self, server: Server, timeout_s: float) -> bool:
        """The engine's own view of whether it is parked (only if ``reports_parked``)."""
        raise HandoffProbeError(f"{self.name} has no route that reports whether it is parked")

    def park_state(self, server: Server, timeout_s: float) -> str:
        """The engine's own view, one of
        :data:`~learnsched.serving.engines.base.PARK_STATES` (only if ``reports_parked``).
        Default: :meth:`is_parked` says ``parked`` or ``serving``."""
        return "parked" if self.is_parked(server, timeout_s) else "serving"

    def alive(self, server: Server, timeout_s: float) -> bool:
        """Whether the server still lives, asked without running the model (so safe while
        parked): ``GET /v1/models`` answers 200, from the front end alone.

        Raises
        ------
        ConnectionError, TimeoutError
            The server cannot be reached (refused: it is gone) or does not answer in time.
        """
        return server.request("GET", "/v1/models", None, timeout_s)[0] == 200

    @abstractmethod
    def generation(
        self, server: Server, max_tokens: int, timeout_s: float
    ) -> tuple[str, dict[str, Any]]:
        """The streaming request that shows readiness: ``(path, JSON body)`` for a POST.

        It generates exactly ``max_tokens`` tokens of :data:`PROMPT` (``ignore_eos``), so
        requests are comparable.
        """

    @abstractmethod
    def event_text(self, event: dict[str, Any]) -> str:
        """The generated text of one stream event (``KeyError``/``IndexError`` if absent)."""

    def models(self, server: Server, timeout_s: float) -> list[str]:
        """The served models' names, from the OpenAI-style ``GET /v1/models``."""
        data = json.loads(server.call("GET", "/v1/models", None, timeout_s))
        return [str(model["id"]) for model in data.get("data") or []]


def server_json(server: Server, paths: Sequence[str], timeout_s: float) -> Any:
    """The JSON of the first of ``paths`` that answers 200 (``None``: none does)."""
    for path in paths:
        status, data = server.request("GET", path, None, timeout_s)
        if status != 200:
            continue
        try:
            return json.loads(data)
        except ValueError:
            return None
    return None
