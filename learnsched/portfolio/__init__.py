"""Several candidates at once: a portfolio of self-evolution jobs across windows and GPUs.

Each :class:`PortfolioCandidate` is a named :class:`~learnsched.job.Job` (its work,
benefit, horizon, save and load costs and progress); a :class:`Portfolio` shares the idle
windows of one or more GPUs among them, optionally under a total GPU-second budget (App.
C.2), with benefits read as Eq. C.7 does (docs/portfolio.md). :func:`solve_portfolio`
plans it under the portfolio's policies: two greedy baselines, one-by-one as the
one-candidate solver runs them, the portfolio Costed Window reference, one-step rollout
over it (never below the reference) and the exact DP for small portfolios.
"""

from __future__ import annotations

from .._renamed import module_aliases
from .model import (
    DEFAULT_POLICIES,
    Portfolio,
    PortfolioCandidate,
    PortfolioModel,
    PortfolioPlan,
    PortfolioPolicy,
    PortfolioStep,
    StateSpaceError,
    solve_portfolio,
)

__all__ = [
    "DEFAULT_POLICIES",
    "Portfolio",
    "PortfolioCandidate",
    "PortfolioModel",
    "PortfolioPlan",
    "PortfolioPolicy",
    "PortfolioStep",
    "StateSpaceError",
    "solve_portfolio",
]

__getattr__ = module_aliases(__name__, globals(), {"Candidate": "PortfolioCandidate"})
