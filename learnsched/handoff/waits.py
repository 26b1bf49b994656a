"""Pollable waits, and how long a worker sleeping in slices takes to see a command.

A long sleep in a background worker delays its reaction to a control command by up to
the sleep's length. Splitting it into slices with a control check between them bounds
that delay by the slice (the paper's Section 6.3: P95 command-to-acknowledgment delay
116.6 -> 51.8 ms under pulses). Every stamp is ``time.perf_counter_ns()``. Polling an
engine until a condition holds is :func:`learnsched.serving.polling.poll_until`.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from .._checks import integer, positive
from .._moved import moved_attribute
from ._util import median, p95

__all__ = [
    "MAX_COMMANDS",
    "MAX_STEP_S",
    "AckDelays",
    "ControlSignal",
    "measure_ack_delay",
    "pollable_sleep",
]


class ControlSignal:
    """A command to a worker, stamped when issued and when acknowledged.

    The stamps change under one lock: a worker that checked :meth:`is_set` just before
    :meth:`reset` cannot acknowledge the next command before it is issued (which would
    give a negative delay).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued = threading.Event()
        self._acked = threading.Event()
        self.issued_ns: int | None = None
        self.acked_ns: int | None = None

    def issue(self) -> None:
        """Send the command (from the controlling thread)."""
        with self._lock:
            self.issued_ns = time.perf_counter_ns()
            self._issued.set()

    def is_set(self) -> bool:
        """Whether a command is pending (the worker's control check)."""
        return self._issued.is_set()

    def acknowledge(self) -> None:
        """Mark the command as seen (from the worker); no-op if none is pending."""
        with self._lock:
            if self.issued_ns is None or self.acked_ns is not None:
                return
            self.acked_ns = time.perf_counter_ns()
            self._acked.set()

    def wait_acknowledged(self, timeout_s: float) -> float:
        """Block until acknowledged; the delay from issue to acknowledgment, seconds.

        Raises
        ------
        TimeoutError
            Not acknowledged within ``timeout_s`` seconds.
        """
        if not self._acked.wait(timeout_s):
            raise TimeoutError(f"command not acknowledged within {timeout_s:g} s")
        with self._lock:
            issued_ns, acked_ns = self.issued_ns, self.acked_ns
        if issued_ns is None or acked_ns is None:
            raise TimeoutError(f"command not acknowledged within {timeout_s:g} s")
        return (acked_ns - issued_ns) / 1e9

    def reset(self) -> None:
        """Clear for the next command."""
        with self._lock:
            self._acked.clear()
            self._issued.clear()
            self.issued_ns = self.acked_ns = None


def pollable_sleep(duration_s: float, signal: ControlSignal, slice_s: float) -> bool:
    """Sleep ``duration_s`` in slices of at most ``slice_s``, checking ``signal`` between.

    Returns
    -------
    bool
        ``True`` if a command arrived (the sleep ends early at the next check), else
        ``False`` after the full duration. ``slice_s >= duration_s`` is one coarse sleep.
    """
    positive("duration_s", duration_s)
    positive("slice_s", slice_s)
    deadline_ns = time.perf_counter_ns() + int(duration_s * 1e9)
    while not signal.is_set():
        remaining_ns = deadline_ns - time.perf_counter_ns()
        if remaining_ns <= 0:
            return False
        time.sleep(min(slice_s, remaining_ns / 1e9))
    return True


@dataclass(frozen=True)
class AckDelays:
    """Command-to-acknowledgment delays of a worker that sleeps in slices.

    Parameters
    ----------
    step_s
        The worker's wait between control checks without slicing, seconds.
    slice_s
        The slice, seconds (``slice_s >= step_s`` means coarse waits).
    samples_s
        One delay per command, seconds.
    """

    step_s: float
    slice_s: float
    samples_s: tuple[float, ...]

    @property
    def median_s(self) -> float:
        """Median delay, seconds."""
        return median(self.samples_s)

    @property
    def p95_s(self) -> float:
        """95th percentile delay (nearest rank), seconds."""
        return p95(self.samples_s)


MAX_COMMANDS = 100_000
"""Most commands one measurement issues (each waits about one step)."""
MAX_STEP_S = 60.0
"""Longest step (and slice) a measurement sleeps, seconds: a probe, not a service."""


def measure_ack_delay(*, step_s: float, slice_s: float, commands: int, seed: int = 0) -> AckDelays:
    """Time how long a worker sleeping ``step_s`` per step takes to see a command.

    A worker thread repeats ``pollable_sleep(step_s, ..., slice_s)``; the caller's
    thread issues ``commands`` commands at random offsets and waits for each one's
    acknowledgment.

    Parameters
    ----------
    step_s
        The worker's sleep per step, seconds.
    slice_s
        The slice between control checks, seconds (``>= step_s`` for coarse waits).
    commands
        Commands to issue (1 to :data:`MAX_COMMANDS`; the steps are at most
        :data:`MAX_STEP_S`).
    seed
        Seed of the random issue offsets.
    """
    for name, value in (("step_s", step_s), ("slice_s", slice_s)):
        if positive(name, value) > MAX_STEP_S:
            raise ValueError(f"{name} must be <= {MAX_STEP_S:g} s, got {value!r}")
    integer("commands", commands, low=1, high=MAX_COMMANDS)
    signal = ControlSignal()
    stop = threading.Event()

    def worker() -> None:
        while not stop.is_set():
            pollable_sleep(step_s, signal, slice_s)
            if signal.is_set() and signal.acked_ns is None:
                signal.acknowledge()

    thread = threading.Thread(target=worker, name="pollable-wait-worker", daemon=True)
    thread.start()
    rng = random.Random(seed)
    samples = []
    try:
        for _ in range(commands):
            time.sleep(rng.uniform(0.0, step_s))
            signal.issue()
            samples.append(signal.wait_acknowledged(timeout_s=step_s + 5.0))
            signal.reset()
    finally:
        stop.set()
        thread.join(timeout=step_s + 5.0)
    return AckDelays(step_s, slice_s, tuple(samples))


def __getattr__(name: str) -> object:
    """The polling names that moved to :mod:`learnsched.serving.polling`, for one release."""
    return moved_attribute(__name__, name)
