"""The gate's bounds as a trusted proxy's: on memory, on time and on connections.

- **Memory.** A request body is read only once the request is admitted (past the closed
  door: a held request's body stays unread in its socket), and only up to
  ``max_body_bytes`` (``413`` past it, from ``Content-Length`` before reading a byte).
  The bodies buffered at once, across requests, stay within ``body_budget_bytes``; a
  body that does not fit is answered ``503`` with ``Retry-After``. Each buffered body
  goes back to the budget once the engine has answered its headers (it has the body).
- **Time.** A client has ``header_timeout_s`` from connecting (or from its last answer,
  on a kept-alive connection) to send a request's headers, however slowly it trickles
  them, and ``body_timeout_s`` after them for the whole body (``408``). An engine silent
  for ``upstream_timeout_s`` (no headers, or no byte of a stream) fails the request with
  ``504`` and releases its place in flight, so a hung request cannot keep a park
  waiting forever. It bounds silence, not the whole answer: a generation streams
  tokens as long as it takes.
- **Connections.** At most ``max_connections`` client connections at once (a request on
  one more is answered ``503`` and its connection closed): each forwarded request holds
  a second descriptor to the engine, so it must stay under half the open-file limit less
  a reserve (the default: that, at most :data:`DEFAULT_MAX_CONNECTIONS`), and the gate
  raises its soft open-file limit to the hard one at start. Each connection also costs
  the read buffer of a body not yet read (a held request's): the gate's memory is
  bounded by the body budget plus that buffer times the connections.
"""

from __future__ import annotations

import argparse
import resource
from dataclasses import dataclass

from .._checks import integer, positive

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "FD_RESERVE",
    "MIB",
    "BodyBudget",
    "GateLimits",
    "add_limit_flags",
    "open_files",
]

MIB = 1 << 20
FD_RESERVE = 128
"""Open files kept for the rest of the process (ledger, logs, the trainer's pipes, the
scheduler's own engine calls) when the connection limit is derived from the open-file
limit."""
DEFAULT_MAX_CONNECTIONS = 1024
"""Client connections at once by default, where the open-file limit allows as many: a
bound on the read buffers of bodies not yet read, too."""


@dataclass(frozen=True)
class GateLimits:
    """The gate's bounds (the module's text says what each does).

    Attributes
    ----------
    max_body_bytes
        One request's body at most, bytes (``413`` past it).
    body_budget_bytes
        Bodies buffered at once across requests at most, bytes (``503`` past it).
    header_timeout_s
        A request's headers arrive within this, seconds (else the connection is closed).
    body_timeout_s
        Its whole body arrives within this after them, seconds (``408``).
    upstream_timeout_s
        The engine may be silent this long, seconds (``504``).
    max_connections
        Client connections at once (``503`` past it); ``None``: half the open-file limit
        less :data:`FD_RESERVE`, at most :data:`DEFAULT_MAX_CONNECTIONS`
        (:meth:`connections`).
    """

    max_body_bytes: int = 64 * MIB
    body_budget_bytes: int = 256 * MIB
    header_timeout_s: float = 60.0
    body_timeout_s: float = 60.0
    upstream_timeout_s: float = 600.0
    max_connections: int | None = None

    def __post_init__(self) -> None:
        integer("max_body_bytes", self.max_body_bytes, low=1)
        integer("body_budget_bytes", self.body_budget_bytes, low=1)
        _budget_holds_a_body(
            "body_budget_bytes", self.body_budget_bytes, "max_body_bytes", self.max_body_bytes
        )
        positive("header_timeout_s", self.header_timeout_s)
        positive("body_timeout_s", self.body_timeout_s)
        positive("upstream_timeout_s", self.upstream_timeout_s)
        if self.max_connections is not None:
            integer("max_connections", self.max_connections, low=1)

    def connections(self, open_files_limit: int) -> int:
        """The connection limit with ``open_files_limit`` descriptors (the soft
        ``RLIMIT_NOFILE``): :attr:`max_connections`, which must leave a descriptor to the
        engine for each and :data:`FD_RESERVE` besides, or by default that bound (at most
        :data:`DEFAULT_MAX_CONNECTIONS`).

        Raises
        ------
        ValueError
            The limit asked for (or the open-file limit) leaves no room.
        """
        room = (open_files_limit - FD_RESERVE) // 2
        if room < 1:
            raise ValueError(
                f"the open-file limit is {open_files_limit}: the gate needs more than "
                f"{FD_RESERVE + 2} (raise it with `ulimit -n`)"
            )
        if self.max_connections is None:
            return min(room, DEFAULT_MAX_CONNECTIONS)
        if self.max_connections > room:
            raise ValueError(
                f"max_connections {self.max_connections} exceeds {room}, what the open-file "
                f"limit of {open_files_limit} allows (two descriptors a connection, "
                f"{FD_RESERVE} kept): lower it or raise the limit (`ulimit -n`)"
            )
        return self.max_connections

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> GateLimits:
        """The limits of the flags :func:`add_limit_flags` added (MiB flags in bytes);
        ``ValueError`` naming the flag of a bad value."""
        connections = args.max_connections
        max_body = _mib("--max-body-mib", args.max_body_mib)
        budget = _mib("--body-budget-mib", args.body_budget_mib)
        _budget_holds_a_body(
            "--body-budget-mib", args.body_budget_mib, "--max-body-mib", args.max_body_mib
        )
        return cls(
            max_body_bytes=max_body,
            body_budget_bytes=budget,
            header_timeout_s=positive("--header-timeout-s", args.header_timeout_s),
            body_timeout_s=positive("--body-timeout-s", args.body_timeout_s),
            upstream_timeout_s=positive("--upstream-timeout-s", args.upstream_timeout_s),
            max_connections=None
            if connections is None
            else integer("--max-connections", connections, low=1),
        )


