"""Forecasts of the idle calendar: N sampled futures given what has been observed.

A scheduler next to a serving engine knows the windows seen so far (the current one
with its return deadline) and must guess the rest. A :class:`Forecaster` draws ``n``
sampled calendars of the windows that start at or after the *frontier*: the end of the
last observed window, or now if that window has already ended. Implementations:

* :class:`EmpiricalForecaster`: a renewal model fitted on the observed history. The
  history's busy-idle cycles (a busy gap and the window after it) are resampled whole
  (a block bootstrap of cycles, keeping each gap with the window it led to); the first
  cycle is conditioned on the time already spent in the current busy period.
* :class:`RepeatForecaster` (a baseline): the future repeats the last observed cycles.
* :class:`MeanForecaster` (a baseline): i.i.d. cycles of the historical mean gap and window.
* :class:`ExactForecaster`: knows the true calendar (the paper's setting).
* :class:`SampleForecaster`: fixed sampled calendars, e.g. from another model.

In causal scheduling (:mod:`learnsched.calendar.causal`) a forecaster also forecasts the
current idle gap's remaining length given its age, by its :attr:`Forecaster.gap_model`:
the empirical one by the survival of past gaps, the baselines by repeating the last gaps
or by their mean; the exact and fixed-sample forecasters cannot (they would look ahead).

Every forecaster is deterministic given its ``rng``. Samples stop before ``until_s``
(typically the benefit horizon: a window starting later can earn nothing).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from itertools import chain, pairwise

import numpy as np
import numpy.typing as npt

from .. import _core
from .._checks import FloatArray, integer, number, positive

__all__ = [
    "Calendar",
    "EmpiricalForecaster",
    "ExactForecaster",
    "Forecaster",
    "MeanForecaster",
    "Packed",
    "PackedCalendars",
    "RepeatForecaster",
    "SampleForecaster",
    "calendar",
    "frontier",
    "packed",
    "packed_calendars",
]

Calendar = tuple[tuple[float, float], ...]
"""Idle windows ``(start, return deadline)`` in seconds, sorted and non-overlapping."""

MAX_WINDOWS = 100_000
"""Most windows one sampled calendar may hold (guards a history of near-zero cycles)."""


def calendar(name: str, windows: object, allow_empty: bool = False) -> Calendar:
    """``windows`` checked as a calendar: a list of ``[start, end]`` pairs of finite
    numbers, each ending after it starts, sorted and non-overlapping.

    Raises
    ------
    ValueError
        Naming ``name[j]`` and the value: not a list, not a pair, NaN/inf, an empty
        window, unsorted or overlapping windows, or (unless ``allow_empty``) no window.
    """
    if isinstance(windows, (str, bytes)) or not isinstance(windows, Sequence):
        # Calendars come from JSON: a wrong type is a bad value (ValueError), as for samples.
        raise ValueError(f"{name} must be a list of [start, end] pairs, got {windows!r}")  # noqa: TRY004
    if not windows and not allow_empty:
        raise ValueError(f"{name} must hold at least one [start, end] window, got []")
    out: list[tuple[float, float]] = []
    previous_end = -math.inf
    for j, pair in enumerate(windows):
        # Messages are formatted only on failure: forecasts hold millions of windows.
        if type(pair) not in (list, tuple) and (
            isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence)
        ):
            raise ValueError(f"{name}[{j}] must be a [start, end] pair, got {pair!r}")
        if len(pair) != 2:
            raise ValueError(f"{name}[{j}] must be a [start, end] pair, got {pair!r}")
        start, end = pair
        if type(start) is not float or type(end) is not float:  # ints, numpy, bad types
            try:
                start, end = number(f"{name}[{j}] start", start), number(f"{name}[{j}] end", end)
            except TypeError as err:
                raise ValueError(str(err)) from None
        if not (math.isfinite(start) and math.isfinite(end)):
            bad, which = (start, "start") if not math.isfinite(start) else (end, "end")
            raise ValueError(f"{name}[{j}] {which} must be finite, got {bad!r}")
        if not end > start:
            raise ValueError(f"{name}[{j}] must end after it starts, got [{start!r}, {end!r}]")
        if start < previous_end:
            raise ValueError(
                f"{name}[{j}] starts at {start!r} before {name}[{j - 1}] ends at "
                f"{previous_end!r} (windows must be sorted and non-overlapping)"
            )
        out.append((start, end))
        previous_end = end
    return tuple(out)


Packed = tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]
"""Calendars as the core takes them: every window ``(M, 2)`` and ``N + 1`` offsets
(calendar ``i`` is ``windows[offsets[i]:offsets[i + 1]]``)."""


def packed(calendars: Sequence[Calendar]) -> Packed:
    """``calendars`` as :data:`Packed` arrays (not checked: they are already calendars)."""
    counts = [len(c) for c in calendars]
    total = sum(counts)
    # One pass over the numbers (a decision's packing would otherwise rival its tables).
    numbers = chain.from_iterable(chain.from_iterable(calendars))
    windows = np.fromiter(numbers, dtype=np.float64, count=2 * total).reshape(total, 2)
    offsets = np.zeros(len(calendars) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return windows, offsets


def before(calendars: Packed, until_s: float) -> Packed:
    """Each packed calendar's windows that start before ``until_s``."""
    windows, offsets = calendars
    if not math.isfinite(until_s):
        return calendars
    keep = windows[:, 0] < until_s
    kept = np.concatenate(([0], np.cumsum(keep)))
    return windows[keep], kept[offsets].astype(np.int64)


