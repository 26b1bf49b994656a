"""Windows that recur every day at the same local time ("lend the GPU from 01:00 to
06:00, Berlin time"), for a calendar file that names them instead of listing them.

A recurring calendar is JSON::

    {"daily": [["01:00", "06:00"]], "timezone": "Europe/Berlin",
     "weekdays": ["mon", "tue", "wed", "thu", "fri"], "days": 30}

``daily`` holds ``[start, end]`` pairs of local ``HH:MM`` times; an end at or before its
start runs past midnight (``["22:00", "06:00"]``). ``timezone`` is an IANA zone (the
local clock moves with daylight saving time: a window keeps its local hours, so it is an
hour shorter or longer on the two days the clocks change). ``weekdays`` (default every
day) are the days a window starts on; ``days`` (default 30) how many days from the
run's start the windows are laid out for. A window already open when the run starts
counts from then.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["DEFAULT_DAYS", "WEEKDAYS", "recurring_windows"]

DEFAULT_DAYS = 30
"""Days from the run's start a recurring calendar is laid out for, by default."""
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""The names ``weekdays`` takes (``datetime.weekday()`` order)."""
# Longest span laid out at once: ten years of windows (a bounded list, a clear error).
_MAX_DAYS = 3660
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_KEYS = {"daily", "timezone", "weekdays", "days"}


def _local_time(text: object, where: str) -> time:
    """``HH:MM`` as a time of day; ``ValueError`` naming ``where``."""
    found = _CLOCK.match(text) if isinstance(text, str) else None
    if found is None:
        raise ValueError(f"{where} must be a local time HH:MM (00:00-23:59), got {text!r}")
    return time(int(found.group(1)), int(found.group(2)))


def _zone(spec: Mapping[str, Any], where: str) -> ZoneInfo:
    name = spec.get("timezone")
    if not isinstance(name, str):
        raise TypeError(
            f"{where}timezone must name an IANA zone (e.g. 'Europe/Berlin' or 'UTC'), got {name!r}"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{where}timezone: no time zone named {name!r}") from None


def _weekdays(spec: Mapping[str, Any], where: str) -> set[int]:
    names = spec.get("weekdays", list(WEEKDAYS))
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ValueError(f"{where}weekdays must be a non-empty list of {WEEKDAYS}, got {names!r}")
    days = set()
    for name in names:
        if name not in WEEKDAYS:
            raise ValueError(f"{where}weekdays: {name!r} is not one of {', '.join(WEEKDAYS)}")
        days.add(WEEKDAYS.index(name))
    return days


def _days(spec: Mapping[str, Any], where: str) -> int:
    days = spec.get("days", DEFAULT_DAYS)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= _MAX_DAYS:
        raise ValueError(
            f"{where}days must be a whole number of days in 1-{_MAX_DAYS}, got {days!r}"
        )
    return days


def _pairs(spec: Mapping[str, Any], where: str) -> list[tuple[time, time]]:
    daily = spec.get("daily")
    if isinstance(daily, str) or not isinstance(daily, Sequence) or not daily:
        raise ValueError(
            f'{where}daily must be a non-empty list of ["HH:MM", "HH:MM"], got {daily!r}'
        )
    pairs = []
    for i, pair in enumerate(daily):
        if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f'{where}daily[{i}] must be ["HH:MM", "HH:MM"], got {pair!r}')
        start = _local_time(pair[0], f"{where}daily[{i}][0]")
        end = _local_time(pair[1], f"{where}daily[{i}][1]")
        pairs.append((start, end))
    return pairs


def _epoch(day: date, at: time, zone: ZoneInfo) -> float:
    """Epoch seconds of local ``at`` on ``day`` (a time the clocks skip is read as the
    one before the change, as PEP 495 reads it)."""
    return datetime.combine(day, at, tzinfo=zone).timestamp()


def recurring_windows(
    spec: Mapping[str, Any], from_unix: float, where: str = ""
) -> list[tuple[float, float]]:
    """The windows of a recurring calendar (see the module docstring) as epoch-second
    ``(start, end)`` pairs, sorted, from ``from_unix`` for ``days`` days; a window open
    at ``from_unix`` is kept whole (the loop starts it late).

    Raises
    ------
    ValueError, TypeError
        An unknown key, a bad time, zone, weekday or day count (``where`` prefixes the
        field), or windows that overlap.
    """
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ValueError(
            f"{where}unknown key(s) {', '.join(map(repr, unknown))} in a recurring calendar"
        )
    if not math.isfinite(from_unix):
        raise ValueError(f"from_unix must be finite, got {from_unix!r}")
    zone, pairs = _zone(spec, where), _pairs(spec, where)
    weekdays, days = _weekdays(spec, where), _days(spec, where)
    today = datetime.fromtimestamp(from_unix, timezone.utc).astimezone(zone).date()
    windows = []
    for offset in range(-1, days):  # yesterday's window may run past midnight into now
        day = today + timedelta(days=offset)
        if day.weekday() not in weekdays:
            continue
        for start, end in pairs:
            overnight = end <= start
            last = day + timedelta(days=1) if overnight else day
            window = (_epoch(day, start, zone), _epoch(last, end, zone))
            if window[1] > from_unix and window[1] > window[0]:
                windows.append(window)
    windows.sort()
    for before, after in itertools.pairwise(windows):
        if after[0] < before[1]:
            raise ValueError(f"{where}daily: windows overlap (one starts before another ends)")
    return windows
