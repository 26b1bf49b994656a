"""The control loop's decision latency: what one window's decision costs the scheduler.

The loop rebuilds the model from the windows still ahead at every decision
(:class:`learnsched.control.ModelDecider`), and a forecast decision samples N calendars
first (:class:`learnsched.control.forecast.ForecastDecider`). Sizes: K windows ahead
and the demo's J = 240 quanta. Each benchmark checks its action against the solver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import learnsched as ls
from learnsched.control.loop import ModelDecider
from learnsched.control.windows import Window

Benchmark = Callable[..., Any]
COSTS = ls.HandoffCosts(recovery_s=0.3, save_s=0.05, load_s=0.03)
WORK_QUANTA = 240
QUANTUM_S = 0.15


def calendar(windows: int) -> list[Window]:
    """Windows of 2-6 s every 10 s, as a compressed trace gives them."""
    return [Window(10.0 * k, 10.0 * k + 2.0 + (k % 3) * 2.0) for k in range(windows)]


@pytest.mark.benchmark(group="control: one decision (model rebuilt), J = 240")
@pytest.mark.parametrize("windows", [10, 100, 1000])
def test_model_decision(benchmark: Benchmark, windows: int) -> None:
    ahead = calendar(windows)
    decider = ModelDecider(WORK_QUANTA, QUANTUM_S, COSTS, 1.0, 10.0 * windows + 3600.0)
    action = benchmark(decider.decide, ahead, 0, 0, False)
    expected = ls.solve(decider.scenario(ahead, 0, 0, False), "rollout").steps[0]
    assert (action.name, action.quanta) == (expected.action, expected.quanta)


@pytest.mark.benchmark(group="control: one forecast decision, 20 windows ahead, J = 240")
@pytest.mark.parametrize("samples", [16, 64])
def test_forecast_decision(benchmark: Benchmark, samples: int) -> None:
    from learnsched.control.forecast import ForecastDecider

    # Every sample is the truth (the exact forecaster): the decision must be the model's.
    ahead = calendar(21)
    horizon = 10.0 * 21 + 3600.0
    decider = ForecastDecider(
        WORK_QUANTA, QUANTUM_S, COSTS, 1.0, horizon, forecaster="exact", samples=samples,
        truth=ahead,
    )  # fmt: skip
    action = benchmark(decider.decide, ahead, 0, 0, False)
    model = ModelDecider(WORK_QUANTA, QUANTUM_S, COSTS, 1.0, horizon)
    assert action == model.decide(ahead, 0, 0, False)
