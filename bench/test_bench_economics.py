"""Benchmark: the Fig. 10 alert experiment, one seed, both paper engines, every rule.

Run with ``pytest bench/test_bench_economics.py`` (outside the default test run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from learnsched.economics import ALERT_RULES, simulate_alerts


@pytest.mark.benchmark(group="alerts")
@pytest.mark.parametrize("n_alerts", [10**4, 10**5, 10**6])
def test_alert_experiment(benchmark: Callable[..., Any], n_alerts: int) -> None:
    means = benchmark(simulate_alerts, n_alerts, 0)
    for rules in means.values():
        assert set(rules) == set(ALERT_RULES)
        assert all(rules["oracle"] <= rules[rule] for rule in ALERT_RULES)
        assert rules["reactive"] > rules["eager"] > rules["learnsched"] > rules["oracle"]
