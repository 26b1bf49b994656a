"""The CLI's contracts: JSON keys, exit statuses, golden text and files written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import learnsched as ls
from learnsched.cli import main

from conftest import run, run_python

GOLDEN = Path(__file__).parent / "golden"
POLICY_NAMES = ["never", "window", "static_roi", "costed_window", "rollout", "dp"]


def test_grid_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "grid", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["scenarios"] == 1920
    assert set(data["mean_gap"]) == set(POLICY_NAMES) - {"dp"}
    assert set(data["mean_value"]) == set(POLICY_NAMES)
    assert data["rollout_vs_costed_window"] == {"wins": 91, "ties": 1829, "losses": 0}
    assert data["rollout_equals_dp"] == 1907
    assert round(data["max_rollout_gap"], 3) == 124.836
    assert round(data["mean_gap"]["costed_window"], 3) == 5.369
    assert data["paper"] == ls.PAPER_FIGURES["5s"]


def test_grid_fine_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "grid", "--quantum", "1", "--fresh-only", "--json", "--threads", "2"
    )
    data = json.loads(out)
    assert status == 0
    assert data["scenarios"] == 480
    assert data["rollout_vs_costed_window"] == {"wins": 27, "ties": 453, "losses": 0}


def test_grid_table_prints_paper_beside_ours(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "grid")
    assert status == 0
    assert "91 wins / 1829 ties / 0 losses (paper 91 / 1829 / 0)" in out
    assert "Rollout equals DP in 1907 scenarios (paper 1907); max Rollout gap 124.836" in out
    assert any(
        line.split()[:5] == ["rollout", "470.670", "470.670", "0.246", "0.246"]
        for line in out.splitlines()
    )


def test_grid_csv_has_every_scenario(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "grid.csv"
    assert run(capsys, "grid", "--csv", str(path))[0] == 0
    lines = path.read_text().splitlines()
    assert lines[0].split(",")[-6:] == [f"value_{p}" for p in POLICY_NAMES]
    assert len(lines) == 1921
    assert lines[349].startswith("S0348,back_loaded,30,0.25,480,cold,fresh,")
    assert [p.name for p in tmp_path.iterdir()] == ["grid.csv"]  # no temporary left behind


def test_explain_s0348_matches_golden(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "S0348")
    assert status == 0
    assert out == (GOLDEN / "explain_S0348.txt").read_text()


def test_explain_all_lists_six_plans(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "explain", "S0348", "--all")
    assert [line.split(":")[0] for line in out.splitlines() if "value" in line and ": " in line][
        -6:
    ] == POLICY_NAMES


def write_scenarios(tmp_path: Path, obj: Any) -> str:
    path = tmp_path / "scenarios.json"
    path.write_text(json.dumps(obj))
    return str(path)


def test_solve_json_contract(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = ls.scenario_by_id("S0348").scenario.to_json()
    status, out, _ = run(capsys, "solve", write_scenarios(tmp_path, scenario), "--json")
    assert status == 0
    data = json.loads(out)
    assert list(data["policies"]) == POLICY_NAMES
    rollout = data["policies"]["rollout"]
    assert set(rollout) == {"value", "benefit", "publish_s", "cost", "steps"}
    assert set(rollout["cost"]) == {"work", "save", "load", "recovery", "residency"}
    assert rollout["publish_s"] == 330.0
    assert round(rollout["value"], 3) == 72.512
    assert data["policies"]["never"]["publish_s"] is None
    assert rollout["steps"][3]["action"] == "publish"


def test_solve_list_and_single_policy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    objs = [ls.scenario_by_id(s).scenario.to_json() for s in ("S0348", "S0344")]
    status, out, _ = run(
        capsys, "solve", write_scenarios(tmp_path, objs), "--policy", "dp", "--json"
    )
    data = json.loads(out)
    assert status == 0
    assert isinstance(data, list)
    assert len(data) == 2
    assert [list(d["policies"]) for d in data] == [["dp"], ["dp"]]
    assert data[1]["policies"]["dp"]["publish_s"] == pytest.approx(30.0)


def test_solve_text_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_scenarios(tmp_path, ls.scenario_by_id("S0348").scenario.to_json())
    status, out, _ = run(capsys, "solve", path, "--policy", "rollout")
    assert status == 0
    assert "rollout: value 72.512000 s-eq." in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "S9999"], "scenario id must be one of S0000..S1919, got 'S9999'"),
        (["solve", "{file}", "--policy", "best"], "policy must be one of"),
        (["solve", "/nonexistent/x.json"], "No such file"),
        (["grid", "--threads", "0"], "threads must be >= 1, got 0"),
        (["grid", "--quantum", "7"], "does not divide"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    good = write_scenarios(tmp_path, ls.scenario_by_id("S0348").scenario.to_json())
    status, out, err = run(capsys, *(a.replace("{file}", good) for a in argv))
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert message in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('[{"windows": []}]', r"scenario \[0\]: scenario is missing key"),
        (
            (
                '{"windows": [[0, 80], [50, 90]], "work_quanta": 6, "quantum_s": 5, "benefit_rate": 1,'
                ' "horizon_s": 500, "recovery_s": 1, "residency_rate": 0, "save_s": 0, "load_s": 0,'
                ' "initial": {"progress": 0, "durable": 0, "active": false}}'
            ),
            r"windows\[1\] starts at 50",
        ),
    ],
)
def test_malformed_scenario_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    status, _, err = run(capsys, "solve", str(path))
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err)


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    done = run_python(["-m", "learnsched", "explain", "S0348"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (GOLDEN / "explain_S0348.txt").read_text()


def test_plots_are_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    grid_png, plan_png = tmp_path / "grid.png", tmp_path / "plan.png"
    assert run(capsys, "grid", "--plot", str(grid_png))[0] == 0
    assert run(capsys, "explain", "S0348", "--all", "--plot", str(plan_png))[0] == 0
    for path in (grid_png, plan_png):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv",
    [["grid", "--quantum", "abc"], ["solve"], ["frobnicate"], ["explain", "S0348", "--bogus"]],
)
def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    _, err = capsys.readouterr()
    assert exit_info.value.code == 2
    assert len(err.strip().splitlines()) == 1
    assert "error:" in err


def measured_profile(tmp_path: Path, cold_recovery_s: float) -> str:
    """The paper's profile with another cold recovery time, as a probe would write it."""
    from learnsched.handoff import PAPER_PROFILE

    doc = PAPER_PROFILE.to_json()
    doc["measurements"]["cold_recovery_s"]["mean"] = cold_recovery_s
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_costs_profile_feeds_explain_and_grid(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profile = measured_profile(tmp_path, cold_recovery_s=5.0)
    _, out, _ = run(capsys, "explain", "S0348", "--costs", profile)
    assert "return 5 s" in out
    assert "rollout - costed_window: +68.865760" not in out  # cheap returns change the plans
    status, out, _ = run(capsys, "grid", "--json", "--costs", profile)
    data = json.loads(out)
    assert status == 0
    assert data["paper"] is None
    assert data["config_hash"] != ls.paper_grid().config.hash


def test_a_cold_only_profile_serves_cold_scenarios(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from learnsched.handoff import PAPER_PROFILE

    doc = PAPER_PROFILE.to_json()
    for quantity in ("warm_recovery_s", "host_pss_awake_gib", "host_pss_parked_gib"):
        del doc["measurements"][quantity]
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(doc))
    status, out, _ = run(capsys, "explain", "S0348", "--costs", str(path))  # cold
    assert status == 0
    assert out == (GOLDEN / "explain_S0348.txt").read_text()
    status, _, err = run(capsys, "explain", "S0344", "--costs", str(path))  # warm
    assert status == 2
    assert "warm_recovery_s" in err or "host_pss" in err


def test_costs_profile_feeds_solve(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    profile = measured_profile(tmp_path, cold_recovery_s=5.0)
    scenario = write_scenarios(tmp_path, ls.scenario_by_id("S0348").scenario.to_json())
    argv = ["solve", scenario, "--policy", "rollout", "--json", "--costs", profile]
    status, out, _ = run(capsys, *argv, "--recovery", "cold")
    steps = json.loads(out)["policies"]["rollout"]["steps"]
    assert status == 0
    assert {s["cost"]["recovery"] for s in steps} <= {0.0, 5.0}
    status, out, _ = run(capsys, *argv, "--recovery", "warm")
    steps = json.loads(out)["policies"]["rollout"]["steps"]
    assert status == 0
    assert {s["cost"]["recovery"] for s in steps} <= {0.0, ls.PAPER_WARM.recovery_s}
    status, _, err = run(capsys, *argv)
    assert status == 2
    assert "--costs PROFILE and --recovery cold|warm|both go together" in err
    status, _, err = run(capsys, "solve", scenario, "--recovery", "warm")
    assert status == 2
    assert "--costs PROFILE and --recovery cold|warm|both go together" in err


# --- standard JSON ----------------------------------------------------------------------------


def test_json_output_names_a_non_finite_result() -> None:
    from learnsched.cli.output import emit_json

    with pytest.raises(ValueError, match=r"--json: the result's a\[1\]\.b is inf"):
        emit_json({"a": [1, {"b": float("inf")}]})
