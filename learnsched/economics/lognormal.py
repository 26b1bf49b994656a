"""Lognormal variables parameterised by their arithmetic mean (Appendix C.2, Eq. C.5)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._checks import nonnegative, positive
from ._checks import values

__all__ = ["Lognormal", "lognormal_mu"]


def lognormal_mu(mean: float, sigma: float) -> float:
    """Log-space location ``mu`` that gives ``X = exp(mu + sigma*Z)`` the arithmetic mean ``m``.

    Parameters
    ----------
    mean
        Arithmetic mean ``m > 0`` in the original scale (any unit).
    sigma
        Log-space standard deviation ``sigma >= 0``.
    """
    m = positive("mean", mean)
    s = nonnegative("sigma", sigma)
    # Eq. C.5: E[X] = exp(mu + sigma^2/2) = m  =>  mu = log(m) - sigma^2/2
    return math.log(m) - s * s / 2


@dataclass(frozen=True)
class Lognormal:
    """``X = exp(mu + sigma*Z)``, ``Z ~ N(0, 1)``, with arithmetic mean ``mean`` (Table C.1).

    Parameters
    ----------
    mean
        Arithmetic mean ``m > 0`` in the original scale.
    sigma
        Log-space standard deviation (>= 0).
    """

    mean: float
    sigma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", positive("mean", self.mean))
        object.__setattr__(self, "sigma", nonnegative("sigma", self.sigma))

    @property
    def mu(self) -> float:
        """Log-space location (Eq. C.5)."""
        return lognormal_mu(self.mean, self.sigma)

    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        """``size`` independent draws from ``rng``."""
        return rng.lognormal(self.mu, self.sigma, size)

    def expected_min(self, cap: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """``E[min(X, a)]`` for each cap ``a >= 0`` (same shape as ``cap``).

        For ``sigma > 0`` the partial expectation of a lognormal gives
        ``E[min(X, a)] = m*Phi((ln a - mu - sigma^2)/sigma) + a*(1 - Phi((ln a - mu)/sigma))``.
        Phi is ``scipy.special.ndtr``, imported here on first use (about 0.2-0.4 s) so that
        importing the economics wing stays cheap.
        """
        a = values("cap", cap, low=0.0)
        if self.sigma == 0:
            return np.minimum(a, self.mean)
        from scipy.special import ndtr

        out = np.zeros_like(a)  # E[min(X, 0)] = 0; skipping zero caps saves the costly Phi calls
        pos = a > 0
        cap_pos = a[pos]
        z = (np.log(cap_pos) - self.mu) / self.sigma
        out[pos] = self.mean * ndtr(z - self.sigma) + cap_pos * ndtr(-z)
        return out
