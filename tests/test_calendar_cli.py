"""``learnsched windows | online``: JSON contracts, the trace study, plots and bad input."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import learnsched as ls
from learnsched.calendar import AZURE_TRACE
from learnsched.cli import main

from conftest import calendar, one_line, run, write_file

POLICIES = {"window", "costed_window", "rollout", "mean_dp", "clairvoyant"}
CAUSAL = {"never", "window", "costed_window", "rollout", "mean_dp", "risk_rollout", "clairvoyant"}
SUMMARY_KEYS = {
    "values",
    "values_by_seed",
    "mean_value",
    "ci95",
    "mean_regret",
    "late_requests",
    "lateness_s",
    "slo_misses",
    "handoffs",
    "checkpoints",
    "lent_s",
}
# A study's summaries also give each policy per day (its horizons back to back).
STUDY_KEYS = SUMMARY_KEYS | {"value_per_day", "gpu_hours_per_day"}


def spec_file(tmp_path: Path, spec: Any) -> str:
    path = tmp_path / "spec.json"
    # Standard JSON writes an overflowing number as 1e999 (json.dumps would write Infinity).
    path.write_text(json.dumps(spec).replace("Infinity", "1e999"), encoding="utf-8")
    return str(path)


def s0348_spec(forecast: Any) -> dict[str, Any]:
    obj = ls.scenario_by_id("S0348").scenario.to_json()
    obj["forecast"] = forecast
    return obj


def test_online_exact_spec_json_contract(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run(capsys, "online", spec_file(tmp_path, s0348_spec("exact")), "--json")
    assert (status, err) == (0, "")
    data = json.loads(out)
    assert set(data) == {"policies", "differences"}
    assert set(data["policies"]) == POLICIES
    for summary in data["policies"].values():
        assert set(summary) == SUMMARY_KEYS
    # The paper's worked example: Rollout 72.512 against Costed Window 3.646.
    assert data["policies"]["rollout"]["values"] == [
        ls.solve(ls.scenario_by_id("S0348").scenario).value
    ]
    assert data["policies"]["rollout"]["mean_regret"] == 0.0
    assert data["policies"]["costed_window"]["mean_regret"] == pytest.approx(68.866, abs=1e-3)
    assert data["policies"]["rollout"]["ci95"] is None


def test_online_samples_and_lists(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    truth = calendar(80, 80, 80, 240)
    wrong = calendar(240, 80, 80, 80)
    spec = [
        s0348_spec({"samples": [truth, truth]}),
        s0348_spec({"samples": [wrong]}),
        s0348_spec("exact"),
    ]
    status, out, _ = run(capsys, "online", spec_file(tmp_path, spec), "--json", "--threads", "2")
    data = json.loads(out)["policies"]
    assert status == 0
    assert len(data["rollout"]["values"]) == 3
    assert data["rollout"]["values"][0] == data["rollout"]["values"][2]  # truth twice = exact
    low, high = data["rollout"]["ci95"]
    assert low <= data["rollout"]["mean_value"] <= high
    status, out, _ = run(capsys, "online", spec_file(tmp_path, spec))
    assert status == 0
    assert "3 true calendar(s)" in out
    assert out.count("\n") >= 7


@pytest.mark.parametrize(
    ("forecast", "message"),
    [
        ({"samples": []}, r"forecast.samples must hold at least one calendar"),
        ({"samples": [[]]}, r"forecast.samples\[0\] must hold at least one"),
        ({"samples": [[[0, 80], [50, 90]]]}, r"forecast.samples\[0\]\[1\] starts at 50"),
        ({"samples": [[[100, 180], [0, 80]]]}, r"forecast.samples\[0\]\[1\] starts at 0"),
        ({"samples": [[[0, "nan"]]]}, r"forecast.samples\[0\]\[0\] end must be a number"),
        ({"samples": "x"}, r"forecast.samples must be a list"),
        ({"samples": [5]}, r"forecast.samples\[0\] must be a list"),
        ({"samples": [[5]]}, r"forecast.samples\[0\]\[0\] must be a \[start, end\] pair"),
        ("guess", r'forecast must be "exact" or'),
        ({"sample": []}, r'forecast must be "exact" or'),
    ],
)
def test_online_bad_forecasts_exit_2_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, forecast: Any, message: str
) -> None:
    status, out, err = run(capsys, "online", spec_file(tmp_path, [s0348_spec(forecast)]))
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "spec[0]: " in err
    assert re.search(message, err), err


def test_online_overflowing_and_nonstandard_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 1e999 is a JSON number (too large for a double: the checker names it); Infinity is
    # not standard JSON at all.
    text = json.dumps([s0348_spec({"samples": [[[0, 7]]]})]).replace("7]]]", "1e999]]]")
    (tmp_path / "big.json").write_text(text, encoding="utf-8")
    status, _, err = run(capsys, "online", str(tmp_path / "big.json"))
    assert status == 2
    assert re.search(r"spec\[0\]: forecast.samples\[0\]\[0\] end must be finite", err), err
    (tmp_path / "inf.json").write_text(text.replace("1e999", "Infinity"), encoding="utf-8")
    status, _, err = run(capsys, "online", str(tmp_path / "inf.json"))
    assert status == 2
    assert "Infinity is not standard JSON" in err


def test_online_bad_arguments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for argv in (
        ["online"],
        ["online", spec_file(tmp_path, s0348_spec("exact")), "--trace"],
        ["online", spec_file(tmp_path, s0348_spec("exact")), "--plot", str(tmp_path / "x.png")],
        ["online", spec_file(tmp_path, {"windows": []})],
        ["online", spec_file(tmp_path, [])],
        ["online", "--trace", "--samples", "4,x"],
        ["online", "--trace", "--work-s", "7"],
    ):
        status, _, err = run(capsys, *argv)
        assert status == 2, argv
        assert err.count("\n") == 1, err
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    status, _, err = run(capsys, "online", str(tmp_path / "bad.json"))
    assert status == 2
    assert "is not valid JSON" in err


def test_online_trace_study_json_and_plot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib")
    plot = tmp_path / "study.png"
    out_file = tmp_path / "study.json"
    status, out, _ = run(
        capsys,
        "online",
        "--trace",
        "--samples",
        "1,4",
        "--seeds",
        "2",
        "--recovery",
        "cold",
        "--json",
        "--plot",
        str(plot),
        "--out",
        str(out_file),
    )
    assert status == 0
    data = json.loads(out)
    assert data == json.loads(out_file.read_text(encoding="utf-8"))
    assert data["mode"] == "causal"
    assert data["trace"]["synthetic"] is False
    assert data["seeds"] == [0, 1]
    assert set(data["samples"]) == {"1", "4"}
    assert data["horizons"] >= 1
    for result in data["samples"].values():
        assert set(result["policies"]) == CAUSAL
        best = result["policies"]["clairvoyant"]["values"]
        for summary in result["policies"].values():
            assert set(summary) == STUDY_KEYS
            assert len(summary["values_by_seed"]) == 2
            day = 86400.0 / 600.0
            assert summary["value_per_day"] == pytest.approx(summary["mean_value"] * day)
            assert summary["gpu_hours_per_day"] == pytest.approx(summary["lent_s"] * day / 3600)
            # The clairvoyant is the best schedule of each horizon: no policy beats it.
            assert all(v <= b + 1e-9 for v, b in zip(summary["values"], best, strict=True))
        names = {(d["a"], d["b"]) for d in result["differences"]}
        assert ("window", "rollout") in names
        never = result["policies"]["never"]
        assert never["values"] == [0.0] * data["horizons"]  # these deadlines hold unlent
        assert never["lent_s"] == never["gpu_hours_per_day"] == 0.0
        # Each policy's verdict is its paired difference with never lending.
        assert set(result["verdicts"]) == CAUSAL - {"never"}
        for name, verdict in result["verdicts"].items():
            (pair,) = [d for d in result["differences"] if {d["a"], d["b"]} == {name, "never"}]
            assert verdict["mean"] == pytest.approx(result["policies"][name]["mean_value"])
            lo, hi = verdict["ci95"]
            says = "lending pays" if lo > 0 else "lending does not pay" if hi < 0 else None
            assert verdict["verdict"] == (says or "cannot tell at 95%")
            flipped = [-hi, -lo] if pair["a"] == "never" else [lo, hi]
            assert pair["ci95"] == pytest.approx(flipped)
    assert set(data["calibration"]) == {"empirical", "repeat", "mean"}
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_online_trace_table(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "online", "--trace", "--samples", "2", "--recovery", "warm")
    assert status == 0
    assert "horizons of 600 s" in out
    assert "causal" in out
    assert "N = 2" in out
    assert "clairvoyant" in out
    assert "paired differences" in out
    assert "verdicts against never lending" in out
    assert "calibration" in out


def test_online_known_window_mode(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "online", "--trace", "--known-window", "--samples", "2", "--json")
    assert status == 0
    data = json.loads(out)
    assert data["mode"] == "known_window"
    settings = data["settings"]
    assert settings["return_s"] == settings["recovery_s"] > 0  # the old key, for one release
    for summary in data["samples"]["2"]["policies"].values():
        assert summary["late_requests"] == 0.0
        assert summary["slo_misses"] is None


def test_windows_json_drops_into_a_scenario(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "w.json"
    status, out, _ = run(
        capsys,
        "windows",
        str(AZURE_TRACE),
        "--recovery-s",
        "69.988",
        "--json",
        "--out",
        str(out_file),
    )
    assert status == 0
    data = json.loads(out)
    assert data == json.loads(out_file.read_text(encoding="utf-8"))
    assert data["return_path_s"] == 69.988
    assert len(data["windows"]) == len(data["reclaim_by"]) > 5
    scenario = ls.Scenario(data["windows"], 12, 5.0, 0.25, 5000.0, ls.PAPER_COLD)
    assert ls.solve(scenario, "dp").value > 0
    status, out, _ = run(capsys, "windows", str(AZURE_TRACE))
    assert status == 0
    assert "8819 requests over 3435.9 s" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nnot-a-time,1,2\n", "line 2: TIMESTAMP"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,-5,2\n",
            "line 2: ContextTokens",
        ),
        (
            (
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05,1,2\n"
                "2023-11-16 18:17:04,1,2\n"
            ),
            "line 3: TIMESTAMP 2023-11-16 18:17:04 is earlier",
        ),
        ("arrival,work,deadline\n3,1,5\n2,1,5\n", "arrival must be sorted, got arrival[1]"),
    ],
)
def test_windows_bad_traces_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    status, out, err = run(capsys, "windows", str(path))
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    assert message in err


def test_windows_sort_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    rows = [
        "2023-11-16 18:17:00,100,10",
        "2023-11-16 18:18:40,100,10",
        "2023-11-16 18:17:01,100,10",
    ]
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    status, out, _ = run(capsys, "windows", str(path), "--sort", "--json", "--slo-s", "5")
    assert status == 0
    assert len(json.loads(out)["windows"]) == 1


def test_windows_reads_the_deprecated_return_s_flag_as_recovery_s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    new = run(capsys, "windows", str(AZURE_TRACE), "--recovery-s", "69.988", "--json")
    with pytest.warns(DeprecationWarning, match="'--return-s' is deprecated.*'--recovery-s'"):
        old = run(capsys, "windows", str(AZURE_TRACE), "--return-s", "69.988", "--json")
    assert old == new


def test_causal_windows_read_the_deprecated_return_s_keyword() -> None:
    from learnsched.calendar.causal import CausalTrace

    trace = CausalTrace(ls.calendar.load_trace(AZURE_TRACE), 1.0)
    new = trace.windows(0.0, 3600.0, 5.0, recovery_s=69.988)
    with pytest.warns(DeprecationWarning, match="'return_s' is deprecated.*'recovery_s'"):
        assert trace.windows(0.0, 3600.0, 5.0, return_s=69.988) == new
    with pytest.raises(TypeError, match="give 'recovery_s' only"):
        trace.windows(0.0, 3600.0, 5.0, recovery_s=1.0, return_s=1.0)


# --- flags named in errors --------------------------------------------------------------------


def test_online_trace_with_a_zero_quantum_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """A zero quantum is refused under its flag before anything is divided by it."""
    status, _, err = run(capsys, "online", "--trace", "--quantum-s", "0")
    assert status == 2
    assert one_line(err) == "learnsched online: error: --quantum-s must be > 0, got 0.0"


def test_return_s_inf_is_reported_under_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The error names the flag the user gave (--return-s), not the library's ``ready_s``."""
    trace = write_file(tmp_path / "t.csv", "arrival,work,deadline\n0,1,30\n")
    with pytest.raises(SystemExit) as exit:
        main(["windows", trace, "--return-s", "inf"])
    assert exit.value.code == 2
    assert one_line(capsys.readouterr().err) == (
        "learnsched windows: error: argument --return-s: must be a finite number >= 0, got 'inf'"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--horizon-s", "0"], "--horizon-s must be > 0, got 0.0"),
        (["--warmup-s", "-1"], "--warmup-s must be >= 0, got -1.0"),
        (["--history-s", "0"], "--history-s must be > 0, got 0.0"),
        (["--return-level", "2"], "--return-level must be in [0, 1], got 2.0"),
        (
            ["--horizon-s", "1e6"],
            (
                "no horizon of --horizon-s = 1e+06 s after a warm-up of --warmup-s = 600 s fits "
                "the trace's 3435.95 s"
            ),
        ),
        (  # 10^303 starts: refused before any is listed
            ["--horizon-s", "1e-300"],
            (
                "2.84e+303 horizons of --horizon-s = 1e-300 s after a warm-up of --warmup-s = "
                "600 s in the trace's 3435.95 s exceed the limit of 100000"
            ),
        ),
        (
            ["--horizon-s", "5e-324", "--known-window"],
            "inf horizons of --horizon-s = 4.94066e-324 s",
        ),
    ],
)
def test_online_trace_horizon_errors_name_the_flags(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """``online --trace``'s horizons come from --horizon-s and --warmup-s, so its errors name
    those flags (not the library's ``horizon_s``), and more horizons than can be listed are
    refused before any is listed."""
    status, _, err = run(capsys, "online", "--trace", "--samples", "1", *argv)
    assert status == 2
    assert one_line(err).startswith(f"learnsched online: error: {message}"), err


def test_online_trace_names_the_flag_of_a_horizon_too_long_to_solve(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exact clairvoyant's node limit is the library's HorizonTooLong, naming the
    horizon; the CLI names the flag that sets it, --horizon-s."""
    import functools

    from learnsched.calendar import causal, study

    monkeypatch.setattr(study, "clairvoyant", functools.partial(causal.clairvoyant, max_nodes=1))
    status, _, err = run(capsys, "online", "--trace", "--samples", "1")
    assert status == 2
    line = one_line(err)
    assert line.startswith(
        "learnsched online: error: --horizon-s 600: the horizon [600, 1200] s is too long to "
        "solve exactly (the scenario tree has more than max_nodes = 1"
    ), line
    assert line.endswith("; give a shorter --horizon-s"), line
    trace = causal.CausalTrace(ls.calendar.load_trace(ls.calendar.AZURE_TRACE))
    scenario = ls.scenario_by_id("S0348").scenario
    with pytest.raises(causal.HorizonTooLong, match=r"horizon \[600, 1200\] s: .*max_nodes") as e:
        causal.clairvoyant(trace, scenario, 600.0, 1200.0, max_nodes=1)
    assert (e.value.from_s, e.value.to_s) == (600.0, 1200.0)


def test_a_trace_with_no_gap_as_long_as_a_quantum_is_warned_of(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A request every 2 s: no idle gap is 5 s long, so nothing can be lent and every
    policy earns 0; the study says why, with the longest gap."""
    start = 1_700_000_000
    rows = [
        f"{datetime.fromtimestamp(start + 2 * i, timezone.utc):%Y-%m-%d %H:%M:%S},200,20"
        for i in range(700)
    ]
    path = tmp_path / "dense.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    argv = ["online", "--trace", str(path), "--samples", "2", "--horizon-s", "600"]
    status, out, err = run(capsys, *argv, "--warmup-s", "600", "--json")
    assert status == 0
    gaps = json.loads(out)["gaps"]
    assert gaps["gaps"] > 0
    assert gaps["fitting_one_quantum"] == 0
    assert 0 < gaps["longest_s"] < 2.0
    assert gaps["quantum_s"] == 5.0
    assert "no idle gap" in err
    assert f"the longest is {gaps['longest_s']:.3g} s" in err
    assert err == f"learnsched online: warning: {gaps['warning']}\n"
    policies = json.loads(out)["samples"]["2"]["policies"]
    assert policies["clairvoyant"]["values"] == [0.0]


def test_a_trace_with_room_is_not_warned_of(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "online", "--trace", "--samples", "2", "--json")
    assert status == 0
    gaps = json.loads(out)["gaps"]
    assert gaps["fitting_one_quantum"] > 0
    assert gaps["longest_s"] >= gaps["quantum_s"]
    assert gaps["warning"] is None
    assert "warning" not in err


def test_online_trace_plans_with_a_probes_measured_costs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from learnsched.handoff import CostProfile, Measurement

    profile = tmp_path / "profile.json"
    CostProfile(
        measurements={
            "warm_recovery_s": Measurement.of((0.25,), "s"),
            "checkpoint_save_s": Measurement.of((0.5,), "s"),
        }
    ).write(profile)
    argv = ["online", "--trace", "--samples", "2", "--recovery", "warm", "--json"]
    status, _, err = run(capsys, *argv, "--costs", str(profile))
    assert status == 2
    assert "host_pss_awake_gib" in err  # every missing quantity named at once
    assert "checkpoint_load_s" in err
    status, out, err = run(capsys, *argv, "--costs", str(profile), "--base", "paper")
    assert status == 0, err
    settings = json.loads(out)["settings"]
    paper = ls.HandoffCosts.paper("warm")
    assert (settings["recovery_s"], settings["save_s"]) == (0.25, 0.5)
    assert (settings["load_s"], settings["residency_rate"]) == (
        paper.load_s,
        paper.residency_rate,
    )
    assert "warm_recovery_s, checkpoint_save_s from" in err  # which number came from where
    status, _, err = run(capsys, "online", "spec.json", "--costs", str(profile))
    assert status == 2
    assert "--costs works over a trace" in err
