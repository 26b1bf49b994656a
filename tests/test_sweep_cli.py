"""``learnsched sweep``: the JSON contract, the table, exit statuses and one-line errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import learnsched as ls

from conftest import TWO_PATH, one_line, run, write_file, write_spec

SPEC: dict[str, Any] = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [40, 69.988, 120]},
    "policies": ["costed_window", "rollout"],
}


def test_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cold.csv"
    status, text, _ = run(capsys, "sweep", write_spec(tmp_path, SPEC), "--out", str(out), "--json")
    assert status == 0
    data = json.loads(text)
    assert set(data) == {"out", "spec_sha256", "rows", "invalid", "chunks", "seconds", "points"}
    assert (data["out"], data["rows"], data["invalid"]) == (str(out), 3 * 1920, 160)
    assert data["chunks"]["solved"] == data["chunks"]["total"]
    assert data["chunks"]["skipped"] == 0
    paper = data["points"][1]
    assert paper["params"] == {"cold_recovery_s": 69.988}
    assert paper["rollout_vs_costed_window"] == {"wins": 91, "ties": 1829, "losses": 0}
    assert round(paper["mean_value"]["rollout"], 3) == 470.670
    assert (paper["scenarios"], paper["invalid"]) == (1920, 0)
    assert data["points"][0]["rollout_vs_costed_window"]["wins"] == 14
    assert data["points"][2]["invalid"] == 160
    assert out.read_text().count(",invalid,") == 160

    status, text, _ = run(capsys, "sweep", write_spec(tmp_path, SPEC), "--out", str(out), "--json")
    again = json.loads(text)
    assert (again["chunks"]["solved"], again["points"]) == (0, data["points"])


def test_table_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib", reason="plots need the plot extra")
    spec = write_spec(tmp_path, SPEC)
    png = tmp_path / "cold.png"
    out = str(tmp_path / "cold.csv")
    status, text, err = run(
        capsys, "sweep", spec, "--out", out, "--workers", "2", "--plot", str(png)
    )
    assert status == 0
    assert err == ""  # no progress bar off a terminal
    lines = text.splitlines()
    assert lines[0].startswith(f"5760 rows (3 points x 1920 scenarios, 160 invalid) in {out}; ")
    paper = next(line for line in lines if line.startswith("cold_recovery_s=69.988"))
    assert "costed_window 465.547  rollout 470.670  rollout vs costed_window 91/1829/0" in paper
    assert lines[-1].endswith("0/1760/0  160 invalid")
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**SPEC, "vary": {"gap_s": [20]}}, "vary has unknown field 'gap_s'"),
        ({**SPEC, "vary": {"cold_recovery_s": []}}, "vary.cold_recovery_s must list at least"),
        ({**SPEC, "vary": {"save_s": ["fast"]}}, "vary.save_s must hold numbers, got 'fast'"),
        ({**SPEC, "policies": ["rollout", "greedy"]}, "policy must be one of"),
    ],
)
def test_bad_spec_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: object, message: str
) -> None:
    status, text, err = run(
        capsys, "sweep", write_spec(tmp_path, spec), "--out", str(tmp_path / "x.csv")
    )
    assert (status, text) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("learnsched sweep: error: ")
    assert message in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--address", "10.0.0.1:6379"], "--address 10.0.0.1:6379 needs --backend ray"),
        (["--chunk-rows", "0"], "chunk_rows must be >= 1, got 0"),
        (["--workers", "0"], "workers must be >= 1, got 0"),
    ],
)
def test_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    spec = write_spec(tmp_path, SPEC)
    status, _, err = run(capsys, "sweep", spec, "--out", str(tmp_path / "x.csv"), *extra)
    assert status == 2
    assert err == f"learnsched sweep: error: {message}\n"


def test_a_spec_that_is_not_json_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{base: paper_grid")
    status, _, err = run(capsys, "sweep", str(tmp_path / "bad.json"), "--out", "x.csv")
    assert status == 2
    assert "bad.json is not valid JSON" in err
    status, _, err = run(capsys, "sweep", str(tmp_path / "missing.json"), "--out", "x.csv")
    assert status == 2
    assert "missing.json" in err


@pytest.mark.parametrize(
    ("hidden", "argv"),
    [("ray", ["--backend", "ray"]), ("pyarrow", [])],
)
def test_a_missing_extra_exits_3(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hidden: str,
    argv: list[str],
) -> None:
    monkeypatch.setitem(sys.modules, hidden, None)  # import now fails as if not installed
    suffix = ".csv" if hidden == "ray" else ".parquet"
    spec = write_spec(tmp_path, {**SPEC, "vary": {"cold_recovery_s": [20]}})
    status, _, err = run(capsys, "sweep", spec, "--out", str(tmp_path / f"x{suffix}"), *argv)
    assert status == 3
    assert err.count("\n") == 1
    assert "pip install 'learnsched[ray]'" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "spec.json"]  # failed before it began


# --- a two-path base, sizes, values and backends ----------------------------------------------


def test_sweep_keeps_the_cold_path_of_a_two_path_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    solved = ls.solve(ls.Scenario.from_json(TWO_PATH), "dp").value
    assert solved == 1390.0
    spec = write_file(
        tmp_path / "s.json", json.dumps({"base": [TWO_PATH], "vary": {}, "policies": ["dp"]})
    )
    status, out, _ = run(capsys, "sweep", spec, "--out", str(tmp_path / "s.csv"), "--json")
    assert status == 0
    # A sweep that dropped the base's cold path would give 1099.0.
    assert json.loads(out)["points"][0]["mean_value"]["dp"] == solved


def test_sweep_points_x_scenarios_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 4.2 KB SPEC asks for gigabytes of rows: its points are refused before any is
    built."""
    vary = {f: [0.01 * (i + 1) for i in range(12)] for f in ("save_s", "load_s", "residency_rate")}
    vary["cold_recovery_s"] = [float(10 + i) for i in range(12)]
    spec = write_file(
        tmp_path / "big.json", json.dumps({"base": "paper_grid", "vary": vary, "policies": ["dp"]})
    )
    status, _, err = run(capsys, "sweep", spec, "--out", str(tmp_path / "big.csv"))
    assert status == 2
    assert one_line(err).endswith(
        "sweep rows: points x base scenarios = 20736 x 1920 = 39813120 exceeds the limit of 4194304"
    )
    assert not (tmp_path / "big.csv.parts").exists()


