"""The scheduler's ledger: every decision, quantum and handoff, and its replay.

Records are :class:`~learnsched.serving.HandoffRecord` lines in the fsynced handoff
ledger (:class:`~learnsched.serving.HandoffLedger`), with the scheduler's fields in
``detail`` (``detail["run"]`` numbers the scheduler's runs on one ledger). Kinds:

======================  ============================================================
``run-start``           a run began, holding the ledger lock and the engine lease
                        (``pid``); its ``durable_progress`` is the last the ledger
                        records
``trainer-ready``       its trainer started: ``durable_progress`` is the trainer's
                        own (a checkpoint written just before a crash counts), where
                        the run resumes
``reference``           the greedy answer every return must reproduce (``text``)
``decision``            what the policy (or the load signal) chose for a window, or
                        for an early return (``phase``: ``window`` or
                        ``early-return``; ``policy`` ``resume``: a stop or a dead
                        engine checkpoints for a later run), a move decider's answer
                        at a later
                        boundary of an idle window (``phase`` ``idle``, ``move``;
                        ``policy`` ``load``: an arrival ended the wait), or a move
                        between quanta other than ``work`` (``phase`` ``quantum``)
``park``                about to park the engine for a lent window (written before
                        the release is sent: a run killed after it leaves an open
                        park)
``skip``                a window the policy would lend was not: ``reason`` ``busy``
                        (requests did not drain at the gate, or the engine reported
                        load: nothing was released), ``paused`` (another controller
                        holds the engine paused: nothing was touched), or ``no time
                        left``
``park-step``           how far a park got before its answer (``step``: ``paused``,
                        SGLang's generation paused; ``release_sent``, the release
                        about to go out), and on an engine that cannot say whether
                        it is parked (SGLang) ``resume_sent``, its return about to
                        go out
``parked``              the release was acknowledged (``parked``: what it released,
                        for the resume)
``park-failed``         the park raised (``failure``; ``refused``: the engine
                        refused it and released nothing)
``work``                one quantum completed (``progress``, ``loss``)
``interrupted``         an arrival cut the quantum in progress short: its partial work
                        is lost (``progress`` counts whole quanta; ``seconds`` it
                        ran; ``honoured``: the trainer stopped by itself, or was
                        killed after the grace)
``checkpoint``          a durable checkpoint (``durable_progress``)
``discard``             unsaved work dropped (``unsaved_lost``)
``trainer-lost``        the trainer process died; its unsaved work is lost
``trainer-failed``      the trainer raised, or its loss was NaN or infinite: its
                        unsaved work is dropped unsaved and the run stops once
                        capacity is back
``return``              capacity back: readiness confirmed by a completed request
                        (``late``, ``early``, ``readiness_s``; ``held_requests`` and
                        ``added_latency_s``: the requests the gate held until then and
                        each one's added seconds)
``return-retry``        a return failed and is tried again (``attempt``, ``error``,
                        ``wait_s``)
``engine-lost``         the engine died while lent (``failure``; ``held_requests``:
                        those the gate let go, to fail at once): no return, the run
                        stops; its park stays open for the next run to close
``quarantine``          the engine may be parked or serving a different model
                        (``reason``): no run lends it again until
                        ``quarantine-cleared``
``quarantine-cleared``  an operator checked the engine (``learnsched run
                        --clear-quarantine``)
``publish``             the finished artifact was written
``run-end``             the run stopped (with its summary, and ``error`` if an error
                        stopped it)
======================  ============================================================

:func:`replay` recomputes a run's totals from these records alone; a run killed with
``kill -9`` has no ``run-end``, and the next run's ``run-start`` says where it resumed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..serving.ledger import HandoffRecord
from .front import GATE_KEYS

__all__ = [
    "SUMMARY_KEYS",
    "QuarantineNote",
    "Totals",
    "last_durable",
    "last_reference",
    "last_run",
    "open_park",
    "park_progress",
    "progress_seen",
    "quarantine_of",
    "replay",
    "run_of",
]

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
    interrupted_quanta
        Quanta an arrival cut short (their partial work is lost; not in
        ``quanta_done``).
    published
        Whether the artifact has been published.
    quarantined
        Whether the run quarantined the engine (a failed or impossible return).
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
    interrupted_quanta: int = 0
    published: bool = False
    quarantined: bool = False

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
        The ledger, oldest first (:func:`~learnsched.serving.read_ledger`).
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
        if kind in ("run-start", "trainer-ready"):
            started = True
            totals.resumed_from_quanta = totals.durable_quanta = int(record.durable_progress or 0)
            totals.published = totals.published or bool(detail.get("published", False))
        elif kind == "decision":
            totals.decisions += 1
            totals.windows += detail.get("phase") == "window"
        elif kind == "work":
            totals.quanta_done += 1
        elif kind == "interrupted":
            totals.interrupted_quanta += 1
        elif kind == "skip":
            totals.skipped_windows += 1
        elif kind == "checkpoint":
            totals.durable_quanta = int(record.durable_progress or 0)
        elif kind == "return":
            totals.handoffs += 1
            totals.late_returns += bool(detail.get("late"))
            totals.early_returns += bool(detail.get("early"))
        elif kind == "quarantine":
            totals.quarantined = True
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
    """The last ``park`` not followed by a ``return`` (or by a ``skip`` or a
    ``park-failed`` the engine refused: nothing was released): the engine may still be
    parked."""
    parked: HandoffRecord | None = None
    for record in records:
        if record.kind == "park":
            parked = record
        elif record.kind in ("return", "skip") or (
            record.kind == "park-failed" and record.detail.get("refused")
        ):
            parked = None
    return parked


# Records after which the trainer's progress is its durable progress again.
_RESETS = (
    "run-start",
    "checkpoint",
    "discard",
    "trainer-lost",
    "trainer-failed",
    "return",
    "publish",
)


def progress_seen(records: Sequence[HandoffRecord]) -> int:
    """The last progress the scheduler recorded (a ``work``, ``checkpoint`` or start)."""
    seen = 0
    for record in records:
        if record.kind == "work":
            seen = int(record.detail["progress"])
        elif record.kind in _RESETS and record.durable_progress is not None:
            seen = record.durable_progress
    return seen


def park_progress(
    records: Sequence[HandoffRecord], park: HandoffRecord
) -> tuple[HandoffRecord | None, set[str]]:
    """How far ``park`` got: its ``parked`` record (``None``: the release was never
    acknowledged) and the ``park-step`` names recorded after it until its return
    (``paused``, ``release_sent``, then the return's ``resume_sent``: what a run killed
    midway had done), with ``engine_lost`` where the engine died while lent."""
    steps: set[str] = set()
    acked: HandoffRecord | None = None
    after = False
    for record in records:
        if record is park:
            after = True
        elif not after:
            continue
        elif record.kind == "park-step":
            steps.add(str(record.detail.get("step")))
        elif record.kind == "parked":
            acked = record
        elif record.kind == "engine-lost":
            steps.add("engine_lost")
        elif record.kind in ("return", "park-failed"):
            break
    return acked, steps


def last_durable(records: Sequence[HandoffRecord]) -> int:
    """The durable quanta the ledger last recorded (0 for a new ledger)."""
    durable = 0
    for record in records:
        if record.kind in _RESETS and record.durable_progress is not None:
            durable = record.durable_progress
    return durable


def last_reference(records: Sequence[HandoffRecord]) -> str | None:
    """The greedy answer a return must reproduce, as last recorded (``None``: none)."""
    text = None
    for record in records:
        if record.kind == "reference" and isinstance(record.detail.get("text"), str):
            text = record.detail["text"]
    return text


@dataclass(frozen=True)
class QuarantineNote:
    """An uncleared quarantine: why, and when (epoch seconds), by which run."""

    reason: str
    since_unix: float
    run: int | None


def quarantine_of(records: Sequence[HandoffRecord]) -> QuarantineNote | None:
    """The quarantine in force (``None``: lending is allowed).

    A ``quarantine`` record, or a ``return`` with a ``failure`` (ledgers written before
    quarantine records existed), puts the engine in quarantine; ``quarantine-cleared``
    lifts it.
    """
    note: QuarantineNote | None = None
    for record in records:
        if record.kind == "quarantine-cleared":
            note = None
        elif record.kind == "quarantine" or (record.kind == "return" and record.failure):
            reason = record.failure or str(record.detail.get("reason", "unknown"))
            note = QuarantineNote(reason, record.wall_time, run_of(record))
    return note
