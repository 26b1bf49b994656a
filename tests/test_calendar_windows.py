"""Windows from traces: the Azure format, the service model, Eqs. 6-8 and bad traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import learnsched as ls
from learnsched.calendar import (
    AZURE_TRACE,
    ServiceModel,
    idle_windows,
    load_trace,
    read_azure_trace,
)
from learnsched.capacity import RateProfile, ReturnPath, Trace, check_feasibility, write_trace_csv

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_trace_keeps_its_attribution() -> None:
    folder = AZURE_TRACE.parent
    assert AZURE_TRACE.is_file()
    assert "CC-BY 4.0" in (folder / "README.md").read_text(encoding="utf-8")
    assert "Splitwise" in (folder / "README.md").read_text(encoding="utf-8")
    assert "Attribution 4.0 International" in (folder / "LICENSE").read_text(encoding="utf-8")


def test_read_the_shipped_azure_trace() -> None:
    tokens = read_azure_trace()
    assert len(tokens.arrival) == 8819
    assert tokens.arrival[0] == 0.0
    assert tokens.arrival[-1] == pytest.approx(3435.948, abs=1e-3)
    gaps = np.diff(tokens.arrival)
    # The figures: 45 gaps of 10 s or more, 2377 s in all, the longest 217 s.
    assert int((gaps >= 10).sum()) == 45
    assert float(gaps[gaps >= 10].sum()) == pytest.approx(2377.4, abs=0.1)
    assert float(gaps.max()) == pytest.approx(217.17, abs=0.01)
    assert tokens.context_tokens[0] == 4808
    assert tokens.generated_tokens[0] == 10


def test_service_model() -> None:
    model = ServiceModel(prefill_tokens_per_s=1000.0, decode_tokens_per_s=10.0, slo_s=3.0)
    work = model.work_s(np.array([500.0, 0.0]), np.array([20.0, 5.0]))
    assert work.tolist() == [2.5, 0.5]
    fixed = ServiceModel(request_s=0.25).work_s(np.array([1e6]), np.array([1e6]))
    assert fixed.tolist() == [0.25]
    with pytest.raises(ValueError, match="decode_tokens_per_s must be > 0"):
        ServiceModel(decode_tokens_per_s=0.0)
    with pytest.raises(ValueError, match="slo_s must be >= 0"):
        ServiceModel(slo_s=-1.0)


def test_azure_rows_become_requests_with_deadlines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        AZURE_HEADER + "2023-11-16 18:17:03.5,1000,10\n2023-11-16 18:17:04,2000,0\n",
    )
    trace = load_trace(path, ServiceModel(1000.0, 10.0, slo_s=5.0))
    assert trace.arrival.tolist() == [0.0, 0.5]
    assert trace.work.tolist() == [2.0, 2.0]
    assert trace.deadline.tolist() == [7.0, 7.5]


def small_trace() -> Trace:
    # Requests of 1 work at rate 1, due 3 s after arrival: idle from 1 to 50, then 51 to 100.
    arrival = np.array([0.0, 50.0, 100.0])
    return Trace(arrival=arrival, work=np.ones(3), deadline=arrival + 3.0)


def test_windows_end_at_the_return_deadline() -> None:
    result = idle_windows(small_trace(), path=ReturnPath(ready_s=5.0), min_useful_s=1.0)
    # Lending from 1, the request at 50 can still start at 52 and finish by 53: t_b = 52.
    got = [(round(w.start_s, 6), round(w.ready_by_s, 6)) for w in result.windows]
    assert got == [(1.0, 52.0), (53.0, 102.0)]
    assert [round(w.reclaim_by_s, 6) for w in result.windows] == [47.0, 97.0]  # Eq. 8
    assert result.to_json()["windows"] == [list(p) for p in result.pairs()]


def test_lending_every_window_keeps_every_deadline() -> None:
    trace = load_trace()
    result = idle_windows(trace, path=ReturnPath(ready_s=0.487))
    assert len(result.windows) > 30
    starts = [0.0]
    rates = [1.0]
    for w in result.windows:  # lend everything on each window, nothing elsewhere
        starts += [w.start_s, w.ready_by_s]
        rates += [0.0, 1.0]
    lent = RateProfile(np.array(starts), np.array(rates))
    assert check_feasibility(trace, lent).feasible  # Eq. 6 on the whole trace
    for w in result.windows:
        assert w.useful_s >= result.min_useful_s
        assert w.reclaim_by_s == pytest.approx(w.ready_by_s - 0.487)
    # Windows are a scenario's calendar as they are.
    ls.Scenario(result.pairs(), 12, 5.0, 0.25, 5000.0, ls.PAPER_WARM)


def test_a_longer_return_path_leaves_fewer_windows() -> None:
    trace = load_trace()
    warm = idle_windows(trace, path=ReturnPath(ready_s=0.487))
    cold = idle_windows(trace, path=ReturnPath(ready_s=69.988))
    assert 0 < len(cold.windows) < len(warm.windows)
    assert all(w.useful_s >= 10.0 for w in cold.windows)


def test_project_trace_csv(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    write_trace_csv(path, small_trace())
    windows = idle_windows(load_trace(path), min_useful_s=1.0)
    assert len(windows.windows) == 2


def test_a_trace_that_misses_deadlines_unlent_is_refused() -> None:
    arrival = np.array([0.0, 0.0])
    trace = Trace(arrival=arrival, work=np.ones(2), deadline=np.array([1.0, 1.5]))
    with pytest.raises(ValueError, match=r"misses deadline\[1\] = 1.5 even with nothing lent"):
        idle_windows(trace)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("yesterday,1,2\n", r"line 2: TIMESTAMP must look like .* got 'yesterday'"),
        ("2023-11-16 18:17:03,1,2\n2023-13-16 18:17:04,1,2\n", r"line 3: TIMESTAMP"),
        (
            "2023-11-16 18:17:03,-1,2\n",
            r"line 2: ContextTokens must be a finite count >= 0, got '-1'",
        ),
        ("2023-11-16 18:17:03,1,-2\n", r"line 2: GeneratedTokens must be a finite count >= 0"),
        ("2023-11-16 18:17:03,1,nan\n", r"line 2: GeneratedTokens must be a finite count >= 0"),
        ("2023-11-16 18:17:03,x,2\n", r"line 2: ContextTokens must be a number, got 'x'"),
        (
            "2023-11-16 18:17:05,1,2\n2023-11-16 18:17:04,1,2\n",
            r"line 3: TIMESTAMP 2023-11-16 18:17:04 is earlier than the row before it",
        ),
        ("", "the trace holds no requests"),
    ],
)
def test_bad_azure_rows_name_the_line(tmp_path: Path, rows: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_azure_trace(write(tmp_path, AZURE_HEADER + rows))


def test_out_of_order_rows_can_be_sorted(tmp_path: Path) -> None:
    path = write(tmp_path, AZURE_HEADER + "2023-11-16 18:17:05,1,2\n2023-11-16 18:17:04,3,4\n")
    tokens = read_azure_trace(path, sort=True)
    assert tokens.arrival.tolist() == [0.0, 1.0]
    assert tokens.context_tokens.tolist() == [3.0, 1.0]


def test_unknown_header_and_project_format_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="header must hold TIMESTAMP"):
        load_trace(write(tmp_path, "a,b\n1,2\n"))
    with pytest.raises(ValueError, match=r"arrival must be sorted, got arrival\[1\]"):
        load_trace(write(tmp_path, "arrival,work,deadline\n5,1,9\n4,1,9\n"))
    with pytest.raises(ValueError, match=r"work\[0\] must be > 0"):
        load_trace(write(tmp_path, "arrival,work,deadline\n5,-1,9\n"))
    with pytest.raises(ValueError, match="missing column"):
        read_azure_trace(write(tmp_path, "TIMESTAMP,ContextTokens\n"))
