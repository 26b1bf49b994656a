"""Several candidates at once: a portfolio of self-evolution jobs across windows and GPUs.

Each :class:`Candidate` is a finite-model job (its work, benefit, horizon, save and load
costs and progress); a :class:`Portfolio` shares the idle windows of one or more GPUs among
them, optionally under a total GPU-second budget (App. C.2), with benefits read as Eq. C.7
does (docs/portfolio.md). :func:`solve_portfolio` plans it under the portfolio's policies:
two greedy baselines, one-by-one as the one-candidate solver runs them, the portfolio Costed
Window reference, one-step rollout over it (never below the reference) and the exact DP for
small portfolios.
"""

from __future__ import annotations

from .model import (
    DEFAULT_POLICIES,
    Candidate,
    Portfolio,
    PortfolioModel,
    PortfolioPlan,
    PortfolioPolicy,
    PortfolioStep,
    StateSpaceError,
    solve_portfolio,
)

__all__ = [
    "DEFAULT_POLICIES",
    "Candidate",
    "Portfolio",
    "PortfolioModel",
    "PortfolioPlan",
    "PortfolioPolicy",
    "PortfolioStep",
    "StateSpaceError",
    "solve_portfolio",
]