@pytest.mark.parametrize("value", ["1e400", "1" + "0" * 400])
def test_a_sweep_vary_value_beyond_a_double_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """A value beyond a double is named (``float(10**400)`` raises OverflowError)."""
    text = '{"base": "paper_grid", "vary": {"save_s": [VALUE]}, "policies": ["dp"]}'
    text = text.replace("VALUE", value)
    status, _, err = run(
        capsys, "sweep", write_file(tmp_path / "v.json", text), "--out", str(tmp_path / "v.csv")
    )
    assert status == 2
    assert "vary.save_s[0] must be finite" in one_line(err)


def test_a_ray_that_does_not_start_is_an_environment_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A local Ray that does not start (under an address-space cap its raylet dies and
    ``ray.init`` raises a bare ``Exception``) is the environment's failure: exit 4 naming
    the backend, after ``ray.shutdown()``, not 70 (a bug)."""
    import types

    from learnsched.sweep import ray_backend

    calls: list[str] = []

    def init(**options: object) -> None:
        calls.append("init")
        raise Exception("The current node timed out during startup.\nmore")  # noqa: TRY002

    ray = types.SimpleNamespace(
        is_initialized=lambda: False, init=init, shutdown=lambda: calls.append("shutdown")
    )
    monkeypatch.setattr(ray_backend, "require", lambda module, extra: ray)
    spec = {"base": [TWO_PATH], "vary": {"benefit_rate": [1, 2]}, "policies": ["rollout"]}
    path = write_file(tmp_path / "spec.json", json.dumps(spec))
    out = str(tmp_path / "out.csv")
    monkeypatch.setattr("learnsched.sweep.run.require", lambda module, extra: ray)
    status, _, err = run(capsys, "sweep", path, "--out", out, "--backend", "ray", "--workers", "1")
    assert (status, calls) == (4, ["init", "shutdown"])
    assert one_line(err) == (
        "learnsched sweep: error: backend ray: could not start a local Ray: "
        "The current node timed out during startup."
    )