def frontier(observed: Sequence[tuple[float, float]], now_s: float) -> float:
    """Where the unknown future begins: the last observed window's end, or ``now_s``."""
    return max(now_s, observed[-1][1]) if observed else now_s


def _after(windows: Calendar, start_s: float, until_s: float) -> Calendar:
    """The windows that start in ``[start_s, until_s)``."""
    return tuple(w for w in windows if start_s <= w[0] < until_s)


class Forecaster(ABC):
    """Draws sampled future calendars given the windows observed so far."""

    gap_model: str | None = None
    """How the current idle gap is forecast in causal scheduling (``"empirical"``,
    ``"repeat"``, ``"mean"``), or None if this forecaster cannot do it causally."""

    @abstractmethod
    def sample(
        self,
        observed: Sequence[tuple[float, float]],
        now_s: float,
        until_s: float,
        n: int,
        rng: np.random.Generator,
    ) -> list[Calendar]:
        """``n`` sampled calendars of the windows starting in ``[frontier, until_s)``.

        Parameters
        ----------
        observed
            Every window seen so far, in order; the last may be the current one (its
            return deadline known), seconds.
        now_s
            The current time, seconds (at or after the last observed window's start).
        until_s
            Stop before this time, seconds.
        n
            Number of calendars (>= 1).
        rng
            The random source (the result is a function of it and the arguments).

        Returns
        -------
        list of Calendar
            ``n`` calendars, each possibly empty (no window before ``until_s``).
        """

    def fixed(self, n: int) -> list[Calendar] | None:
        """Full calendars whose windows after the frontier :meth:`sample` returns at every
        window, whatever has been observed; None if the forecast changes with what is
        observed (the default). A scheduler may then build their tables once."""
        return None

    def fixed_packed(self, n: int) -> Packed | None:
        """:meth:`fixed` as :data:`Packed` arrays (None where :meth:`fixed` is None)."""
        fixed = self.fixed(n)
        return None if fixed is None else packed(fixed)


class ExactForecaster(Forecaster):
    """Knows the true calendar: every sample is its windows after the frontier.

    Parameters
    ----------
    truth
        The true calendar, seconds.
    """

    def __init__(self, truth: Calendar) -> None:
        self.truth = calendar("truth", truth)

    def sample(
        self,
        observed: Sequence[tuple[float, float]],
        now_s: float,
        until_s: float,
        n: int,
        rng: np.random.Generator,
    ) -> list[Calendar]:
        """``n`` copies of the true windows in ``[frontier, until_s)``."""
        future = _after(self.truth, frontier(observed, now_s), until_s)
        return [future] * integer("n", n, low=1)

    def fixed(self, n: int) -> list[Calendar] | None:
        """``n`` copies of the truth: the future does not depend on what is observed."""
        return [self.truth] * integer("n", n, low=1)

    def fixed_packed(self, n: int) -> Packed | None:
        """``n`` copies of the truth, packed (the core builds their tables once)."""
        n = integer("n", n, low=1)
        one = np.array(self.truth, dtype=np.float64).reshape(-1, 2)
        return np.tile(one, (n, 1)), np.arange(n + 1, dtype=np.int64) * one.shape[0]


