"""What the scheduler learns from the front door: held arrivals, and the summary keys.

With the gate (:class:`learnsched.gate.Gate`) in front of the engine, an arrival while
its door is closed is held there and told to the loop at once, and so is every arrival
while the loop waits in an idle window for a move decider (:func:`held_arrivals`);
the gate's counts give the run summary's :data:`GATE_KEYS` (:func:`gate_summary`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..gate.stats import GateCounts

__all__ = ["GATE_KEYS", "gate_summary", "held_arrivals"]

GATE_KEYS = (
    "held_requests",
    "failed_requests",
    "added_latency_p50_s",
    "added_latency_p99_s",
    "parks_on_busy_engine",
    "skipped_windows",
)
"""The summary keys of the gate and the skipped windows, in ``--json``'s order."""


def held_arrivals(
    notify: Callable[[], None], gap_open: Callable[[], bool] | None = None
) -> Callable[[bool], None]:
    """A gate ``on_arrival`` that tells ``notify`` of held arrivals (while the door is
    open the gate's own counts are the load signal), and of every arrival while
    ``gap_open()`` (``ControlLoop.gap_open``: a loop waiting in an idle window
    for a move decider to lend; a request shorter than a load poll ends that wait too)."""

    def on_arrival(held: bool) -> None:
        if held or (gap_open is not None and gap_open()):
            notify()

    return on_arrival


def gate_summary(counts: GateCounts | None, *, failed: int | None, skipped: int) -> dict[str, Any]:
    """The :data:`GATE_KEYS` of a run.

    Parameters
    ----------
    counts
        The gate's counts (``None``: no gate, so nothing held and no park watched:
        ``null``).
    failed
        Failed requests as the clients saw them (the demo's load generator), or
        ``None`` for the gate's own count.
    skipped
        Windows the policy would lend that were not (the loop's totals).
    """
    if counts is None:
        held: dict[str, Any] = dict.fromkeys(GATE_KEYS[:-1])
        held["failed_requests"] = failed
    else:
        held = counts.summary()
        if failed is not None:
            held["failed_requests"] = failed
    return {**{key: held[key] for key in GATE_KEYS[:-1]}, "skipped_windows": skipped}
