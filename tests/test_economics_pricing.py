"""Common pricing and the Table B.1 / Fig. 12(b) ledgers (Eq. 9, Eq. 14, Appendix B)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnsched.economics import (
    GUIDANCE_LEDGER,
    TABLE_B1,
    GuidanceLedger,
    Ledger,
    UtilityLine,
    charged_cost,
    incremental_utility,
    table_b1_utility,
)


def test_stopped_demand_is_w_minus_3124() -> None:
    line = table_b1_utility("stopped", "learnsched", "calendar")
    assert (line.dq, line.dc) == (1, 3124)
    assert line.describe() == "W - 3124"
    assert line.breakeven_value == 3124
    assert line.at(3124) == 0  # equality is a tie
    assert line.at(3125) > 0 > line.at(3123)


def test_sparse_demand_is_minus_1660_for_every_w() -> None:
    line = table_b1_utility("sparse", "learnsched", "calendar")
    assert line.describe() == "-1660"
    assert line.breakeven_value is None
    assert line.at(0) == line.at(1e6) == -1660


def test_section_6_4_ledger_differences() -> None:
    sustained = TABLE_B1["sustained"]
    # 847-token difference between Window and LearnSched under sustained demand
    assert sustained["window"].cost - sustained["learnsched"].cost == 847
    stopped = table_b1_utility("stopped", "learnsched", "window")
    assert (stopped.dq, stopped.dc) == (4, -38)


def test_guidance_ledger_figures() -> None:
    g = GUIDANCE_LEDGER
    assert round(g.service_cost) == 15311
    assert g.service_cost == pytest.approx(15311, abs=1e-9)
    assert round(g.saving(0.561), 3) == 21830.529
    assert round(100 * g.service_offset(0.561), 2) == 28.24
    assert g.total_dq == 4
    assert round(g.alpha_boundary(0.0), 4) == 1.9868
    assert g.utility(0.0, g.alpha_boundary(0.0)) == pytest.approx(0.0, abs=1e-9)


def test_guidance_total_matches_fig12b_blocks() -> None:
    # Fig. 12(b): per-block totals, Ours - Eager, ktokens; their sum is -S(0.561).
    blocks = (-2.771, -5.786, -3.879, -5.058, -4.337)
    assert round(-sum(blocks), 3) == round(GUIDANCE_LEDGER.saving(0.561) / 1000, 3)


@given(value=st.floats(0, 1e5), alpha=st.floats(0, 10))
def test_alpha_boundary_is_the_sign_change(value: float, alpha: float) -> None:
    g = GUIDANCE_LEDGER
    boundary = g.alpha_boundary(value)
    utility = g.utility(value, alpha)
    if abs(alpha - boundary) > 1e-9:
        assert (utility > 0) == (alpha < boundary)
    assert utility == pytest.approx(4 * value + 30420 - g.service_cost * alpha)


@given(
    q=st.tuples(st.integers(0, 100), st.integers(0, 100)),
    c=st.tuples(st.floats(0, 1e6), st.floats(0, 1e6)),
    w=st.floats(0, 1e4),
)
def test_incremental_utility_is_the_utility_difference(
    q: tuple[int, int], c: tuple[float, float], w: float
) -> None:
    better = Ledger(c[0], q[0], 100)
    baseline = Ledger(c[1], q[1], 100)
    line = incremental_utility(better, baseline)
    assert line.at(w) == pytest.approx(better.utility(w) - baseline.utility(w), abs=1e-6)


def test_charged_cost_sums_eq14() -> None:
    assert charged_cost(base=10, extra=2, build=5, validate=1) == 18


@pytest.mark.parametrize("name", ["base", "extra", "build", "validate"])
def test_charged_cost_rejects_negative(name: str) -> None:
    parts = {"base": 1.0, "extra": 1.0, "build": 1.0, "validate": 1.0, name: -1.0}
    with pytest.raises(ValueError, match=name):
        charged_cost(**parts)


@pytest.mark.parametrize(
    ("dq", "dc", "text"),
    [
        (1, 3124, "W - 3124"),
        (-1, 5, "-W - 5"),
        (-1, -5, "-W + 5"),
        (2, -1, "2W + 1"),
        (2, -5, "2W + 5"),
        (-3, 0, "-3W"),
        (1, 0, "W"),
        (-1, 0, "-W"),
        (0, 1660, "-1660"),
        (0, -7, "7"),
        (0, 0, "0"),
        (0, -0.0, "0"),
        (0.5, 2.25, "0.5W - 2.25"),
        (4, 1234567, "4W - 1234567"),
    ],
)
def test_describe(dq: float, dc: float, text: str) -> None:
    assert UtilityLine(dq, dc).describe() == text


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"cost": -1, "timely_correct": 1, "requests": 2}, ValueError, "cost"),
        ({"cost": math.nan, "timely_correct": 1, "requests": 2}, ValueError, "cost"),
        ({"cost": 1, "timely_correct": 3, "requests": 2}, ValueError, "timely_correct"),
        ({"cost": 1, "timely_correct": -1, "requests": 2}, ValueError, "timely_correct"),
        ({"cost": 1, "timely_correct": 1.5, "requests": 2}, TypeError, "timely_correct"),
    ],
)
def test_ledger_rejects(kwargs: dict[str, float], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Ledger(**kwargs)  # type: ignore[arg-type]


def test_comparisons_need_the_same_requests() -> None:
    with pytest.raises(ValueError, match=r"baseline\.requests"):
        incremental_utility(Ledger(1, 1, 8), Ledger(1, 1, 48))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("weekly", "learnsched", "calendar"), "demand"),
        (("stopped", "oracle", "calendar"), "better"),
        (("sparse", "learnsched", "never"), "baseline"),
    ],
)
def test_table_lookup_names_the_argument(args: tuple[str, str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        table_b1_utility(*args)


def test_guidance_rejects() -> None:
    with pytest.raises(ValueError, match="alpha0"):
        GuidanceLedger(1.0, 1.0, 0.0, (1,))
    with pytest.raises(ValueError, match="dq"):
        GuidanceLedger(1.0, 1.0, 0.5, ())
    with pytest.raises(ValueError, match="alpha"):
        GUIDANCE_LEDGER.saving(-0.1)
    with pytest.raises(ValueError, match="D_s"):
        GuidanceLedger(1.0, 0.0, 0.5, (1,)).alpha_boundary(0.0)
