"""``learnsched econ``: tables, JSON, golden text and errors of each sub-command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from learnsched.cli.econ import DEFAULT_BASELINE
from learnsched.economics import TABLE_B1

from conftest import one_line, run, run_handler

GOLDEN = Path(__file__).parent / "golden"

PAPER_KEYS = {
    "payback_uses_gpu",
    "waiting_gain_s0348",
    "stopped_breakeven_w",
    "sparse_utility",
    "service_cost_ds",
    "saving_at_alpha_0561",
    "alpha_boundary_w0",
}


def test_paper_json_recomputes_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run_handler(["econ", "paper", "--json"], capsys)
    figures = json.loads(out)
    assert status == 0
    assert set(figures) >= PAPER_KEYS
    assert figures["payback_uses_gpu"] == {"bits": 5, "pyramid": 80}
    assert round(figures["waiting_gain_s0348"], 3) == 68.866
    assert figures["stopped_breakeven_w"] == 3124
    assert figures["sparse_utility"] == -1660
    assert round(figures["service_cost_ds"]) == 15311
    assert round(figures["saving_at_alpha_0561"], 3) == 21830.529
    assert round(figures["service_offset_pct"], 2) == 28.24
    assert round(figures["alpha_boundary_w0"], 4) == 1.9868


def test_paper_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run_handler(["econ", "paper"], capsys)
    for text in ("5, 80", "+68.866", "W - 3124", "-1660", "15311", "21830.529", "28.24%", "1.9868"):
        assert text in out


def breakeven_argv(unit_value: str) -> list[str]:
    """``econ breakeven`` on one path (lambda*a = 1, H - tau_e = 900 s, C_e = 300)."""
    path = "--arrival-rate 2 --use-fraction 0.5 --horizon 1000 --build-time 100 --cost 300"
    return ["econ", "breakeven", *path.split(), "--unit-value", unit_value]


def test_breakeven(capsys: pytest.CaptureFixture[str]) -> None:
    argv = breakeven_argv("1")
    _, out = run_handler([*argv, "--payback", "4294.2", "53.8", "--json"], capsys)
    data = json.loads(out)
    assert data["latest_start_s"] == pytest.approx(600.0)
    assert data["profitable"] is True
    assert data["payback_uses"] == 80
    _, out = run_handler([*argv, "--start", "700"], capsys)
    assert "profitable                    no" in out


def test_breakeven_without_reuse_value_prints_never(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run_handler(breakeven_argv("0"), capsys)
    assert "never" in out


def test_wait(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["econ", "wait", "--cost-now", "170.092", "--cost-wait", "99.988"]
    argv += ["--publish-now", "325.048", "--publish-wait", "330", "--benefit-rate", "0.25"]
    _, out = run_handler(argv, capsys)
    assert "+68.866 s-eq." in out
    _, out = run_handler([*argv, "--json"], capsys)
    assert round(json.loads(out)["gain"], 3) == 68.866


def test_utility(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run_handler(["econ", "utility", "--demand", "sparse", "--json"], capsys)
    assert json.loads(out)["utility"] == "-1660"
    _, out = run_handler(["econ", "utility", "--guidance", "--value", "0"], capsys)
    assert "21830.529" in out
    assert "28.24%" in out
    assert "1.9868" in out


@pytest.mark.parametrize("demand", sorted(TABLE_B1))
def test_utility_defaults_work_for_every_demand_pattern(
    demand: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run_handler(["econ", "utility", "--demand", demand, "--json"], capsys)
    data = json.loads(out)
    assert status == 0
    assert data["better"] == "learnsched"
    assert data["baseline"] == DEFAULT_BASELINE[demand]
    assert data["baseline"] in TABLE_B1[demand]
    status, out = run_handler(["econ", "utility", "--demand", demand], capsys)
    assert status == 0
    assert f"learnsched over {DEFAULT_BASELINE[demand]} ({demand})" in out


def test_default_baselines() -> None:
    # Sustained demand has no Cal.* ledger: the paper compares with Window there (App. B.1).
    assert DEFAULT_BASELINE == {"sustained": "window", "stopped": "calendar", "sparse": "calendar"}


def test_explicit_baseline_overrides_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run_handler(
        ["econ", "utility", "--demand", "sustained", "--baseline", "never"], capsys
    )
    assert "learnsched over never (sustained)" in out
    assert "118W + 48904" in out  # 118 more answers, 48904 fewer tokens


GOLDEN_COMMANDS = {
    "econ_breakeven.txt": "econ breakeven --arrival-rate 2 --use-fraction 0.5 --unit-value 1 "
    "--horizon 1000 --build-time 100 --cost 300 --start 100 --payback 378.3 76.9",
    "econ_breakeven_never.txt": "econ breakeven --arrival-rate 2 --use-fraction 0.5 "
    "--unit-value 0 --horizon 1000 --build-time 100 --cost 300 --start 700",
    "econ_wait.txt": "econ wait --cost-now 170.092 --cost-wait 99.988 --publish-now 325.048 "
    "--publish-wait 330 --benefit-rate 0.25",
    "econ_utility_sustained.txt": "econ utility --demand sustained",
    "econ_utility_stopped.txt": "econ utility --demand stopped --value 4000",
    "econ_utility_sparse.txt": "econ utility --demand sparse",
    "econ_utility_guidance.txt": "econ utility --guidance --value 100",
    "econ_paper.txt": "econ paper",
}


@pytest.mark.parametrize("name", sorted(GOLDEN_COMMANDS))
def test_text_output_matches_golden(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run_handler(GOLDEN_COMMANDS[name].split(), capsys)
    assert status == 0
    assert out == (GOLDEN / name).read_text()


JSON_COMMANDS = [
    *(command + " --json" for command in GOLDEN_COMMANDS.values()),
    "econ alerts --n 500 --repeats 2 --json",
]


@pytest.mark.parametrize("command", JSON_COMMANDS)
def test_json_output_is_indented_like_the_rest_of_the_cli(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = run_handler(command.split(), capsys)
    assert out == json.dumps(json.loads(out), indent=2) + "\n"  # as `learnsched solve --json`
    assert out.startswith('{\n  "')


def test_alerts_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run_handler(["econ", "alerts", "--n", "2000", "--seed", "3", "--repeats", "2"], capsys)
    assert "vllm oracle" in out
    assert "sglang min. confidence" in out
    _, out = run_handler(["econ", "alerts", "--n", "2000", "--repeats", "2", "--json"], capsys)
    data = json.loads(out)
    assert data["seeds"] == [0, 1]
    assert set(data["loss_per_alert"]) == {"vllm", "sglang"}


def test_alerts_recovery_samples_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    samples = tmp_path / "samples.json"
    samples.write_text(json.dumps({"fast": [1.0, 2.0], "slow": [80.0]}))
    plot = tmp_path / "fig10.png"
    argv = ["econ", "alerts", "--n", "2000", "--repeats", "2", "--recovery-samples", str(samples)]
    _, out = run_handler([*argv, "--plot", str(plot)], capsys)
    assert "fast learnsched" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary behind


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        ("econ alerts --n 0", "--n must be >= 1"),
        ("econ alerts --repeats 0", "--repeats"),
        ("econ alerts --seed -1", "seed"),
        (
            "econ wait --cost-now 1 --cost-wait 1 --publish-now 5 --publish-wait 1 "
            + "--benefit-rate 1",
            "publish_wait_s",
        ),
        ("econ utility --demand stopped --better oracle", "better"),
        ("econ utility --guidance --alpha -1", "alpha"),
        (
            "econ breakeven --arrival-rate -2 --use-fraction 0.5 --unit-value 1 --horizon 1 "
            + "--build-time 1 --cost 1",
            "arrival_rate",
        ),
    ],
)
def test_bad_input_raises_value_error(
    argv: str, match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=match):
        run_handler(argv.split(), capsys)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ("{}", "JSON object"),
        ('{"a": "fast"}', "recovery_samples"),
        ('{"a": [-1]}', "recovery_samples"),
    ],
)
def test_bad_recovery_samples(
    tmp_path: Path, text: str, match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = tmp_path / "samples.json"
    samples.write_text(text)
    with pytest.raises(ValueError, match=match):
        run_handler(["econ", "alerts", "--n", "10", "--recovery-samples", str(samples)], capsys)


def test_missing_recovery_samples_is_an_os_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(OSError, match="missing"):
        run_handler(
            ["econ", "alerts", "--recovery-samples", str(tmp_path / "missing.json")], capsys
        )


# --- overflow ---------------------------------------------------------------------------------


def test_an_overflowing_decimal_rounds_to_infinity_and_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``float(Fraction)`` beyond a double raises OverflowError: rounding gives infinity
    instead, which the command names as an overflow (exit 2)."""
    from fractions import Fraction

    from learnsched.economics._decimal import rounded

    assert rounded(Fraction(10) ** 400) == float("inf")
    assert rounded(-(Fraction(10) ** 400)) == float("-inf")
    status, _, err = run(
        capsys, "econ", "wait", "--cost-now=1e308", "--cost-wait=0", "--publish-now=-1e308",
        "--publish-wait=1e308", "--benefit-rate=1e308",
    )  # fmt: skip
    assert status == 2
    assert "overflows a double" in one_line(err)
