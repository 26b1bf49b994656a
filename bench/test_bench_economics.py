"""Benchmark: the Fig. 10 alert experiment, one seed, every rule, growing alerts and samples.

Run with ``pytest bench/test_bench_economics.py`` (outside the default test run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from learnsched.economics import ALERT_RULES, simulate_alerts


def check(means: dict[str, dict[str, float]]) -> None:
    for rules in means.values():
        assert set(rules) == set(ALERT_RULES)
        assert all(rules["oracle"] <= rules[rule] for rule in ALERT_RULES)
        assert rules["reactive"] > rules["eager"] > rules["learnsched"] > rules["oracle"]


@pytest.mark.benchmark(group="alerts")
@pytest.mark.parametrize("n_alerts", [10**4, 10**5, 10**6])
def test_alert_experiment(benchmark: Callable[..., Any], n_alerts: int) -> None:
    check(benchmark(simulate_alerts, n_alerts, 0))


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
