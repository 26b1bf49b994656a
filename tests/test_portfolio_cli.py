"""``learnsched portfolio``: the SPEC and output contract, exit statuses and the study."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched.portfolio import Portfolio, PortfolioCandidate, solve_portfolio
from learnsched.portfolio.study import DEMANDS, idle_calendars, run_study, study_settings

from conftest import one_line, run, run_python, write_file, write_spec
from portfolio_reference import specs
from strategies import json_values

GOLDEN = Path(__file__).parent / "golden"


def two_jobs() -> Portfolio:
    jobs = [
        PortfolioCandidate("tool", 6, 5.0, 0.25, 1020.0),
        PortfolioCandidate("lora", 12, 5.0, 0.5, 1020.0, save_s=0.068075, load_s=0.047748),
    ]
    return Portfolio.on_windows([(0, 80), (100, 180), (200, 280), (300, 540)], ls.PAPER_COLD, jobs)


def test_json_is_exactly_the_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = two_jobs().to_json(["sequential", "costed_window", "rollout", "dp"])
    status, out, err = run(capsys, "portfolio", write_spec(tmp_path, spec), "--json")
    assert (status, err) == (0, "")
    data = json.loads(out)
    assert list(data) == ["policies"]
    assert list(data["policies"]) == ["sequential", "costed_window", "rollout", "dp"]
    for plan in data["policies"].values():
        assert list(plan) == ["value", "publish_s", "gpu_s"]
        assert list(plan["publish_s"]) == ["tool", "lora"]
    assert data["policies"]["rollout"] == {
        "value": 200.012,
        "publish_s": {"tool": None, "lora": 360.0},
        "gpu_s": 129.988,
    }
    expected = solve_portfolio(two_jobs(), ["dp"])["dp"].to_json()
    assert data["policies"]["dp"] == expected


def test_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = two_jobs().to_json(["sequential", "costed_window", "rollout", "dp"])
    status, out, _ = run(capsys, "portfolio", write_spec(tmp_path, spec))
    assert status == 0
    assert out == (GOLDEN / "portfolio_two_jobs.txt").read_text(encoding="utf-8")


def test_default_policies_and_several_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = two_jobs().to_json()
    spec["gpus"] = [{"windows": spec.pop("windows")}, {"windows": [[0, 600]]}]
    spec["budget_gpu_s"] = 500.0
    out_file = tmp_path / "out.json"
    status, out, _ = run(
        capsys, "portfolio", write_spec(tmp_path, spec), "--json", "--out", str(out_file)
    )
    assert status == 0
    data = json.loads(out)
    assert list(data["policies"]) == [
        "sequential",
        "density",
        "earliest",
        "costed_window",
        "rollout",
    ]
    assert json.loads(out_file.read_text(encoding="utf-8")) == data
    assert all(p["gpu_s"] <= 500.0 for p in data["policies"].values())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.pop("candidates"), "SPEC is missing key(s) candidates"),
        (lambda s: s.update(extra=1), "SPEC has unknown key(s) extra"),
        (
            lambda s: s["candidates"][1].update(quantum_s=-1),
            "candidates[1] (lora): quantum_s must be > 0, got -1",
        ),
        (
            lambda s: s["candidates"][0].update(work_quanta="six"),
            "candidates[0]: work_quanta must be an integer, got 'six'",
        ),
        (lambda s: s.update(policies=["rollout", "best"]), "policies[1]: policy must be one of"),
        (lambda s: s.update(budget_gpu_s=-5), "budget_gpu_s must be finite and >= 0, got -5"),
        (lambda s: s.update(windows=[[0, 80], [50, 90]]), "gpus[0]: windows[1] starts at 50"),
    ],
)
def test_bad_spec_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, message: str
) -> None:
    spec = two_jobs().to_json()
    edit(spec)
    status, out, err = run(capsys, "portfolio", write_spec(tmp_path, spec))
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("learnsched portfolio: error: ")
    assert message in err


def test_a_dp_too_large_is_a_named_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = [PortfolioCandidate(f"j{i}", 60, 1.0, 1.0, 1e4) for i in range(6)]
    spec = Portfolio.on_windows(
        [(100.0 * k, 100.0 * k + 80) for k in range(20)], ls.PAPER_WARM, jobs
    ).to_json(["dp"])
    status, _, err = run(capsys, "portfolio", write_spec(tmp_path, spec))
    assert status == 2
    assert "error: dp: up to " in err
    assert "above the limit of 1048576" in err


def test_spec_or_study(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "portfolio")[0] == 2
    status, _, err = run(capsys, "portfolio", write_spec(tmp_path, two_jobs().to_json()), "--study")
    assert status == 2
    assert "give either SPEC.json or --study" in err
    status, _, err = run(capsys, "portfolio", "--study", "--setting", "moon")
    assert status == 2
    assert "--setting must be one of azure_trace, stable" in err


def test_study_prints_intervals(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "portfolio", "--study", "--seeds", "2", "--setting", "azure_trace")
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "2 seeds per setting; values in s-eq., intervals Student-t 95%"
    assert "95% CI" in lines[2]
    assert [line.split()[1] for line in lines[3:]] == [
        "sequential",
        "density",
        "earliest",
        "costed_window",
        "rollout",
    ]


def test_study_result() -> None:
    result = run_study(2, [s for s in study_settings() if s.name == "stable"])
    stats = result.settings["stable"]
    for name, s in stats.items():
        j = s.to_json()
        assert j["ci95"][0] <= j["mean_value"] <= j["ci95"][1], name
        assert len(s.values) == 2
    assert stats["sequential"].gains == (0.0, 0.0)
    for seed in range(2):  # rollout never below its reference, seed by seed
        assert stats["rollout"].values[seed] >= stats["costed_window"].values[seed] - 1e-6
    assert all(h <= 12.0 + 1e-9 for s in stats.values() for h in s.gpu_hours)  # the budget


def test_demand_shapes_make_each_idle_slot_a_window() -> None:
    import numpy as np

    load = np.array([0.5, 1.5, 2.5, 3.5, 0.0])
    assert idle_calendars(load, gpus=4) == (
        (),
        ((0.0, 300.0), (1200.0, 1500.0)),
        ((0.0, 300.0), (300.0, 600.0), (1200.0, 1500.0)),
        ((0.0, 300.0), (300.0, 600.0), (600.0, 900.0), (1200.0, 1500.0)),
    )
    assert len(DEMANDS) == 4


def test_the_wing_loads_on_first_use(tmp_path: Path) -> None:
    code = (
        "import sys, learnsched\n"
        "assert 'learnsched.portfolio' not in sys.modules\n"
        "from learnsched.cli import main\n"
        "try:\n"
        "    main(['grid', '--json'])\n"
        "finally:\n"
        "    assert 'learnsched.portfolio' not in sys.modules\n"
        "    assert 'learnsched.cli.portfolio' not in sys.modules\n"
        "assert learnsched.portfolio.PortfolioCandidate\n"
    )
    run_python(["-c", code], cwd=tmp_path, check=True)


@st.composite
def spec_texts(draw: st.DrawFn) -> str:
    """A SPEC's text: valid, with a field replaced by any JSON value, truncated, or random."""
    spec = draw(specs(max_candidates=2, max_quanta=3, max_stages=3))
    kind = draw(st.integers(0, 4))
    if kind == 1:
        spec[draw(st.sampled_from(sorted(spec)))] = draw(json_values)
    elif kind == 2:
        cand = spec["candidates"][0]
        cand[draw(st.sampled_from(sorted(cand)))] = draw(json_values)
    elif kind == 3:
        text = json.dumps(spec)
        return text[: draw(st.integers(0, len(text)))]
    elif kind == 4:
        return json.dumps(draw(json_values))
    return json.dumps(spec)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec_texts())
