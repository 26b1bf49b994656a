"""Fig. 4 figures: the S0348 cost bars beside the timelines, labels inside their panels."""

from __future__ import annotations

from typing import Any

import pytest

import learnsched as ls

pytest.importorskip("matplotlib", reason="the figures need the plot extra (matplotlib)")

from learnsched.plotting import grid_summary_figure, plans_figure


def assert_texts_inside(fig: Any) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        for text in ax.texts:
            inner = text.get_window_extent(renderer)
            inside = (
                box.x0 <= inner.x0 <= inner.x1 <= box.x1
                and box.y0 <= inner.y0 <= inner.y1 <= box.y1
            )
            assert inside, text.get_text()


def test_grid_labels_stay_inside_their_panels() -> None:
    grid = ls.paper_grid()
    summary = ls.summarize(grid, ls.solve_batch([g.scenario for g in grid.scenarios]))
    fig = grid_summary_figure(summary)
    assert_texts_inside(fig)


def test_the_grid_figure_has_the_dp_row_and_labels_every_cell() -> None:
    """Fig. 4(a) ends with "DP 0.00"; Fig. 4(b) prints every cell, zeros included."""
    grid = ls.paper_grid()
    summary = ls.summarize(grid, ls.solve_batch(grid.batch))
    gaps, wins = grid_summary_figure(summary).axes[:2]
    rows = [t.get_text() for t in gaps.get_yticklabels()]
    assert rows == [*summary.mean_gap, "dp"]
    assert [t.get_text().strip() for t in gaps.texts][-1] == "0.000"
    assert len(gaps.texts) == len(summary.mean_gap) + 1
    labels = sorted(t.get_text() for t in wins.texts)
    assert labels == ["0"] * 10 + ["20", "71"]  # 6 calendars x (warm, cold)


def test_s0348_has_the_stacked_work_return_other_bars() -> None:
    item = ls.scenario_by_id("S0348")
    plans = ls.solve_all(item.scenario, ("costed_window", "rollout"))
    fig = plans_figure(plans, item.scenario, "S0348")
    timeline, costs = fig.axes[:2]
    assert timeline.get_xlabel() == "time (s)"
    assert costs.get_xlabel() == "cost (s-eq.)"
    widths = [round(p.get_width(), 6) for p in costs.patches]
    expected = []
    for plan in plans.values():
        c = plan.cost
        expected += [c.work, c.recovery, c.save + c.load + c.residency]
    assert widths == [round(w, 6) for w in expected]
    assert [t.get_text().strip() for t in costs.texts] == ["170.1", "100.0"]
    assert "Net gain: +68.87 s-eq." in fig._suptitle.get_text()
    assert_texts_inside(fig)
