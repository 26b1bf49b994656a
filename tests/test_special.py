"""learnsched._special.ndtr against scipy.special.ndtr, bit for bit: the alert experiment's
outputs are pinned to the bit, and Lognormal.expected_min now uses this port."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import ndtr as scipy_ndtr

from learnsched._special import ndtr
from learnsched.economics import Lognormal

MAXLOG = 7.097827128933839730962063185871e2  # Cephes: log(DBL_MAX)


def assert_bitwise(x: np.ndarray) -> None:
    ours, theirs = ndtr(x), scipy_ndtr(x)
    differ = np.flatnonzero(ours.view(np.uint64) != theirs.view(np.uint64))
    assert differ.size == 0, f"{differ.size} differ, first x={x[differ[0]]!r}"


def around(point: float, ulps: int = 64) -> np.ndarray:
    """``point`` and its ``ulps`` neighbours on each side, both signs."""
    steps = np.arange(-ulps, ulps + 1, dtype=np.int64)
    near = (np.array([point]).view(np.int64) + steps).view(np.float64)
    return np.concatenate([near, -near])


def test_random_normals_at_many_scales() -> None:
    rng = np.random.default_rng(12)
    for scale in (1e-300, 1e-20, 1e-8, 1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 1e3):
        assert_bitwise(rng.standard_normal(20_000) * scale)
    assert_bitwise(rng.uniform(-40.0, 40.0, 200_000))


def test_branch_boundaries() -> None:
    # ndtr: |x/sqrt 2| < 1 (erf) or not (erfc); erfc: |x/sqrt 2| < 8 (P/Q) or R/S, and
    # x^2/2 > MAXLOG (exp underflows).
    for point in (math.sqrt(2.0), 8.0 * math.sqrt(2.0), math.sqrt(2.0 * MAXLOG)):
        assert_bitwise(around(point))
    x = around(math.sqrt(2.0), 4)
    assert np.any(np.abs(x * math.sqrt(0.5)) == 1.0)  # the exact threshold is among them


def test_special_values() -> None:
    tiny = np.finfo(np.float64).smallest_subnormal
    huge = np.finfo(np.float64).max
    x = np.array([0.0, -0.0, tiny, -tiny, 1e-310, -1e-310, huge, -huge, np.inf, -np.inf])
    assert_bitwise(x)
    assert ndtr(np.array([np.inf, -np.inf])).tolist() == [1.0, 0.0]
    assert np.isnan(ndtr(np.array([np.nan, -np.nan]))).all()


def test_every_ulp_near_the_origin_and_deep_tails() -> None:
    assert_bitwise(around(1.0, 5000))
    assert_bitwise(np.linspace(-38.5, -37.0, 100_001))  # last nonzero values before 0
    assert_bitwise(np.linspace(8.0, 9.0, 100_001))  # 1 - tiny rounds to 1 here


def test_arguments_of_expected_min_in_the_alert_experiment() -> None:
    # z = (ln a - mu)/sigma and z - sigma for the Table C.1 durations over caps from
    # 1e-9 s to 1e6 s, as Lognormal.expected_min forms them.
    d = Lognormal(90.0, 0.65)
    cap = np.geomspace(1e-9, 1e6, 300_001)
    z = (np.log(cap) - d.mu) / d.sigma
    assert_bitwise(z)
    assert_bitwise(-z)
    assert_bitwise(z - d.sigma)


def test_input_conversion_and_refusals() -> None:
    assert ndtr([0, 1]).tolist() == scipy_ndtr([0.0, 1.0]).tolist()  # lossless ints
    assert ndtr(np.zeros(0)).shape == (0,)
    with pytest.raises(ValueError, match="x"):
        ndtr(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="x"):
        ndtr(["a"])


@given(arrays(np.float64, st.integers(0, 64), elements=st.floats(allow_nan=True)))
def test_equals_scipy_for_any_double(x: np.ndarray) -> None:
    ours, theirs = ndtr(x), scipy_ndtr(x)
    assert np.array_equal(np.isnan(ours), np.isnan(x))
    finite = ~np.isnan(x)
    assert np.array_equal(ours[finite].view(np.uint64), theirs[finite].view(np.uint64))
