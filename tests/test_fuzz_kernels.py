"""Fuzz the Cython kernels and the capacity API: named errors, never a crash or a hang,
and on valid input the Eq. 6 scan agrees with the pair-by-pair reference."""

from __future__ import annotations

import math
from typing import Any

import capacity_reference as reference
import numpy as np
from fuzzing import (
    COUNTS,
    IDLE_NAMES,
    REPLAY_NAMES,
    SCAN_NAMES,
    TAIL_NAMES,
    WINDOW_NAMES,
    fuzz,
    junk,
    maybe,
    named,
)
from hypothesis import given
from hypothesis import strategies as st

from learnsched import _capacity
from learnsched.capacity import RateProfile, Trace, check_feasibility, lend

DTYPES = ["f8", "f4", "f2", "i8", "i4", "u1", "?", "m8[s]", "c16", "O", "U1"]


@st.composite
def arrays(draw: st.DrawFn, n: int) -> Any:
    """Mostly a float64 array of length n; else another dtype, length, layout or junk."""
    values = draw(
        st.lists(st.floats(-10, 10) | st.sampled_from([0.0, 1.0, math.nan]), min_size=n, max_size=n)
    )
    kind = draw(st.integers(0, 9))
    if kind <= 5:
        return np.array(values, dtype=np.float64)
    if kind == 6:
        dtype = draw(st.sampled_from(DTYPES))
        try:
            with np.errstate(all="ignore"):  # NaN cast to an integer dtype
                return np.array(values, dtype=np.float64).astype(dtype)
        except (TypeError, ValueError):
            return np.array(values, dtype=object)
    if kind == 7:
        return np.repeat(np.array(values, dtype=np.float64), 2)[::2]  # strided
    if kind == 8:
        return draw(st.sampled_from([values, values[:-1], [[v] for v in values], None]))
    return draw(junk)


def outputs(n: int) -> st.SearchStrategy[Any]:
    good = st.builds(lambda: np.full(n, np.inf))  # filled: no uninitialized memory read
    return maybe(good, st.sampled_from([None, [0.0] * n, np.ones(n, "f4"), np.ones(n + 1)]))


@fuzz(250)
@given(
    st.integers(0, 5).flatmap(
        lambda n: st.tuples(
            *([arrays(n)] * 3), *([arrays(2)] * 3), maybe(st.floats(0, 1)), outputs(n)
        )
    )
)
def test_fuzz_feasibility_scan(args: tuple[Any, ...]) -> None:
    result = named("kernels", SCAN_NAMES, _capacity.feasibility_scan, *args)
    assert result is None or -1 <= result < max(len(args[0]), 1)


@fuzz(150)
@given(
    st.integers(0, 5).flatmap(lambda n: st.tuples(*([arrays(n)] * 3), *([arrays(2)] * 3))),
    maybe(st.floats(-5, 5)),
    maybe(st.floats(-5, 5) | st.just(math.inf)),
    st.integers(0, 5).flatmap(outputs),
)
def test_fuzz_scan_window(arrays6: tuple[Any, ...], before: Any, best: Any, slack: Any) -> None:
    result = named("kernels", WINDOW_NAMES, _capacity.scan_window, *arrays6, before, best, slack)
    assert result is None or isinstance(result, float)  # NaN inputs: meaningless, safe


@fuzz(150)
@given(
    st.integers(0, 4).flatmap(lambda n: st.tuples(*([arrays(n)] * 3), *([arrays(2)] * 3))),
    st.tuples(*[maybe(st.floats(0.1, 2)) for _ in range(3)]),
    st.tuples(*[maybe(st.floats(0, 1)) for _ in range(5)]),
    st.tuples(maybe(st.floats(0, 50)), maybe(st.floats(0, 50))),
    st.tuples(maybe(st.integers(0, 2)), maybe(st.floats(0, 5)), maybe(st.floats(0, 5))),
    st.integers(0, 4).flatmap(outputs),
    st.integers(1, 40).flatmap(outputs),
)
def test_fuzz_replay(
    profile: tuple[Any, ...],
    timing: tuple[Any, ...],
    rule: tuple[Any, ...],
    pressure: tuple[Any, ...],
    admission: tuple[Any, ...],
    finish: Any,
    shares: Any,
) -> None:
    args = [*profile, *timing, *rule, *pressure, *admission, finish, shares]
    result = named("kernels", REPLAY_NAMES, _capacity.replay, *args)
    assert result is None or isinstance(result, float)  # NaN inputs: meaningless, safe


