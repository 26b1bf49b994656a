"""Where the scheduler's windows come from: a known calendar, or a forecast.

Times are seconds on the loop's clock (seconds since the loop started). A window
``[start, end]`` may be lent from ``start``; serving capacity must be ready again by
``end`` (its return deadline, after the return path: Eqs. 7-8).

A calendar file is JSON: ``{"windows": [[start, end], ...], "clock": "relative"}``
(``"relative"``: seconds after the loop starts; ``"unix"``: seconds since the epoch),
a list of pairs (relative), or windows that recur daily in local time
(``{"daily": [["01:00", "06:00"]], "timezone": "Europe/Berlin"}``:
:mod:`~learnsched.control.recurring`). ``learnsched windows TRACE.csv`` writes windows a
scenario can use directly, and any JSON object with a ``windows`` list reads here.
"""

from __future__ import annotations

import bisect
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from .._checks import number
from .._json import read_json
from .recurring import recurring_windows

__all__ = ["CLOCKS", "CalendarSource", "KnownCalendar", "Window", "read_calendar"]

CLOCKS = ("relative", "unix")


@dataclass(frozen=True)
class Window:
    """One lendable window on the loop's clock, seconds.

    Parameters
    ----------
    start_s
        When capacity may be lent.
    end_s
        Its return deadline: capacity ready again by then.
    """

    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        """``L_k``, seconds."""
        return self.end_s - self.start_s


class CalendarSource(Protocol):
    """Windows known (or believed) at a moment."""

    def upcoming(self, now_s: float) -> list[Window]:
        """Windows whose deadline is after ``now_s``, the current one first, sorted.

        A window already open at ``now_s`` starts at ``now_s`` (what is left of it).
        """
        ...


def check_windows(pairs: Sequence[object], where: str) -> list[Window]:
    """Sorted, non-overlapping, finite ``[start, end]`` pairs as windows.

    Raises
    ------
    ValueError, TypeError
        A pair that is not two finite numbers, or ``end <= start``, or windows that
        are unsorted or overlap (the message names the index).
    """
    windows: list[Window] = []
    for i, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise TypeError(f"{where}windows[{i}] must be [start, end], got {pair!r}")
        start = number(f"{where}windows[{i}][0]", pair[0])
        end = number(f"{where}windows[{i}][1]", pair[1])
        if end <= start:
            raise ValueError(f"{where}windows[{i}]: end {end!r} must be after start {start!r}")
        if windows and start < windows[-1].end_s:
            raise ValueError(
                f"{where}windows[{i}] starts at {start!r}, before windows[{i - 1}] ends "
                f"({windows[-1].end_s!r}): windows must be sorted and not overlap"
            )
        windows.append(Window(start, end))
    return windows


class KnownCalendar:
    """A calendar known in advance (the paper's setting).

    Parameters
    ----------
    windows
        Windows on the loop's clock.
    origin
        ``None``: the windows count from when the loop is ready (``"relative"``).
        Otherwise the ``time.monotonic()`` instant the windows count from (a ``"unix"``
        calendar converted at a fixed instant): the loop's clock starts there, not when
        it is ready, or every window would shift by the loop's start-up time.
    origin_unix
        The same instant in epoch seconds (the loop's planned epoch times count from it,
        exactly: no second reading of the two clocks).
    """

    def __init__(
        self,
        windows: Sequence[Window],
        origin: float | None = None,
        origin_unix: float | None = None,
    ) -> None:
        self.windows = check_windows([(w.start_s, w.end_s) for w in windows], "")
        self._ends = [w.end_s for w in self.windows]  # sorted: windows do not overlap
        self.origin = None if origin is None else number("origin", origin)
        self.origin_unix = None if origin_unix is None else number("origin_unix", origin_unix)

    def planned(self, window: Window) -> Window:
        """The calendar's own window that ``window`` is what is left of (the same end),
        as it was planned: a loop ready after a window opened still records its start.

        Raises
        ------
        ValueError
            No window of the calendar ends at ``window.end_s``.
        """
        index = bisect.bisect_left(self._ends, window.end_s)
        if index == len(self._ends) or self._ends[index] != window.end_s:
            raise ValueError(f"window {window!r}: no window of the calendar ends there")
        return self.windows[index]

    def upcoming(self, now_s: float) -> list[Window]:
        """See :meth:`CalendarSource.upcoming` (O(log K) to find, then one slice)."""
        ahead = self.windows[bisect.bisect_right(self._ends, now_s) :]
        if ahead and ahead[0].start_s < now_s:
            ahead[0] = Window(now_s, ahead[0].end_s)
        return ahead


