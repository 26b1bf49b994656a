"""Many scenarios under many policies in one call, with numpy results."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _core
from ._checks import integer
from .scenario import Scenario
from .scenario_batch import ScenarioBatch
from .solver import ALL_POLICIES, Policy, core_policy, guard_epsilon, parse_policies

__all__ = ["MAX_THREADS", "BatchResult", "solve_batch"]

PROGRESS_CHUNK = 256
FIELDS = ("value", "benefit", "publish_s", "cost")
MAX_THREADS: int = _core.finite.MAX_THREADS
"""Most worker threads a batch may use (1024): each holds one model's tables at a time."""


def _core_scenarios(scenarios: Iterable[Scenario]) -> list[_core.finite.Scenario]:
    """The core scenarios of a :class:`ScenarioBatch` as they are, or of a sequence of
    :class:`Scenario` (naming the first item that is not one)."""
    if isinstance(scenarios, ScenarioBatch):
        return scenarios.to_core()
    return ScenarioBatch.of(scenarios).to_core()


@dataclass(frozen=True)
class BatchResult:
    """Results of :func:`solve_batch`; row ``i`` is scenario ``i``, column ``j`` policy ``j``.

    Attributes
    ----------
    policies
        Column order.
    value, benefit
        Net value and publication benefit, s-eq., shape ``(n, p)``.
    publish_s
        Publication time in seconds, NaN where a plan never publishes, shape ``(n, p)``.
    cost
        Cost split in s-eq., shape ``(n, p, 5)`` in the order of ``learnsched.COST_FIELDS``.
    """

    policies: tuple[Policy, ...]
    value: NDArray[np.float64]
    benefit: NDArray[np.float64]
    publish_s: NDArray[np.float64]
    cost: NDArray[np.float64]

    def column(self, policy: str | Policy) -> NDArray[np.float64]:
        """Net values of every scenario under one policy, s-eq."""
        return self.value[:, self.policies.index(Policy.parse(policy))]


def solve_batch(
    scenarios: Sequence[Scenario],
    policies: str | Iterable[str | Policy] = ALL_POLICIES,
    threads: int = 1,
    progress: Callable[[int], None] | None = None,
    epsilon: float = 0.0,
) -> BatchResult:
    """Solve every scenario under every policy in C++ with the GIL released.

    Parameters
    ----------
    scenarios
        Scenarios to solve; all are validated before any work starts. A
        :class:`ScenarioBatch` (e.g. ``paper_grid().batch``) passes its core scenarios
        without a loop over Python objects.
    policies
        One policy name (``"dp"``) or several (names or :class:`Policy`); all six by
        default.
    threads
        Worker threads, 1 to :data:`MAX_THREADS` (1024); at most one runs per scenario,
        each holding one model's tables (up to 0.5 GiB) at a time. Results are identical
        for any count.
    progress
        Called with the number of scenarios just solved; when given, the batch is solved
        in chunks of ``PROGRESS_CHUNK`` so that the caller can report progress.
    epsilon
        Score-error bound of ``guarded`` (exact scores), s-eq.; ``>= 0``, ``inf`` allowed.

    Returns
    -------
    BatchResult
        Values, benefits and costs in s-eq. and publication times in seconds, one row per
        scenario and one column per policy.

    Raises
    ------
    ValueError
        An invalid scenario (``scenarios[i]: ...``), unknown policy, or ``threads``
        outside ``[1, MAX_THREADS]``.
    TypeError
        ``scenarios[i]`` is not a :class:`Scenario`, ``policies`` is not a name or an
        iterable of names, or ``threads`` is not an integer.
    """
    threads = integer("threads", threads, low=1, high=MAX_THREADS)
    epsilon = guard_epsilon(epsilon)
    names = parse_policies(policies)
    if not names:
        raise ValueError("policies must name at least one policy")
    core_policies = [core_policy(p) for p in names]
    core_scenarios = _core_scenarios(scenarios)
    step = PROGRESS_CHUNK if progress is not None else max(len(core_scenarios), 1)
    chunks = []
    for start in range(0, max(len(core_scenarios), 1), step):
        chunk = _core.finite.solve_batch(
            core_scenarios[start : start + step], core_policies, threads, epsilon
        )
        if progress is not None:
            progress(len(chunk["value"]))
        chunks.append(chunk)
    arrays = {key: np.concatenate([c[key] for c in chunks]) for key in FIELDS}
    return BatchResult(names, **arrays)
