"""The paper's grid: ids, the frozen configuration, and every published figure."""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest

import learnsched as ls


def test_ids_nest_in_the_spec_order() -> None:
    grid = ls.paper_grid()
    assert len(grid) == 1920
    assert [g.sid for g in grid.scenarios] == [f"S{i:04d}" for i in range(1920)]
    cal = list(ls.CALENDARS).index("back_loaded")
    # index = ((((cal*4 + work)*5 + rate)*2 + tail)*2 + recovery)*4 + initial
    index = ((((cal * 4 + 0) * 5 + 1) * 2 + 1) * 2 + 1) * 4 + 0
    g = grid.scenarios[index]
    assert (g.sid, g.calendar, g.work_s, g.benefit_rate, g.tail_s, g.recovery, g.initial_state) == (
        "S0348",
        "back_loaded",
        30,
        0.25,
        480,
        "cold",
        "fresh",
    )
    assert g.scenario.horizon_s == 1020.0
    assert g.scenario.windows == ((0, 80), (100, 180), (200, 280), (300, 540))


def test_initial_states_are_half_complete() -> None:
    grid = ls.paper_grid()
    by_state = {g.initial_state: g.scenario.initial for g in grid.scenarios[0:4]}
    assert by_state == {
        "fresh": ls.InitialState(0, 0, False),
        "unsaved_active": ls.InitialState(3, 0, True),
        "saved_active": ls.InitialState(3, 3, True),
        "saved_service": ls.InitialState(3, 3, False),
    }


def test_config_hash_is_frozen() -> None:
    # Changing any grid parameter or cost changes this hash; update it deliberately.
    assert ls.paper_grid().config.hash == (
        "aa4096f59b25c4ec1c16ebfd1bcf5837cd2bf8ba52a472f8f1e971ef9c1ed838"
    )
    assert ls.GridConfig(quantum_s=1.0).hash != ls.GridConfig().hash


def test_fresh_only_grid_keeps_the_five_second_ids() -> None:
    fine = ls.paper_grid(quantum_s=1.0, fresh_only=True)
    assert len(fine) == 480
    assert fine.scenarios[0].sid == "S0000"
    assert fine.scenarios[1].sid == "S0004"
    assert {g.initial_state for g in fine.scenarios} == {"fresh"}
    assert fine.scenarios[87].scenario.work_quanta == fine.scenarios[87].work_s


def test_bad_grid_arguments() -> None:
    with pytest.raises(ValueError, match=r"quantum_s=7\.0 does not divide the work size 30"):
        ls.paper_grid(quantum_s=7.0)
    for bad in ("S2000", "S348", "s0348", "S03480"):
        with pytest.raises(ValueError, match=r"scenario id must be one of S0000\.\.S1919"):
            ls.scenario_by_id(bad)


def test_scenario_by_id_equals_the_grid_entry() -> None:
    grid = ls.paper_grid()
    for index in (0, 348, 1919):
        assert ls.scenario_by_id(f"S{index:04d}") == grid.scenarios[index]


def test_every_published_figure_5s(paper_grid_result: tuple[ls.Grid, ls.BatchResult]) -> None:
    summary = ls.summarize(*paper_grid_result)
    paper = ls.PAPER_FIGURES["5s"]
    assert summary.scenarios == paper["scenarios"]
    for policy, gap in paper["mean_gap"].items():
        decimals = len(str(gap).split(".")[1])
        assert round(summary.mean_gap[policy], decimals) == gap, policy
    for policy, value in paper["mean_value"].items():
        assert round(summary.mean_value[policy], 3) == value, policy
    gain = summary.mean_value["rollout"] - summary.mean_value["costed_window"]
    assert round(gain, 3) == 5.123
    assert round(100 * gain / summary.mean_value["costed_window"], 2) == 1.10
    assert (summary.wins, summary.ties, summary.losses) == (91, 1829, 0)
    assert {k: v for k, v in summary.wins_by_calendar.items() if v} == paper["wins_by_calendar"]
    assert summary.rollout_equals_dp == 1907
    assert round(summary.max_rollout_gap, 3) == 124.836
    assert summary.never_negative_initial_states == ("saved_active", "unsaved_active")