def test_fuzzed_specs_exit_0_or_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(text, encoding="utf-8")
    status, out, err = run(capsys, "portfolio", str(path), "--json")
    assert status in (0, 2), err
    if status == 0:
        assert list(json.loads(out)) == ["policies"]
    else:
        assert (out, err.count("\n")) == ("", 1)
        assert err.startswith("learnsched portfolio: error: ")


DOCS = Path(__file__).resolve().parents[1] / "docs" / "portfolio.md"


def docs_rows(setting: str) -> list[str]:
    """The study table's rows of ``setting`` in docs/portfolio.md."""
    return [
        r for r in DOCS.read_text(encoding="utf-8").splitlines() if r.startswith(f"| {setting} |")
    ]


def test_the_docs_trace_rows_are_what_the_code_computes() -> None:
    result = run_study(20, [s for s in study_settings() if s.name == "azure_trace"])
    rows = result.markdown().splitlines()[2:]
    assert rows == docs_rows("azure_trace")


@pytest.mark.slow
@pytest.mark.parametrize("setting", DEMANDS)
def test_the_docs_synthetic_rows_are_what_the_code_computes(setting: str) -> None:
    result = run_study(20, [s for s in study_settings() if s.name == setting])
    assert result.markdown().splitlines()[2:] == docs_rows(setting)


# --- --trace's horizon ------------------------------------------------------------------------


PORTFOLIO_TRACE_ERRORS = [
    (
        ["--from-s", "5000"],
        (
            "--from-s 5000 and --to-s (default: the trace's last request, 3435.95 s) leave no "
            "horizon: --to-s must be > --from-s"
        ),
    ),
    (["--from-s", "1200", "--to-s", "600"], "--from-s 1200 and --to-s 600 leave no horizon"),
    (["--to-s", "1e9"], "--to-s 1e+09 is after the trace's last request at 3435.95 s"),
    (["--to-s", "inf"], "--to-s must be finite, got inf"),
    (["--from-s", "nan"], "--from-s must be finite, got nan"),  # the flag, not the library's now_s
    (["--history-s", "0"], "--history-s must be > 0, got 0.0"),
    (["--slo-s", "-1"], "--slo-s must be >= 0, got -1.0"),
]


@pytest.mark.parametrize(("argv", "message"), PORTFOLIO_TRACE_ERRORS)
def test_portfolio_trace_horizon_errors_name_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """``portfolio --trace``'s horizon is [--from-s, --to-s): its errors name those flags
    and the defaults they took, not the library's horizon."""
    spec = {
        "recovery_s": 0.487,
        "residency_rate": 0.06,
        "candidates": [
            {
                "name": "a",
                "work_quanta": 2,
                "quantum_s": 30,
                "benefit_rate": 1,
                "horizon_s": 9000,
                "save_s": 0.1,
                "load_s": 0.1,
                "initial": {"progress": 0, "durable": 0, "active": False},
            }
        ],
    }
    path = write_file(tmp_path / "p.json", json.dumps(spec))
    status, _, err = run(capsys, "portfolio", path, "--trace", "--samples", "1", *argv)
    assert status == 2
    assert one_line(err).startswith(f"learnsched portfolio: error: {message}"), err
