"""learnsched._core.forecast.ForecastModel: decisions under sampled calendars, its guards and threads."""

from __future__ import annotations

import bisect
import itertools
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.calendar import ForecastDecision

import forecast_reference
from conftest import TWO_PATH, calendar, one_line, run, write_file
from strategies import scenarios, to_reference

POLICIES = [_core.finite.Policy.WINDOW, _core.finite.Policy.COSTED_WINDOW, _core.finite.Policy.ROLLOUT, _core.finite.Policy.DP]


def current(
    window: tuple[float, float] = (0.0, 80.0), work_quanta: int = 6, horizon_s: float = 1020.0
) -> _core.finite.Scenario:
    costs = ls.PAPER_COLD.to_core()
    return _core.finite.Scenario(
        [window], work_quanta, 5.0, 0.25, horizon_s, costs, _core.finite.State(0, 0, 0, False)
    )


def packed(samples: list[list[tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray]:
    flat = [w for s in samples for w in s]
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in samples]))).astype(np.int64)
    return np.array(flat, dtype=np.float64).reshape(-1, 2), offsets


def forecast(
    samples: list[list[tuple[float, float]]], threads: int = 1, **kw: object
) -> _core.forecast.ForecastModel:
    windows, offsets = packed(samples)
    return _core.forecast.ForecastModel(kw.get("cur", current()), windows, offsets, POLICIES, threads)


def random_samples(
    rng: np.random.Generator, n: int, k: int, start: float
) -> list[list[tuple[float, float]]]:
    out = []
    for _ in range(n):
        t, s = start, []
        for _ in range(k):
            t += float(rng.uniform(5, 60))
            length = float(rng.uniform(20, 300))
            s.append((t, t + length))
            t += length
        out.append(s)
    return out


def test_means_are_the_mean_of_each_samples_model() -> None:
    samples = random_samples(np.random.default_rng(1), 5, 4, 80.0)
    model = forecast(samples)
    per_sample = [ls.Model(ls.Scenario(s, 6, 5.0, 0.25, 1020.0, ls.PAPER_COLD)) for s in samples]
    for q in range(7):
        assert model.mean_reference_values()[q] == pytest.approx(
            np.mean([m.reference_value(0, q, q) for m in per_sample]), abs=1e-9
        )
        assert model.mean_optimal_values()[q] == pytest.approx(
            np.mean([m.optimal_value(0, q, q) for m in per_sample]), abs=1e-9
        )
        assert model.mean_window_plan_values()[q] == pytest.approx(
            np.mean([m.window_plan_value(0, q, q) for m in per_sample]), abs=1e-9
        )


def test_an_empty_sample_continues_with_nothing() -> None:
    model = forecast([[]])
    assert model.mean_optimal_values() == [0.0] * 7
    # With no later window, waiting is worth nothing: the short window is used or left.
    assert model.decide(0, 0, False, _core.finite.Policy.DP).name in ("wait", "advance", "publish")


def test_one_true_sample_decides_as_the_paper(s0348: ls.Scenario) -> None:
    full = ls.Model(s0348)
    windows = list(s0348.windows)
    for k, window in enumerate(windows):
        model = ForecastDecision(s0348, window, [tuple(windows[k + 1 :])])
        for q in range(s0348.work_quanta + 1):
            for policy in ("window", "costed_window", "rollout", "dp"):
                assert model.decide(q, q, False, policy) == full.decide(k, q, q, False, policy)


def test_threads_give_identical_results() -> None:
    samples = random_samples(np.random.default_rng(2), 37, 6, 80.0)
    one, four = forecast(samples, 1), forecast(samples, 4)
    assert one.mean_reference_values() == four.mean_reference_values()
    assert one.mean_optimal_values() == four.mean_optimal_values()
    assert one.mean_window_plan_values() == four.mean_window_plan_values()