def test_all_warm_scenarios_tie(paper_grid_result: tuple[ls.Grid, ls.BatchResult]) -> None:
    grid, result = paper_grid_result
    warm = np.array([g.recovery == "warm" for g in grid.scenarios])
    assert warm.sum() == 960
    gap = result.column("rollout")[warm] - result.column("costed_window")[warm]
    assert np.all(np.abs(gap) <= 1e-9 * np.maximum(1, np.abs(result.column("rollout")[warm])))


def test_every_published_figure_1s_fresh() -> None:
    grid = ls.paper_grid(quantum_s=1.0, fresh_only=True)
    summary = ls.summarize(grid, ls.solve_batch([g.scenario for g in grid.scenarios]))
    assert summary.scenarios == 480
    assert (summary.wins, summary.ties, summary.losses) == (27, 453, 0)
    assert round(summary.mean_gap["rollout"], 3) == 0.0
    assert round(summary.mean_gap["costed_window"], 3) == 5.869


def test_summarize_checks_its_input(paper_grid_result: tuple[ls.Grid, ls.BatchResult]) -> None:
    grid, _ = paper_grid_result
    partial = ls.solve_batch([g.scenario for g in grid.scenarios[:3]], ["dp"])
    with pytest.raises(ValueError, match="result lacks policies never"):
        ls.summarize(grid, partial)


def test_grid_with_measured_costs() -> None:
    from learnsched.handoff import PAPER_PROFILE

    paper = {r: PAPER_PROFILE.handoff_costs(r) for r in ("warm", "cold")}
    assert ls.paper_grid(costs=paper).config.hash == ls.paper_grid().config.hash
    cheap = {"warm": ls.PAPER_WARM, "cold": ls.HandoffCosts(5.0, 0.0, 0.068075, 0.047748)}
    grid = ls.paper_grid(costs=cheap)
    assert grid.config.hash != ls.paper_grid().config.hash
    assert grid.scenarios[348].scenario.costs.recovery_s == 5.0
    with pytest.raises(ValueError, match="costs must be keyed 'warm' and 'cold'"):
        ls.paper_grid(costs={"cold": ls.PAPER_COLD})


def eager(g: ls.GridScenario, config: ls.GridConfig) -> ls.Scenario:
    """The grid entry built as a user would: one validated Scenario from its labels."""
    windows, start = [], 0.0
    for length in ls.CALENDARS[g.calendar]:
        windows.append((start, start + length))
        start += length + config.gap_s
    quanta = round(g.work_s / config.quantum_s)
    half = 0 if g.initial_state == "fresh" else quanta // 2
    durable = 0 if g.initial_state in ("fresh", "unsaved_active") else half
    return ls.Scenario(
        windows=windows,
        work_quanta=quanta,
        quantum_s=config.quantum_s,
        benefit_rate=g.benefit_rate,
        horizon_s=windows[-1][1] + g.tail_s,
        costs=config.costs(g.recovery),
        initial=ls.InitialState(half, durable, g.initial_state.endswith("_active")),
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"quantum_s": 1.0, "fresh_only": True},
        {"costs": {"warm": ls.PAPER_WARM, "cold": ls.HandoffCosts(5.0)}},
    ],
)
def test_the_lazy_grid_is_the_grid_built_scenario_by_scenario(kwargs: dict[str, Any]) -> None:
    grid = ls.paper_grid(**kwargs)
    built = [eager(g, grid.config) for g in grid.scenarios]
    assert [g.scenario for g in grid.scenarios] == built
    for g, scenario in zip(grid.scenarios[::37], built[::37], strict=True):
        assert json.dumps(g.scenario.to_json()) == json.dumps(scenario.to_json())
    for name in (
        "sid",
        "calendar",
        "work_s",
        "benefit_rate",
        "tail_s",
        "recovery",
        "initial_state",
    ):
        assert grid.scenarios.column(name) == tuple(getattr(g, name) for g in grid.scenarios)
    np.testing.assert_array_equal(ls.solve_batch(grid.batch).value, ls.solve_batch(built).value)


def test_grid_entries_are_made_once_and_pickle() -> None:
    grid = ls.paper_grid()
    assert grid.scenarios[5] is grid.scenarios[5]
    assert grid.scenarios[5].scenario is grid.batch[5]
    assert grid.scenarios[-1].sid == "S1919"
    again = pickle.loads(pickle.dumps(grid))
    assert again == grid
    assert again.scenarios[348] == grid.scenarios[348]
    with pytest.raises(ValueError, match="name must be 'sid' or one of calendar"):
        grid.scenarios.column("windows")
