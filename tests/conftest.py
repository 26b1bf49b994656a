"""Shared fixtures: the paper's worked example and small scenario builders."""

from __future__ import annotations

import pytest

import learnsched as ls


def calendar(*durations: float, gap_s: float = 20.0) -> list[tuple[float, float]]:
    """Windows of the given lengths separated by ``gap_s``, the first at 0."""
    windows, start = [], 0.0
    for length in durations:
        windows.append((start, start + length))
        start += length + gap_s
    return windows


@pytest.fixture
def s0348() -> ls.Scenario:
    """The paper's worked example: fresh, back-loaded, 30 s work, g = 0.25, H = 1020, cold."""
    return ls.scenario_by_id("S0348").scenario


@pytest.fixture(scope="session")
def paper_grid_result() -> tuple[ls.Grid, ls.BatchResult]:
    """The 1920-scenario grid solved under all six policies."""
    grid = ls.paper_grid()
    return grid, ls.solve_batch([g.scenario for g in grid.scenarios])
