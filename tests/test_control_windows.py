"""Calendar files and what the loop sees of them at a moment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from learnsched.control.windows import KnownCalendar, Window, read_calendar


def write(tmp_path: Path, obj: object) -> Path:
    path = tmp_path / "calendar.json"
    path.write_text(json.dumps(obj).replace("Infinity", "1e999"))  # standard JSON
    return path


def test_relative_and_unix_clocks(tmp_path: Path) -> None:
    relative = read_calendar(write(tmp_path, {"windows": [[1, 2], [3, 5]]}), 1000.0)
    assert relative.windows == [Window(1.0, 2.0), Window(3.0, 5.0)]
    unix = read_calendar(write(tmp_path, {"windows": [[1001, 1002]], "clock": "unix"}), 1000.0)
    assert unix.windows == [Window(1.0, 2.0)]
    bare = read_calendar(write(tmp_path, [[0, 1]]), 0.0)
    assert bare.windows == [Window(0.0, 1.0)]


def test_windows_output_of_the_trace_wing_reads(tmp_path: Path) -> None:
    # ``learnsched windows TRACE.csv`` writes more keys beside ``windows``.
    obj = {"windows": [[10.0, 40.5]], "reclaim_by": [40.0], "return_path_s": 0.5}
    assert read_calendar(write(tmp_path, obj), 0.0).windows == [Window(10.0, 40.5)]


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        ({"windows": [[2, 1]]}, r"windows\[0\]: end"),
        ({"windows": [[0, 3], [2, 4]]}, r"windows\[1\] starts"),
        ({"windows": [[0, "x"]]}, r"windows\[0\]\[1\]"),
        ({"windows": [[0, 1, 2]]}, r"windows\[0\] must be"),
        ({"windows": [[0, 1]], "clock": "utc"}, "clock"),
        ({"calendar": []}, "no 'windows'"),
        ({"windows": [[0, float("nan")]]}, "NaN is not standard JSON"),
        ({"windows": [[0, 1e999]]}, "finite"),
    ],
)
def test_bad_calendars_name_the_field(tmp_path: Path, obj: object, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        read_calendar(write(tmp_path, obj), 0.0)


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{")
    with pytest.raises(ValueError, match=r"c\.json is not valid JSON"):
        read_calendar(path, 0.0)


def test_upcoming_trims_the_open_window() -> None:
    calendar = KnownCalendar([Window(0, 10), Window(20, 30)])
    assert calendar.upcoming(-1.0) == [Window(0, 10), Window(20, 30)]
    assert calendar.upcoming(4.0) == [Window(4.0, 10), Window(20, 30)]
    assert calendar.upcoming(10.0) == [Window(20, 30)]
    assert calendar.upcoming(31.0) == []


def test_planned_is_the_calendar_window_before_it_was_trimmed() -> None:
    calendar = KnownCalendar([Window(0, 10), Window(20, 30)])
    assert calendar.planned(calendar.upcoming(4.0)[0]) == Window(0, 10)
    assert calendar.planned(Window(25.0, 30)) == Window(20, 30)
    with pytest.raises(ValueError, match="no window of the calendar ends there"):
        calendar.planned(Window(4.0, 11))


NOW_UNIX = 1_796_000_000.0  # 2026-11-30T00:53:20Z


def test_epoch_milliseconds_are_named(tmp_path: Path) -> None:
    ms = 1000 * NOW_UNIX
    path = write(tmp_path, {"windows": [[ms + 1000, ms + 60_000]], "clock": "unix"})
    with pytest.raises(ValueError, match=r"windows\[0\] ends at .* looks like milliseconds"):
        read_calendar(path, NOW_UNIX)


@pytest.mark.parametrize(
    ("obj", "when"),
    [
        ({"windows": [[NOW_UNIX - 7200, NOW_UNIX - 3600]], "clock": "unix"},
         "at 2026-11-29T23:53:20Z, 3600 s before the loop starts"),
        ({"windows": [[-50, -10]]}, "10 s before the loop starts"),
    ],
)  # fmt: skip
def test_a_calendar_wholly_past_is_refused_where_it_is_to_lend(
    tmp_path: Path, obj: object, when: str
) -> None:
    path = write(tmp_path, obj)
    with pytest.raises(ValueError, match=f"every window is over: the last ended {when}"):
        read_calendar(path, NOW_UNIX, ahead=True)
    assert len(read_calendar(path, NOW_UNIX).windows) == 1  # a history of past windows


def test_a_calendar_with_a_window_still_open_lends(tmp_path: Path) -> None:
    path = write(tmp_path, {"windows": [[NOW_UNIX - 60, NOW_UNIX + 60]], "clock": "unix"})
    assert read_calendar(path, NOW_UNIX, ahead=True).windows == [Window(-60.0, 60.0)]
