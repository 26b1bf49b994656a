"""Forecasters: exact, fixed samples and the empirical renewal model; calendar checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched.calendar import (
    EmpiricalForecaster,
    ExactForecaster,
    SampleForecaster,
    calendar,
    frontier,
)

HISTORY = ((0.0, 50.0), (60.0, 100.0), (130.0, 200.0), (210.0, 300.0))  # gaps 10, 30, 10


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_frontier_is_the_current_windows_end_or_now() -> None:
    assert frontier(HISTORY, 250.0) == 300.0  # inside the last window: its deadline is known
    assert frontier(HISTORY, 320.0) == 320.0  # the last window has ended: now
    assert frontier((), 5.0) == 5.0


def test_exact_gives_the_truth_after_the_frontier() -> None:
    truth = (*HISTORY, (400.0, 500.0), (600.0, 700.0))
    samples = ExactForecaster(truth).sample(HISTORY, 210.0, 650.0, 3, rng())
    assert samples == [((400.0, 500.0), (600.0, 700.0))] * 3
    assert ExactForecaster(truth).sample(HISTORY, 210.0, 550.0, 1, rng()) == [((400.0, 500.0),)]


def test_fixed_samples_keep_only_windows_after_the_current_end() -> None:
    forecaster = SampleForecaster(
        [((0.0, 80.0), (290.0, 310.0), (320.0, 400.0)), ((350.0, 360.0),)]
    )
    out = forecaster.sample(HISTORY, 210.0, 1e9, 2, rng())
    # (290, 310) starts before the current window ends at 300, so it is not used.
    assert out == [((320.0, 400.0),), ((350.0, 360.0),)]
    drawn = forecaster.sample(HISTORY, 210.0, 1e9, 5, rng(1))
    assert len(drawn) == 5
    assert set(drawn) <= set(out)


def test_empirical_resamples_whole_cycles() -> None:
    forecaster = EmpiricalForecaster()
    busy, idle = forecaster.cycles(HISTORY, 250.0)
    assert busy.tolist() == [10.0, 30.0, 10.0]
    assert idle.tolist() == [40.0, 70.0, 90.0]
    pairs = set(zip(busy.tolist(), idle.tolist(), strict=True))
    for sample in forecaster.sample(HISTORY, 250.0, 2000.0, 20, rng()):
        t = 300.0
        for start, end in sample:
            assert (start - t, end - start) in pairs  # a gap with the window it led to
            t = end
        assert sample[-1][0] < 2000.0
        assert len(sample) > 3


def test_empirical_conditions_on_the_time_since_the_last_burst() -> None:
    # 20 s into a busy period: only the 30 s gap is longer, so the next window opens
    # 10 s from now and is the 70 s one that followed it.
    for sample in EmpiricalForecaster().sample(HISTORY, 320.0, 2000.0, 10, rng(3)):
        assert sample[0] == (330.0, 400.0)
    # Longer than any gap seen: the burst is taken to end now.
    for sample in EmpiricalForecaster().sample(HISTORY, 400.0, 2000.0, 5, rng(4)):
        assert sample[0][0] == 400.0


def test_empirical_without_a_cycle_assumes_no_window() -> None:
    assert EmpiricalForecaster().sample(((0.0, 10.0),), 5.0, 100.0, 3, rng()) == [(), (), ()]
    assert EmpiricalForecaster().sample(HISTORY, 250.0, 300.0, 2, rng()) == [(), ()]


def test_empirical_needs_a_finite_horizon() -> None:
    with pytest.raises(ValueError, match="until_s must be finite"):
        EmpiricalForecaster().sample(HISTORY, 250.0, float("inf"), 1, rng())


def test_empirical_history_window() -> None:
    busy, _ = EmpiricalForecaster(history_s=130.0).cycles(HISTORY, 250.0)
    assert busy.tolist() == [10.0]  # only (130, 200) and (210, 300) started after 120
    with pytest.raises(ValueError, match="history_s must be > 0"):
        EmpiricalForecaster(history_s=0.0)


def test_empirical_is_a_function_of_the_rng() -> None:
    a = EmpiricalForecaster().sample(HISTORY, 250.0, 5000.0, 8, rng(9))
    b = EmpiricalForecaster().sample(HISTORY, 250.0, 5000.0, 8, rng(9))
    c = EmpiricalForecaster().sample(HISTORY, 250.0, 5000.0, 8, rng(10))
    assert a == b
    assert a != c


@settings(max_examples=100, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0, 100.0), min_size=1, max_size=8),
    lengths=st.lists(st.floats(0.01, 100.0), min_size=2, max_size=9),
    age=st.floats(0.0, 150.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_empirical_samples_are_valid_calendars(
    gaps: list[float], lengths: list[float], age: float, seed: int
) -> None:
    windows, t = [], 0.0
    for i, length in enumerate(lengths):
        windows.append((t, t + length))
        t += length + gaps[i % len(gaps)]
    history = calendar("history", windows)
    now = history[-1][1] + age
    until = now + 500.0
    for sample in EmpiricalForecaster().sample(history, now, until, 3, rng(seed)):
        checked = calendar("sample", sample, allow_empty=True)
        assert all(now <= w[0] < until for w in checked)


@pytest.mark.parametrize(
    ("windows", "message"),
    [
        ("[[0, 1]]", r"s must be a list of \[start, end\] pairs"),
        (5, r"s must be a list of \[start, end\] pairs"),
        ([], r"s must hold at least one \[start, end\] window"),
        ([[0, 1, 2]], r"s\[0\] must be a \[start, end\] pair"),
        ([[0, "a"]], r"s\[0\] end must be a number"),
        ([[0, float("nan")]], r"s\[0\] end must be finite"),
        ([[float("-inf"), 1]], r"s\[0\] start must be finite"),
        ([[5, 5]], r"s\[0\] must end after it starts"),
        ([[10, 20], [0, 5]], r"s\[1\] starts at 0.0 before s\[0\] ends at 20.0"),
        ([[10, 20], [15, 25]], r"s\[1\] starts at 15.0 before s\[0\] ends"),
    ],
)
def test_bad_calendars_name_the_field(windows: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        calendar("s", windows)


def test_bad_fixed_samples() -> None:
    with pytest.raises(ValueError, match=r"forecast.samples must hold at least one calendar"):
        SampleForecaster([])
    with pytest.raises(ValueError, match=r"forecast.samples must be a list"):
        SampleForecaster("x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"forecast.samples\[1\]\[0\] end must be finite"):
        SampleForecaster([((0.0, 1.0),), ((0.0, float("inf")),)])
    with pytest.raises(ValueError, match=r"forecast.samples\[0\] must hold at least one"):
        SampleForecaster([()])