def test_construction_releases_the_gil() -> None:
    samples = random_samples(np.random.default_rng(3), 64, 20, 80.0)
    windows, offsets = packed(samples)
    cur = current(work_quanta=36)
    results: list[object] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(_core.forecast.ForecastModel(cur, windows, offsets, POLICIES, 1))
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4


def test_only_requested_tables_are_built() -> None:
    windows, offsets = packed([[(100.0, 200.0)]])
    model = _core.forecast.ForecastModel(current(), windows, offsets, [_core.finite.Policy.DP], 1)
    model.decide(0, 0, False, _core.finite.Policy.DP)
    with pytest.raises(ValueError, match="rollout was not among"):
        model.decide(0, 0, False, _core.finite.Policy.ROLLOUT)
    with pytest.raises(ValueError, match="mean reference values were not built"):
        model.mean_reference_values()


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([], "samples must hold at least one calendar"),
        ([[(100.0, 90.0)]], r"samples\[0\]: windows\[0\] must end after it starts"),
        ([[(100.0, 200.0), (150.0, 300.0)]], r"samples\[0\]: windows\[1\] starts at 150"),
        (
            [[(100.0, 200.0)], [(50.0, 90.0)]],
            r"samples\[1\]: windows\[0\] starts at 50.* before the current window ends",
        ),
        ([[(100.0, float("nan"))]], r"samples\[0\]: windows\[0\] must be finite"),
        ([[(100.0, float("inf"))]], r"samples\[0\]: windows\[0\] must be finite"),
    ],
)
def test_bad_samples_name_the_sample(
    samples: list[list[tuple[float, float]]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        forecast(samples)


def test_bad_arguments() -> None:
    windows, offsets = packed([[(100.0, 200.0)]])
    with pytest.raises(ValueError, match="threads must be >= 1"):
        _core.forecast.ForecastModel(current(), windows, offsets, POLICIES, 0)
    two = _core.finite.Scenario(
        calendar(80, 80), 6, 5.0, 0.25, 1020.0, ls.PAPER_COLD.to_core(), _core.finite.State(0, 0, 0, False)
    )
    with pytest.raises(ValueError, match="exactly one window"):
        _core.forecast.ForecastModel(two, windows, offsets, POLICIES, 1)
    with pytest.raises(ValueError, match="policies under a forecast must be"):
        _core.forecast.ForecastModel(current(), windows, offsets, [_core.finite.Policy.NEVER], 1)
    with pytest.raises(ValueError, match="offsets must start at 0"):
        _core.forecast.ForecastModel(current(), windows, np.array([0, 2], dtype=np.int64), POLICIES, 1)
    with pytest.raises(ValueError, match="shape"):
        _core.forecast.ForecastModel(current(), np.zeros(3), offsets, POLICIES, 1)
    model = forecast([[(100.0, 200.0)]])
    with pytest.raises(ValueError, match="durable must be in"):  # states checked as Model's
        model.decide(1, 2, True, _core.finite.Policy.ROLLOUT)
    with pytest.raises(ValueError, match="progress must be in"):
        model.take(7, 7, False, _core.finite.Action(_core.finite.ActionKind.WAIT))


def test_prebuilt_tables_give_the_rows_after_the_current_window() -> None:
    full = random_samples(np.random.default_rng(4), 6, 5, 0.0)
    windows, offsets = packed(full)
    tables = _core.forecast.SampleTables(current(), windows, offsets, POLICIES, 2)
    assert tables.sample_count == 6
    for k in range(3):  # the current window is the k-th of the first sample
        window = full[0][k]
        after = [[w for w in s if w[0] >= window[1]] for s in full]
        direct = forecast(after, cur=current(window))
        prebuilt = _core.forecast.ForecastModel(current(window), tables)
        assert prebuilt.mean_reference_values() == direct.mean_reference_values()
        assert prebuilt.mean_optimal_values() == direct.mean_optimal_values()
        assert prebuilt.mean_window_plan_values() == direct.mean_window_plan_values()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    windows=st.integers(0, 40),
    times=st.lists(
        st.floats(-100.0, 20_000.0) | st.sampled_from([float("inf"), -float("inf"), float("nan")]),
        max_size=20,
    ),
)
def test_row_after_is_the_first_window_starting_at_or_after_the_time(
    seed: int, windows: int, times: list[float]
) -> None:
    # row_after's search is branch-free (a decision asks it at random times): it must give
    # bisect_left's index over the starts, NaN included (index 0, as std::lower_bound).
    rng = np.random.default_rng(seed)
    ends = 100.0 + np.cumsum(rng.uniform(5, 60, windows) + rng.uniform(150, 300, windows))
    sample = [(float(e) - 150.0, float(e)) for e in ends]  # 150 s each, apart
    packed_windows, offsets = packed([sample])
    # Each window can publish and the horizon is past them all, so every row differs.
    tables = _core.forecast.SampleTables(current(horizon_s=1e5), packed_windows, offsets, POLICIES, 1)
    starts = [w[0] for w in sample]
    rows = [tables.row_after(0, t, "reference") for t in starts]
    rows.append([0.0] * 7)  # after the last start: no window left
    assert len({tuple(r) for r in rows}) == len(rows)
    between = [(a + b) / 2 for a, b in itertools.pairwise(starts)]
    for t in [*times, *starts, *between]:
        assert tables.row_after(0, t, "reference") == rows[bisect.bisect_left(starts, t)], t


def test_prebuilt_tables_must_match_the_candidate() -> None:
    windows, offsets = packed([[(100.0, 200.0)]])
    tables = _core.forecast.SampleTables(current(), windows, offsets, POLICIES, 1)
    with pytest.raises(ValueError, match="tables were built for another candidate"):
        _core.forecast.ForecastModel(current(work_quanta=7), tables)
    bad, bad_offsets = packed([[(100.0, 200.0), (150.0, 300.0)]])
    with pytest.raises(ValueError, match=r"samples\[0\]: windows\[1\] starts at 150"):
        _core.forecast.SampleTables(current(), bad, bad_offsets, POLICIES, 1)


def test_take_refuses_an_infeasible_action() -> None:
    model = forecast([[(100.0, 200.0)]], cur=current((0.0, 75.0)))
    # 75 s cannot hold the 69.988 s return plus 2 quanta of 5 s with a checkpoint.
    with pytest.raises(ValueError, match=r"not feasible in the current window \(Eq. 10\)"):
        model.take(0, 0, False, _core.finite.Action(_core.finite.ActionKind.ADVANCE, 2, True))
    seg = model.take(0, 0, False, _core.finite.Action(_core.finite.ActionKind.WAIT))
    assert seg.next.window == 1


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
def test_rollout_never_scores_below_the_reference_under_a_forecast(seed: int, n: int) -> None:
    # Eq. 11 keeps pi0's action unless another scores strictly higher: the expected score
    # of the chosen action is at least pi0's.
    samples = random_samples(np.random.default_rng(seed), n, 3, 80.0)
    model = forecast(samples)
    mean_ref = model.mean_reference_values()
    for q in range(7):
        chosen = model.decide(q, q, False, _core.finite.Policy.ROLLOUT)
        base = model.decide(q, q, False, _core.finite.Policy.COSTED_WINDOW)

        def score(action: _core.finite.Action, q: int = q) -> float:
            seg = model.take(q, q, False, action)
            terminal = action.name in ("publish", "abandon")
            return seg.benefit - seg.cost.total + (0.0 if terminal else mean_ref[seg.next.durable])

        assert score(chosen) >= score(base) - 1e-9


@settings(max_examples=80, deadline=None)
@given(scenario=scenarios(max_windows=4), seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_decisions_match_the_pure_python_reference(
    scenario: ls.Scenario, seed: int, n: int
) -> None:
    rng = np.random.default_rng(seed)
    current_window = scenario.windows[0]
    samples = []
    for _ in range(n):  # later windows of random lengths and gaps after the current one
        t, sample = current_window[1], []
        for _ in range(int(rng.integers(0, 4))):
            t += float(rng.integers(0, 10))
            length = float(rng.integers(1, 12))
            sample.append((t, t + length))
            t += length
        samples.append(tuple(sample))
    model = ForecastDecision(scenario, current_window, samples)
    base = to_reference(scenario)
    init = scenario.initial
    states = [(init.progress, init.durable, init.active)] + [
        (q, q, False) for q in range(scenario.work_quanta + 1)
    ]
    for p, pbar, active in states:
        for policy in ("window", "costed_window", "rollout", "dp"):
            got = model.decide(p, pbar, active, policy)
            want = forecast_reference.decide(
                base, current_window, samples, policy, (0, p, pbar, active)
            )
            assert (got.name, got.quanta, got.checkpoint, got.cold) == want


# --- sample tables: offsets and sizes checked before anything is built ------------------------


def test_sample_tables_refuse_out_of_bounds_offsets() -> None:
    """Offsets are checked before the samples are read: out of bounds, the binding would
    read past its buffer."""
    candidate = ls.Scenario.from_json({**TWO_PATH, "horizon_s": 5000.0}).to_core()
    windows = np.array([[600.0, 700.0], [800.0, 900.0]])
    policies = [_core.finite.Policy.DP]
    for offsets in ([0, 100, 2], [0, -5, 2], [0, 3, 2], [0, 2, 1, 2]):
        with pytest.raises(ValueError, match="offsets"):
            _core.forecast.SampleTables(candidate, windows, np.array(offsets), policies)
    current = _core.finite.Scenario(
        [(0.0, 500.0)], 6, 50.0, 1.0, 5000.0, candidate.costs, _core.finite.State(0, 0, 0, False)
    )
    with pytest.raises(ValueError, match="offsets"):
        _core.forecast.ForecastModel(current, windows, np.array([0, 7, 2]), policies)
    with pytest.raises(ValueError, match="more than the limit of 65536"):
        _core.forecast.SampleTables(candidate, windows, np.zeros(2**16 + 2, dtype=np.int64), policies)


def online_spec(work_quanta: int, samples: int) -> dict[str, Any]:
    return {
        "windows": [[0, 10]],
        "work_quanta": work_quanta,
        "quantum_s": 1e-6,
        "benefit_rate": 1,
        "horizon_s": 1000,
        "recovery_s": 1,
        "residency_rate": 0,
        "save_s": 0,
        "load_s": 0,
        "initial": {"progress": 0, "durable": 0, "active": False},
        # Distinct samples: equal ones would share one build (SampleTables dedupes them).
        "forecast": {"samples": [[[100 + i, 200 + i]] for i in range(samples)]},
    }


def test_online_samples_x_states_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1.8 KB SPEC (J = 2^23 - 2, 64 one-window samples) asks for gigabytes of tables: the
    size is refused, in one line, before any table is built."""
    spec = write_file(tmp_path / "o.json", json.dumps(online_spec(2**23 - 2, 64)))
    status, out, err = run(capsys, "online", spec)
    assert (status, out) == (2, "")
    line = one_line(err)
    assert line.endswith(  # the size asked: 64 x 2 x (2^23 - 1), before any table is built
        "samples x states: the sum over 64 samples of (windows + 1) x (work_quanta + 1) = "
        "1073741696 exceeds the limit of 16777216"
    )


def test_core_sample_tables_bound_the_sum_of_their_states() -> None:
    candidate = ls.Scenario.from_json(
        {k: v for k, v in online_spec(2**23 - 2, 1).items() if k != "forecast"}
    ).to_core()
    windows = np.array([[100.0 + i, 200.0 + i] for i in range(64)])  # distinct: built apart
    offsets = np.arange(65, dtype=np.int64)
    with pytest.raises(ValueError, match=r"= 1073741696 exceeds the limit of 16777216"):
        _core.forecast.SampleTables(candidate, windows, offsets, [_core.finite.Policy.DP])
    assert _core.forecast.MAX_SAMPLE_STATES == _core.finite.MAX_STATES
