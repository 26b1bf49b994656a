"""Break-even start, effective reuse and payback (Section 3.2, Eqs. 3-5; Section 6.4, Fig. 13)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnsched.economics import (
    PAPER_GPU_COSTS,
    ReusePath,
    UseCosts,
    expected_reuse_value,
    payback_uses,
)


def path(**overrides: float) -> ReusePath:
    fields = {
        "arrival_rate": 2.0,
        "use_fraction": 0.5,
        "unit_value": 1.0,
        "horizon_s": 1000.0,
        "build_s": 100.0,
        "cost": 300.0,
    }
    fields.update(overrides)
    return ReusePath(**fields)


def test_uses_and_value_follow_eq3() -> None:
    p = path()
    assert p.uses(0.0) == pytest.approx(2 * 0.5 * 900)
    assert p.value(0.0) == pytest.approx(900 - 300)
    assert p.uses(950.0) == 0.0  # the window is gone: (H - t - tau_e)^+ clips at zero
    assert p.value(950.0) == -300.0


def test_latest_start_is_where_value_crosses_zero() -> None:
    p = path()
    deadline = p.latest_start()
    assert deadline is not None
    assert deadline == pytest.approx(1000 - 100 - 300 / (2 * 0.5 * 1.0))
    assert p.value(deadline) == pytest.approx(0.0)
    assert p.profitable(deadline - 1e-6)
    assert not p.profitable(deadline)  # a start at the deadline only ties
    assert not p.profitable(deadline + 1.0)


@pytest.mark.parametrize(
    "overrides",
    [{"unit_value": 0.0}, {"unit_value": -1.0}, {"arrival_rate": 0.0}, {"use_fraction": 0.0}],
)
def test_no_positive_reuse_value_never_pays(overrides: dict[str, float]) -> None:
    p = path(**overrides)
    assert p.latest_start() is None
    assert not p.profitable(-1e9)
    assert p.value(0.0) <= -p.cost


@given(
    rate=st.floats(0.01, 100),
    fraction=st.floats(0.01, 1),
    unit=st.floats(0.01, 100),
    build=st.floats(0, 1000),
    cost=st.floats(0.01, 1e4),
    start=st.floats(-1e4, 1e4),
)
def test_profitable_iff_positive_direct_value(
    rate: float, fraction: float, unit: float, build: float, cost: float, start: float
) -> None:
    p = ReusePath(rate, fraction, unit, 1000.0, build, cost)
    value = p.value(start)
    if abs(value) > 1e-6 * max(1.0, cost):  # away from the rounding band around the tie
        assert p.profitable(start) == (value > 0)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("arrival_rate", -1.0, "arrival_rate"),
        ("use_fraction", 1.5, "use_fraction"),
        ("use_fraction", -0.1, "use_fraction"),
        ("cost", 0.0, "cost"),
        ("build_s", -1.0, "build_s"),
        ("horizon_s", math.nan, "horizon_s"),
        ("unit_value", math.inf, "unit_value"),
    ],
)
def test_path_rejects_bad_fields(field: str, value: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        path(**{field: value})


def test_start_must_be_finite() -> None:
    with pytest.raises(ValueError, match="start_s"):
        path().uses(math.nan)


def test_expected_reuse_value_is_eq5() -> None:
    assert expected_reuse_value([0.5, 0.25, 1.0], [4.0, 8.0, -1.0], 2.5) == pytest.approx(
        2 + 2 - 1 - 2.5
    )


@pytest.mark.parametrize(
    ("probs", "values", "cost", "match"),
    [
        ([0.5, 1.2], [1.0, 1.0], 0.0, "use_probabilities"),
        ([0.5], [1.0, 1.0], 0.0, "same length"),
        ([], [], 0.0, "use_probabilities"),
        ([0.5], [math.nan], 0.0, "use_values"),
        ([0.5], [1.0], -1.0, "expected_cost"),
    ],
)
def test_expected_reuse_value_rejects(
    probs: list[float], values: list[float], cost: float, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        expected_reuse_value(probs, values, cost)


def test_paper_gpu_payback_uses() -> None:
    # Section 6.4 / Fig. 13: 5 uses for Bits and 80 for Pyramid under GPU pricing.
    assert PAPER_GPU_COSTS["bits"].payback_uses() == 5
    assert PAPER_GPU_COSTS["pyramid"].payback_uses() == 80
    assert payback_uses(378.3, 76.9) == 5
    assert payback_uses(4294.2, 53.8) == 80


def test_payback_at_an_exact_multiple_needs_one_more_use() -> None:
    assert payback_uses(300, 100) == 4  # 3 uses only tie
    assert payback_uses(0, 1) == 1


@given(build=st.integers(0, 10**6), call=st.integers(1, 10**4))
def test_payback_is_the_fewest_uses_that_strictly_pay(build: int, call: int) -> None:
    n = payback_uses(build, call)
    assert n * call > build
    assert (n - 1) * call <= build


@pytest.mark.parametrize(
    ("build", "call", "uses"),
    [
        (0.3, 0.1, 4),  # 0.3/0.1 is 2.9999999999999996 in floats: 3 uses only tie
        (0.6, 0.2, 4),
        (0.7, 0.1, 8),
        (1.1, 0.1, 12),
        (4.35, 1.45, 4),
        (76.9 * 5, 76.9, 6),  # 384.5 = 5 * 76.9 exactly in decimals
        (0.30000000000000004, 0.1, 4),  # just above the tie: still 4
        (0.2999999999999999, 0.1, 3),  # just below the tie: 3 pay
    ],
)
def test_payback_ties_are_exact_for_decimal_inputs(build: float, call: float, uses: int) -> None:
    assert payback_uses(build, call) == uses


@given(build=st.integers(0, 10**6), call=st.integers(1, 10**4), places=st.integers(0, 6))
def test_payback_is_exact_for_decimals(build: int, call: int, places: int) -> None:
    # C and c with `places` decimals: the answer is that of the integers build and call.
    scale = 10**places
    assert payback_uses(build / scale, call / scale) == build // call + 1


@pytest.mark.parametrize(
    ("build", "call", "match"),
    [(-1.0, 1.0, "construction_cost"), (1.0, 0.0, "use_cost"), (1.0, math.nan, "use_cost")],
)
def test_payback_rejects(build: float, call: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        payback_uses(build, call)
    with pytest.raises(ValueError, match="service" if match == "use_cost" else "construction"):
        UseCosts(service=call, construction=build)
