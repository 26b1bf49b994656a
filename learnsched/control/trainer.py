"""The trainer protocol: what the scheduler asks of an evolution job, across a process.

A trainer is any class with the five operations of :class:`Trainer` (advance ``u``
quanta, checkpoint, discard, resume from the last durable checkpoint, publish), built
as ``Class(state_dir, **options)``. The scheduler never runs it in its own process:
:class:`TrainerProcess` starts it in a child process and calls it over a pipe, so a
trainer that crashes, hangs or is killed cannot take the scheduler with it, and a
scheduler that dies leaves a trainer that stops at once (its pipe closes: unsaved work
is lost, as the model counts it, and the device is freed).

Children come from a ``forkserver`` that has imported the trainer's heavy modules once
(:attr:`Trainer.preload`, e.g. torch and peft): a trainer restarted after a crash starts
in a fraction of a second instead of paying the imports again.

An arrival interrupts the quantum in progress (:meth:`TrainerProcess.interrupt`): a
trainer that checks :meth:`Trainer.interrupted` between its steps stops at once, its
partial quantum undone; one that does not is killed after a bounded grace (its unsaved
work lost, as a crash loses it) unless its quantum ends within the grace anyway.
"""

from __future__ import annotations

import abc
import math
import multiprocessing
import os
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, ClassVar

from .._checks import integer, nonnegative, positive
from .._named import import_named

__all__ = [
    "Advanced",
    "Trainer",
    "TrainerCosts",
    "TrainerError",
    "TrainerIgnoredInterrupt",
    "TrainerLost",
    "TrainerProcess",
    "load_trainer_class",
]


class TrainerError(RuntimeError):
    """The trainer refused or failed an operation (its message names it)."""


class TrainerLost(TrainerError):
    """The trainer process died or stopped answering; its unsaved work is gone."""


class TrainerIgnoredInterrupt(TrainerLost):
    """An interrupted quantum did not end within the grace: the trainer was killed."""


@dataclass(frozen=True)
class TrainerCosts:
    """A trainer's own estimates of its timings, seconds.

    Parameters
    ----------
    quantum_s
        One quantum of work (``delta``).
    save_s
        One durable checkpoint (``t_ck``).
    load_s
        Resuming from a checkpoint (``t_ld``).
    """

    quantum_s: float
    save_s: float
    load_s: float

    def __post_init__(self) -> None:
        positive("quantum_s", self.quantum_s)
        nonnegative("save_s", self.save_s)
        nonnegative("load_s", self.load_s)


@dataclass(frozen=True)
class Advanced:
    """After :meth:`Trainer.advance`.

    Parameters
    ----------
    progress
        Completed quanta ``p`` (durable or not).
    loss
        Training loss of the last optimiser step (``None``: the job has no loss to
        report). A NaN or infinite loss is a diverged trainer: the scheduler records a
        trainer failure, drops the unsaved work and stops.
    interrupted
        The call stopped early because :meth:`Trainer.interrupted` said so; the
        quantum it was in is undone (``progress`` counts whole quanta only, and the
        state is the one at ``progress``, so a checkpoint saves exactly that).
    """

    progress: int
    loss: float | None
    interrupted: bool = False


