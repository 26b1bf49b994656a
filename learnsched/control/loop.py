"""The running scheduler: LearnSched's online control loop (the paper's Fig. 3(a)).

At each window of its calendar the loop observes the state (progress ``p``, durable
progress ``pbar``, the engine's load), asks the model what to do (``Model.decide`` on
the windows still ahead, or a forecast decision) and actuates it: park the engine, run
the trainer ``u`` quanta, checkpoint or not, return capacity by the window's deadline
(resume, then a real completed request), publish when done. Load inside a lent window
wins over the calendar: the loop stops at the next quantum, lets the model choose
between checkpointing and discarding the unsaved work (an active state with only the
return left), records the loss and returns at once. Every decision, quantum and
handoff goes to the fsynced ledger (:mod:`.journal`). A disk that fills while the engine
is lent still takes the return's records, in a reserve the run preallocates beside the
ledger (:meth:`~learnsched.serving.HandoffLedger.reserve`); SGLang's resume is never sent
unless its ``resume_sent`` record is durable, and the run then stops.

A run holds the ledger lock and the engine's lease (:mod:`.locks`: one loop per engine
and per ledger). A restarted loop reads the ledger and asks the engine first, returns an
engine a killed run left parked before it starts the trainer (which may take minutes),
honours a quarantine (:mod:`.healing`: no lending after a failed or impossible return
until an operator clears it; :mod:`.restart` reads the ledger and plans the heal), and
resumes the trainer from its last durable checkpoint, counting the unsaved work as
lost, as the model does. A failed return is retried with
bounded backoff; if the engine still cannot be returned the run quarantines it and stops
(``learnsched run`` exits 3 naming it). :meth:`ControlLoop.stop` (SIGTERM or SIGINT, to the
loop or its process group: the trainer leads its own session) ends the current quantum,
checkpoints the unsaved work if the save and the return fit before the deadline (a later
run resumes from it, whatever the calendar ahead), returns the engine and ends the run:
within one quantum, one checkpoint and the return path. The server's configuration is
checked before anything touches the engine; a heal undoes only a park the ledger shows
or the engine confirms, and an engine another controller has paused is waited for, never
healed or lent (:class:`~.actuation.EnginePaused`). While lent, the engine's liveness is
watched (:mod:`.watcher`): one that dies is recorded (``engine-lost``), its unsaved work
checkpointed, what the gate held let go, and the run stops (:class:`~.healing.EngineLost`).

Threads, not asyncio. Everything the loop calls blocks: the engines' HTTP dialects and
readiness waits in :mod:`learnsched.handoff` are synchronous, the trainer answers over a
pipe, and each ledger append fsyncs. The control flow itself is one sequence (decide,
park, work, save, return) that must never interleave with itself, so it runs on one
thread; a second thread polls ``/metrics`` and sets an event the moment load appears,
and interrupts the trainer's quantum in progress (:meth:`TrainerProcess.interrupt`: the
partial quantum is lost, as the model counts whole quanta), so the early return starts
within one poll of an arrival (the paper's pollable waits, Section 6.3), never after a
sleep or the rest of a quantum. asyncio would have to push every one
of those calls to executor threads and would add no concurrency the loop can use.
"""

from __future__ import annotations

import errno
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .._checks import nonnegative
from .._moved import moved_attribute
from .._renamed import warn_renamed
from ..handoff.engine_memory import EngineMemory
from ..serving.endpoint import HttpStatusError
from ..serving.errors import EngineBusy, HandoffProbeError, ServerConfigError
from ..serving.ledger import HandoffLedger, HandoffRecord
from ..solver import Action, ActionKind
from .actuation import EngineControl, EnginePaused
from .deciders import MOVES, Decider, MoveDecider
from .healing import Backoff, EngineLost, EngineUnreturnable, Quarantined
from .journal import Totals
from .locks import RunLocks
from .restart import engine_view, plan_heal, quarantined, read_start
from .trainer import Advanced, TrainerError, TrainerIgnoredInterrupt, TrainerLost, TrainerProcess
from .watcher import LoadWatcher
from .windows import CalendarSource, Window

__all__ = ["ControlLoop", "LoopOptions", "Overhead"]

# Slack for Eq. 10 on a window trimmed to "now": a decision is taken a moment after it.
_EPS_S = 1e-6


def _last_boundary(gap_s: float, next_s: float, step_s: float, now_s: float) -> float:
    """The quantum boundary to ask at: ``next_s`` (the one after the last asked), or if
    a whole quantum more has passed by ``now_s``, the last boundary ``gap_s + k step_s``
    before it, seconds."""
    if now_s < next_s + step_s:
        return next_s
    return max(next_s, gap_s + step_s * math.floor((now_s - gap_s) / step_s))


@dataclass(frozen=True)
class LoopOptions:
    """How the loop runs.

    Parameters
    ----------
    poll_s
        Load poll interval, seconds.
    until_s
        Stop at this time on the loop's clock (``None``: when the calendar ends).
    trainer_timeout_s
        Bound on one trainer call, seconds (the trainer is killed past it).
    return_backoff
        Retries of a failed return (:class:`~.healing.Backoff`).
    clear_quarantine
        An operator has checked the engine: lift the ledger's quarantine at start.
    lease_dir
        Where engine leases live (default :func:`~.locks.lease_dir`).
    pause_wait_s
        How long a starting run waits for another controller's pause of the engine to
        end (an RL weight sync) before it refuses with
        :class:`~.actuation.EnginePaused`, seconds.
    """

    poll_s: float = 0.05
    until_s: float | None = None
    trainer_timeout_s: float = 120.0
    return_backoff: Backoff = field(default_factory=Backoff)
    clear_quarantine: bool = False
    lease_dir: str | None = None
    pause_wait_s: float = 60.0

    def __post_init__(self) -> None:
        nonnegative("pause_wait_s", self.pause_wait_s)


