"""Benchmarks: the Fig. 10 alert experiment, one seed, every rule, growing alerts and
samples; the whole one-seed experiment; its lead-time sweep against pricing every lead
time from scratch (how it ran before).

Run with ``pytest bench/test_bench_economics.py`` (outside the default test run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from learnsched.economics import ALERT_RULES, draw_alerts, lead_time_sweep, simulate_alerts
from learnsched.economics.alert_experiment import DEFAULT_LEAD_TIMES_S, run_alert_experiment
from learnsched.economics.alerts import mean_losses


def check(means: dict[str, dict[str, float]]) -> None:
    for rules in means.values():
        assert set(rules) == set(ALERT_RULES)
        assert all(rules["oracle"] <= rules[rule] for rule in ALERT_RULES)
        assert rules["reactive"] > rules["eager"] > rules["learnsched"] > rules["oracle"]


@pytest.mark.benchmark(group="alerts")
@pytest.mark.parametrize("n_alerts", [10**4, 10**5, 10**6])
def test_alert_experiment(benchmark: Callable[..., Any], n_alerts: int) -> None:
    check(benchmark(simulate_alerts, n_alerts, 0))


LEADS = np.array(DEFAULT_LEAD_TIMES_S)


@pytest.mark.benchmark(group="alerts: one seed with the Fig. 10(b) sweep")
def test_alert_experiment_one_seed(benchmark: Callable[..., Any]) -> None:
    """What ``learnsched econ alerts --n 1000000 --repeats 1`` computes."""
    result = benchmark.pedantic(run_alert_experiment, (10**6, [0]), rounds=3, iterations=1)
    check({engine: {r: s.mean for r, s in rules.items()} for engine, rules in result.stats.items()})
    assert result.sweep == redrawn_sweep(10**6, 0, LEADS)


def redrawn_sweep(
    n_alerts: int, seed: int, leads: np.ndarray
) -> dict[str, dict[str, tuple[float, ...]]]:
    """The sweep as it ran before its terms were shared: every lead time prices all rules
    from scratch on the draws with that lead time fixed."""
    draws = draw_alerts(n_alerts, seed)
    runs = [mean_losses(replace(draws, lead_s=np.full(n_alerts, x)), None, None) for x in leads]
    return {
        engine: {rule: tuple(run[engine][rule] for run in runs) for rule in ALERT_RULES}
        for engine in runs[0]
    }


@pytest.mark.benchmark(group="alerts: the Fig. 10(b) sweep, 7 lead times")
def test_sweep_shared_terms(benchmark: Callable[..., Any]) -> None:
    sweep = benchmark.pedantic(lead_time_sweep, (10**6, 0, LEADS), rounds=3, iterations=1)
    assert sweep == redrawn_sweep(10**6, 0, LEADS)


@pytest.mark.benchmark(group="alerts: the Fig. 10(b) sweep, 7 lead times")
def test_sweep_redrawn_baseline(benchmark: Callable[..., Any]) -> None:
    sweep = benchmark.pedantic(redrawn_sweep, (10**6, 0, LEADS), rounds=3, iterations=1)
    assert set(sweep) == {"vllm", "sglang"}


def recovery_samples(n_samples: int) -> dict[str, np.ndarray]:
    """Two engines with ``n_samples`` recovery times each, around the paper's means (s)."""
    rng = np.random.default_rng(n_samples)
    return {
        "vllm": rng.lognormal(np.log(34.7) - 0.02, 0.2, n_samples),
        "sglang": rng.lognormal(np.log(69.988) - 0.02, 0.2, n_samples),
    }


# A real measurement has hundreds of recovery samples per engine; pricing B(L) per alert
# and sample would hold 10^6 x 1200 doubles (9.6 GB) for the two engines and the pool.
@pytest.mark.benchmark(group="alerts-recovery-samples")
@pytest.mark.parametrize("n_samples", [20, 100, 500])
def test_alert_experiment_with_measured_recovery_samples(
    benchmark: Callable[..., Any], n_samples: int
) -> None:
    check(benchmark(simulate_alerts, 10**6, 0, recovery_samples(n_samples)))