class Trainer(abc.ABC):
    """An evolution job the scheduler drives in whole quanta.

    Subclasses are built as ``Class(state_dir, **options)`` and keep every durable
    byte under ``state_dir``; a fresh instance on the same folder must resume where
    the last durable checkpoint left off.

    Parameters
    ----------
    state_dir
        The job's folder (exists).
    """

    preload: ClassVar[tuple[str, ...]] = ()
    """Modules to import once in the forkserver (heavy imports the trainer needs)."""

    interrupt_grace_s: ClassVar[float] = 0.5
    """Seconds an interrupted :meth:`advance` may take to return before the scheduler
    kills the trainer: longer than one optimiser step (the trainer checks
    :meth:`interrupted` between steps), and within the 1 s a held request may wait."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    @property
    @abc.abstractmethod
    def work_quanta(self) -> int:
        """``J``: quanta to finish the job."""

    @abc.abstractmethod
    def costs(self) -> TrainerCosts:
        """Timing estimates the scheduler plans with (measured by the trainer)."""

    @abc.abstractmethod
    def resume(self) -> int:
        """Load the last durable checkpoint onto the device; its quanta (0: fresh)."""

    @abc.abstractmethod
    def advance(self, quanta: int) -> Advanced:
        """Run ``quanta`` more quanta from the current (resumed) state."""

    @abc.abstractmethod
    def checkpoint(self) -> int:
        """Save the current progress durably (atomic, fsynced); the durable quanta."""

    @abc.abstractmethod
    def discard(self) -> int:
        """Drop the in-memory state and free the device; unsaved work is lost.

        Returns the durable quanta (where the next :meth:`resume` starts).
        """

    @abc.abstractmethod
    def publish(self) -> str:
        """Write the finished artifact (all ``J`` quanta done); where it is."""

    def interrupted(self) -> bool:
        """Whether the scheduler asks the quantum in progress to stop now (load arrived).

        A trainer checks it between optimiser steps inside :meth:`advance`; once it is
        true, ``advance`` restores the state of the last whole quantum and returns
        ``Advanced(progress, loss, interrupted=True)`` (the model counts whole quanta,
        so the partial one is lost; durable progress is untouched). A trainer that never
        checks it is killed once the scheduler's grace has passed. Always false outside
        a :class:`TrainerProcess` child.
        """
        return _INTERRUPT is not None and _INTERRUPT.is_set()


# The child's interrupt flag (set by the scheduler; see Trainer.interrupted).
_INTERRUPT: Any = None


def load_trainer_class(spec: str) -> type[Trainer]:
    """The class named by ``MODULE:CLASS``.

    Raises
    ------
    ValueError
        Not ``MODULE:CLASS``, the module cannot be imported, or it has no such name.
    TypeError
        The name is not a :class:`Trainer` class.
    """
    cls = import_named(spec, "trainer", "CLASS")
    if not isinstance(cls, type) or not issubclass(cls, Trainer):
        raise TypeError(
            f"trainer {spec!r}: {spec.partition(':')[2]} is not a learnsched Trainer class"
        )
    return cls


def _serve(
    spec: str, state_dir: str, options: Mapping[str, Any], conn: Connection, interrupt: Any
) -> None:
    """The child: build the trainer, answer calls until the pipe closes, then exit.

    A closed pipe means the scheduler is gone: exit at once without saving (unsaved
    work is lost, as a crash loses it; the durable checkpoint is untouched). The child
    leads its own session: a signal to the scheduler's process group (Ctrl-C, systemd's
    stop) reaches the scheduler, which ends the quantum and stops the trainer itself.
    """
    global _INTERRUPT
    os.setsid()
    _INTERRUPT = interrupt
    try:
        trainer = load_trainer_class(spec)(Path(state_dir), **options)
        conn.send(("ready", {"work_quanta": trainer.work_quanta, "costs": asdict(trainer.costs())}))
    except Exception as err:  # noqa: BLE001 (any failure goes back to the scheduler)
        conn.send(("error", f"{type(err).__name__}: {err}"))
        return
    while True:
        try:
            op, args = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the scheduler died: stop now, no cleanup that could save work
        try:
            result: object = getattr(trainer, op)(*args)
            if isinstance(result, Advanced):
                result = asdict(result)
            conn.send(("ok", result))
        except Exception as err:  # noqa: BLE001 (the scheduler raises it as TrainerError)
            conn.send(("error", f"{op}: {type(err).__name__}: {err}\n{traceback.format_exc(-1)}"))


_OPERATIONS = ("resume", "advance", "checkpoint", "discard", "publish")
_SLICE_S = 0.05  # how often a wait re-checks an interrupt's grace, seconds


class TrainerProcess:
    """A trainer running in a child process, called over a pipe.

    Parameters
    ----------
    spec
        ``MODULE:CLASS`` of a :class:`Trainer`.
    state_dir
        The trainer's folder (created if missing).
    options
        Keyword arguments for the trainer's constructor (picklable).
    start_timeout_s
        Bound on start-up (imports, building the model), seconds.
    interrupt_grace_s
        How long an interrupted :meth:`advance` may take to answer before the child is
        killed (a trainer that ignores :meth:`Trainer.interrupted`), seconds (default:
        the class's :attr:`Trainer.interrupt_grace_s`).
    """

    def __init__(
        self,
        spec: str,
        state_dir: str | os.PathLike[str],
        options: Mapping[str, Any] | None = None,
        start_timeout_s: float = 300.0,
        interrupt_grace_s: float | None = None,
    ) -> None:
        cls = load_trainer_class(spec)
        self.spec = spec
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.options = dict(options or {})
        self.start_timeout_s = positive("start_timeout_s", start_timeout_s)
        grace = cls.interrupt_grace_s if interrupt_grace_s is None else interrupt_grace_s
        self.interrupt_grace_s = positive("interrupt_grace_s", grace)
        self._context = multiprocessing.get_context("forkserver")
        module = spec.partition(":")[0]
        self._context.set_forkserver_preload([module, *cls.preload])
        self._process: Any = None
        self._conn: Connection | None = None
        self.work_quanta = 0
        self.costs = TrainerCosts(1.0, 0.0, 0.0)
        self.starts = 0
        self._interrupt: Any = None  # the child's flag (a multiprocessing Event)
        self._interrupted_at: float | None = None  # monotonic, when it was raised
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """Whether a child is started and its pipe open (not known dead)."""
        return self._conn is not None

    @property
    def pid(self) -> int | None:
        """The child's process id (``None`` before :meth:`start`)."""
        return None if self._process is None else int(self._process.pid)

    def start(self) -> None:
        """Start (or restart) the child and wait until the trainer is built."""
        self.close()
        parent, child = self._context.Pipe()
        self._interrupt = self._context.Event()
        self._interrupted_at = None
        self._process = self._context.Process(
            target=_serve,
            args=(self.spec, str(self.state_dir), self.options, child, self._interrupt),
            name="learnsched-trainer",
            daemon=True,
        )
        self._process.start()
        child.close()
        self._conn = parent
        self.starts += 1
        kind, payload = self._receive("start", self.start_timeout_s)
        if kind != "ready":
            self.close()
            raise TrainerError(f"trainer {self.spec} did not start: {payload}")
        self.work_quanta = integer("work_quanta", payload["work_quanta"], low=1)
        self.costs = TrainerCosts(**payload["costs"])

    def interrupt(self) -> None:
        """Ask the quantum in progress (or the next one) to stop now; thread-safe.

        It stays raised until :meth:`clear_interrupt`: every :meth:`advance` meanwhile
        returns at once, interrupted, or the child is killed after ``interrupt_grace_s``.
        """
        with self._lock:
            if self._interrupt is not None and self._interrupted_at is None:
                self._interrupted_at = time.monotonic()
                self._interrupt.set()

    def clear_interrupt(self) -> None:
        """Lower the interrupt (a new lent window begins)."""
        with self._lock:
            if self._interrupt is not None:
                self._interrupt.clear()
            self._interrupted_at = None

    def _grace_end(self, sent_at: float) -> float:
        """When an interruptible call sent at ``sent_at`` must have answered."""
        with self._lock:
            raised = self._interrupted_at
        return math.inf if raised is None else max(raised, sent_at) + self.interrupt_grace_s

    def _receive(self, op: str, timeout_s: float, interruptible: bool = False) -> tuple[str, Any]:
        conn = self._conn
        if conn is None:
            raise TrainerLost(f"trainer {self.spec} is not running")
        sent_at = time.monotonic()
        deadline = sent_at + timeout_s
        try:
            # Slices, so an interrupt raised meanwhile bounds the wait by its grace.
            while not conn.poll(min(_SLICE_S, max(deadline - time.monotonic(), 0.0))):
                now = time.monotonic()
                if interruptible and now >= self._grace_end(sent_at):
                    self.kill()
                    raise TrainerIgnoredInterrupt(
                        f"trainer {op}: still running {self.interrupt_grace_s:g} s after "
                        "the interrupt (it does not check Trainer.interrupted; killed it)"
                    )
                if now >= deadline:
                    self.kill()
                    raise TrainerLost(f"trainer {op}: no answer in {timeout_s:g} s (killed it)")
            message: tuple[str, Any] = conn.recv()
        except (EOFError, OSError) as err:
            self.close()
            raise TrainerLost(f"trainer {op}: the trainer process died ({err!r})") from err
        return message

    def call(self, op: str, *args: object, timeout_s: float = 600.0) -> Any:
        """Run one operation in the child; its result.

        Raises
        ------
        TrainerLost
            The child died, or did not answer within ``timeout_s`` (then it is killed).
        TrainerError
            The trainer raised (the message carries its error).
        """
        if op not in _OPERATIONS:
            raise ValueError(f"op must be one of {', '.join(_OPERATIONS)}, got {op!r}")
        if self._conn is None:
            raise TrainerLost(f"trainer {self.spec} is not running")
        try:
            self._conn.send((op, args))
        except OSError as err:
            self.close()
            raise TrainerLost(f"trainer {op}: the trainer process died ({err})") from err
        kind, payload = self._receive(op, timeout_s, interruptible=op == "advance")
        if kind != "ok":
            raise TrainerError(str(payload))
        return payload

    def resume(self, timeout_s: float = 600.0) -> int:
        """:meth:`Trainer.resume` in the child."""
        return int(self.call("resume", timeout_s=timeout_s))

    def advance(self, quanta: int, timeout_s: float = 600.0) -> Advanced:
        """:meth:`Trainer.advance` in the child."""
        return Advanced(
            **self.call("advance", integer("quanta", quanta, low=1), timeout_s=timeout_s)
        )

    def checkpoint(self, timeout_s: float = 600.0) -> int:
        """:meth:`Trainer.checkpoint` in the child."""
        return int(self.call("checkpoint", timeout_s=timeout_s))

    def discard(self, timeout_s: float = 600.0) -> int:
        """:meth:`Trainer.discard` in the child."""
        return int(self.call("discard", timeout_s=timeout_s))

    def publish(self, timeout_s: float = 600.0) -> str:
        """:meth:`Trainer.publish` in the child."""
        return str(self.call("publish", timeout_s=timeout_s))

    def kill(self) -> None:
        """Kill the child now (SIGKILL) and forget it."""
        if self._process is not None and self._process.is_alive():
            self._process.kill()
        self.close()

    def close(self) -> None:
        """Close the pipe (the child exits without saving) and reap the child."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._process is not None:
            self._process.join(timeout=5.0)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(timeout=5.0)
            self._process = None
        # The interrupt's semaphores go now, while nothing else is running: left to a
        # later garbage collection they may be unregistered from inside another call to
        # multiprocessing's resource tracker, which Python 3.12 and 3.13 refuse (the
        # semaphores then leak, with a warning).
        with self._lock:
            self._interrupt = None
            self._interrupted_at = None
