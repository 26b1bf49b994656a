"""Lognormal variables by arithmetic mean (Appendix C.2, Eq. C.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnsched.economics import Lognormal, lognormal_mu


@given(mean=st.floats(1e-3, 1e4), sigma=st.floats(0, 2))
def test_mu_restores_the_mean(mean: float, sigma: float) -> None:
    mu = lognormal_mu(mean, sigma)
    assert mu == pytest.approx(math.log(mean) - sigma**2 / 2)
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(mean)


@pytest.mark.parametrize(("mean", "sigma"), [(90.0, 0.65), (45.0, 0.35), (1.2, 0.50)])
def test_sample_mean_matches_table_c1(mean: float, sigma: float) -> None:
    x = Lognormal(mean, sigma).sample(np.random.default_rng(1), 400_000)
    stderr = mean * math.sqrt(math.exp(sigma**2) - 1) / math.sqrt(x.size)
    assert abs(x.mean() - mean) < 5 * stderr
    assert np.log(x).std() == pytest.approx(sigma, rel=0.01)


@pytest.mark.parametrize("cap", [0.0, 10.0, 60.0, 90.0, 300.0])
def test_expected_min_matches_sampling(cap: float) -> None:
    d = Lognormal(90.0, 0.65)
    x = d.sample(np.random.default_rng(2), 400_000)
    sampled = np.minimum(x, cap)
    exact = float(d.expected_min(cap))
    assert abs(sampled.mean() - exact) < 5 * sampled.std() / math.sqrt(x.size) + 1e-12


def test_expected_min_limits() -> None:
    d = Lognormal(90.0, 0.65)
    np.testing.assert_allclose(d.expected_min([0.0, 1e-9, 1e9]), [0.0, 1e-9, 90.0], rtol=1e-6)
    np.testing.assert_allclose(Lognormal(5.0, 0.0).expected_min([1.0, 9.0]), [1.0, 5.0])


@pytest.mark.parametrize(
    ("mean", "sigma", "match"),
    [(0.0, 0.5, "mean"), (-1.0, 0.5, "mean"), (1.0, -0.1, "sigma"), (math.nan, 0.5, "mean")],
)
def test_rejects(mean: float, sigma: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Lognormal(mean, sigma)
    with pytest.raises(ValueError, match=match):
        lognormal_mu(mean, sigma)


def test_expected_min_rejects_negative_cap() -> None:
    with pytest.raises(ValueError, match="cap"):
        Lognormal(1.0, 0.5).expected_min([-1.0])