class PackedCalendars:
    """Calendars as two arrays, already checked (build them with :func:`packed_calendars`):
    calendar ``i`` is ``windows[offsets[i]:offsets[i + 1]]``.

    Attributes
    ----------
    windows
        Every window's ``(start, return deadline)``, float64 of shape ``(M, 2)``, seconds.
    offsets
        Where each calendar starts in ``windows``, int64 of shape ``(N + 1,)``.
    """

    __slots__ = ("offsets", "windows")

    def __init__(self, windows: npt.NDArray[np.float64], offsets: npt.NDArray[np.int64]) -> None:
        self.windows = windows
        self.offsets = offsets

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def __repr__(self) -> str:
        first = self.windows[: self.offsets[1]].tolist() if len(self) else []
        more = ", ..." if len(self) > 1 else ""
        return f"[{first!r}{more}]"

    def select(self, first: int, count: int) -> PackedCalendars:
        """Calendars ``first`` to ``first + count - 1`` (the windows are a view), for
        ``0 <= first`` and ``first + count <= len(self)``."""
        begin, end = self.offsets[first], self.offsets[first + count]
        return PackedCalendars(
            self.windows[begin:end], self.offsets[first : first + count + 1] - begin
        )


def _array_shown(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} of shape {value.shape}"
    return type(value).__name__


def packed_calendars(name: str, windows: object, offsets: object) -> PackedCalendars:
    """``windows`` and ``offsets`` checked as :class:`PackedCalendars`: at least one
    calendar, each holding at least one window, every calendar one that :func:`calendar`
    accepts (finite, each window ending after it starts, sorted, non-overlapping).

    Parameters
    ----------
    name
        How messages name the calendars, e.g. ``"forecast.samples"``.
    windows
        float64 array of shape ``(M, 2)``: every window's start and end, seconds.
    offsets
        int64 array of shape ``(N + 1,)``: ``0``, then where each calendar ends.

    Raises
    ------
    ValueError
        Naming the array and what it holds (wrong dtype or shape, offsets that do not run
        from 0 up to ``M``), or a window as :func:`calendar` names it
        (``name[i][j] starts at ...``).
    """
    if not (
        isinstance(windows, np.ndarray)
        and windows.dtype == np.float64
        and windows.ndim == 2
        and windows.shape[1] == 2
    ):
        raise ValueError(
            f"{name} windows must be float64 of shape (M, 2), got {_array_shown(windows)}"
        )
    if not (
        isinstance(offsets, np.ndarray)
        and offsets.dtype == np.int64
        and offsets.ndim == 1
        and offsets.size >= 2
    ):
        raise ValueError(
            f"{name} offsets must be int64 of shape (N + 1,) with N >= 1, got {_array_shown(offsets)}"
        )
    windows = np.ascontiguousarray(windows)
    offsets = np.ascontiguousarray(offsets)
    if offsets[0] != 0 or offsets[-1] != windows.shape[0]:
        raise ValueError(
            f"{name} offsets must run from 0 to the {windows.shape[0]} windows, got "
            f"{int(offsets[0])} to {int(offsets[-1])}"
        )
    counts = np.diff(offsets)
    if not counts.all() or (counts < 0).any():
        i = int(np.argmax(counts <= 0))
        if counts[i] == 0:
            raise ValueError(f"{name}[{i}] must hold at least one [start, end] window, got []")
        raise ValueError(
            f"{name} offsets must not decrease, got offsets[{i}] = {int(offsets[i])} > "
            f"offsets[{i + 1}] = {int(offsets[i + 1])}"
        )
    start, end = windows[:, 0], windows[:, 1]
    bad = ~(np.isfinite(start) & np.isfinite(end) & (end > start))
    overlap = np.zeros_like(bad)
    overlap[1:] = ~(start[1:] >= end[:-1])
    overlap[offsets[:-1]] = False  # a calendar's first window follows no window of its own
    bad |= overlap
    if bad.any():
        i = int(np.searchsorted(offsets, np.argmax(bad), side="right")) - 1
        # The same message as the same calendar written inline (the first rule it breaks).
        calendar(f"{name}[{i}]", windows[offsets[i] : offsets[i + 1]].tolist())
    return PackedCalendars(windows, offsets)


