"""The columnar CSV read (learnsched._csvcolumns) against the row-by-row one: the same values
and windows bit for bit on regular files, and every irregular file read row by row, with
the same errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_calendar_windows_scale import window_bits

from learnsched._csvcolumns import numbers, read_table
from learnsched.calendar import idle_windows, load_trace, read_azure_trace, traces
from learnsched.capacity import ReturnPath, read_rate_csv, read_trace_csv
from learnsched.capacity import traces as capacity_traces

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
ON_TMP = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def bits(values: object) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


def row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reader reads row by row, as before the columnar read."""
    monkeypatch.setattr(traces, "read_table", lambda path: None)
    monkeypatch.setattr(capacity_traces, "read_table", lambda path: None)


def both_ways(monkeypatch: pytest.MonkeyPatch, read: Callable[[], object]) -> tuple[object, object]:
    """``read()`` as it is and row by row: its result or its error's message."""

    def outcome() -> object:
        try:
            return read()
        except ValueError as err:
            return f"ValueError: {err}"

    fast = outcome()
    with monkeypatch.context() as patched:
        row_by_row(patched)
        return fast, outcome()


# --- numbers: float(cell), bit for bit -------------------------------------------------------

decimal_cells = st.builds(
    lambda sign, whole, point, fraction, exponent: f"{sign}{whole}{point}{fraction}{exponent}",
    st.sampled_from(["", "-", "+"]),
    st.from_regex(r"[0-9]{0,19}", fullmatch=True),
    st.sampled_from(["", "."]),
    st.from_regex(r"[0-9]{0,19}", fullmatch=True),
    st.sampled_from(["", "e5", "E-3", "e+300", "e-330"]),
).filter(lambda cell: any(c.isdigit() for c in cell.split("e")[0].split("E")[0]))
number_cells = st.one_of(
    decimal_cells,
    st.integers(0, 10**20).map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(["inf", "-inf", "nan", "1_000", " 7", "8 ", "0", "-0", "-0.0", ".5", "5."]),
)


@ON_TMP
@given(st.lists(st.tuples(number_cells, number_cells), min_size=1, max_size=40))
def test_numbers_are_float_of_each_cell(tmp_path: Path, rows: list[tuple[str, str]]) -> None:
    path = tmp_path / "numbers.csv"
    path.write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in rows), encoding="ascii")
    table = read_table(path)
    assert table is not None
    for column, name in enumerate("ab"):
        got = numbers(table, name)
        assert got is not None
        assert bits(got) == bits([float(row[column]) for row in rows])


@pytest.mark.parametrize("cell", ["x", "", " ", "1.2.3", "--1", "1-", "1e", "+", "-", ".", "0x10"])
def test_a_cell_that_is_not_a_number_is_none(tmp_path: Path, cell: str) -> None:
    path = tmp_path / "numbers.csv"
    path.write_text(f"a,b\n1,2\n{cell},3\n", encoding="ascii")
    table = read_table(path)
    assert table is not None
    assert numbers(table, "b") is not None
    assert numbers(table, "a") is None


# --- regular and irregular files ----------------------------------------------------------------

ROWS = "2023-11-16 18:17:03.1,5,6\n2023-11-16 18:17:04.25,7,8\n"


@pytest.mark.parametrize(
    "text",
    [
        AZURE_HEADER + "\n" + ROWS,
        AZURE_HEADER + "\r\n" + ROWS.replace("\n", "\r\n"),  # Windows line ends
        "\ufeff" + AZURE_HEADER + "\n" + ROWS,  # a BOM
        AZURE_HEADER + "\n" + ROWS.rstrip("\n"),  # no newline at the end
    ],
)
def test_regular_files_are_read_column_by_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_bytes(text.encode("utf-8"))
    table = read_table(path)
    assert table is not None
    assert table.header == AZURE_HEADER.split(",")
    assert len(table) == 2
    fast, checked = both_ways(monkeypatch, lambda: bits(read_azure_trace(path).arrival))
    assert fast == checked
    assert fast == bits([0.0, 1700158624.25 - 1700158623.1])


@pytest.mark.parametrize(
    "text",
    [
        AZURE_HEADER + "\n" + ROWS.replace("5,", '"5",'),  # a quoted field
        AZURE_HEADER + "\n" + ROWS.replace("\n", "\n\n"),  # a blank line
        AZURE_HEADER + "\n" + ROWS.replace(",6", ",6,9"),  # a row longer than the header
        AZURE_HEADER + "\n" + ROWS.replace(",6", ""),  # a shorter one
        AZURE_HEADER + "\n" + ROWS.replace("5", "\u0665"),  # not ASCII (an Arabic 5)
        AZURE_HEADER + "\n" + ROWS.replace("5,", "5\t,"),  # a tab
        AZURE_HEADER + "\n" + ROWS.replace(",6\n", ",6\r"),  # a \r alone ends a line
        "\n" + AZURE_HEADER + "\n" + ROWS,  # a blank first line
        AZURE_HEADER + "\n",  # no data row
        "",
    ],
)
def test_irregular_files_are_read_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_bytes(text.encode("utf-8"))
    assert read_table(path) is None
    fast, checked = both_ways(monkeypatch, lambda: read_azure_trace(path).arrival.tolist())
    assert fast == checked


