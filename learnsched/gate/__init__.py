"""The gate: learnsched's front door for requests, in front of a vLLM or SGLang server.

- :mod:`.proxy`: :class:`Gate`, the OpenAI-compatible reverse proxy with a door the
  scheduler closes (hold new requests, drain those in flight) before a park and opens
  once capacity is back;
- :mod:`.limits`: its bounds on bodies, waits and connections (:class:`~.limits.GateLimits`);
- :mod:`.stats`: what it counts (:class:`GateCounts`: arrivals, in flight, held,
  completions, failures, added latencies, parks on a busy engine);
- :mod:`.notify`: :class:`NotifyServer`, the tiny endpoint a user's own router POSTs
  arrivals to instead (``learnsched run --notify``);
- :mod:`.control`: :class:`ControlServer`, the door of a long-lived gate on a listener of
  its own (``learnsched gate --control``), with a lease that opens the door if its
  scheduler vanishes;
- :mod:`.remote`: :class:`RemoteGate`, a scheduler's end of that door
  (``learnsched run --attach``).

The gate needs aiohttp (``pip install "learnsched[serve]"``), imported only when one
starts (a :class:`RemoteGate` needs the standard library only); names here load on
first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .control import ControlServer
    from .notify import NotifyServer
    from .proxy import Gate
    from .remote import RemoteGate
    from .stats import GateCounts, GateStats

DEFAULT_MAX_HELD = 4096
"""Requests the gate holds at its closed door at most, by default."""
DEFAULT_LEASE_S = 10.0
"""How long a door closed over the control listener stays closed without a renewal,
seconds, by default (:mod:`.control`)."""

_NAMES = {
    "ControlServer": "control",
    "Gate": "proxy",
    "GateCounts": "stats",
    "GateStats": "stats",
    "NotifyServer": "notify",
    "RemoteGate": "remote",
}

__all__ = [
    "DEFAULT_LEASE_S",
    "DEFAULT_MAX_HELD",
    "ControlServer",
    "Gate",
    "GateCounts",
    "GateStats",
    "NotifyServer",
    "RemoteGate",
]


def __getattr__(name: str) -> object:
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
