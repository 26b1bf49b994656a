"""learnsched: when should shared GPU time go to self-evolution?

A C++ solver for the LearnSched finite window model: the reference policies (Never,
Window, Static ROI, Costed Window), one-step rollout (LearnSched) and exact DP, with
exact wall-clock handoff costs, plus the paper's 1920-scenario grid. This front door
holds the solver only; the wings are subpackages loaded on first use
(``import learnsched.capacity`` or ``learnsched.capacity``): the investment economics
around a plan (:mod:`learnsched.economics`), capacity control for the serving loop
(:mod:`learnsched.capacity`) and probes that measure handoff costs on your own GPUs
(:mod:`learnsched.handoff`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

try:
    # Fail early, with a build hint. A submodule, since an unbuilt tree's stub folder
    # learnsched/_core/ imports as an empty namespace package.
    from ._core import finite as _finite
except ImportError as err:  # only without a built extension
    from ._build_hint import core_import_error

    raise core_import_error(err) from None
del _finite

from . import _moved
from .batch import BatchResult, solve_batch
from .grid import CALENDARS, Grid, GridConfig, GridScenario, paper_grid, scenario_by_id
from .job import Job
from .plan import COST_FIELDS, CostSplit, Plan, Step
from .scenario import PAPER_COLD, PAPER_WARM, HandoffCosts, InitialState, Recovery, Scenario
from .scenario_batch import ScenarioBatch
from .solver import ALL_POLICIES, Action, ActionKind, Model, Policy, State, solve, solve_all
from .summary import PAPER_FIGURES, GridSummary, summarize

_moved.install()  # old module paths keep working for one release, with a warning

__all__ = [
    "ALL_POLICIES",
    "CALENDARS",
    "COST_FIELDS",
    "PAPER_COLD",
    "PAPER_FIGURES",
    "PAPER_WARM",
    "Action",
    "ActionKind",
    "BatchResult",
    "CostSplit",
    "Grid",
    "GridConfig",
    "GridScenario",
    "GridSummary",
    "HandoffCosts",
    "InitialState",
    "Job",
    "Model",
    "Plan",
    "Policy",
    "Recovery",
    "Scenario",
    "ScenarioBatch",
    "State",
    "Step",
    "__version__",
    "paper_grid",
    "scenario_by_id",
    "solve",
    "solve_all",
    "solve_batch",
    "summarize",
]


def _version() -> str:
    """The installed distribution's version: pyproject.toml is its one home."""
    import importlib.metadata  # only when asked: it is slow to import

    try:
        return importlib.metadata.version("learnsched")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
        return "0+unknown"


def __getattr__(name: str) -> object:
    """``__version__`` and the subpackages (the wings), loaded on first use."""
    if name == "__version__":
        return _version()
    if not name.startswith("_"):
        try:
            module: ModuleType = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":  # the wing exists but needs something missing
                raise
        else:
            return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
