"""One scenario, every path: ``solve``, ``solve_batch``, ``Model``, ``sweep``, ``online`` with
the exact forecast and the control loop's decider give the same values bit for bit.

The docs claim each identity exactly (the same tables, the same sums in the same order):
batch results do not depend on threads (docs/solver.md), sweep rows are the batch solver's
(docs/sweeps.md), the exact forecast is the paper's policy value for value
(docs/calendar.md), and the loop decides with ``Model.decide`` on the windows ahead. The
sweep once dropped the cold path of a two-path base scenario (1099.0 where solve gave
1390.0); this test draws one- and two-path scenarios in every initial state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched.calendar import OnlineCase, evaluate_online
from learnsched.calendar.decision import FORECAST_NAMES
from learnsched.control.deciders import ModelDecider
from learnsched.control.windows import Window
from learnsched.sweep import sweep

from strategies import scenarios

POLICIES = list(ls.ALL_POLICIES)


def every_initial_state(scenario: ls.Scenario) -> list[ls.Scenario]:
    """The scenario from each valid initial state: fresh, saved and active, every split."""
    out = []
    for progress in range(scenario.work_quanta + 1):
        for durable in range(progress + 1):
            for active in (False, True):
                try:
                    state = ls.InitialState(progress, durable, active)
                    out.append(ls.Scenario(**{**_fields(scenario), "initial": state}))
                except ValueError:  # not a state: unsaved work while serving, no return fits
                    continue
    return out


def _fields(scenario: ls.Scenario) -> dict[str, object]:
    return {
        "windows": scenario.windows,
        "work_quanta": scenario.work_quanta,
        "quantum_s": scenario.quantum_s,
        "benefit_rate": scenario.benefit_rate,
        "horizon_s": scenario.horizon_s,
        "costs": scenario.costs,
    }


def check_decider_follows_the_plan(scenario: ls.Scenario, policy: ls.Policy, plan: ls.Plan) -> None:
    """The loop's decider, asked at each window of the plan from its state, takes its step."""
    decider = ModelDecider(
        scenario.work_quanta,
        scenario.quantum_s,
        scenario.costs,
        float(scenario.benefit_rate),
        scenario.horizon_s,
        policy,
    )
    windows = [Window(start, end) for start, end in scenario.windows]
    state = scenario.initial
    progress, durable, active = state.progress, state.durable, state.active
    for k, step in enumerate(plan.steps):
        action = decider.decide(windows[k:], progress, durable, active)
        assert (action.name, action.quanta, action.checkpoint) == (
            step.action,
            step.quanta,
            step.checkpoint,
        ), (k, action, step)
        if step.path is not None:
            assert action.cold == (step.path is ls.Recovery.COLD)
        assert ls.Model(scenario).decide(k, progress, durable, active, policy) == action
        # After a window every state is in service mode with its work durable.
        progress, durable, active = step.progress, step.durable, False


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.one_of(
        scenarios(max_windows=3, max_quanta=3),
        scenarios(max_windows=3, max_quanta=3, two_path=True),
    )
)
def test_every_path_gives_the_same_values(tmp_path: Path, base: ls.Scenario) -> None:
    cases = every_initial_state(base)
    assert cases  # the fresh state is always one

    solved = np.array([[ls.solve(s, p).value for p in POLICIES] for s in cases])
    batch = ls.solve_batch(cases, POLICIES, threads=2).value
    np.testing.assert_array_equal(batch, solved)  # bit for bit: assert_array_equal is exact
    for s, row in zip(cases, solved, strict=True):
        model = ls.Model(s)
        for p, value in zip(POLICIES, row, strict=True):
            plan = model.solve(p)
            assert plan.value == value
            check_decider_follows_the_plan(s, p, plan)

    spec = {
        "base": [s.to_json() for s in cases],
        "vary": {},
        "policies": [p.value for p in POLICIES],
    }
    out = tmp_path / f"sweep-{len(list(tmp_path.iterdir()))}.csv"
    result = sweep(spec, out, workers=1, chunk_rows=2, progress=False)
    np.testing.assert_array_equal(result.rows.value, solved)

    online = evaluate_online([OnlineCase.exact(s) for s in cases])
    for policy, name in FORECAST_NAMES.items():  # DP on the exact forecast is "mean_dp"
        column = POLICIES.index(policy)
        assert list(online.policies[name].values) == solved[:, column].tolist(), name
    dp = POLICIES.index(ls.Policy.DP)
    assert list(online.policies["clairvoyant"].values) == solved[:, dp].tolist()


def test_a_two_path_sweep_base_keeps_its_cold_path(tmp_path: Path) -> None:
    scenario = ls.Scenario(
        windows=((0.0, 500.0),),
        work_quanta=6,
        quantum_s=50.0,
        benefit_rate=1.0,
        horizon_s=2000.0,
        costs=ls.HandoffCosts(
            recovery_s=0.5, residency_rate=1.0, save_s=0.1, load_s=0.1, cold_recovery_s=10.0
        ),
    )
    result = sweep(
        {"base": [scenario.to_json()], "vary": {}, "policies": ["dp"]},
        tmp_path / "s.csv",
        workers=1,
        progress=False,
    )
    assert result.rows.value[0, 0] == ls.solve(scenario, "dp").value == pytest.approx(1390.0)