# --- Azure traces: values, windows and errors as row by row -------------------------------------

stamps = st.builds(
    lambda day, separator, second, fraction: (
        f"2023-{day // 28 + 1:02d}-{day % 28 + 1:02d}{separator}"
        f"{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}{fraction}"
    ),
    st.integers(0, 12 * 28 - 1),
    st.sampled_from([" ", "T"]),
    st.integers(0, 86399),
    st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,15}", fullmatch=True)),
)
token_cells = st.one_of(st.integers(0, 10**7).map(str), st.sampled_from(["0.5", "12.0", "3e2"]))


@ON_TMP
@given(
    st.lists(st.tuples(stamps, token_cells, token_cells), min_size=1, max_size=40),
    st.booleans(),
)
def test_azure_columns_are_the_checked_rows_bit_for_bit(
    tmp_path: Path, rows: list[tuple[str, str, str]], sort: bool
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(AZURE_HEADER + "\n" + "".join(",".join(r) + "\n" for r in rows))
    table = read_table(path)
    assert table is not None
    fast = traces._columns(table, sort)
    times, tokens = traces._checked_columns(path, [0, 1, 2], True)
    if not sort and np.any(np.diff(times) < 0):
        assert fast is None  # the checked path names the row out of order
        return
    assert fast is not None
    assert bits(fast[0]) == bits(times)
    assert bits(fast[1]) == bits(tokens)


@pytest.mark.parametrize(
    "row",
    [
        "2023-02-30 00:00:00,1,2",  # not a date
        "2023-11-16 24:00:00,1,2",
        "2023-11-16 18:60:00,1,2",
        "2023-11-16 18:17:61,1,2",
        "2023-11-16 18:17:03.,1,2",
        "2023-11-16 18:17:03.1234567890123456,1,2",  # more fraction than the columns read
        "2023-11-16  18:17:03,1,2",
        " 2023-11-16 18:17:03,1,2",
        "2023/11/16 18:17:03,1,2",
        "2023-11-16 18:17:03,-1,2",
        "2023-11-16 18:17:03,1,nan",
        "2023-11-16 18:17:03,1,inf",
        "2023-11-16 18:17:03,x,2",
        "2023-11-16 18:17:02,1,2",  # earlier than the row before
    ],
)
def test_bad_azure_cells_error_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(f"{AZURE_HEADER}\n2023-11-16 18:17:02.5,1,2\n{row}\n")
    assert read_table(path) is not None
    fast, checked = both_ways(monkeypatch, lambda: read_azure_trace(path).arrival.tolist())
    assert fast == checked


def test_the_shipped_trace_and_its_windows_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    path = ReturnPath(ready_s=0.487)
    fast = load_trace()
    with monkeypatch.context() as patched:
        row_by_row(patched)
        checked = load_trace()
    for name in ("arrival", "work", "deadline"):
        assert bits(getattr(fast, name)) == bits(getattr(checked, name)), name
    assert window_bits(idle_windows(fast, path=path).windows) == window_bits(
        idle_windows(checked, path=path).windows
    )


# --- the project's trace and rate CSVs ------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "arrival,work,deadline\n0.1,1,2.5\n0.2,0.30000000000000004,9\n",
        "arrival,work,deadline,prompt_tokens,max_output_tokens\n0,1,2,10,64\n1e-3,2,3,0,0\n",
        "arrival,work,deadline\n5,1,9\n4,1,9\n",  # out of order
        "arrival,work,deadline\n5,-1,9\n",
        "arrival,work,deadline\n5,x,9\n",
        "arrival,work\n5,1\n",
    ],
)
def test_trace_csv_as_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(text)

    def read() -> object:
        trace = read_trace_csv(path)
        return [bits(getattr(trace, n)) for n in ("arrival", "work", "deadline")]

    fast, checked = both_ways(monkeypatch, read)
    assert fast == checked


def test_rate_csv_as_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "rates.csv"
    path.write_text("start,rate\n0,1.5\n10,0.25\n")

    def read() -> object:
        rates = read_rate_csv(path)
        return bits(rates.starts), bits(rates.rates)

    fast, checked = both_ways(monkeypatch, read)
    assert fast == checked
    assert fast == (bits([0.0, 10.0]), bits([1.5, 0.25]))
