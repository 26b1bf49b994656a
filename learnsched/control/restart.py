"""A restarted run: what it reads from its ledger first, and how it heals the engine.

A run starts by reading its ledger (:func:`read_start`): its run number, whether the job
has published, its durable progress and any quarantine in force (:mod:`.healing`). Before
the trainer starts (which may take minutes) it returns an engine that a killed run left
parked, as far as that run's park got (:func:`plan_heal`, which :class:`~.loop.ControlLoop`
carries out): a full return if the engine says it is parked, readiness only if it is
awake, the pause undone if the release never went out, and a quarantine where SGLang
cannot say whether a release or resume it was sent happened. The unsaved work of the
killed run is counted as lost, as the model does. An uncleared quarantine then stops
the run (:func:`quarantined`).

A heal undoes only a park the ledger shows or the engine's own sleep state confirms
(:func:`engine_view`): vLLM's ``/is_sleeping`` is also true while another controller has
merely paused generation (``POST /pause``, an RL weight sync), and a wake-up would end
that pause; such an engine is not this scheduler's to return (:class:`~.actuation.EnginePaused`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..serving.engines import Parked
from ..serving.ledger import HandoffRecord, read_ledger
from .actuation import EnginePaused
from .healing import Quarantined
from .journal import (
    QuarantineNote,
    last_durable,
    last_reference,
    last_run,
    open_park,
    park_progress,
    progress_seen,
    quarantine_of,
)

__all__ = [
    "HEAL_CALLS", "Heal", "LedgerStart", "engine_view", "plan_heal", "quarantined", "read_start",
]

HEAL_CALLS = ("unpark", "ready", "unpause")
"""How a heal returns the engine: resume and a completed request (``unpark``), a
completed request only (``ready``), or the pause undone and a completed request
(``unpause``); the :class:`~.actuation.EngineControl` methods of those names."""


@dataclass(frozen=True)
class LedgerStart:
    """What a starting run reads from its ledger.

    Attributes
    ----------
    records
        Every record of the ledger (none for a new one).
    run_id
        This run's number: one more than the last run's.
    published
        The job has published (its trainer then counts as done).
    durable
        The durable quanta last recorded.
    quarantine
        The quarantine in force (``None``: lending is allowed).
    """

    records: list[HandoffRecord]
    run_id: int
    published: bool
    durable: int
    quarantine: QuarantineNote | None


def read_start(path: Path) -> LedgerStart:
    """The ledger at ``path`` as a starting run reads it (a missing file: a new ledger)."""
    records = read_ledger(path) if path.exists() else []
    return LedgerStart(
        records=records,
        run_id=last_run(records) + 1,
        published=any(r.kind == "publish" for r in records),
        durable=last_durable(records),
        quarantine=quarantine_of(records),
    )


def quarantined(engine_name: str, quarantine: QuarantineNote) -> Quarantined:
    """The error that stops a run on a ledger whose quarantine is not cleared."""
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(quarantine.since_unix))
    return Quarantined(
        f"{engine_name} is quarantined since {since} "
        f"({quarantine.reason}): check it, then run again with --clear-quarantine"
    )


@dataclass(frozen=True)
class Heal:
    """How to return an engine that a killed run left parked.

    Attributes
    ----------
    call
        One of :data:`HEAL_CALLS`.
    parked
        What the killed run's park released, to undo (``None``: the engine's own view).
    quarantine
        Why the engine must be quarantined instead of returned (``None``: return it).
    reference
        The greedy answer the return must reproduce, as last recorded.
    lost
        The killed run's unsaved quanta, lost.
    deadline_unix
        The killed park's deadline, epoch seconds as the ledger holds it (infinite
        without an open park).
    """

    call: str
    parked: Parked | None
    quarantine: str | None
    reference: str | None
    lost: int
    deadline_unix: float


def engine_view(state: str | None, records: Sequence[HandoffRecord]) -> bool | None:
    """Whether a heal takes the engine for parked (``None``: it cannot say, as SGLang).

    Parameters
    ----------
    state
        The engine's own view (:meth:`~.actuation.EngineControl.park_state`).
    records
        The ledger.

    Raises
    ------
    EnginePaused
        The engine is paused by another controller (it says it sleeps while its
        sleep-state gauge says awake), or says it sleeps without the gauge to confirm
        it and the ledger shows no park of its own: not this scheduler's to undo.
    """
    if state in (None, "serving", "parked"):
        return None if state is None else state == "parked"
    if state == "unconfirmed" and open_park(records) is not None:
        return True
    why = (
        "generation is paused (/is_sleeping true, vllm:engine_sleep_state awake)"
        if state == "paused"
        else "it says it sleeps, without the vllm:engine_sleep_state gauge to confirm a "
        "park, and the ledger shows none"
    )
    raise EnginePaused(
        f"{why}: another controller holds the engine (an RL weight sync?) and this "
        "scheduler did not park it; it is left as it is: resume it (POST /resume) or "
        "wait for it, then run again"
    )


def plan_heal(records: Sequence[HandoffRecord], asleep: bool | None, cleared: bool) -> Heal | None:
    """How to return an engine a killed run left parked; ``None`` if it is serving.

    Parameters
    ----------
    records
        The ledger.
    asleep
        Whether the engine says it is parked (``None``: it cannot say, as SGLang).
    cleared
        An operator has just cleared the quarantine: they have seen to the engine, so
        a park SGLang cannot settle returns with a completed request only.
    """
    parked = open_park(records)
    if parked is None and not asleep:
        return None
    call = "unpark"
    acked, steps = (None, set()) if parked is None else park_progress(records, parked)
    undo = None
    if acked is not None and isinstance(acked.detail.get("parked"), dict):
        undo = Parked.from_json(acked.detail["parked"])
    quarantine = None
    if parked is not None and not asleep:
        unknowable = _unknowable(acked, steps)
        # vLLM awake, an engine restarted after it died while lent (its park died with
        # it: a resume would kill a fresh SGLang), or an operator who has seen to SGLang:
        # readiness only.
        if asleep is False or "engine_lost" in steps or (unknowable is not None and cleared):
            call = "ready"
        elif unknowable is not None:
            quarantine = (
                f"a killed run sent a {unknowable} whose answer it never recorded: SGLang "
                "may be parked or not and cannot say; restart the server (or confirm its "
                "state), then run again with --clear-quarantine"
            )
        elif acked is None:  # the release never went out: at most a pause to undo
            # ... recorded or not: a kill between the pause's answer and its record
            # leaves generation paused; continuing an unpaused engine is a no-op.
            call = "unpause"
    return Heal(
        call=call,
        parked=undo,
        quarantine=quarantine,
        reference=last_reference(records),
        lost=max(progress_seen(records) - last_durable(records), 0),
        deadline_unix=math.inf if parked is None else parked.detail.get("deadline_unix", math.inf),
    )


def _unknowable(acked: HandoffRecord | None, steps: set[str]) -> str | None:
    """The call a killed park or return sent to SGLang without recording its answer
    (``"release"``, ``"resume"``), which leaves the engine parked or not and unable to
    say; None if the ledger settles it. Guessing kills SGLang's scheduler either way: a
    resume of memory never released, or a request on released memory."""
    if acked is None and "release_sent" in steps:
        return "release"
    if acked is not None and "resume_sent" in steps:
        return "resume"
    return None
