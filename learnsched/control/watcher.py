"""The load signal: the engine's ``/metrics`` polled on a thread, plus arrivals told to it.

While capacity is lent the engine's gauges cannot show an arrival: vLLM 0.33 accepts
and queues requests to a sleeping engine (no 503) without counting them, and a paused
SGLang holds new generations in its tokenizer manager, while ``/metrics`` stays as it
was. A front end that sees requests (the gate, a user's router through ``learnsched run
--notify``, the load generator) calls :meth:`LoadWatcher.notify_arrival`; either signal
sets ``LoadWatcher.arrived``, which the control thread checks between quanta, and
calls ``LoadWatcher.on_arrival`` at once (the loop interrupts the quantum in progress).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .._checks import positive
from ..serving.endpoint import HttpStatusError
from .actuation import EngineControl

__all__ = ["MAX_SAMPLES", "LoadWatcher"]

MAX_SAMPLES = 200_000
"""Load samples (about 3 hours at 20 Hz) and notified arrivals kept for the timeline;
later ones are dropped."""


class LoadWatcher:
    """Poll an engine's load every ``poll_s`` seconds on a daemon thread.

    Parameters
    ----------
    engine
        The engine (its :meth:`~.actuation.EngineControl.load`).
    clock
        The loop's clock, seconds.
    poll_s
        Poll interval, seconds.
    """

    def __init__(self, engine: EngineControl, clock: Callable[[], float], poll_s: float) -> None:
        self.engine = engine
        self.clock = clock
        self.poll_s = positive("poll_s", poll_s)
        self.arrived = threading.Event()
        self.on_arrival: Callable[[], None] | None = None  # called where arrived is set
        self.busy = False
        self.samples: list[tuple[float, float, float]] = []  # (t, running, waiting)
        self.arrivals: list[float] = []  # notified arrivals, loop clock
        self.busy_periods: list[tuple[float, float | None]] = []  # (start, end) of load
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="learnsched-load", daemon=True)

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def stop(self) -> None:
        """Stop polling and wait for the thread."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)

    def notify_arrival(self, t_s: float | None = None) -> None:
        """A request arrived (told by a front end); ``t_s`` on the loop's clock."""
        with self._lock:
            if len(self.arrivals) < MAX_SAMPLES:  # a router may tell every request
                self.arrivals.append(self.clock() if t_s is None else t_s)
        self._arrive()

    def _arrive(self) -> None:
        self.arrived.set()
        if self.on_arrival is not None:
            self.on_arrival()

    def poll_once(self) -> None:
        """Read the load once and update the signal (the thread's body)."""
        try:
            load = self.engine.load()
        except (ConnectionError, TimeoutError, HttpStatusError):
            return  # an unreadable poll changes nothing: the next one reads again
        if load is None:  # /metrics exports no load gauges (SGLang: --enable-metrics):
            return  # only notified arrivals can signal load then
        now = self.clock()
        busy = not load.idle
        with self._lock:
            if len(self.samples) < MAX_SAMPLES:
                self.samples.append((now, float(load.running), float(load.waiting)))
            if busy and not self.busy:
                self.busy_periods.append((now, None))
            elif not busy and self.busy and self.busy_periods:
                self.busy_periods[-1] = (self.busy_periods[-1][0], now)
            self.busy = busy
        if busy:
            self._arrive()

    def _run(self) -> None:
        start = time.thread_time()
        while not self._stop.is_set():
            self.poll_once()
            self.cpu_s = time.thread_time() - start
            self._stop.wait(self.poll_s)
