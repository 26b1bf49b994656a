"""The paper's investment-economics figures, recomputed from the shipped ledgers and formulas."""

from __future__ import annotations

from typing import Any

from ._decimal import exact, rounded
from .breakeven import PAPER_GPU_COSTS
from .derived import derived_figures
from .pricing import GUIDANCE_LEDGER, table_b1_utility
from .waiting import PAPER_WAITING_SCENARIO, paper_waiting_example

__all__ = ["paper_economics"]


def paper_economics() -> dict[str, Any]:
    """Every figure of Sections 4.3/6.1, 6.4 and Appendix B, computed afresh.

    Returns
    -------
    dict
        ``payback_uses_gpu`` (uses per tool, Fig. 13); ``waiting_*`` (s-eq., the S0348
        example re-solved with Costed Window and rollout, Eq. 13); ``stopped_*`` and
        ``sparse_utility`` (tokens, LearnSched over Cal.*, Eq. B.2); ``service_cost_ds``,
        ``saving_at_alpha_0561`` (tokens), ``service_offset_pct`` (percent) and
        ``alpha_boundary_w0`` (Eqs. B.3-B.5); and the figures derivable from other
        printed numbers (:func:`~learnsched.economics.derived.derived_figures`), each as
        ``{"value", "paper", "matches_print", "rounded_from_unrounded_means"}``:
        ``fig5_gains`` (x), ``fig8_breakeven_w`` (``reactive``, ``advance_notice``),
        ``b1_token_saving_pct``, ``b1_extra_cost_pct``, ``b1_timely_pp`` (percentage
        points), ``nonpositive_build_saving_pct``, ``fig12a_use_ready_pct`` (``learnsched``,
        ``eager``, ``slack``: (vLLM, SGLang) pairs), ``c3_fixed_budget_saving_pct`` (Fig. C.1,
        App. C.3; ``c1_fixed_budget_saving_pct``, its key before, is a deprecated alias for
        one release) and ``fig11_w_over_never`` (the sparse rows and the "W > 1660 over
        Never" claim).
    """
    waiting = paper_waiting_example()
    stopped = table_b1_utility("stopped", "learnsched", "calendar")
    sparse = table_b1_utility("sparse", "learnsched", "calendar")
    guidance = GUIDANCE_LEDGER
    return {
        "payback_uses_gpu": {tool: c.payback_uses() for tool, c in PAPER_GPU_COSTS.items()},
        "waiting_scenario": PAPER_WAITING_SCENARIO,
        "waiting_cost_saving": waiting.cost_saving,
        "waiting_benefit_lost": waiting.benefit_lost,
        "waiting_gain_s0348": waiting.gain,
        "stopped_utility": stopped.describe(),
        "stopped_breakeven_w": stopped.breakeven_value,
        "sparse_utility": sparse.at(0.0),  # dQ = 0: the same for every W
        "service_cost_ds": guidance.service_cost,
        "saving_at_alpha_0561": guidance.saving(guidance.alpha0),
        "service_offset_pct": rounded(100 * exact(guidance.service_offset(guidance.alpha0))),
        "alpha_boundary_w0": guidance.alpha_boundary(0.0),
        **derived_figures(),
    }
