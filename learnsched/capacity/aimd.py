"""Arrival-aware AIMD control of the background share (paper Sections 4.4, 6.2).

Under low load the share grows by a fixed step; an arrival burst or deadline risk (queue
pressure) shrinks it by a factor, so capacity lent while idle returns when a burst starts.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from .. import _capacity
from .._checks import fraction, nonnegative

__all__ = ["AIMDConfig", "AIMDController", "next_share"]


_FIELD_CHECKS: tuple[tuple[str, Callable[[str, object], float]], ...] = (
    ("step", nonnegative),
    ("factor", fraction),
    ("min_share", fraction),
    ("max_share", fraction),
    ("initial_share", fraction),
    ("burst_rate", nonnegative),
    ("pressure_limit_s", nonnegative),
)
"""Each field of :class:`AIMDConfig` and its check, in the order they are checked."""


@dataclass(frozen=True)
class AIMDConfig:
    """Parameters of the AIMD background-share rule.

    Parameters
    ----------
    step
        Additive increase per update under low load, fraction of the resource.
    factor
        Multiplicative decrease on a burst or on deadline risk, in ``[0, 1]``.
    min_share, max_share
        Bounds on the share, ``0 <= min_share <= max_share <= 1``.
    burst_rate
        Arrival rate above which load counts as a burst, requests per second.
    pressure_limit_s
        Queue pressure (backlog drain time at the full service rate) above which
        deadlines are at risk, seconds; keep it well under the latency budget.
    initial_share
        Share before the first update, within the bounds.
    """

    step: float = 0.05
    factor: float = 0.5
    min_share: float = 0.0
    max_share: float = 0.9
    burst_rate: float = 10.0
    pressure_limit_s: float = 0.2
    initial_share: float = 0.0

    def __post_init__(self) -> None:
        for name, check in _FIELD_CHECKS:
            object.__setattr__(self, name, check(name, getattr(self, name)))
        if self.min_share > self.max_share:
            raise ValueError(
                f"min_share must be <= max_share, got {self.min_share!r} > {self.max_share!r}"
            )
        if not self.min_share <= self.initial_share <= self.max_share:
            raise ValueError(
                f"initial_share must be in [min_share, max_share] = "
                f"[{self.min_share!r}, {self.max_share!r}], got {self.initial_share!r}"
            )

    @classmethod
    def static(cls, share: float) -> AIMDConfig:
        """A constant share: no step, no decrease, both bounds at ``share``."""
        share = fraction("share", share)
        return cls(step=0.0, factor=1.0, min_share=share, max_share=share, initial_share=share)


def next_share(config: AIMDConfig, share: float, arrival_rate: float, backlog_s: float) -> float:
    """One AIMD update: the share for the next control period.

    Parameters
    ----------
    config
        The rule's parameters.
    share
        Current share, fraction of the resource.
    arrival_rate
        Recent arrival rate, requests per second.
    backlog_s
        Queue pressure: foreground backlog divided by the full service rate, seconds
        (``>= 0``; ``inf`` when work waits and no service is offered).

    Raises
    ------
    ValueError
        A share outside ``[0, 1]``, a negative or NaN observation, or an infinite rate.
    """
    if not isinstance(config, AIMDConfig):
        raise TypeError(f"config must be an AIMDConfig, got {type(config).__name__}")
    share = fraction("share", share)
    arrival_rate = nonnegative("arrival_rate", arrival_rate)
    # inf is a valid pressure: work waits while no service is offered
    backlog_s = math.inf if backlog_s == math.inf else nonnegative("backlog_s", backlog_s)
    # Multiplicative decrease on a burst or deadline risk, else additive increase, clamped:
    # the kernel's rule, the same that trace replay applies each period.
    return _capacity.next_share(share, arrival_rate, backlog_s, config)


class AIMDController:
    """Thread-safe AIMD background share for a serving loop.

    Call :meth:`update` once per control period with what the loop observed; read
    :attr:`share` anywhere.

    Parameters
    ----------
    config
        The rule's parameters (default :class:`AIMDConfig`).
    """

    def __init__(self, config: AIMDConfig | None = None) -> None:
        self.config = AIMDConfig() if config is None else config
        self._lock = threading.Lock()
        self._share = self.config.initial_share

    @property
    def share(self) -> float:
        """Current background share, fraction of the resource."""
        with self._lock:
            return self._share

    def update(self, arrival_rate: float, backlog_s: float) -> float:
        """Apply one AIMD step and return the new share.

        Parameters
        ----------
        arrival_rate
            Arrivals per second over the loop's recent window (``>= 0``).
        backlog_s
            Queue pressure, seconds (``>= 0``; ``inf`` allowed).
        """
        with self._lock:  # next_share validates before anything changes
            self._share = next_share(self.config, self._share, arrival_rate, backlog_s)
            return self._share

    def __repr__(self) -> str:
        return f"AIMDController(config={self.config!r}, share={self.share!r})"
