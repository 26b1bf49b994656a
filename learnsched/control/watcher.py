"""The load signal: the engine's load polled on a thread, arrivals told to it, and the
engine's liveness while it is lent.

The load is the door's counts where a gate stands in front (exact, and free to read:
polled every ``poll_s``), else the engine's ``/metrics`` gauges. Those cost the engine's
API server CPU at every read (vLLM 0.32: 7-10 ms for its 660-930 lines, so a tenth of
a core at 20 Hz), and they lag: a request shows :data:`~.actuation.GAUGE_LAG_S` after
it arrived, one shorter than that perhaps never. So they are read every ``poll_s`` only
while they change or an arrival must end an idle window at once (``urgent``), the wait
doubling while they do not, up to :data:`MAX_GAUGE_POLL_S` (the loop reads them afresh
at each window's start, and the park checks idleness itself), and not at all while
capacity is lent: the gauges cannot show an arrival then
(vLLM accepts and queues requests to a sleeping engine, no 503, without counting them; a
paused SGLang holds new generations in its tokenizer manager), while ``/metrics`` stays
as it was. A front end that sees requests (the gate, a user's router through
``learnsched run --notify``, the load generator) calls
:meth:`LoadWatcher.notify_arrival`; either signal sets ``LoadWatcher.arrived``, which
the control thread checks between quanta, and calls ``LoadWatcher.on_arrival`` at once
(the loop interrupts the quantum in progress).

While lent, the engine is asked every :data:`LIVENESS_S` whether it lives (vLLM
``/health``, 503 once its engine core died; a refused connection: the server is gone):
a dead engine sets ``LoadWatcher.lost`` and calls ``LoadWatcher.on_lost`` at once, so
the loop stops lending within about a second rather than at the next return.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .._checks import positive
from ..serving.endpoint import HttpStatusError
from .actuation import EngineControl

__all__ = ["LIVENESS_S", "MAX_GAUGE_POLL_S", "MAX_SAMPLES", "LoadWatcher"]

MAX_SAMPLES = 200_000
"""Load samples (about 3 hours at 20 Hz) and notified arrivals kept for the timeline;
later ones are dropped."""

MAX_GAUGE_POLL_S = 1.0
"""The longest wait between two reads of the engine's ``/metrics`` gauges while they do
not change, seconds (the wait starts at ``poll_s`` and doubles)."""

LIVENESS_S = 1.0
"""How often a lent engine is asked whether it lives, seconds."""


class LoadWatcher:
    """Poll an engine's load on a daemon thread (module notes: how often).

    Parameters
    ----------
    engine
        The engine (its :meth:`~.actuation.EngineControl.load` and
        :meth:`~.actuation.EngineControl.alive`).
    clock
        The loop's clock, seconds.
    poll_s
        Poll interval of the door's counts, and of the gauges while they change, seconds.
    max_poll_s
        The longest wait between gauge reads while they do not change, seconds.
    liveness_s
        How often a lent engine is asked whether it lives, seconds.

    Attributes
    ----------
    urgent
        Set by the loop while an arrival must be seen at once (an idle window a move
        decider may lend): the gauges are read every ``poll_s`` then.
    lost
        Why the engine is dead (``None``: alive, as far as the last check knows).
    """

    def __init__(
        self,
        engine: EngineControl,
        clock: Callable[[], float],
        poll_s: float,
        *,
        max_poll_s: float = MAX_GAUGE_POLL_S,
        liveness_s: float = LIVENESS_S,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.poll_s = positive("poll_s", poll_s)
        self.max_poll_s = max(positive("max_poll_s", max_poll_s), self.poll_s)
        self.liveness_s = positive("liveness_s", liveness_s)
        self.arrived = threading.Event()
        self.on_arrival: Callable[[], None] | None = None  # called where arrived is set
        self.on_lost: Callable[[], None] | None = None  # called where lost is set
        self._lent = False
        self.urgent = False
        self.lost: str | None = None
        self._last_load: tuple[int, int] | None = None
        self._gauge_wait_s = self.poll_s
        self.busy = False
        self.samples: list[tuple[float, float, float]] = []  # (t, running, waiting)
        self.arrivals: list[float] = []  # notified arrivals, loop clock
        self.busy_periods: list[tuple[float, float | None]] = []  # (start, end) of load
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="learnsched-load", daemon=True)

    @property
    def lent(self) -> bool:
        """Whether the engine is parked for the trainer (set by the loop)."""
        return self._lent

    @lent.setter
    def lent(self, lent: bool) -> None:
        if self._lent and not lent:  # what queued while parked runs now: watch closely
            self._gauge_wait_s = self.poll_s
        self._lent = lent

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
            self._gauge_wait_s = self.max_poll_s  # only notified arrivals can signal load
            return
        seen = (load.running, load.waiting)
        changed, self._last_load = seen != self._last_load, seen
        self._gauge_wait_s = (
            self.poll_s if changed else min(2.0 * self._gauge_wait_s, self.max_poll_s)
        )
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

    def check_alive(self) -> None:
        """Ask the engine whether it lives; a dead one sets :attr:`lost` and calls
        ``on_lost`` (an engine too slow to answer is asked again, not declared dead)."""
        try:
            alive = self.engine.alive()
            why = f"{self.engine.url} failed its liveness check"
        except ConnectionError as err:
            alive, why = False, str(err)
        except TimeoutError:
            return
        if alive:
            return
        self.lost = why
        if self.on_lost is not None:
            self.on_lost()

    def _wait_s(self) -> float:
        """How long until the next poll: the door's counts every ``poll_s``; the
        gauges backed off unless ``urgent``, and none while lent (only the liveness
        check then)."""
        if self.lent and self.engine.reads_gauges:
            return self.liveness_s
        if self.urgent or not self.engine.reads_gauges:
            return self.poll_s
        return self._gauge_wait_s

    def _run(self) -> None:
        start = time.thread_time()
        next_check = 0.0
        while not self._stop.is_set():
            if self.lent and self.lost is None and time.monotonic() >= next_check:
                next_check = time.monotonic() + self.liveness_s
                self.check_alive()
            if not (self.lent and self.engine.reads_gauges):
                self.poll_once()
            self.cpu_s = time.thread_time() - start
            self._stop.wait(self._wait_s())
