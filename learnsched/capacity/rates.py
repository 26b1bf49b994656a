"""Piecewise-constant service-rate profiles ``c_cap(v)`` (paper Section 3.3)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from .._checks import FloatArray, positive
from ._checks import first_index, float_array, same_length

__all__ = ["RateProfile", "require_rates"]


@dataclass(frozen=True, eq=False)
class RateProfile:
    """A service rate that is constant between change points.

    Parameters
    ----------
    starts
        Strictly increasing change points, seconds. ``rates[j]`` holds on
        ``[starts[j], starts[j+1])``; the first rate also holds before ``starts[0]`` and
        the last one forever, so every time has a rate.
    rates
        Service rates, work per second, each ``>= 0``.
    """

    starts: FloatArray
    rates: FloatArray

    def __post_init__(self) -> None:
        starts = float_array("starts", self.starts)
        rates = float_array("rates", self.rates)
        if starts.shape[0] == 0:
            raise ValueError("starts must have at least one entry, got none")
        same_length("rates", rates, "starts", starts.shape[0])
        step = first_index(np.diff(starts) <= 0)
        if step is not None:
            raise ValueError(
                f"starts must be strictly increasing, got starts[{step + 1}] = "
                f"{float(starts[step + 1])!r} after {float(starts[step])!r}"
            )
        negative = first_index(rates < 0)
        if negative is not None:
            raise ValueError(f"rates[{negative}] must be >= 0, got {float(rates[negative])!r}")
        starts.flags.writeable = False
        rates.flags.writeable = False
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "rates", rates)

    @classmethod
    def _trusted(cls, starts: FloatArray, rates: FloatArray) -> RateProfile:
        """A profile from a valid profile's read-only ``starts`` and fresh ``rates`` known to
        be finite and ``>= 0``: no copies and no checks, for bisection loops."""
        profile = object.__new__(cls)
        rates.flags.writeable = False
        object.__setattr__(profile, "starts", starts)
        object.__setattr__(profile, "rates", rates)
        return profile

    @classmethod
    def constant(cls, rate: float) -> RateProfile:
        """A constant ``rate`` (work per second, > 0) at all times."""
        return cls(np.zeros(1), np.array([positive("rate", rate)]))

    @cached_property
    def cumulative(self) -> FloatArray:
        """``G(starts[j])``, the service offered from ``starts[0]``, work (G(starts[0]) = 0)."""
        cumulative = np.concatenate(([0.0], np.cumsum(self.rates[:-1] * np.diff(self.starts))))
        cumulative.flags.writeable = False
        return cumulative

    def segment_of(self, times: FloatArray) -> npt.NDArray[np.intp]:
        """The index of the segment holding each of ``times`` (0 before ``starts[0]``)."""
        if self.starts.shape[0] == 1:  # one segment: no search (10x a comparison per time)
            return np.zeros(np.shape(times), dtype=np.intp)
        return np.maximum(np.searchsorted(self.starts, times, side="right") - 1, 0)

    def cumulative_at(self, times: FloatArray) -> FloatArray:
        """``G(t)`` at each of ``times``, work: the service offered from ``starts[0]``
        (negative before it), computed as the Cython kernels compute it."""
        if self.starts.shape[0] == 1:  # one segment: its numbers, not gathered per time
            start, rate, base = float(self.starts[0]), float(self.rates[0]), 0.0
            return np.asarray(base + rate * (times - start), dtype=np.float64)
        segment = self.segment_of(times)
        return np.asarray(
            self.cumulative[segment] + self.rates[segment] * (times - self.starts[segment]),
            dtype=np.float64,
        )

    def time_of(self, service: FloatArray) -> FloatArray:
        """The earliest time with ``G(t) >= g`` for each ``g`` of ``service`` (work), as the
        replay kernel computes it, seconds: ``inf`` where the profile never offers that
        much, ``-inf`` where the first rate is 0 and ``g`` is reached at or before
        ``starts[0]``."""
        starts, rates, cum = self.starts, self.rates, self.cumulative
        if starts.shape[0] == 1 and rates[0] > 0.0:  # one segment: no search, no cap
            with np.errstate(over="ignore"):  # a tiny rate: inf, as in the kernel's C
                one: FloatArray = starts[0] + (service - cum[0]) / rates[0]
            return one
        # first j with cum[j] >= g; j - 1 (or 0) is the segment rising to g
        lo = np.searchsorted(cum, service, side="left")
        j = np.maximum(lo - 1, 0)
        rate = rates[j]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # zero rates: below
            # lo = 0 reads the first segment backwards: starts[0] - (cum[0] - g) / rate is
            # the same number, and at most starts[0], so the cap there changes nothing.
            times: FloatArray = np.minimum(
                starts[j] + (service - cum[j]) / rate, np.append(starts, np.inf)[lo]
            )
        # cum[lo - 1] < g, so segment lo - 1 has a positive rate unless it is the last one
        flat = np.flatnonzero(rate <= 0.0)
        if flat.size:
            times[flat] = np.where(lo[flat] == 0, -np.inf, np.inf)
        return times

    def service(self, start_s: float, end_s: float) -> float:
        """The service offered on ``[start_s, end_s]``, work: the integral of the rate."""
        g = self.cumulative_at(np.array([start_s, end_s], dtype=np.float64))
        return float(g[1] - g[0])


def require_rates(capacity: object, name: str = "capacity") -> RateProfile:
    """``capacity`` itself if it is a :class:`RateProfile`; ``TypeError`` naming it if not."""
    if not isinstance(capacity, RateProfile):
        raise TypeError(f"{name} must be a RateProfile, got {type(capacity).__name__}")
    return capacity