class SampleForecaster(Forecaster):
    """Fixed sampled calendars, each a full calendar from time 0.

    ``sample`` returns each one's windows after the frontier, in order, when ``n`` equals
    their number; otherwise ``n`` of them drawn with replacement. The calendars are read
    and checked in C++ (:func:`calendar`'s rules and messages) and kept packed.

    Parameters
    ----------
    samples
        One or more calendars, seconds.
    """

    def __init__(self, samples: Sequence[Calendar] | PackedCalendars) -> None:
        given: object = samples  # checked at run time: JSON may hold anything
        if isinstance(given, PackedCalendars):
            self._packed: Packed = (given.windows, given.offsets)
            self._samples: tuple[Calendar, ...] | None = None
            return
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            raise ValueError(f"forecast.samples must be a list of calendars, got {given!r}")  # noqa: TRY004
        if not samples:
            raise ValueError("forecast.samples must hold at least one calendar, got []")
        self._packed = _core.forecast.pack_calendars("forecast.samples", list(given), calendar)
        self._samples = None

    @property
    def count(self) -> int:
        """How many calendars."""
        return int(self._packed[1].size - 1)

    @property
    def samples(self) -> tuple[Calendar, ...]:
        """The calendars, seconds."""
        if self._samples is None:
            windows, offsets = self._packed
            pairs = list(map(tuple, windows.tolist()))
            bounds = offsets.tolist()
            self._samples = tuple(tuple(pairs[a:b]) for a, b in pairwise(bounds))
        return self._samples

    def sample(
        self,
        observed: Sequence[tuple[float, float]],
        now_s: float,
        until_s: float,
        n: int,
        rng: np.random.Generator,
    ) -> list[Calendar]:
        """The samples' windows in ``[frontier, until_s)``."""
        n = integer("n", n, low=1)
        start = frontier(observed, now_s)
        samples = self.samples
        chosen = range(n) if n == len(samples) else rng.integers(0, len(samples), size=n)
        return [_after(samples[int(i)], start, until_s) for i in chosen]

    def fixed(self, n: int) -> list[Calendar] | None:
        """The samples themselves when ``n`` is their number (else they are redrawn)."""
        return list(self.samples) if integer("n", n, low=1) == self.count else None

    def fixed_packed(self, n: int) -> Packed | None:
        """The packed samples when ``n`` is their number."""
        return self._packed if integer("n", n, low=1) == self.count else None


def _cycles(
    observed: Sequence[tuple[float, float]], now_s: float, history_s: float | None
) -> tuple[FloatArray, FloatArray]:
    """Cycle ``j``: the busy gap after observed window ``j`` and window ``j + 1``'s length."""
    windows: FloatArray = np.array(observed, dtype=np.float64).reshape(-1, 2)
    if history_s is not None:
        windows = windows[windows[:, 0] >= now_s - history_s]
    return windows[1:, 0] - windows[:-1, 1], windows[1:, 1] - windows[1:, 0]


def _age(observed: Sequence[tuple[float, float]], now_s: float) -> float:
    """How long the busy period under way has lasted (0 inside a window)."""
    return now_s - observed[-1][1] if observed and now_s > observed[-1][1] else 0.0


def _tiled(
    busy: FloatArray, idle: FloatArray, start: float, age: float, until_s: float
) -> Calendar:
    """The cycles in order, again and again, from ``start``; the first gap less ``age``."""
    windows: list[tuple[float, float]] = []
    t = start
    gap = max(0.0, float(busy[0]) - age)
    j = 0
    while len(windows) < MAX_WINDOWS:
        begin = t + gap
        if begin >= until_s:
            break
        windows.append((begin, begin + float(idle[j])))
        t = begin + float(idle[j])
        j = (j + 1) % busy.size
        gap = float(busy[j])
    return tuple(windows)


class RepeatForecaster(Forecaster):
    """A baseline: the future repeats the last observed busy-idle cycles, in order.

    Every sample is the same calendar: the last ``last`` cycles (a busy gap and the window
    after it) tiled from the frontier, the first gap less the time the current busy period
    has already lasted. In causal scheduling the current gap is taken to last as long as
    one of the last gaps (sample ``i`` the ``i``-th newest, cycling). With fewer than two
    observed windows every sample is empty.

    Parameters
    ----------
    last
        Cycles repeated (>= 1).
    """

    gap_model = "repeat"

    def __init__(self, last: int = 8) -> None:
        self.last = integer("last", last, low=1)

    def sample(
        self,
        observed: Sequence[tuple[float, float]],
        now_s: float,
        until_s: float,
        n: int,
        rng: np.random.Generator,
    ) -> list[Calendar]:
        """``n`` copies of the tiled last cycles in ``[frontier, until_s)``."""
        n = integer("n", n, low=1)
        busy, idle = _cycles(observed, now_s, None)
        start = frontier(observed, now_s)
        if busy.size == 0 or start >= until_s or not math.isfinite(until_s):
            return [()] * n
        keep = slice(max(0, busy.size - self.last), busy.size)
        return [_tiled(busy[keep], idle[keep], start, _age(observed, now_s), until_s)] * n


