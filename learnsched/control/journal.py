"""The scheduler's ledger: every decision, quantum and handoff, and its replay.

Records are :class:`~learnsched.handoff.HandoffRecord` lines in the fsynced handoff
ledger (:class:`~learnsched.handoff.HandoffLedger`), with the scheduler's fields in
``detail`` (``detail["run"]`` numbers the scheduler's runs on one ledger). Kinds:

================  ======================================================================
``run-start``     a run began: ``resumed_from_quanta`` (durable quanta it resumed from)
``decision``      what the policy (or the load signal) chose for a window, or for an early
                  return (``phase``: ``window`` or ``early-return``)
``park``          the engine is being parked for a lent window
``skip``          a window the policy would lend was not: ``reason`` ``busy`` (requests
                  did not drain at the gate, or the engine reported load: nothing was
                  released), or ``no time left``
``work``          one quantum completed (``progress``, ``loss``)
``checkpoint``    a durable checkpoint (``durable_progress``)
``discard``       unsaved work dropped (``unsaved_lost``)
``trainer-lost``  the trainer process died; its unsaved work is lost
``return``        capacity back: readiness confirmed by a completed request (``late``,
                  ``early``, ``readiness_s``; ``held_requests`` and ``added_latency_s``:
                  the requests the gate held until then and each one's added seconds)
``publish``       the finished artifact was written
``run-end``       the run stopped cleanly, with its summary
================  ======================================================================

:func:`replay` recomputes a run's totals from these records alone; a run killed with
``kill -9`` has no ``run-end``, and the next run's ``run-start`` says where it resumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..handoff.ledger import HandoffRecord
from .front import GATE_KEYS

__all__ = ["SUMMARY_KEYS", "Totals", "last_run", "open_park", "progress_seen", "replay", "run_of"]

SUMMARY_KEYS = (
    "windows",
    "decisions",
    "quanta_done",
    "durable_quanta",
    "resumed_from_quanta",
    "handoffs",
    "late_returns",
    "early_returns",
    "requests",
    "slo_misses",
    "published",
    "ledger",
    *GATE_KEYS,
)
"""The keys of a run's summary, in the order ``learnsched demo --json`` prints them (the
last six: :data:`~.front.GATE_KEYS`)."""


@dataclass
class Totals:
    """What one run did, as counted from its ledger records.

    Attributes
    ----------
    windows
        Windows the run reached (one ``window`` decision each).
    decisions
        Decisions recorded (windows and early returns).
    quanta_done
        Quanta completed in this run, saved or not.
    durable_quanta
        Durable (checkpointed) quanta at the end.
    resumed_from_quanta
        Durable quanta the run started from.
    handoffs
        Lent windows whose capacity came back (park, then return).
    late_returns
        Returns whose readiness came after the window's return deadline.
    early_returns
        Returns forced by load inside a lent window.
    skipped_windows
        Windows the policy would lend that were not (``skip`` records): the engine was
        busy at the park, or no time was left.
    unsaved_lost
        Completed quanta lost unsaved (discards, trainer deaths, killed runs).
    published
        Whether the artifact has been published.
    """

    windows: int = 0
    decisions: int = 0
    quanta_done: int = 0
    durable_quanta: int = 0
    resumed_from_quanta: int = 0
    handoffs: int = 0
    late_returns: int = 0
    early_returns: int = 0
    skipped_windows: int = 0
    unsaved_lost: int = 0
    published: bool = False

    def to_json(self) -> dict[str, Any]:
        """The totals as a JSON object."""
        return asdict(self)


def run_of(record: HandoffRecord) -> int | None:
    """The scheduler run a record belongs to (``None`` for other writers' records)."""
    run = record.detail.get("run")
    return run if isinstance(run, int) else None


def last_run(records: Sequence[HandoffRecord]) -> int:
    """The highest run number in the ledger (0 when no run has started)."""
    return max((run for r in records if (run := run_of(r)) is not None), default=0)


def replay(records: Sequence[HandoffRecord], run: int) -> Totals:
    """The totals of run ``run`` from its records alone.

    Parameters
    ----------
    records
        The ledger, oldest first (:func:`~learnsched.handoff.read_ledger`).
    run
        Which run (see :func:`last_run`).

    Raises
    ------
    ValueError
        The ledger has no ``run-start`` for ``run``.
    """
    totals = Totals()
    started = False
    for record in records:
        if run_of(record) != run:
            continue
        kind, detail = record.kind, record.detail
        if kind == "run-start":
            started = True
            totals.resumed_from_quanta = totals.durable_quanta = int(record.durable_progress or 0)
            totals.published = bool(detail.get("published", False))
        elif kind == "decision":
            totals.decisions += 1
            totals.windows += detail.get("phase") == "window"
        elif kind == "work":
            totals.quanta_done += 1
        elif kind == "skip":
            totals.skipped_windows += 1
        elif kind == "checkpoint":
            totals.durable_quanta = int(record.durable_progress or 0)
        elif kind == "return":
            totals.handoffs += 1
            totals.late_returns += bool(detail.get("late"))
            totals.early_returns += bool(detail.get("early"))
        elif kind == "publish":
            totals.published = True
            totals.durable_quanta = int(record.durable_progress or totals.durable_quanta)
        # A return repeats its segment's loss; only a recovered return (of a killed
        # run's window) is where that loss is first counted.
        if record.unsaved_lost and (kind != "return" or detail.get("recovered")):
            totals.unsaved_lost += record.unsaved_lost
    if not started:
        raise ValueError(f"the ledger has no run-start record for run {run}")
    return totals


def open_park(records: Sequence[HandoffRecord]) -> HandoffRecord | None:
    """The last ``park`` not followed by a ``return`` (or a ``skip``: the park was refused
    before anything was released): the engine may still be parked."""
    parked: HandoffRecord | None = None
    for record in records:
        if record.kind == "park":
            parked = record
        elif record.kind in ("return", "skip"):
            parked = None
    return parked


# Records after which the trainer's progress is its durable progress again.
_RESETS = ("run-start", "checkpoint", "discard", "trainer-lost", "return", "publish")


def progress_seen(records: Sequence[HandoffRecord]) -> int:
    """The last progress the scheduler recorded (a ``work``, ``checkpoint`` or start)."""
    seen = 0
    for record in records:
        if record.kind == "work":
            seen = int(record.detail["progress"])
        elif record.kind in _RESETS and record.durable_progress is not None:
            seen = record.durable_progress
    return seen