def _budget_holds_a_body(budget_name: str, budget: int, body_name: str, body: int) -> None:
    """``ValueError`` naming both unless the budget ``budget`` holds one body of the
    largest size ``body`` (the same unit: bytes, or MiB for the flags)."""
    if budget < body:
        raise ValueError(
            f"{budget_name} ({budget}) must be at least {body_name} ({body}): a body of "
            "the largest size could never be read"
        )


def _mib(flag: str, value: object) -> int:
    """``value`` MiB in bytes (a whole number of MiB, at least 1)."""
    return integer(flag, value, low=1) * MIB


def add_limit_flags(parser: argparse.ArgumentParser, scope: str) -> None:
    """Add the flags of :class:`GateLimits` to ``parser``; ``scope`` starts each help
    (``"with --gate: "`` where the gate is optional)."""
    default = GateLimits()
    add = parser.add_argument
    add("--max-body-mib", type=int, default=default.max_body_bytes // MIB, metavar="MIB",
        help=f"{scope}one request body at most (413 past it; default %(default)s)")  # fmt: skip
    add("--body-budget-mib", type=int, default=default.body_budget_bytes // MIB, metavar="MIB",
        help=f"{scope}request bodies buffered at once across requests (503 with Retry-After "
        "past it; default %(default)s)")  # fmt: skip
    add("--header-timeout-s", type=float, default=default.header_timeout_s, metavar="S",
        help=f"{scope}a client's request headers arrive within S s of connecting or of its "
        "last answer, else it is disconnected (default %(default)s)")  # fmt: skip
    add("--body-timeout-s", type=float, default=default.body_timeout_s, metavar="S",
        help=f"{scope}the whole body arrives within S s after the headers (408; default "
        "%(default)s)")  # fmt: skip
    add("--upstream-timeout-s", type=float, default=default.upstream_timeout_s, metavar="S",
        help=f"{scope}an engine silent S s (no headers, no stream byte) fails the request "
        "with 504 and frees its place in flight (default %(default)s)")  # fmt: skip
    add("--max-connections", type=int, metavar="N",
        help=f"{scope}client connections at once (503 past it; default: half of the "
        f"open-file limit less {FD_RESERVE}, at most {DEFAULT_MAX_CONNECTIONS}; the soft "
        "limit is raised to the hard one at start)")  # fmt: skip


class BodyBudget:
    """Bytes of request bodies buffered at once, across requests (used on one event
    loop: no lock)."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = integer("limit_bytes", limit_bytes, low=1)
        self.used_bytes = 0

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes more; whether they fit (nothing reserved if not)."""
        if self.used_bytes + size > self.limit_bytes:
            return False
        self.used_bytes += size
        return True

    def give(self, size: int) -> None:
        """Return ``size`` bytes taken before."""
        self.used_bytes -= size


def open_files() -> int:
    """The soft open-file limit (``RLIMIT_NOFILE``), raised to the hard limit first where
    the system allows (an unlimited hard limit leaves the soft one as it is)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # not allowed here (a sandbox): the soft limit stands
    return soft