class MeanForecaster(Forecaster):
    """A baseline: i.i.d. cycles of the historical mean busy gap and mean window.

    Every sample is the same calendar of identical cycles from the frontier (the first
    gap less the current busy period's age). In causal scheduling the current gap is
    taken to last the mean past gap. With fewer than two observed windows every sample
    is empty.

    Parameters
    ----------
    history_s
        Average over the windows that started in the last ``history_s`` seconds (None:
        all), s.
    """

    gap_model = "mean"

    def __init__(self, history_s: float | None = None) -> None:
        self.history_s = None if history_s is None else positive("history_s", history_s)

    def sample(
        self,
        observed: Sequence[tuple[float, float]],
        now_s: float,
        until_s: float,
        n: int,
        rng: np.random.Generator,
    ) -> list[Calendar]:
        """``n`` copies of the mean cycle tiled over ``[frontier, until_s)``."""
        n = integer("n", n, low=1)
        busy, idle = _cycles(observed, now_s, self.history_s)
        start = frontier(observed, now_s)
        if busy.size == 0 or start >= until_s or not math.isfinite(until_s):
            return [()] * n
        mean_busy = np.array([float(np.mean(busy))])
        mean_idle = np.array([float(np.mean(idle))])
        return [_tiled(mean_busy, mean_idle, start, _age(observed, now_s), until_s)] * n


class EmpiricalForecaster(Forecaster):
    """A renewal model of busy-idle cycles fitted on the observed history.

    Cycle ``j`` is the busy gap after observed window ``j`` and the length of window
    ``j + 1``. A sample continues from the frontier: if the last window has ended (a busy
    period of age ``a`` is under way), its first cycle is drawn among those whose gap
    exceeds ``a`` and only the rest of that gap remains (if none is that long, the burst
    is taken to end now); later cycles are drawn from all. With fewer than two observed
    windows there is no cycle, and every sample is empty (no later window is assumed).

    In causal scheduling the current gap's remaining length is drawn from the survival of
    past gaps: among those longer than its age, uniformly (beyond the longest, a Pareto
    tail ``P(R > r) = age / (age + r)``).

    Parameters
    ----------
    history_s
        Fit on the windows that started in the last ``history_s`` seconds only (None:
        all), s.
    """

    gap_model = "empirical"

    def __init__(self, history_s: float | None = None) -> None:
        self.history_s = None if history_s is None else number("history_s", history_s)
        if self.history_s is not None and self.history_s <= 0:
            raise ValueError(f"history_s must be > 0, got {self.history_s!r}")

    def cycles(
        self, observed: Sequence[tuple[float, float]], now_s: float
    ) -> tuple[FloatArray, FloatArray]:
        """The fitted cycles: busy gaps and the idle lengths after them, seconds."""
        return _cycles(observed, now_s, self.history_s)

    def sample(
        self,
        observed: Sequence[tuple[float, float]],
        now_s: float,
        until_s: float,
        n: int,
        rng: np.random.Generator,
    ) -> list[Calendar]:
        """``n`` resampled continuations from the frontier (see the class docstring)."""
        n = integer("n", n, low=1)
        if not math.isfinite(until_s):
            raise ValueError(f"until_s must be finite for an empirical forecast, got {until_s!r}")
        busy, idle = self.cycles(observed, now_s)
        start = frontier(observed, now_s)
        if busy.size == 0 or start >= until_s:
            return [()] * n
        age = _age(observed, now_s)
        mean_cycle = float(np.mean(busy + idle))
        count = min(MAX_WINDOWS, int(np.ceil((until_s - start) / mean_cycle)) + 8)
        out: list[Calendar] = []
        for _ in range(n):
            out.append(self._one(busy, idle, start, age, until_s, count, rng))
        return out

    @staticmethod
    def _one(
        busy: FloatArray,
        idle: FloatArray,
        start: float,
        age: float,
        until_s: float,
        count: int,
        rng: np.random.Generator,
    ) -> Calendar:
        longer = np.flatnonzero(busy > age)
        first = int(rng.choice(longer)) if longer.size else -1
        gaps = [busy[first] - age if first >= 0 else 0.0]
        lengths = [idle[first] if first >= 0 else float(rng.choice(idle))]
        windows: list[tuple[float, float]] = []
        t = start
        while True:
            for gap, length in zip(gaps, lengths, strict=True):
                begin = t + gap
                if begin >= until_s or len(windows) >= MAX_WINDOWS:
                    return tuple(windows)
                windows.append((begin, begin + length))
                t = begin + length
            picks = rng.integers(0, busy.size, size=count)
            gaps, lengths = busy[picks].tolist(), idle[picks].tolist()
