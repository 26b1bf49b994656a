"""Recurring calendars: windows every day at the same local time, in a named time zone."""

from __future__ import annotations

import json
from datetime import datetime, time, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from learnsched.control.recurring import DEFAULT_DAYS, WEEKDAYS, recurring_windows
from learnsched.control.windows import read_calendar

BERLIN = ZoneInfo("Europe/Berlin")
NIGHTS = {"daily": [["01:00", "06:00"]], "timezone": "Europe/Berlin"}


def at(text: str, zone: ZoneInfo = BERLIN) -> float:
    """Epoch seconds of a local ``YYYY-MM-DD HH:MM`` in ``zone``."""
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


def local(epoch: float, zone: ZoneInfo = BERLIN) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).astimezone(zone).strftime("%m-%d %H:%M")


def test_nightly_windows_from_noon() -> None:
    windows = recurring_windows({**NIGHTS, "days": 3}, at("2026-12-07 12:00"))
    assert [(local(a), local(b)) for a, b in windows] == [
        ("12-08 01:00", "12-08 06:00"),
        ("12-09 01:00", "12-09 06:00"),
    ]  # today's is over; the third day's starts on the 10th, past the 3 days laid out
    assert len(recurring_windows(NIGHTS, at("2026-12-07 12:00"))) == DEFAULT_DAYS - 1


def test_a_window_open_at_the_start_is_kept_whole() -> None:
    (first, *_) = recurring_windows(NIGHTS, at("2026-12-07 03:30"))
    assert (local(first[0]), local(first[1])) == ("12-07 01:00", "12-07 06:00")


def test_overnight_windows_run_past_midnight_and_yesterdays_counts() -> None:
    spec = {"daily": [["22:00", "06:00"]], "timezone": "UTC", "days": 2}
    utc = ZoneInfo("UTC")
    windows = recurring_windows(spec, at("2026-12-07 02:00", utc))
    assert [(local(a, utc), local(b, utc)) for a, b in windows] == [
        ("12-06 22:00", "12-07 06:00"),
        ("12-07 22:00", "12-08 06:00"),
        ("12-08 22:00", "12-09 06:00"),
    ]


def test_local_hours_are_kept_across_daylight_saving_time() -> None:
    """Berlin moves its clocks 02:00 -> 03:00 on 2026-03-29 and 03:00 -> 02:00 on
    2026-10-25: those nights' windows are 4 and 6 hours long."""
    spring = recurring_windows({**NIGHTS, "days": 3}, at("2026-03-28 12:00"))
    assert [round((b - a) / 3600) for a, b in spring] == [4, 5]
    autumn = recurring_windows({**NIGHTS, "days": 3}, at("2026-10-24 12:00"))
    assert [round((b - a) / 3600) for a, b in autumn] == [6, 5]


def test_weekdays_are_the_days_windows_start_on() -> None:
    spec = {**NIGHTS, "weekdays": ["sat", "sun"], "days": 14}
    windows = recurring_windows(spec, at("2026-12-07 12:00"))  # a Monday
    starts = [datetime.fromtimestamp(a, BERLIN).strftime("%a") for a, _ in windows]
    assert starts == ["Sat", "Sun", "Sat", "Sun"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"daily": [["1:00", "06:00"]]}, r"daily\[0\]\[0\] must be a local time HH:MM"),
        ({"daily": [["01:00", "24:00"]]}, r"daily\[0\]\[1\] must be a local time"),
        ({"daily": []}, "daily must be a non-empty list"),
        ({"daily": [["01:00"]]}, r"daily\[0\] must be"),
        ({"timezone": "Mars/Olympus"}, "no time zone named 'Mars/Olympus'"),
        ({"weekdays": ["monday"]}, "'monday' is not one of mon, "),
        ({"days": 0}, "days must be a whole number of days in 1-"),
        ({"days": 2.5}, "days must be a whole number"),
        ({"every": "day"}, "unknown key"),
        ({"daily": [["01:00", "06:00"], ["05:00", "07:00"]]}, "windows overlap"),
    ],
)
def test_bad_recurring_calendars_name_the_field(change: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        recurring_windows({**NIGHTS, **change}, at("2026-12-07 12:00"))


def test_a_zone_that_is_not_a_name_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="timezone must name an IANA zone"):
        recurring_windows({**NIGHTS, "timezone": 1}, at("2026-12-07 12:00"))


def test_the_calendar_file_reads_them_on_the_loops_clock(tmp_path: Path) -> None:
    path = tmp_path / "nights.json"
    path.write_text(json.dumps({**NIGHTS, "days": 3}))
    start = at("2026-12-07 12:00")
    calendar = read_calendar(path, start, ahead=True)
    assert calendar.origin_unix == start
    assert [(w.start_s, w.end_s) for w in calendar.windows] == [
        (13 * 3600.0, 18 * 3600.0),
        (37 * 3600.0, 42 * 3600.0),
    ]
    path.write_text(json.dumps({**NIGHTS, "windows": [[0, 1]]}))
    with pytest.raises(ValueError, match="give 'windows' or 'daily'"):
        read_calendar(path, start)


@settings(max_examples=60, deadline=None)
@example(  # Lord Howe skips 02:00-02:30 on 2020-10-04: that window opens at 02:30
    zone="Australia/Lord_Howe", start=120, length=1, days=22, weekdays=set(WEEKDAYS),
    from_unix=1.6e9,
)  # fmt: skip
@given(
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]),
    start=st.integers(0, 24 * 60 - 1),
    length=st.integers(1, 24 * 60 - 1),
    days=st.integers(1, 40),
    weekdays=st.sets(st.sampled_from(WEEKDAYS), min_size=1),
    from_unix=st.floats(1.6e9, 2.0e9),
)
def test_windows_are_sorted_disjoint_and_start_at_the_local_time(
    zone: str, start: int, length: int, days: int, weekdays: set[str], from_unix: float
) -> None:
    end = (start + length) % (24 * 60)
    hhmm = [f"{m // 60:02d}:{m % 60:02d}" for m in (start, end)]
    spec = {"daily": [hhmm], "timezone": zone, "days": days, "weekdays": sorted(weekdays)}
    windows = recurring_windows(spec, from_unix)
    tz = ZoneInfo(zone)
    assert len(windows) <= days + 1
    for (a, b), nxt in zip(windows, [*windows[1:], None], strict=False):
        assert a < b
        assert b > from_unix
        assert nxt is None or b <= nxt[0]
        opened = datetime.fromtimestamp(a, tz)
        # Its local start is the one asked for, unless the clocks skipped that time that day
        # (then it opens when they land), on a weekday asked for.
        asked = datetime.combine(opened.date(), time(start // 60, start % 60))
        landed = datetime.fromtimestamp(asked.replace(tzinfo=tz).timestamp(), tz)
        skipped = landed.replace(tzinfo=None) != asked
        assert opened.strftime("%H:%M") == hhmm[0] or skipped
        assert WEEKDAYS[opened.weekday()] in weekdays