@dataclass
class Overhead:
    """What the loop itself cost.

    Attributes
    ----------
    decision_s
        Each decision's latency (building the model and deciding), seconds.
    control_cpu_s, watcher_cpu_s
        CPU time of the control and load threads, seconds.
    wall_s
        The run's wall time, seconds.
    """

    decision_s: list[float]
    control_cpu_s: float = 0.0
    watcher_cpu_s: float = 0.0
    wall_s: float = 0.0

    def to_json(self) -> dict[str, float]:
        """Median and maximum decision latency (ms) and CPU use (s, and % of wall)."""
        ordered = sorted(self.decision_s) or [math.nan]
        cpu = self.control_cpu_s + self.watcher_cpu_s
        return {
            "decisions": len(self.decision_s),
            "decision_ms_median": 1e3 * ordered[len(ordered) // 2] if self.decision_s else 0.0,
            "decision_ms_max": 1e3 * ordered[-1] if self.decision_s else 0.0,
            "control_cpu_s": self.control_cpu_s,
            "watcher_cpu_s": self.watcher_cpu_s,
            "wall_s": self.wall_s,
            "cpu_percent": 100.0 * cpu / self.wall_s if self.wall_s > 0 else 0.0,
        }


class _Interrupted(Exception):
    """Load arrived (or a stop was asked) inside a lent window."""


class ControlLoop:
    """The scheduler: one engine, one trainer, one calendar, one ledger.

    Parameters
    ----------
    engine
        The serving engine to lend (:class:`~.actuation.ServingEngine`).
    trainer
        The trainer's process (not yet started: the loop starts it).
    calendar
        Where the windows come from (on the loop's clock).
    decider
        Builds a :class:`Decider` once the trainer's ``J`` and timings are known:
        ``decider(work_quanta, trainer_costs) -> Decider``.
    ledger
        The fsynced ledger file (created if missing; appended to if it exists).
    recovery_s
        The return path's estimate ``t_ret`` the loop guards deadlines with, seconds
        (it grows to the slowest return seen).
    options
        Polling and stopping.
    clock_start
        ``time.monotonic()`` at the loop clock's zero (default: the calendar's
        ``origin`` if it has one, a unix calendar's; else when the trainer is ready and
        any recovery is done, so start-up time is not taken from relative windows).
    progress
        Called with one line describing the state after each event.
    on_ready
        Called with ``clock_start`` once the loop is ready (e.g. to start a replay).
    """

    def __init__(
        self,
        engine: EngineControl,
        trainer: TrainerProcess,
        calendar: CalendarSource,
        decider: Callable[[int, Any], Decider],
        ledger: str | os.PathLike[str],
        *,
        recovery_s: float,
        options: LoopOptions | None = None,
        clock_start: float | None = None,
        progress: Callable[[str], None] | None = None,
        on_ready: Callable[[float], None] | None = None,
    ) -> None:
        self.engine = engine
        self.trainer = trainer
        self.calendar = calendar
        self.make_decider = decider
        self.ledger = HandoffLedger(ledger)
        self.options = options or LoopOptions()
        self.recovery_s = nonnegative("recovery_s", recovery_s)
        if clock_start is None:  # a unix calendar counts from its own fixed origin
            clock_start = getattr(calendar, "origin", None)
        self._fixed_start = clock_start
        self.clock_start = time.monotonic() if clock_start is None else clock_start
        origin_unix = getattr(calendar, "origin_unix", None)
        self.unix_start = (
            origin_unix
            if origin_unix is not None and clock_start == getattr(calendar, "origin", None)
            else time.time() - (time.monotonic() - self.clock_start)
        )
        self.report = progress
        self.on_ready = on_ready
        self.watcher = LoadWatcher(engine, self.now, self.options.poll_s)
        self.watcher.on_arrival = self.watcher.on_lost = self._cut_quantum
        self.totals = Totals()
        self.overhead = Overhead(decision_s=[])
        self.run_id = 0
        self.progress = 0
        self.durable = 0
        self.work_quanta = 0
        self.quantum_s = 0.0
        self.save_s = 0.0
        self.worst_recovery_s = self.recovery_s  # the longest return path seen, s
        self._stop = threading.Event()
        self._handled_end = -math.inf
        self._decider: Decider | None = None
        self._park_stamps: dict[str, int] = {}
        self._planned = Window(0.0, 1.0)  # the current window before it was trimmed to now
        self.state = "starting"  # then "running", "stopped" (for /healthz)
        self.lent = False  # the engine parked for the trainer now
        self.gap_open = False  # waiting in an idle window for a move decider: arrivals end it
        self.held_latency_s: list[float] = []  # each held request's added latency
        self.memory = EngineMemory(engine.url)  # read into the park and return records

    # --- clock, ledger, progress ----------------------------------------------------------
    def now(self) -> float:
        """The loop's clock: seconds since its start."""
        return time.monotonic() - self.clock_start

    def stop(self) -> None:
        """Ask the loop to stop (a lent window returns at the next quantum)."""
        self._stop.set()

    @property
    def return_s(self) -> float:
        """Deprecated name of :attr:`worst_recovery_s` (the longest return path seen,
        seconds), read for one release with a ``DeprecationWarning``."""
        warn_renamed("attribute", "ControlLoop.return_s", "ControlLoop.worst_recovery_s")
        return self.worst_recovery_s

    def _cut_quantum(self) -> None:
        """Load arrived or the engine died (the watcher's thread): cut the lent window's
        quantum short."""
        if self.lent:
            self.trainer.interrupt()

    def _record(self, kind: str, *, reserved: bool = False, **fields: Any) -> None:
        """Append a ``kind`` record; ``reserved``: one of a return's, which a full disk
        writes in the ledger's reserve (:meth:`~learnsched.serving.HandoffLedger.append`)."""
        detail = {"run": self.run_id, "t_s": self.now(), **fields.pop("detail", {})}
        self.ledger.append(
            HandoffRecord(kind=kind, engine=self.engine.engine, detail=detail, **fields),
            reserved=reserved,
        )

    def _say(self, event: str) -> None:
        if self.report is not None:
            t = self.totals
            self.report(
                f"t={self.now():7.1f}s {event:<14} progress {self.progress}/{self.work_quanta} "
                f"(durable {self.durable}) windows {t.windows} handoffs {t.handoffs} "
                f"late {t.late_returns} early {t.early_returns}"
            )

    # --- start and recovery ---------------------------------------------------------------
    def _start(self) -> None:
        """Read the ledger and the engine first; return a parked engine before anything
        else starts (a trainer may take minutes); honour a quarantine; then the trainer."""
        start = read_start(self.ledger.path)
        # Room for a return's records before anything is lent or healed: a disk that
        # fills while the engine is parked must still let the run write them.
        self.ledger.reserve()
        self.run_id = start.run_id
        published, quarantine = start.published, start.quarantine
        cleared = False
        if quarantine is not None and self.options.clear_quarantine:
            self._record("quarantine-cleared", detail={"reason": quarantine.reason})
            quarantine, cleared = None, True
        self.durable = self.progress = start.durable
        self._record(
            "run-start",
            durable_progress=self.durable,
            detail={
                "published": published,
                "pid": os.getpid(),
                "unix_start": self.unix_start,
                "quarantine": None if quarantine is None else quarantine.reason,
            },
        )
        # Read-only calls, before anything touches the engine: a server that cannot
        # park is named, not met as a failed heal.
        notes = self.engine.preflight()
        self._heal(start.records, cleared)
        if quarantine is not None:
            raise quarantined(self._engine_name(), quarantine)
        self.engine.take_reference()
        if self.engine.reference is not None:
            self._record("reference", detail={"text": self.engine.reference})
        self.trainer.start()
        self.work_quanta = self.trainer.work_quanta
        costs = self.trainer.costs
        self.quantum_s, self.save_s = costs.quantum_s, costs.save_s
        self._decider = self.make_decider(self.work_quanta, costs)
        durable = self.work_quanta if published else self._trainer_durable()
        self.progress = self.durable = durable
        self.totals.resumed_from_quanta = self.totals.durable_quanta = durable
        self.totals.published = published
        self._record(
            "trainer-ready",
            durable_progress=durable,
            detail={
                "published": published,
                "work_quanta": self.work_quanta,
                "costs": {**asdict(costs), "recovery_s": self.recovery_s},
                "trainer_pid": self.trainer.pid,
                "preflight": notes,
            },
        )
        if self._fixed_start is None:
            self.clock_start = time.monotonic()
            self.unix_start = time.time()
        if self.on_ready is not None:
            self.on_ready(self.clock_start)
        self._say("started")

    def _park_step(self, step: str) -> None:
        """Journal how far a park got where a killed run must know it (see _heal)."""
        if step in ("paused", "release_sent"):
            self._record("park-step", durable_progress=self.durable, detail={"step": step})

    def _park_failed(self, err: Exception) -> None:
        """A park that raised: closed in the ledger if the engine refused it (nothing
        was released); otherwise the engine is returned if it says it is parked, and
        quarantined if it cannot say (SGLang)."""
        # The engine refused (4xx), or its configuration stopped the park before any
        # call touched it: nothing was released.
        refused = (isinstance(err, HttpStatusError) and err.status < 500) or isinstance(
            err, ServerConfigError
        )
        self._record("park-failed", failure=str(err), detail={"refused": refused})
        if refused:
            return
        asleep = self.engine.is_parked()
        if asleep:
            self._give_back()
        elif asleep is None:
            self._quarantine(f"a park failed midway ({err}): the engine may be parked")

    def _engine_name(self) -> str:
        return f"{self.engine.engine} at {self.engine.url}"

    def _heal(self, records: list[HandoffRecord], cleared: bool) -> None:
        """Return an engine a killed run left parked (the ledger says so, or the engine
        does), as :func:`~.restart.plan_heal` says, counting its unsaved work as lost; or
        quarantine it where SGLang cannot say whether it is parked."""
        heal = plan_heal(records, self._parked_view(records), cleared)
        if heal is None:
            return
        if heal.parked is not None:
            self.engine.parked = heal.parked  # what to undo
        if heal.quarantine is not None:
            self._quarantine(heal.quarantine)
            raise Quarantined(f"{self._engine_name()}: {heal.quarantine}")
        self.engine.reference = heal.reference
        stamps = self._give_back(getattr(self.engine, heal.call))  # one of HEAL_CALLS
        late = time.time() > float(heal.deadline_unix)
        self.totals.unsaved_lost += heal.lost
        self._returned(stamps, late=late, early=False, lost=heal.lost, window=None, recovered=True)

    def _parked_view(self, records: list[HandoffRecord]) -> bool | None:
        """The engine's parked state as a heal reads it (:func:`~.restart.engine_view`),
        once another controller's pause has ended: waited for up to ``pause_wait_s``,
        touching nothing, then :class:`~.actuation.EnginePaused`."""
        deadline = time.monotonic() + self.options.pause_wait_s
        while True:
            try:
                return engine_view(self.engine.park_state(), records)
            except EnginePaused as err:
                left = deadline - time.monotonic()
                if left <= 0.0:
                    raise EnginePaused(
                        f"{self._engine_name()} after {self.options.pause_wait_s:g} s: {err}"
                    ) from err
                self._say("engine paused by another controller: waiting")
                time.sleep(min(left, 1.0))

    def _give_back(self, call: Callable[[], dict[str, int]] | None = None) -> dict[str, int]:
        """Return the engine (``call``: resume, then a completed request), retried with
        backoff; quarantined and :class:`EngineUnreturnable` if every try fails."""
        if not self.engine.reports_parked:
            # Written ahead, as the release is: a run killed from here until the return
            # record leaves a resume SGLang may or may not have done, and cannot say.
            self._resume_written_ahead()

        def retrying(attempt: int, err: BaseException, wait: float) -> None:
            if self.lent and self.watcher.lost is None:
                self.watcher.check_alive()  # a dead engine is not retried for seconds
            if self.lent and self.watcher.lost is not None:
                raise self._engine_lost(self.watcher.lost) from err
            self._record("return-retry", reserved=True, detail={
                "attempt": attempt, "error": str(err), "wait_s": wait})  # fmt: skip
            self._say(f"return failed ({attempt})")

        try:
            return self.options.return_backoff.run(
                call or self.engine.unpark, what=self._engine_name(), on_retry=retrying
            )
        except EngineUnreturnable as err:
            self._quarantine(str(err))
            raise

    def _resume_written_ahead(self) -> None:
        """Record ``resume_sent`` (in the ledger's reserve on a full disk); where even
        that fails, the resume is not sent, and the error says why and what to do."""
        try:
            self._record(
                "park-step", reserved=True, durable_progress=self.durable,
                detail={"step": "resume_sent"},
            )  # fmt: skip
        except OSError as err:
            # Sent unrecorded, a resume done or not looks the same to the next run,
            # which would resume again: a second resume kills SGLang.
            raise OSError(
                err.errno,
                f"{err.strerror}: the resume of {self._engine_name()} was not sent, as its "
                "record could not be written first; the engine stays parked: free space "
                "for the ledger, then run again (the restart returns it)",
                err.filename,
            ) from err

    def _quarantine(self, reason: str) -> None:
        self._record("quarantine", reserved=True, failure=reason, detail={
            "reason": reason, "url": self.engine.url})  # fmt: skip
        self.totals.quarantined = True

    def _trainer_durable(self) -> int:
        """The trainer's durable quanta (resumed, then its device freed again)."""
        timeout = self.options.trainer_timeout_s
        self.trainer.resume(timeout)
        return self.trainer.discard(timeout)

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> Totals:
        """Run until the calendar ends, ``until_s`` passes, the job publishes or
        :meth:`stop`; the run's totals (also in the ``run-end`` record, which a run
        stopped by an error also writes, with the error)."""
        with RunLocks(self.ledger.path, self.engine.url, self.options.lease_dir):
            return self._run()

    def _run(self) -> Totals:
        wall = time.perf_counter()
        cpu = time.thread_time()
        error: str | None = None
        try:
            self._start()
            self.state = "running"
            # The overhead counts from here: the trainer's start-up is not the loop's.
            wall = time.perf_counter()
            cpu = time.thread_time()
            self.watcher.start()
            while not self._stop.is_set() and not self.totals.published:
                window = self._next_window()
                if window is None:
                    break
                if not self._wait_until(window[0].start_s):
                    break
                self._window_of(window)
        except Exception as err:
            error = f"{type(err).__name__}: {err}"
            raise
        finally:
            self.state = "stopped"
            self.watcher.stop()
            self.overhead.control_cpu_s = time.thread_time() - cpu
            self.overhead.watcher_cpu_s = self.watcher.cpu_s
            self.overhead.wall_s = time.perf_counter() - wall
            self.trainer.close()
            if self.run_id:  # the run started: say how it ended
                self._end(error)
        self._say("stopped")
        return self.totals

    def _end(self, error: str | None) -> None:
        """The ``run-end`` record (in the ledger's reserve on a full disk). Where it
        cannot be written after an error, that error is the one raised: the ledger then
        ends as a killed run's does, which the next run reads."""
        try:
            self._record(
                "run-end",
                reserved=True,
                durable_progress=self.durable,
                detail={
                    "totals": self.totals.to_json(),
                    "overhead": self.overhead.to_json(),
                    "error": error,
                },
            )
        except OSError as err:
            if error is None:
                raise
            self._say(f"run-end not recorded: {err}")

    def _next_window(self) -> list[Window] | None:
        """The windows ahead, the next unhandled one first (``None``: none to act in)."""
        ahead = self.calendar.upcoming(self.now())
        skip = 0  # windows already handled lead the list (the calendar is sorted)
        while skip < len(ahead) and ahead[skip].end_s <= self._handled_end:
            skip += 1
        ahead = ahead[skip:]
        if ahead and ahead[0].start_s < self._handled_end:
            ahead[0] = Window(self._handled_end, ahead[0].end_s)
        # Windows after ``until_s`` stay in the model's view: the plan continues there.
        until = self.options.until_s
        if not ahead or (until is not None and ahead[0].start_s >= until):
            return None
        return ahead

    def _wait_until(self, t_s: float) -> bool:
        """Sleep until ``t_s`` on the loop clock; ``False`` if stopped first."""
        until = self.options.until_s
        while not self._stop.is_set():
            now = self.now()
            if until is not None and now >= until:
                return False
            if now >= t_s:
                return True
            self._stop.wait(min(t_s - now, 1.0, math.inf if until is None else until - now))
            self._say("waiting")
        return False

    def _decide(self, windows: list[Window], progress: int, durable: int, active: bool) -> Action:
        decider = self._decider
        if decider is None:
            raise RuntimeError("the loop has not started")
        start = time.perf_counter()
        action = decider.decide(windows, progress, durable, active)
        self.overhead.decision_s.append(time.perf_counter() - start)
        return action

    def _decision(
        self, phase: str, window: Window, action: Action, policy: str, **extra: Any
    ) -> None:
        self._decided(
            phase,
            window,
            policy,
            action=action.kind.name.lower(),
            quanta=action.quanta,
            checkpoint=action.checkpoint,
            latency_s=self.overhead.decision_s[-1] if policy == "model" else 0.0,
            **extra,
        )

    def _decided(self, phase: str, window: Window, policy: str, **fields: Any) -> None:
        """Count and journal one decision (a ``decision`` record)."""
        self.totals.decisions += 1
        self.totals.windows += phase == "window"
        self._record(
            "decision",
            durable_progress=self.durable,
            detail={
                "phase": phase,
                "policy": policy,
                "window": [window.start_s, window.end_s],
                "progress": self.progress,
                **fields,
            },
        )

    def _window_of(self, windows: list[Window]) -> None:
        """Decide and act on ``windows[0]``, now open."""
        now = self.now()
        # As the calendar has it (the ledger's planned times), even if it opened before
        # the loop was ready: upcoming() trims an open window to now.
        planned = getattr(self.calendar, "planned", None)
        self._planned = windows[0] if planned is None else planned(windows[0])
        window = Window(max(windows[0].start_s, now), windows[0].end_s)
        windows = [window, *windows[1:]]
        self._handled_end = window.end_s
        if self.engine.reads_gauges:  # backed off while unchanged: read them afresh
            self.watcher.poll_once()
        if self.watcher.busy:  # the load signal wins: the engine is serving now
            self._decision("window", window, Action(ActionKind.WAIT), "load", reason="busy")
            self._say("busy: no loan")
            return
        if isinstance(self._decider, MoveDecider):
            self._idle(self._decider, window, windows)
            return
        action = self._decide(windows, self.progress, self.durable, False)
        self._decision("window", window, action, "model")
        lend = action.kind in (ActionKind.ADVANCE, ActionKind.PUBLISH) and action.quanta > 0
        if lend and not self._fits(window, 1, action.checkpoint):
            # The decision itself took the time (a slow forecast): lending now would
            # return late, so serving keeps the GPU.
            self._skip("no time left")
        elif lend:
            self._lend(window, windows, action)
        else:
            self._say(action.kind.name.lower())

    # --- an idle window, re-decided at every quantum boundary -------------------------------
    def _idle(self, decider: MoveDecider, window: Window, windows: list[Window]) -> None:
        """Ask ``decider`` at each quantum boundary of the open, idle window and lend
        when it says ``work``; the engine serves until then.

        The boundaries are the planned start plus whole quanta of the job (added one at
        a time, as the causal study steps its clock); a loop that entered the window
        late, or a question that outlasted a quantum, goes on from the last boundary
        passed. Each question is a ``decision`` record: phase ``window`` for the first
        (the window's decision), ``idle`` for the others. Load (an arrival the gate or
        ``/metrics`` shows) ends the window unlent, and so does a next boundary after
        which no quantum fits before the deadline.
        """
        # The gate tells every arrival from here (held_arrivals); the gauges are read
        # at the poll interval.
        self.gap_open = self.watcher.urgent = True
        self.watcher.arrived.clear()  # from here an arrival ends the idle window
        try:
            lend = self._wait_for_work(decider, window)
        finally:
            self.gap_open = self.watcher.urgent = False
        if not lend:
            return
        window = Window(max(window.start_s, self.now()), window.end_s)
        if self.watcher.arrived.is_set() or self.watcher.busy:
            self._arrived_idle(window)
        elif not self._fits(window, 1, True):
            self._skip("no time left")
        else:  # the loan runs until a move returns it, the deadline, or publication
            action = Action(ActionKind.PUBLISH, self.work_quanta - self.durable, checkpoint=True)
            self._lend(window, [window, *windows[1:]], action)

    def _wait_for_work(self, decider: MoveDecider, window: Window) -> bool:
        """Ask at each boundary until ``decider`` says ``work`` (True); False if an
        arrival, the deadline or a stop ended the idle window first."""
        step = self.quantum_s
        gap = self._planned.start_s
        boundary = _last_boundary(gap, gap, step, window.start_s)
        phase = "window"
        while (move := self._ask(decider, phase, window, boundary, lent=False)) == "wait":
            self._say("wait")
            # A question slower than a quantum skips the boundaries it outlasted: the
            # next is asked at its own time, never an age ever more out of date.
            boundary = _last_boundary(gap, boundary + step, step, self.now())
            phase = "idle"
            if not self._fits(window, 1, False, at_s=boundary):
                self._say("window over")
                return False
            try:
                self._serve_until(boundary)
            except _Interrupted as why:
                if why.args[0] == "load":
                    self._arrived_idle(window)
                return False
        if move != "work":
            raise ValueError(f"next_move while idle: move must be wait or work, got {move!r}")
        return True

    def _arrived_idle(self, window: Window) -> None:
        self._decision("idle", window, Action(ActionKind.WAIT), "load", reason="arrival")
        self._say("arrival: no loan")

    def _serve_until(self, t_s: float) -> None:
        """Leave the engine serving until ``t_s`` on the loop clock; :class:`_Interrupted`
        at once if load arrives or the loop must stop."""
        while True:
            self._interrupt()
            if self.watcher.busy:
                raise _Interrupted("load")
            left = t_s - self.now()
            if left <= 0.0:
                return
            self.watcher.arrived.wait(min(left, self.options.poll_s))

    def _ask(
        self, decider: MoveDecider, phase: str, window: Window, now_s: float, *, lent: bool
    ) -> str:
        """``decider``'s move at ``now_s``, journalled (but ``work`` while lent: one
        record per quantum would double the ledger)."""
        start = time.perf_counter()
        plan, quanta, move = decider.next_move(
            now_s, self._planned.start_s, self.progress, self.durable, lent
        )
        self.overhead.decision_s.append(time.perf_counter() - start)
        if move not in MOVES:
            raise ValueError(f"next_move: move must be one of {', '.join(MOVES)}, got {move!r}")
        if not (lent and move == "work"):
            self._decided(
                phase, window, "move", move=move, plan=plan, quanta=quanta, now_s=now_s,
                gap_start_s=self._planned.start_s, latency_s=self.overhead.decision_s[-1],
            )  # fmt: skip
        return move

    # --- one lent window ------------------------------------------------------------------
    def _lend(self, window: Window, windows: list[Window], action: Action) -> None:
        self.watcher.arrived.clear()  # then the interrupt: an arrival between sets arrived
        self.trainer.clear_interrupt()
        # Recorded before the release is sent: a run killed at any point after this
        # line leaves an open park, and the next run returns the engine.
        self.memory.mark("awake")
        self._record(
            "park",
            durable_progress=self.durable,
            detail={
                "window": [window.start_s, window.end_s],
                "planned_unix": self._unix(self._planned),
                "deadline_unix": self.unix_start + window.end_s,
                "trainer_pid": self.trainer.pid,
            },
            **self.memory.fields("awake"),
        )
        try:
            self._park_stamps = self.engine.park(on_mark=self._park_step)
        except EnginePaused as err:  # another controller holds it: touched not at all
            self._skip("paused", why=str(err))
            return
        except EngineBusy as err:  # nothing was released: serving keeps the GPU
            self._skip("busy", why=str(err), added_latency_s=self.engine.last_held_s)
            return
        except Exception as err:
            self._park_failed(err)
            raise
        self.lent = self.watcher.lent = True
        self.memory.mark("parked")  # read beside the trainer's start, for the return record
        parked = self.engine.parked
        self._record(
            "parked", durable_progress=self.durable, stamps_ns=self._park_stamps,
            detail={"parked": None if parked is None else parked.to_json()},
        )  # fmt: skip
        self._say("parked")
        early = False
        lost = 0
        failed: TrainerError | None = None
        try:
            try:
                self.trainer.resume(self.options.trainer_timeout_s)
                publish = action.kind == ActionKind.PUBLISH
                moved = self._work(window, action.quanta, action.checkpoint or publish)
                if publish and self.progress == self.work_quanta:
                    self._publish()
                elif (
                    not moved
                    and action.checkpoint
                    and self.progress > self.durable
                    and self._fits(window, 0, True)
                ):
                    self._checkpoint()
            except _Interrupted as why:
                # When the early return began (in the return record's stamps).
                self._park_stamps["interrupted"] = time.perf_counter_ns()
                early = why.args[0] == "load"
                self._early_save(window, windows, why.args[0])
            lost = self._discard()
        except TrainerLost as err:
            if isinstance(err, TrainerIgnoredInterrupt):  # an early return all the same
                self._park_stamps["interrupted"] = time.perf_counter_ns()
                early = True
            lost = self._trainer_lost(str(err))
        except TrainerError as err:
            lost = self._trainer_failed(str(err))
            failed = err
        finally:  # capacity goes back whatever happened to the trainer
            dead = self.watcher.lost
            if dead is None:
                stamps = self._give_back()
                late = self.now() > window.end_s
                self._returned(
                    stamps, late=late, early=early, lost=lost, window=window, recovered=False
                )
        if dead is not None:  # nothing to return to: the run stops, saying so
            raise self._engine_lost(dead)
        if failed is not None:  # capacity is back: now the trainer's failure stops the run
            raise failed
        if not self.trainer.running:  # restarted only now: serving came first
            self._restart_trainer()

    def _engine_lost(self, why: str) -> EngineLost:
        """The engine died while lent: recorded (its park stays open: the next run
        confirms the restarted engine serves before it lends); what the door held goes
        on at once, to fail fast; the error that stops the run."""
        self.engine.abandon()
        self.lent = self.watcher.lent = False
        held = len(self.engine.last_held_s)
        self._record(
            "engine-lost", reserved=True, durable_progress=self.durable, failure=why,
            detail={"url": self.engine.url, "held_requests": held},
        )  # fmt: skip
        self._say("engine lost")
        return EngineLost(
            f"{self._engine_name()} died while lent ({why}); {held} held requests let go. "
            f"No more lending: restart it, and the next run confirms it serves before it "
            f"lends, resuming from {self.durable} durable quanta"
        )

    def _skip(self, reason: str, **detail: Any) -> None:
        """The window is not lent after all (recorded; it closes a ``park`` record)."""
        self.totals.skipped_windows += 1
        # Requests are held only where a park closed the door (a busy skip passes them).
        self.held_latency_s.extend(detail.get("added_latency_s", ()))
        self._record("skip", durable_progress=self.durable, detail={"reason": reason, **detail})
        self._say(reason if reason != "busy" else "busy: skipped")

    def _fits(self, window: Window, quanta: int, save: bool, at_s: float | None = None) -> bool:
        """Eq. 10 on what is left of the window from now (or ``at_s``), with the slowest
        timings seen so far."""
        need = quanta * self.quantum_s + (self.save_s if save else 0.0) + self.worst_recovery_s
        return (self.now() if at_s is None else at_s) + need <= window.end_s + _EPS_S

    def _interrupt(self) -> None:
        """Raise :class:`_Interrupted` if the engine died, the loop must stop or load
        arrived."""
        if self.watcher.lost is not None:
            raise _Interrupted("lost")
        until = self.options.until_s
        if self._stop.is_set() or (until is not None and self.now() >= until):
            raise _Interrupted("stop")
        if self.watcher.arrived.is_set():
            raise _Interrupted("load")

    def _work(self, window: Window, quanta: int, save: bool) -> bool:
        """Advance up to ``quanta`` quanta, one at a time, checking load between them
        (and asking a :class:`MoveDecider`); whether a move ended the window (its save
        is then done or refused)."""
        for done in range(quanta):
            self._interrupt()
            if done and self._move(window):
                return True
            if not self._fits(window, 1, save):
                self._say("deadline")
                return False
            advanced, seconds = self._advance()
            self.quantum_s = max(self.quantum_s, seconds)
            self.progress = advanced.progress
            if advanced.loss is not None and not math.isfinite(advanced.loss):
                # Diverged: this state must never be saved, and the next quanta from
                # the same durable state would diverge again.
                raise TrainerError(
                    f"trainer diverged: loss {advanced.loss!r} at progress {self.progress}"
                )
            self.totals.quanta_done += 1
            self._record(
                "work",
                durable_progress=self.durable,
                detail={"progress": self.progress, "loss": advanced.loss, "seconds": seconds},
            )
        self._interrupt()
        return False

    def _move(self, window: Window) -> bool:
        """Ask a :class:`MoveDecider` between quanta and obey it; whether to return now
        (``decision`` records with phase ``quantum``)."""
        if not isinstance(self._decider, MoveDecider):
            return False
        move = self._ask(self._decider, "quantum", window, self.now(), lent=True)
        if move == "work":
            return False
        if move in ("save", "checkpoint_return") and self.progress > self.durable:
            self._checkpoint()
        self._say(move.replace("_", " "))
        return move != "save"

    def _advance(self) -> tuple[Advanced, float]:
        """One quantum, and the seconds it took; :class:`_Interrupted` if an arrival cut
        it short (recorded: its partial work is lost, durable progress stays)."""
        start = time.perf_counter()
        try:
            advanced = self.trainer.advance(1, self.options.trainer_timeout_s)
        except TrainerIgnoredInterrupt:
            self._cut_short(time.perf_counter() - start, honoured=False)
            raise
        seconds = time.perf_counter() - start
        if advanced.interrupted:
            self.progress = advanced.progress
            self._cut_short(seconds, honoured=True)
            raise _Interrupted("lost" if self.watcher.lost is not None else "load")
        return advanced, seconds

    def _cut_short(self, seconds: float, *, honoured: bool) -> None:
        self.totals.interrupted_quanta += 1
        self._record(
            "interrupted",
            durable_progress=self.durable,
            detail={"progress": self.progress, "seconds": seconds, "honoured": honoured},
        )
        self._say("interrupted")

    def _checkpoint(self) -> None:
        start = time.perf_counter()
        self.durable = self.trainer.checkpoint(self.options.trainer_timeout_s)
        seconds = time.perf_counter() - start
        self.save_s = max(self.save_s, seconds)
        self.totals.durable_quanta = self.durable
        self._record("checkpoint", durable_progress=self.durable, detail={"seconds": seconds})
        self._say("checkpoint")

    def _discard(self) -> int:
        """Free the trainer's device; the unsaved quanta that were lost (recorded if any)."""
        lost = self.progress - self.durable
        self.trainer.discard(self.options.trainer_timeout_s)
        if lost > 0:
            self._record("discard", durable_progress=self.durable, unsaved_lost=lost)
        self.progress = self.durable
        self.totals.unsaved_lost += lost
        return lost

    def _publish(self) -> None:
        path = self.trainer.publish(self.options.trainer_timeout_s)
        self.durable = self.progress
        self.totals.durable_quanta = self.durable
        self.totals.published = True
        self._record("publish", durable_progress=self.durable, detail={"path": path})
        self._say("published")

    def _early_save(self, window: Window, windows: list[Window], reason: str) -> None:
        """Cut short: checkpoint if the model says the progress is worth the save, or
        at a stop or an engine's death, where a later run resumes from it.

        The state is active with unsaved work, and all that is left of the window is
        the save and the return; the model weighs checkpoint-and-return against
        discard-and-return with the windows after this one as the continuation. At a
        stop the work goes on in a later run, whatever this calendar holds after the
        window (near its end, nothing): the save is taken whenever it and the return
        fit before the deadline; a dead engine has no return to wait for.
        """
        if self.progress <= self.durable:
            return
        now = self.now()
        budget = Window(now, now + self.save_s + self.worst_recovery_s + _EPS_S)
        if reason == "lost" or (reason == "stop" and self._fits(window, 0, True)):
            resume = Action(ActionKind.CHECKPOINT_RETURN, 0, checkpoint=True)
            self._decision("early-return", budget, resume, "resume", reason=reason)
            self._checkpoint()
            return
        ahead = [budget, *(w for w in windows[1:] if w.start_s >= budget.end_s)]
        action = self._decide(ahead, self.progress, self.durable, True)
        self._decision("early-return", budget, action, "model", reason=reason)
        if action.kind == ActionKind.CHECKPOINT_RETURN:
            self._checkpoint()

    def _trainer_lost(self, why: str) -> int:
        """The trainer died: its unsaved work is lost (recorded); the quanta lost."""
        lost = self.progress - self.durable
        self._record(
            "trainer-lost", durable_progress=self.durable, unsaved_lost=lost, detail={"why": why}
        )
        self.totals.unsaved_lost += lost
        self.progress = self.durable
        self._say("trainer lost")
        return lost

    def _trainer_failed(self, why: str) -> int:
        """The trainer raised (or diverged): its unsaved work is dropped, never saved
        (recorded); the quanta lost."""
        lost = self.progress - self.durable
        self._record(
            "trainer-failed", durable_progress=self.durable, unsaved_lost=lost,
            detail={"why": why},
        )  # fmt: skip
        self.totals.unsaved_lost += lost
        self.progress = self.durable
        self.trainer.kill()  # its in-memory state is suspect: nothing of it may be saved
        self._say("trainer failed")
        return lost

    def _restart_trainer(self) -> None:
        """Start a fresh trainer for later windows, from its durable checkpoint."""
        try:
            self.trainer.start()
            # A checkpoint written just before the crash is durable even if unrecorded.
            self.durable = self.progress = self._trainer_durable()
            self.totals.durable_quanta = self.durable
        except TrainerError as err:
            self._trainer_lost(str(err))
            self.stop()

    def _unix(self, window: Window) -> list[float]:
        """A window's planned ``[start, deadline]`` in epoch seconds."""
        return [self.unix_start + window.start_s, self.unix_start + window.end_s]

    def _returned(
        self,
        stamps: dict[str, int],
        *,
        late: bool,
        early: bool,
        lost: int,
        window: Window | None,
        recovered: bool,
    ) -> None:
        ready_unix = time.time()
        readiness = (stamps["request_done"] - stamps["resume_sent"]) / 1e9
        self.lent = self.watcher.lent = False
        self.held_latency_s.extend(self.engine.last_held_s)
        self.worst_recovery_s = max(self.worst_recovery_s, readiness)
        self.totals.handoffs += 1
        self.totals.late_returns += late
        self.totals.early_returns += early
        self.memory.mark("returned")
        self._record(
            "return",
            reserved=True,
            stamps_ns={**self._park_stamps, **stamps},
            readiness_s=readiness,
            durable_progress=self.durable,
            unsaved_lost=lost,
            detail={
                "window": None if window is None else [window.start_s, window.end_s],
                "planned_unix": None if window is None else self._unix(self._planned),
                "ready_unix": ready_unix,
                "late": late,
                "early": early,
                "recovered": recovered,
                "held_requests": len(self.engine.last_held_s),
                "added_latency_s": self.engine.last_held_s,
            },
            failure=self.engine.failure,
            **self.memory.fields("parked", "returned"),
        )
        self._park_stamps = {}
        self._say("returned late" if late else "returned")
        if self.engine.failure is not None:  # serving is not what it was: lend no more
            self._quarantine(self.engine.failure)
            raise HandoffProbeError(f"{self._engine_name()} return: {self.engine.failure}")
        if self.ledger.reserve_spent:  # no room for the next return's records: lend no more
            raise OSError(
                errno.ENOSPC,
                f"{os.strerror(errno.ENOSPC)}: the return of {self._engine_name()} was "
                "recorded in the ledger's reserve, and no loan goes out without one; the "
                "engine serves: free space for the ledger, then run again",
                str(self.ledger.path),
            )


def __getattr__(name: str) -> object:
    """The deciders that moved to :mod:`learnsched.control.deciders`, for one release."""
    return moved_attribute(__name__, name)
