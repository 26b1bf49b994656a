"""Shared by the tests/test_fuzz_*.py suites: junk values, the named-error rule, counts.

Each fuzz example either succeeds (and its invariants are checked) or raises
``ValueError``/``TypeError`` whose message names one of the arguments it was given. Any
other exception fails the example as an unnamed error; a crash ends the run; a hang of
a ``learnsched`` process exceeds that process's timeout. ``COUNTS`` holds the inputs run
per suite, printed after the run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

COUNTS: Counter[str] = Counter()
"""Fuzz inputs run, per suite (``bindings``, ``kernels``, ``cli``), and named errors."""

T = TypeVar("T")


def fuzz(max_examples: int) -> settings:
    """Seeded, bounded and reproducible: the same examples in every CI run, no database."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        # No per-example deadline: wall-clock limits fail on a loaded machine, and every
        # subprocess the suites start has its own timeout, which is what catches a hang.
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


huge_ints = st.sampled_from([2**31, -(2**31) - 1, 2**63, 10**400, -(10**400)])
junk = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=3),
    huge_ints,
    st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 1e308, -1e-300]),
    st.sampled_from(
        [np.timedelta64(3, "s"), np.datetime64(0, "s"), np.bool_(True), 1j, b"\x00", [], {}]
    ),
    st.builds(np.int64, st.integers(-5, 5)),
    st.builds(np.float32, st.floats(-10, 10, width=32)),
)


def maybe(valid: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = junk) -> Any:
    """Mostly the valid value (7 in 8), sometimes junk."""
    return st.sampled_from([True] * 7 + [False]).flatmap(lambda ok: valid if ok else bad)


def named(suite: str, names: Iterable[str], call: Callable[..., T], *args: Any) -> T | None:
    """``call(*args)``, or None after a ValueError/TypeError naming one of ``names``."""
    COUNTS[suite] += 1
    try:
        return call(*args)
    except (ValueError, TypeError) as err:
        message = str(err)
        if not any(name in message for name in names):
            raise AssertionError(f"unnamed error {type(err).__name__}: {message!r}") from err
        COUNTS[f"{suite} named errors"] += 1
        return None


# The argument names the Cython kernels' errors may use (tests/test_fuzz_kernels.py,
# tests/fuzz_registry.py).
SCAN_NAMES = ("arrival", "work", "deadline", "starts", "rates", "cum", "tolerance", "slack")
WINDOW_NAMES = (*SCAN_NAMES, "before", "best")
REPLAY_NAMES = (
    "arrival",
    "work",
    "estimate",
    "starts",
    "rates",
    "cum",
    "start_s",
    "period_s",
    "rate_window_s",
    "share",
    "step",
    "factor",
    "min_share",
    "max_share",
    "burst_rate",
    "pressure_limit_s",
    "admission_kind",
    "admission_limit",
    "stage_estimate",
    "finish",
    "shares",
)
TAIL_NAMES = ("ascending", "points", "out")
IDLE_NAMES = (
    "arrival",
    "work",
    "deadline",
    "rate",
    "recovery_s",
    "min_useful_s",
    "resolution",
    "tolerance",
)