def read_calendar(
    path: str | os.PathLike[str], loop_start_unix: float, *, ahead: bool = False
) -> KnownCalendar:
    """A calendar file (see the module docstring) on the loop's clock.

    Parameters
    ----------
    path
        The JSON file.
    loop_start_unix
        The epoch second the loop's clock counts from for a ``"clock": "unix"`` file
        (the calendar's :attr:`~KnownCalendar.origin` is that instant, which the loop
        adopts as its clock's zero).
    ahead
        The windows to lend: at least one must end after the loop starts (a history of
        past windows passes False).

    Raises
    ------
    ValueError, TypeError
        Not JSON, no ``windows``, an unknown clock, bad windows (named), epoch
        milliseconds where seconds are meant, or, ``ahead``, every window already over.
    """
    data: Any = read_json(path)
    clock = "relative"
    if isinstance(data, dict) and "daily" in data:
        if "windows" in data:
            raise ValueError(f"{path}: give 'windows' or 'daily' (recurring), not both")
        clock, data = "unix", recurring_windows(data, loop_start_unix, f"{path}: ")
    elif isinstance(data, dict):
        if "windows" not in data:
            raise ValueError(f"{path}: no 'windows' list (or 'daily' for recurring windows)")
        clock = data.get("clock", "relative")
        data = data["windows"]
    if clock not in CLOCKS:
        raise ValueError(f"{path}: clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    if not isinstance(data, list):
        raise TypeError(f"{path}: windows must be a list of [start, end] pairs")
    windows = check_windows(data, f"{path}: ")
    if clock == "relative":
        calendar = KnownCalendar(windows)
    else:
        if not math.isfinite(loop_start_unix):
            raise ValueError(f"loop_start_unix must be finite, got {loop_start_unix!r}")
        _check_seconds(windows, path)
        # The monotonic instant of loop_start_unix: the loop's clock zero for these windows.
        origin = time.monotonic() - (time.time() - loop_start_unix)
        shifted = [Window(w.start_s - loop_start_unix, w.end_s - loop_start_unix) for w in windows]
        calendar = KnownCalendar(shifted, origin, loop_start_unix)
    if ahead:
        _check_ahead(calendar, clock, path)
    return calendar


# Epoch seconds past this are after the year 5000: a time this large is milliseconds.
_LATEST_EPOCH_S = 1e11


def _check_seconds(windows: Sequence[Window], path: str | os.PathLike[str]) -> None:
    """``"clock": "unix"`` times are epoch seconds; milliseconds are named, not read as
    windows thousands of years ahead."""
    for i, window in enumerate(windows):
        if window.end_s > _LATEST_EPOCH_S:
            raise ValueError(
                f"{path}: windows[{i}] ends at {window.end_s!r}, after the year 5000 in epoch "
                f'seconds: it looks like milliseconds; "clock": "unix" takes seconds'
            )


def _check_ahead(calendar: KnownCalendar, clock: str, path: str | os.PathLike[str]) -> None:
    """At least one window ends after the loop's clock zero: a calendar wholly in the past
    would lend nothing and end at once, as if it had worked."""
    if not calendar.windows or calendar.windows[-1].end_s > 0.0:
        return
    last = calendar.windows[-1].end_s
    when = f"{-last:.0f} s before the loop starts"
    if clock == "unix" and calendar.origin_unix is not None:
        stamp = datetime.fromtimestamp(calendar.origin_unix + last, timezone.utc)
        when = f"at {stamp:%Y-%m-%dT%H:%M:%SZ}, {when}"
    raise ValueError(f"{path}: every window is over: the last ended {when}; nothing would be lent")
