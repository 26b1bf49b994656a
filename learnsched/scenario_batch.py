"""Many validated scenarios held as the core's, for :func:`~learnsched.solve_batch`.

A grid of thousands of scenarios is built straight as core scenarios; the Python
:class:`~learnsched.Scenario` of each is made only if it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import _core
from ._lazy import LazyTuple
from .scenario import Scenario

__all__ = ["ScenarioBatch"]


class ScenarioBatch(LazyTuple[Scenario]):
    """Validated scenarios; ``solve_batch`` reads their core objects without a Python loop.

    It behaves as the tuple of its :class:`~learnsched.Scenario` objects, each made on
    first access (:class:`~learnsched._lazy.LazyTuple`).

    Parameters
    ----------
    core
        The core's scenarios, each already validated by the core.
    make
        ``make(i)``: scenario ``i`` as a Python :class:`~learnsched.Scenario`.
    """

    __slots__ = ("_core", "_make_scenario")

    def __init__(self, core: list[_core.finite.Scenario], make: Callable[[int], Scenario]) -> None:
        super().__init__(len(core))
        self._core = core
        self._make_scenario = make

    @classmethod
    def of(cls, scenarios: Iterable[Scenario]) -> ScenarioBatch:
        """The batch of existing :class:`~learnsched.Scenario` objects.

        Raises
        ------
        TypeError
            ``scenarios`` is not an iterable, or ``scenarios[i]`` is not a Scenario.
        """
        if isinstance(scenarios, (str, bytes, Scenario)) or not isinstance(scenarios, Iterable):
            raise TypeError(
                f"scenarios must be a sequence of Scenario, got {type(scenarios).__name__}"
            )
        items = list(scenarios)
        for i, scenario in enumerate(items):
            if not isinstance(scenario, Scenario):
                raise TypeError(f"scenarios[{i}] must be a Scenario, got {type(scenario).__name__}")
        return cls([s.to_core() for s in items], items.__getitem__)

    def _make(self, index: int) -> Scenario:
        return self._make_scenario(index)

    def to_core(self) -> list[_core.finite.Scenario]:
        """The core's (validated, immutable) scenarios, in order."""
        return self._core

    def __reduce__(self) -> tuple[Callable[[Iterable[Scenario]], ScenarioBatch], tuple[object]]:
        # The core objects do not pickle: rebuild from the Python scenarios.
        return (ScenarioBatch.of, (tuple(self),))
