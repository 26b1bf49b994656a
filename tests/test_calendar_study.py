"""Studies: paired summaries, the synthetic trace, the baseline forecasters, --steps, the
SPEC reader."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched._json import parse as parse_json
from learnsched.calendar import AZURE_TRACE, MeanForecaster, RepeatForecaster, load_trace
from learnsched.calendar.causal import CausalTrace
from learnsched.calendar.study import StudyCandidate, StudySettings, causal_study, gap_calibration
from learnsched.calendar.summary import PolicySummary, differences, t_interval
from learnsched.calendar.synth import DAY_S, fit_synthesizer
from learnsched.calendar.traces import SYNTHETIC_COLUMN, is_synthetic, read_azure_trace

from conftest import one_line, run

STEP_KEYS = {
    "horizon",
    "horizon_start_s",
    "t",
    "seed",
    "policy",
    "state",
    "action",
    "reward",
    "late_requests",
}


# --- summaries ------------------------------------------------------------------------------


def summary(values: list[list[float]]) -> PolicySummary:
    v = np.array(values, dtype=np.float64)
    zeros = np.zeros_like(v)
    return PolicySummary(v, zeros, zeros, zeros, zeros, zeros)


def test_paired_differences_are_per_case_means_over_seeds() -> None:
    a = summary([[1.0, 2.0, 3.0, 4.0], [3.0, 2.0, 5.0, 4.0]])  # 2 seeds x 4 cases
    b = summary([[0.0, 1.0, 1.0, 3.0], [0.0, 1.0, 3.0, 3.0]])
    (d,) = differences({"a": a, "b": b})
    per_case = np.array([2.0, 1.0, 2.0, 1.0])
    assert d.mean == pytest.approx(per_case.mean())
    assert d.ci95 == pytest.approx(t_interval(per_case))
    assert d.significant
    assert d.holm
    assert a.values == (2.0, 2.0, 4.0, 4.0)
    assert a.ci95 == pytest.approx(t_interval([2.0, 2.0, 4.0, 4.0]))


def test_holm_corrects_over_every_pair() -> None:
    rng = np.random.default_rng(4)
    noise = {f"p{k}": summary([list(rng.normal(0, 1, 12))]) for k in range(5)}
    rows = differences(noise)
    assert len(rows) == 10
    # Holm never calls more significant than the raw 5% tests, and with no effect few.
    assert sum(r.holm for r in rows) <= sum((r.p_value or 1) < 0.05 for r in rows)
    one = differences({"a": summary([[1.0]]), "b": summary([[0.0]])})[0]
    assert one.ci95 is None
    assert one.p_value is None
    assert not one.significant


# --- the synthesizer ------------------------------------------------------------------------


def test_synthetic_traces_keep_the_rate_and_the_bursts_and_follow_a_day() -> None:
    source = read_azure_trace()
    flat = fit_synthesizer(source, amplitude=0.0)
    day = flat.generate(DAY_S, np.random.default_rng(1))
    rate = day.arrival.size / day.arrival[-1]
    assert rate == pytest.approx(flat.mean_rate, rel=0.05)
    again = flat.generate(DAY_S, np.random.default_rng(1))
    assert np.array_equal(day.arrival, again.arrival)  # a function of the seed
    # The gaps between arrivals keep the trace's shape, its heavy tail included.
    real, synthetic = np.diff(source.arrival), np.diff(day.arrival)
    for q in (0.5, 0.99):
        assert np.quantile(synthetic, q) == pytest.approx(np.quantile(real, q), rel=0.5)
    # A daily cycle: the busiest hour well above the quietest.
    cycled = fit_synthesizer(source, amplitude=0.5, peak_hour=14.0)
    trace = cycled.generate(DAY_S, np.random.default_rng(2))
    hourly = np.histogram(trace.arrival, bins=24, range=(0.0, DAY_S))[0]
    assert hourly[12:16].mean() > 1.5 * hourly[[0, 1, 2, 23]].mean()
    with pytest.raises(ValueError, match="amplitude must be < 1"):
        fit_synthesizer(source, amplitude=1.0)


def test_synthetic_traces_are_labelled(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "synth.csv"
    status, text, _ = run(capsys, "synth", "--days", "0.25", "--out", str(out), "--json")
    assert status == 0
    info = json.loads(text)
    assert info["synthetic"] is True
    assert info["requests"] > 1000
    assert is_synthetic(out)
    assert SYNTHETIC_COLUMN in out.read_text(encoding="utf-8").splitlines()[0]
    assert not is_synthetic(AZURE_TRACE)
    status, text, _ = run(capsys, "windows", str(out))
    assert status == 0
    assert "SYNTHETIC" in text
    status, text, _ = run(capsys, "online", "--trace", str(out), "--samples", "4", "--json")
    assert status == 0
    assert json.loads(text)["trace"]["synthetic"] is True


# --- baseline forecasters -------------------------------------------------------------------


def test_baselines_repeat_the_last_cycles_or_their_mean() -> None:
    observed = ((0.0, 10.0), (20.0, 50.0), (60.0, 65.0), (100.0, 130.0))
    rng = np.random.default_rng(0)
    (repeat,) = {RepeatForecaster(2).sample(observed, 135.0, 300.0, 3, rng)[i] for i in range(3)}
    # The last two cycles (gap 10 then 5 s; gap 35 then 30 s), the first gap less 5 s.
    assert repeat[:3] == ((140.0, 145.0), (180.0, 210.0), (220.0, 225.0))
    (mean,) = set(MeanForecaster().sample(observed, 135.0, 300.0, 2, rng))
    gaps = np.diff([w[0] for w in mean])
    assert np.allclose(gaps, gaps[0])
    assert mean[0][1] - mean[0][0] == pytest.approx((30 + 5 + 30) / 3)
    assert RepeatForecaster().sample(((0.0, 1.0),), 5.0, 99.0, 2, rng) == [(), ()]


# --- --steps and seeds ------------------------------------------------------------------------


def test_steps_file_has_exactly_the_contract_keys(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    steps = tmp_path / "steps.jsonl"
    status, text, _ = run(
        capsys, "online", "--trace", "--samples", "4", "--seeds", "2", "--recovery", "warm",
        "--steps", str(steps), "--json",
    )  # fmt: skip
    assert status == 0
    study = json.loads(text)
    lines = [json.loads(x) for x in steps.read_text(encoding="utf-8").splitlines()]
    assert lines
    assert all(set(line) == STEP_KEYS for line in lines)
    assert {line["seed"] for line in lines} == {0, 1}
    assert {line["policy"] for line in lines} == set(study["samples"]["4"]["policies"])
    # Each run's rewards sum to its value (per horizon, seed and policy).
    by_run: dict[tuple[Any, ...], float] = {}
    for line in lines:
        key = (line["horizon"], line["seed"], line["policy"])
        by_run[key] = by_run.get(key, 0.0) + line["reward"]
    policies = study["samples"]["4"]["policies"]
    for (h, seed, policy), total in by_run.items():
        assert total == pytest.approx(policies[policy]["values_by_seed"][seed][h], abs=1e-6)
    starts = study["horizon_starts_s"]
    assert all(line["horizon_start_s"] == starts[line["horizon"]] for line in lines)
    status, _, err = run(capsys, "online", "--trace", "--samples", "4,8", "--steps", str(steps))
    assert status == 2
    assert "one forecast size" in err


def test_seeds_vary_the_forecast_only(capsys: pytest.CaptureFixture[str]) -> None:
    status, text, _ = run(capsys, "online", "--trace", "--samples", "4", "--seeds", "3", "--json")
    assert status == 0
    policies = json.loads(text)["samples"]["4"]["policies"]
    for name in ("window", "clairvoyant"):  # neither reads a forecast
        rows = policies[name]["values_by_seed"]
        assert rows[0] == rows[1] == rows[2]


def test_threads_do_not_change_a_causal_study(capsys: pytest.CaptureFixture[str]) -> None:
    """The horizons' clairvoyants, pools and calibration run ahead on threads; the study
    is the same bit for bit, and so is the calibration table computed alone."""
    args = ("online", "--trace", "--samples", "4", "--seeds", "2", "--json")
    outs = [run(capsys, *args, "--threads", str(t))[1] for t in (1, 3)]
    assert outs[0] == outs[1]
    calibration = json.loads(outs[0])["calibration"]
    assert calibration["empirical"]["queries"] > 0
    trace = CausalTrace(load_trace())
    candidate = StudyCandidate(12, 5.0, 0.25, 480.0, ls.PAPER_COLD)
    study_settings = StudySettings(samples=(4,), seeds=(0,), threads=2)
    study = causal_study(trace, candidate, study_settings)
    alone = gap_calibration(trace, candidate, study_settings, study.horizons)
    assert json.dumps(alone) == json.dumps(study.calibration)


# --- the SPEC reader ----------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, indent=st.sampled_from([None, 1]))
def test_the_spec_reader_reads_json_as_python_does(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    assert parse_json(text, "x") == json.loads(text)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=30))
def test_the_spec_reader_refuses_what_json_refuses(text: str) -> None:
    try:
        want = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError, match="x is not valid JSON"):
            parse_json(text, "x")
        return
    if any(c in text for c in ("NaN", "Infinity")):
        return  # Python's json reads them; standard JSON (and learnsched) does not
    assert parse_json(text, "x") == want


# --- bounds: the SPEC reader, the synthesizer's size, seeds ---------------------------


def test_private_online_readers_are_bounded() -> None:
    """The SPEC reader is the package's JSON reader: a lone surrogate in a key is standard
    JSON (Python's json reads it), and so is it in a SPEC; the core's online runner bounds
    its threads and names a bad case."""
    assert parse_json('{"\\ud800": 1, "forecast": {"\\udfff": 2}}', "s.json") == {
        "\ud800": 1,
        "forecast": {"\udfff": 2},
    }
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 2048"):
        _core.forecast.run_online([], [_core.finite.Policy.DP], 2048)
    with pytest.raises(TypeError, match=r"cases\[0\].scenario must be a Scenario, got 'x'"):
        _core.forecast.run_online([("x", np.zeros((1, 2)), np.array([0, 1]))], [_core.finite.Policy.DP])


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--days", "1e300", "synthetic trace rows: mean_rate x duration_s = "),
        ("--days", "inf", "duration_s must be finite"),
        ("--bin-s", "5e-324", "bin_s = 4.94066e-324 cuts the trace's"),
        ("--bin-s", "1e-9", "over the limit of 16777216"),
    ],
)
def test_synth_sizes_are_bounded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, message: str
) -> None:
    """The synthetic trace's size is bounded before it is made: ``--days 1e300`` would grow
    until memory ran out, ``--bin-s 5e-324`` overflow, ``1e-9`` ask bincount for 10^14 bins."""
    status, _, err = run(capsys, "synth", "--out", str(tmp_path / "s.csv"), f"{flag}={value}")
    assert status == 2
    line = one_line(err)
    assert line.startswith("learnsched synth: error: ")
    assert message in line
    assert not (tmp_path / "s.csv").exists()


def test_seeds_beyond_a_uint64_are_named() -> None:
    """Seeds are checked in Python, naming the argument: for 2**64 pybind11 alone would say
    "incompatible function arguments"; ``online --seeds 10**9`` would run a billion
    evaluations."""
    from learnsched.calendar.causal import CausalDecider
    from learnsched.cli.calendar import _seeds

    with pytest.raises(
        ValueError, match="seed must be <= 18446744073709551615, got 18446744073709551616"
    ):
        CausalDecider(ls.scenario_by_id("S0348").scenario, "window", None, seed=2**64)
    with pytest.raises(ValueError, match="--seeds must be <= 10000, got 1000000000"):
        _seeds(argparse.Namespace(seed=0, seeds=10**9))
    with pytest.raises(ValueError, match="--seed must be <= 18446744073709551614, got"):
        _seeds(argparse.Namespace(seed=2**64 - 1, seeds=2))
    assert _seeds(argparse.Namespace(seed=2**64 - 2, seeds=2)) == (2**64 - 2, 2**64 - 1)
