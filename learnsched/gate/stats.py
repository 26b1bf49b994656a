"""What the gate counted: arrivals, requests in flight and held, completions, failures,
each held request's added latency, and parks that found requests in flight."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["LEVELS", "MAX_SAMPLES", "GateCounts", "GateStats", "nearest_rank"]

MAX_SAMPLES = 1_000_000
"""Added latencies kept (about 8 MB); later ones are counted but not kept."""


def nearest_rank(samples: Sequence[float], q: float) -> float | None:
    """The ``q``-quantile of ``samples`` by nearest rank (``None``: no samples)."""
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[max(math.ceil(q * len(ordered)), 1) - 1]


@dataclass(frozen=True)
class GateCounts:
    """A snapshot of :class:`GateStats`.

    Attributes
    ----------
    arrivals
        Requests that run the model (completions, chat, embeddings, SGLang
        ``/generate`` ...) that reached the gate.
    completed, failed, rejected, cancelled
        Of those forwarded: answered in full; answered with a 5xx, or a success whose
        stream carried an error event or was aborted, or not answered (the engine
        unreachable); answered with a 4xx (the request as sent was refused: the
        client's error, not a failure); dropped by their client (or cut off by the
        gate's own stop).
    held
        Arrivals held at the closed door (each later forwarded, unless abandoned).
    abandoned
        Held arrivals whose client hung up before the door opened: never forwarded.
    overflowed
        Arrivals past the hold bound, answered ``503`` with ``Retry-After`` by the gate
        (never forwarded).
    shed
        Requests the gate answered itself at its bounds (:mod:`.limits`): a body too
        large (``413``), past the body budget or the connection limit (``503``), or too
        slow to arrive (``408``); never forwarded.
    timed_out
        Of the ``failed``: the engine stayed silent past the upstream timeout (``504``).
    refused
        Requests to the engine's park and resume routes, refused (the scheduler owns them).
    in_flight, holding
        Forwarded and not finished, and held, now.
    parks
        Parks the gate was told of.
    parks_on_busy_engine
        Parks whose release was sent while a request was in flight through the gate, or
        during which one was forwarded (must be 0).
    added_latency_s
        Each held request's time at the door, seconds (arrival to forwarding).
    """

    arrivals: int = 0
    completed: int = 0
    failed: int = 0
    rejected: int = 0
    cancelled: int = 0
    held: int = 0
    abandoned: int = 0
    overflowed: int = 0
    shed: int = 0
    timed_out: int = 0
    refused: int = 0
    in_flight: int = 0
    holding: int = 0
    parks: int = 0
    parks_on_busy_engine: int = 0
    added_latency_s: tuple[float, ...] = ()

    def summary(self) -> dict[str, Any]:
        """The run summary's gate keys: ``held_requests``, ``failed_requests``,
        ``added_latency_p50_s``, ``added_latency_p99_s`` (``None``: none held) and
        ``parks_on_busy_engine``."""
        return {
            "held_requests": self.held,
            "failed_requests": self.failed,
            "added_latency_p50_s": nearest_rank(self.added_latency_s, 0.50),
            "added_latency_p99_s": nearest_rank(self.added_latency_s, 0.99),
            "parks_on_busy_engine": self.parks_on_busy_engine,
        }

    def since(self, start: Mapping[str, Any]) -> GateCounts:
        """What was counted after ``start``, an earlier :meth:`to_json` of the same gate:
        each total less ``start``'s, the :data:`LEVELS` as they are now (the added
        latencies are left as they are: keep only those after ``start``)."""
        totals = {
            f.name: getattr(self, f.name) - (0 if f.name in LEVELS else int(start[f.name]))
            for f in fields(self)
            if f.name != "added_latency_s"
        }
        return GateCounts(**totals, added_latency_s=self.added_latency_s)

    def to_json(self) -> dict[str, Any]:
        """Every count (latencies as their number and quantiles, not the list)."""
        data = asdict(self)
        data["added_latency_s"] = len(self.added_latency_s)
        return {**data, **self.summary()}


LEVELS = ("in_flight", "holding")
"""The counts that say how many now (the others are totals since the gate started)."""

_COUNTERS = (
    *("arrivals", "completed", "failed", "rejected", "cancelled", "held", "abandoned"),
    *("overflowed", "shed", "timed_out"),
    "refused",
    *LEVELS,
    *("parks", "parks_on_busy_engine"),
)


class GateStats:
    """The gate's counters, updated on its event loop and read from any thread."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(_COUNTERS, 0)
        self.added_latency_s: list[float] = []
        self._lock = threading.Lock()
        self._releasing = False  # a park's release is under way
        self._release_busy = False  # ... and met a request in flight

    def add(self, name: str, by: int = 1) -> None:
        """Count ``by`` more ``name`` (a field of :class:`GateCounts`)."""
        with self._lock:
            self.counts[name] += by
            if name == "in_flight" and by > 0 and self._releasing:
                self._release_busy = True  # forwarded while a release was under way

    def get(self, name: str) -> int:
        """One count now."""
        with self._lock:
            return self.counts[name]

    def held_for(self, seconds: Sequence[float]) -> None:
        """Record held requests' added latencies, seconds."""
        with self._lock:
            room = max(MAX_SAMPLES - len(self.added_latency_s), 0)
            self.added_latency_s.extend(seconds[:room])

    def release_sent(self) -> None:
        """A park's release is being sent: busy if anything is in flight now."""
        with self._lock:
            self.counts["parks"] += 1
            self._releasing = True
            self._release_busy = self.counts["in_flight"] > 0

    def release_done(self) -> None:
        """The release answered (or failed): count the park if it met a request."""
        with self._lock:
            if self._releasing:
                self.counts["parks_on_busy_engine"] += self._release_busy
            self._releasing = self._release_busy = False

    def snapshot(self) -> GateCounts:
        """The counts now."""
        with self._lock:
            return GateCounts(**self.counts, added_latency_s=tuple(self.added_latency_s))
