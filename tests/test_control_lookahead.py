"""The bounded look-ahead: a decision's cost does not grow with the calendar."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched.control.deciders import ModelDecider
from learnsched.control.lookahead import Lookahead, capped_value, full_value
from learnsched.control.windows import Window

COSTS = ls.HandoffCosts(recovery_s=0.3, save_s=0.05, load_s=0.03)


def calendar(count: int) -> list[Window]:
    """Windows of 2-6 s every 10 s."""
    return [Window(10.0 * k, 10.0 * k + 2.0 + (k % 3) * 2.0) for k in range(count)]


def test_a_day_of_windows_with_a_large_job_decides() -> None:
    """6000 windows x J = 3000 passed the core's table limit at the first window (exit
    2); the capped plan decides, as the full plan over the same first windows would."""
    ahead = calendar(6000)
    decider = ModelDecider(3000, 0.15, COSTS, 1.0, 10.0 * 6000 + 3600.0)
    action = decider.decide(ahead, 0, 0, False)
    planned = decider.scenario(ahead, 0, 0, False)
    assert len(planned.windows) == decider.lookahead.cut(
        [(w.start_s, w.end_s) for w in ahead], 3000 * 0.15, 0.38
    )
    assert 64 <= len(planned.windows) <= 1024
    assert action == ls.Model(planned).decide(0, 0, 0, False, "rollout")
    # One kept model, rebuilt: later decisions (any state) answer as fresh models do.
    for progress in (0, 100, 2999):
        later = decider.scenario(ahead[7:], progress, progress, False)
        got = decider.decide(ahead[7:], progress, progress, False)
        assert got == ls.Model(later).decide(0, progress, progress, False, "rollout")


def test_a_cap_that_cuts_nothing_plans_the_whole_calendar() -> None:
    ahead = calendar(40)
    capped = ModelDecider(240, 0.15, COSTS, 1.0, 4000.0)
    assert capped.scenario(ahead, 0, 0, False).windows == tuple((w.start_s, w.end_s) for w in ahead)


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.floats(1.0, 50.0), min_size=1, max_size=30),
    windows=st.integers(1, 10),
    cover=st.floats(0.0, 4.0),
    work_left=st.floats(0.0, 500.0),
    handoff=st.floats(0.0, 5.0),
)
def test_cut_extends_the_cap_until_the_work_is_covered(
    lengths: list[float], windows: int, cover: float, work_left: float, handoff: float
) -> None:
    ahead, start = [], 0.0
    for length in lengths:
        ahead.append((start, start + length))
        start += length + 1.0
    cap = Lookahead(windows=windows, cover=cover, max_windows=20)
    count = cap.cut(ahead, work_left, handoff)
    assert 1 <= count <= min(len(ahead), 20)
    assert count >= min(len(ahead), windows)
    usable = [max(b - a - handoff, 0.0) for a, b in ahead]
    if count > windows:  # extended: the windows before the last did not cover the work
        assert math.fsum(usable[: count - 1]) < cover * work_left
    if count < min(len(ahead), 20):
        assert count == min(len(ahead), windows) or math.fsum(usable[:count]) >= cover * work_left


def test_seconds_cap_and_bad_caps() -> None:
    ahead = [(0.0, 1.0), (100.0, 101.0), (4000.0, 4001.0)]
    assert Lookahead(windows=3, cover=0.0, seconds=3600.0).cut(ahead) == 2
    with pytest.raises(ValueError, match="windows must be >= 1"):
        Lookahead(windows=0)
    with pytest.raises(ValueError, match="max_windows must be >= 64"):
        Lookahead(max_windows=10)
    with pytest.raises(ValueError, match="cover must be >= 0"):
        Lookahead(cover=-1.0)


@pytest.mark.parametrize("policy", ["rollout", "dp"])
def test_capped_value_is_the_full_value_when_nothing_is_cut(policy: str) -> None:
    scenario = ls.scenario_by_id("S0348").scenario
    assert capped_value(scenario, policy, Lookahead()) == pytest.approx(
        full_value(scenario, policy), abs=1e-9
    )
    # Two windows and no cover: the long job never sees where it would publish.
    short = capped_value(scenario, policy, Lookahead(windows=1, cover=0.0, max_windows=1))
    assert short <= full_value(scenario, policy) + 1e-9


def test_the_cap_costs_nothing_on_the_shipped_trace() -> None:
    """docs/scheduler-operations.md's table: the realised value of re-planning over a
    capped look-ahead against the whole calendar, on the shipped Azure trace's 55
    windows, 12 jobs x warm/cold x rollout/DP. A fixed cap of 4 or 16 windows starves
    long jobs (they never see where they would publish); the cover does not."""
    from learnsched.calendar import AZURE_TRACE, idle_windows, load_trace

    windows = [(w.start_s, w.ready_by_s) for w in idle_windows(load_trace(AZURE_TRACE)).windows]
    assert len(windows) == 55
    horizon = windows[-1][1] + 3600.0
    caps = {
        "4": Lookahead(4, cover=0.0, max_windows=4),
        "16": Lookahead(16, cover=0.0, max_windows=16),
        "4, cover 1": Lookahead(4, cover=1.0),
        "4, cover 2": Lookahead(4),
        "default": Lookahead(),
    }
    losses: dict[str, list[float]] = {name: [] for name in caps}
    fulls = []
    for costs in (
        ls.HandoffCosts(recovery_s=0.487, residency_rate=0.06383, save_s=0.068, load_s=0.048),
        ls.HandoffCosts(recovery_s=69.988, save_s=0.068, load_s=0.048),
    ):
        for work_s in (300, 900, 1800):
            for rate in (0.25, 1.0):
                scenario = ls.Scenario(
                    windows=windows, work_quanta=work_s // 5, quantum_s=5.0,
                    benefit_rate=rate, horizon_s=horizon, costs=costs,
                )  # fmt: skip
                for policy in ("rollout", "dp"):
                    full = full_value(scenario, policy)
                    fulls.append(full)
                    for name, cap in caps.items():
                        losses[name].append(capped_value(scenario, policy, cap) - full)
    total = math.fsum(fulls)
    share = {name: round(100 * math.fsum(v) / total, 1) for name, v in losses.items()}
    lossy = {name: sum(x < -1e-9 for x in v) for name, v in losses.items()}
    assert share == {"4": -67.7, "16": -30.6, "4, cover 1": -9.7, "4, cover 2": 0.0,
                     "default": 0.0}  # fmt: skip
    assert lossy == {"4": 14, "16": 10, "4, cover 1": 10, "4, cover 2": 0, "default": 0}
