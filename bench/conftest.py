"""bench/: pytest-benchmark rounds of at least 0.5 ms unless ``--benchmark-min-time`` is
given.

``time.process_time``, the CPU-time timer these benchmarks are run with, is a system call
costing a fraction of a microsecond. With pytest-benchmark's default round of 5 us, a call
of a microsecond or two whose first (cold) call took longer runs alone in each round and is
charged one timer call, while a faster floor gets many calls a round, so the pair's ratio
comes out too large (docs/performance.md). Rounds of 0.5 ms put the timer below 0.1% of
every benchmark here.
"""

from __future__ import annotations

import pytest

PLUGIN_DEFAULT_S = 0.000005  # pytest-benchmark's own --benchmark-min-time
ROUND_S = "0.0005"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    given = config.getoption("benchmark_min_time", default=None)
    if given is not None and float(given) == PLUGIN_DEFAULT_S:
        config.option.benchmark_min_time = ROUND_S
