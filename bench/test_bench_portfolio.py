"""Portfolio decision benchmarks: one rollout decision for 24 candidates on one
GPU, beside its floor (the portfolio Costed Window's decision, which rollout keeps unless
another choice scores higher) and the baseline of the one-candidate model asked once per candidate;
and a causal portfolio's decisions over one horizon of the shipped trace beside the one-candidate
causal run of each candidate alone.

Run with ``pytest bench/test_bench_portfolio.py`` (CPU time: ``time.process_time``). Target:
a rollout decision for 24 candidates on one GPU under 1 ms at 64 windows. Calendars grow in
geometric steps to show how the cost grows (rollout follows the reference from every
choice's successor: O(choices x stages x candidates)).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched.portfolio import Portfolio, PortfolioCandidate, PortfolioModel

Benchmark = Callable[..., Any]
WINDOWS = (16, 32, 64)
CANDIDATES = 24


def portfolio(windows: int, seed: int = 1) -> Portfolio:
    """24 paper-grid-like candidates (6-36 quanta of 5 s, rates 0.1-2 s-eq./s) on one GPU's
    calendar of ``windows`` windows of 80-300 s with 20-200 s gaps, cold return path."""
    rng = np.random.default_rng(seed)
    calendar, t = [], 0.0
    for _ in range(windows):
        length = float(rng.uniform(80, 300))
        calendar.append((t, t + length))
        t += length + float(rng.uniform(20, 200))
    jobs = [
        PortfolioCandidate(
            f"c{i:02d}",
            int(rng.integers(6, 37)),
            5.0,
            float(rng.choice([0.1, 0.25, 0.5, 1.0, 2.0])),
            t + 480.0,
            ls.PAPER_COLD.save_s,
            ls.PAPER_COLD.load_s,
        )
        for i in range(CANDIDATES)
    ]
    return Portfolio.on_windows(calendar, ls.PAPER_COLD, jobs)


@pytest.fixture(scope="module", params=WINDOWS, ids=[f"K={k}" for k in WINDOWS])
def prepared(request: pytest.FixtureRequest) -> tuple[PortfolioModel, Any]:
    model = PortfolioModel(portfolio(request.param), ["costed_window", "rollout"])
    return model, model.initial_state()


@pytest.mark.benchmark(group="portfolio decision, 24 candidates, 1 GPU", timer=time.process_time)
def test_rollout_decision(benchmark: Benchmark, prepared: tuple[PortfolioModel, Any]) -> None:
    model, state = prepared
    action = benchmark(model.decide, state, "rollout")
    # The answer: the rollout plan's first step, and never worth less than the reference.
    first = model.solve("rollout").steps[0]
    assert action.candidate == (-1 if first.candidate is None else int(first.candidate[1:]))
    assert model.solve("rollout").value >= model.solve("costed_window").value


@pytest.mark.benchmark(group="portfolio decision, 24 candidates, 1 GPU", timer=time.process_time)
def test_floor_reference_decision(
    benchmark: Benchmark, prepared: tuple[PortfolioModel, Any]
) -> None:
    model, state = prepared
    action = benchmark(model.decide, state, "costed_window")
    first = model.solve("costed_window").steps[0]
    assert action.candidate == (-1 if first.candidate is None else int(first.candidate[1:]))


@pytest.mark.benchmark(group="portfolio decision, 24 candidates, 1 GPU", timer=time.process_time)
def test_baseline_todays_model_once_per_candidate(
    benchmark: Benchmark, prepared: tuple[PortfolioModel, Any]
) -> None:
    model, _ = prepared
    p = model.portfolio
    costs = ls.HandoffCosts(
        p.recovery_s, p.residency_rate, p.candidates[0].save_s, p.candidates[0].load_s
    )
    singles = [
        ls.Model(
            ls.Scenario(p.gpus[0], c.work_quanta, c.quantum_s, c.benefit_rate, c.horizon_s, costs)
        )
        for c in p.candidates
    ]

    def each() -> list[ls.Action]:
        return [m.decide(0, 0, 0, False, "rollout") for m in singles]

    actions = benchmark(each)
    assert len(actions) == CANDIDATES


@pytest.fixture(scope="module")
def causal_horizon() -> tuple[Any, list[Any], list[Any], list[Any]]:
    """The shipped trace's horizon [600, 1200) s, 24 candidates of the causal study (warm
    path), their risk_rollout forecasts (N = 16, one shared gap pool)."""
    from learnsched.calendar import AZURE_TRACE, load_trace
    from learnsched.calendar.causal import CausalForecast, CausalTrace, core_candidate
    from learnsched.calendar.study import make_forecaster
    from learnsched.portfolio.causal import candidate_scenario, study_candidates

    trace = CausalTrace(load_trace(AZURE_TRACE))
    jobs = study_candidates(np.random.default_rng(3), 1200.0, ls.PAPER_WARM)
    p = Portfolio.on_windows([(0.0, 1.0)], ls.PAPER_WARM, jobs)
    scenarios = [candidate_scenario(c, p) for c in jobs]
    forecasts, pool = [], None
    for s in scenarios:
        f = CausalForecast(
            trace, s, 600.0, make_forecaster("empirical"), 16, np.random.default_rng(0), pool=pool
        )
        pool = f.pool
        forecasts.append(f)
    return trace, [core_candidate(s, 1.0) for s in scenarios], forecasts, jobs


@pytest.mark.benchmark(
    group="causal portfolio: one 600 s horizon, 24 candidates", timer=time.process_time
)
@pytest.mark.parametrize("policy", ["sequential", "density", "gain"])
def test_causal_portfolio_horizon(
    benchmark: Benchmark, causal_horizon: tuple[Any, list[Any], list[Any], list[Any]], policy: str
) -> None:
    from learnsched import _core

    trace, core, forecasts, _ = causal_horizon

    def run() -> dict[str, Any]:
        return _core.portfolio.run_portfolio_causal(
            trace.schedule,
            core,
            [0] * len(core),
            [f.pool for f in forecasts],
            [f.tables for f in forecasts],
            600.0,
            1200.0,
            policy,
            "risk_rollout",
            0.95,
            7,
        )

    out = benchmark(run)
    assert out["handoffs"] == sum(out["loans"])


@pytest.mark.benchmark(
    group="causal portfolio: one 600 s horizon, 24 candidates", timer=time.process_time
)
def test_baseline_each_candidate_alone(
    benchmark: Benchmark, causal_horizon: tuple[Any, list[Any], list[Any], list[Any]]
) -> None:
    """Baseline: the one-candidate causal run of each candidate alone on the horizon (24 runs)."""
    from learnsched import _core

    trace, core, forecasts, _ = causal_horizon
    jobs = [
        _core.causal.CausalJob(c, 600.0, 1200.0, "risk_rollout", 0.95, f.pool, f.tables, 7, False)
        for c, f in zip(core, forecasts, strict=True)
    ]
    outs = benchmark(_core.causal.run_causal, trace.schedule, jobs)
    assert len(outs) == CANDIDATES
