"""Sweep output at scale: binary chunk files, the CSV written once, linear summaries,
points built per chunk. Each is checked against the plain way, kept here as the
reference: the same bytes, the same bits."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched.solver import Policy
from learnsched.summary import tied
from learnsched.sweep import parse_spec, points, solve_rows, sweep
from learnsched.sweep.points import point_count, point_range
from learnsched.sweep.rows import Rows, rows_of
from learnsched.sweep.spec import SweepSpec
from learnsched.sweep.store import read_chunk, write_chunk
from learnsched.sweep.summary import PointSummary, summarize_points
from learnsched.sweep.table import columns, write_rows


def base_scenario() -> dict[str, Any]:
    return ls.scenario_by_id("S0348").scenario.to_json()


def list_spec(rates: int, horizons: int, invalid: bool = False) -> SweepSpec:
    """A sweep of one base scenario over rates x horizons; with ``invalid`` some horizons
    are not finite enough for the core (rows kept as invalid)."""
    horizon = np.linspace(600.0, 3000.0, horizons).tolist()
    if invalid:
        # Horizons beyond +-1.1e307 s: the core refuses them (their rows are invalid).
        horizon[::3] = [2e307 * (k + 1) for k in range(len(horizon[::3]))]
    return parse_spec(
        {
            "base": [base_scenario(), {**base_scenario(), "work_quanta": 4}],
            "vary": {"benefit_rate": np.linspace(0.05, 2.0, rates).tolist(), "horizon_s": horizon},
            "policies": ["costed_window", "rollout", "dp"],
        }
    )


# ---- the reference: a summary per point by a pass over every row ---------------------


def reference_summary(spec: SweepSpec, index: int, point: Any, rows: Rows) -> PointSummary:
    mine = rows.point == index
    solved = mine & np.array([not e for e in rows.error], dtype=bool)
    values = rows.value[solved]
    mean = {
        p.value: (float(values[:, j].mean()) if len(values) else None)
        for j, p in enumerate(spec.policies)
    }
    wins = ties = losses = None
    if Policy.ROLLOUT in spec.policies and Policy.COSTED_WINDOW in spec.policies:
        rollout = values[:, spec.policies.index(Policy.ROLLOUT)]
        costed = values[:, spec.policies.index(Policy.COSTED_WINDOW)]
        tie = tied(rollout, costed)
        wins = int((~tie & (rollout > costed)).sum())
        ties = int(tie.sum())
        losses = int((~tie & (rollout < costed)).sum())
    return PointSummary(
        point=index,
        params=point,
        scenarios=int(mine.sum()),
        invalid=int((mine & ~solved).sum()),
        mean_value=mean,
        wins=wins,
        ties=ties,
        losses=losses,
    )


def bits(summary: PointSummary) -> Any:
    """A summary with every mean as its exact bits (None stays None)."""
    return (
        summary.point,
        summary.params,
        summary.scenarios,
        summary.invalid,
        {k: None if v is None else float.hex(v) for k, v in summary.mean_value.items()},
        (summary.wins, summary.ties, summary.losses),
    )


@st.composite
def solved_rows(draw: st.DrawFn) -> tuple[SweepSpec, Rows]:
    """Rows of a sweep with random values (ties, NaN-free) and random invalid rows."""
    n = draw(st.integers(1, 40))
    spec = parse_spec(
        {
            "base": [base_scenario()] * n,
            "vary": {"benefit_rate": [0.1 * (i + 1) for i in range(draw(st.integers(1, 30)))]},
            "policies": ["costed_window", "rollout"],
        }
    )
    total = n * point_count(spec)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    value = rng.choice([0.0, 1.5, -2.25, 1e9, 1.0 + 1e-13], size=(total, 2))
    value += rng.normal(size=(total, 2)) * draw(st.sampled_from([0.0, 1e-3, 100.0]))
    invalid = rng.random(total) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    value[invalid] = np.nan
    errors = tuple("bad, \"quoted\"" if bad else "" for bad in invalid.tolist())
    return spec, rows_of(spec, 0, value, errors)


@settings(max_examples=150, deadline=None)
@given(solved_rows())
def test_linear_summaries_are_the_per_point_ones_bit_for_bit(case: tuple[SweepSpec, Rows]) -> None:
    spec, rows = case
    pts = points(spec)
    linear = summarize_points(spec, pts, rows)
    assert [bits(s) for s in linear] == [
        bits(reference_summary(spec, i, p, rows)) for i, p in enumerate(pts)
    ]


# ---- the reference CSV writer: a writerow per row -------------------------------------


def reference_csv(rows: Rows, spec: SweepSpec) -> bytes:
    def text(value: float) -> str:
        return "" if math.isnan(value) else repr(value)

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns(spec))
    for point, params, scenario, status, error, values in zip(
        rows.point.tolist(),
        rows.params.tolist(),
        rows.scenario,
        rows.status,
        rows.error,
        rows.value.tolist(),
        strict=True,
    ):
        writer.writerow([point, *map(repr, params), scenario, status, error, *map(text, values)])
    return out.getvalue().encode()


@settings(max_examples=60, deadline=None)
@given(solved_rows())
def test_the_csv_is_the_row_by_row_writer_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[SweepSpec, Rows]
) -> None:
    spec, rows = case
    out = tmp_path_factory.mktemp("csv") / "rows.csv"
    write_rows(out, rows, spec, durable=False)
    assert out.read_bytes() == reference_csv(rows, spec)


@settings(max_examples=60, deadline=None)
@given(solved_rows(), st.data())
def test_chunk_files_read_back_bit_for_bit(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[SweepSpec, Rows], data: st.DataObject
) -> None:
    spec, rows = case
    start = data.draw(st.integers(0, len(rows) - 1))
    stop = data.draw(st.integers(start, len(rows)))
    part = rows_of(spec, start, rows.value[start:stop], rows.error[start:stop])
    path = tmp_path_factory.mktemp("chunk") / "chunk-000000.rows"
    write_chunk(path, part)
    back = read_chunk(path, spec)
    assert (back.start, back.scenario, back.error) == (part.start, part.scenario, part.error)
    assert back.value.tobytes() == part.value.tobytes()
    assert back.point.tolist() == part.point.tolist()
    assert back.params.tobytes() == part.params.tobytes()


def test_a_chunk_of_another_sweep_is_refused(tmp_path: Path) -> None:
    spec = list_spec(3, 4)
    path = tmp_path / "chunk.rows"
    write_chunk(path, solve_rows(spec, 0, 10))
    with pytest.raises(ValueError, match="not 10 rows of 3 values"):
        read_chunk(path, parse_spec({**spec.to_json(), "policies": ["rollout", "dp"]}))
    (tmp_path / "text.rows").write_text("point,benefit_rate\n")
    with pytest.raises(ValueError, match="is not a sweep chunk"):
        read_chunk(tmp_path / "text.rows", spec)


@pytest.mark.parametrize(("first", "stop"), [(0, 0), (0, 1), (5, 17), (0, 36), (35, 36)])
def test_points_are_built_per_range_as_in_the_whole_product(first: int, stop: int) -> None:
    spec = parse_spec(
        {
            "base": [base_scenario()],
            "vary": {"benefit_rate": [0.1, 0.2, 0.3], "horizon_s": [900.0, 1000.0], "save_s": [0.0, 1, 2, 3, 4, 5]},
            "policies": ["rollout"],
        }
    )
    assert point_count(spec) == len(points(spec)) == 36
    assert point_range(spec, first, stop) == list(points(spec)[first:stop])


def test_a_sweep_with_invalid_rows_matches_its_rows_and_reference_summaries(tmp_path: Path) -> None:
    spec = list_spec(7, 9, invalid=True)
    result = sweep(spec, tmp_path / "s.csv", workers=2, chunk_rows=11, progress=False)
    whole = solve_rows(spec, 0, len(result.rows))
    assert result.rows.value.tobytes() == whole.value.tobytes()
    assert result.rows.error == whole.error
    assert result.invalid == sum(1 for e in whole.error if e) > 0
    assert (tmp_path / "s.csv").read_bytes() == reference_csv(whole, spec)
    pts = points(spec)
    assert [bits(s) for s in result.summaries] == [
        bits(reference_summary(spec, i, p, whole)) for i, p in enumerate(pts)
    ]
    assert sorted(p.name for p in (tmp_path / "s.csv.parts").iterdir()) == ["manifest.json"]