@fuzz(100)
@given(
    arrays(3),
    arrays(2),
    maybe(
        st.builds(lambda: np.zeros(2, dtype=np.intp)), st.sampled_from([np.zeros(2), None, [0, 0]])
    ),
)
def test_fuzz_tail_counts(ascending: Any, points: Any, out: Any) -> None:
    named("kernels", TAIL_NAMES, _capacity.tail_counts, ascending, points, out)


@fuzz(150)
@given(
    st.integers(0, 6).flatmap(lambda n: st.tuples(*([arrays(n)] * 3))),
    st.tuples(*[maybe(st.floats(0, 5) | st.just(math.inf)) for _ in range(4)]),
    maybe(st.floats(0, 1e-6)),
)
def test_fuzz_idle_window_bounds(
    arrays3: tuple[Any, ...], scalars: tuple[Any, ...], tolerance: Any
) -> None:
    result = named(
        "kernels", IDLE_NAMES, _capacity.idle_window_bounds, *arrays3, *scalars, tolerance
    )
    assert result is None or len(result) == 3  # unsorted or NaN inputs: meaningless, safe


sorted_times = st.lists(st.floats(0, 100), min_size=1, max_size=6).map(sorted)


@fuzz(200)
@given(
    sorted_times,
    st.sampled_from([0.0, 1.7e9, 1e12]),
    st.lists(st.floats(0.1, 5), min_size=6, max_size=6),
    st.lists(st.floats(0, 10), min_size=6, max_size=6),
    st.lists(st.floats(0, 3), min_size=1, max_size=3),
)
def test_fuzz_feasibility_matches_reference(
    arrival: list[float],
    origin: float,
    work: list[float],
    budgets: list[float],
    rates: list[float],
) -> None:
    """Valid traces at any time origin: the scan's verdicts equal the O(n^2) definition."""
    n = len(arrival)
    a = [origin + t for t in arrival]
    d = [t + b for t, b in zip(a, budgets[:n], strict=True)]
    starts = [origin + 30.0 * j for j in range(len(rates))]
    trace = Trace(a, work[:n], d)
    capacity = RateProfile(starts, rates)
    check = check_feasibility(trace, capacity)
    COUNTS["kernels"] += 1
    expected = reference.slack(
        list(trace.arrival), work[:n], list(trace.deadline), list(capacity.starts), rates
    )
    scale = 1e-9 * (1.0 + sum(work[:n]) + 300.0)  # of the work and service: not the origin
    for ours, theirs in zip(check.slack, expected, strict=True):
        assert abs(ours - theirs) <= 1e-6 * max(1.0, abs(theirs)) + scale


@fuzz(150)
@given(
    maybe(st.lists(st.floats(0, 10), min_size=1, max_size=4)),
    st.one_of(junk, st.floats(0, 1), st.lists(maybe(st.floats(0, 1)), min_size=1, max_size=4)),
)
def test_fuzz_profiles_and_lending(rates: Any, shares: Any) -> None:
    if not isinstance(rates, list):
        named("kernels", ("starts", "rates"), RateProfile, [0.0], rates)
        return
    capacity = named("kernels", ("starts", "rates"), RateProfile, list(range(len(rates))), rates)
    if capacity is None:
        return
    lent = named("kernels", ("share", "shares", "capacity"), lend, capacity, shares)
    if lent is not None:
        assert np.all(lent.rates <= capacity.rates)
        assert np.all(lent.rates >= 0)
