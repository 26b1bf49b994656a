"""Benchmarks of decisions under a forecast, C++ beside the pure-Python reference.

* One expected-value rollout decision at the current window with N sampled calendars of
  20 windows and J = 36 quanta: the ForecastModel build (per-sample V_G and V^pi0 tables)
  plus the decision. Targets: N = 64 under 1 ms, N = 256 under 5 ms, cost linear in N
  (the parametrized sizes grow 4x a step).
* ``learnsched online`` over 1000 true calendars x 20 windows x N = 64 fixed samples, on
  1 and 2 threads, beside its C++ part alone (``_core.forecast.run_online`` on the parsed cases):
  the command should cost little more than its core (the samples are read by numpy from
  a ``.npz`` beside the SPEC, equal samples are built once, threads run over calendars);
  and the same SPEC with its samples written inline, the form for small SPECs, as the
  reference the ``.npz`` form is measured against. Wall time by default; with
  ``--benchmark-timer time.process_time`` the CPU time of every thread, which should not
  grow with the thread count. Where the kernel shares CPU per session (Linux autogroup,
  ``/proc/sys/kernel/sched_autogroup_enabled``), a second thread shortens the wall time
  only while a core is idle.

Run with ``pytest bench/test_bench_forecast.py --benchmark-only``; every benchmark checks
its answer and also runs under ``--benchmark-disable``.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _core
from learnsched.calendar import ForecastDecision
from learnsched.calendar.spec import read_online_spec, write_online_spec
from learnsched.cli import main

import forecast_reference
import reference
from strategies import to_reference

Benchmark = Callable[..., Any]
WINDOWS = 20
QUANTA = 36
CURRENT = (0.0, 150.0)
CANDIDATE = ls.Scenario((CURRENT,), QUANTA, 5.0, 0.25, 6000.0, ls.PAPER_COLD)


def sampled_calendars(
    rng: np.random.Generator, n: int, windows: int, start_s: float
) -> list[tuple[tuple[float, float], ...]]:
    """``n`` calendars of ``windows`` idle windows (40-200 s) after gaps of 5-60 s."""
    gaps = rng.uniform(5.0, 60.0, size=(n, windows))
    lengths = rng.uniform(40.0, 200.0, size=(n, windows))
    starts = start_s + np.cumsum(gaps + lengths, axis=1) - lengths
    pairs = np.stack([starts, starts + lengths], axis=2).tolist()
    return [tuple((a, b) for a, b in calendar) for calendar in pairs]


def rollout_decision(samples: list[tuple[tuple[float, float], ...]], threads: int = 1) -> ls.Action:
    model = ForecastDecision(CANDIDATE, CURRENT, samples, (ls.Policy.ROLLOUT,), threads)
    return model.decide(0, 0, False, "rollout")


@pytest.mark.benchmark(group="expected-value rollout decision, 20 windows, J = 36")
@pytest.mark.parametrize("n", [16, 64, 256])
def test_rollout_decision_cpp(benchmark: Benchmark, n: int) -> None:
    samples = sampled_calendars(np.random.default_rng(n), n, WINDOWS, CURRENT[1])
    action = benchmark(rollout_decision, samples)
    assert action == rollout_decision(samples, threads=2)
    # The score it maximised is the mean of each sample's own V^pi0 (checked at pbar = 0).
    model = ForecastDecision(CANDIDATE, CURRENT, samples, (ls.Policy.ROLLOUT,))
    own = [ls.Model(ls.Scenario(s, QUANTA, 5.0, 0.25, 6000.0, ls.PAPER_COLD)) for s in samples]
    expected = np.mean([m.reference_value(0, 0, 0) for m in own])
    assert model.mean_reference_values()[0] == pytest.approx(expected, abs=1e-9)


@pytest.mark.benchmark(group="expected-value rollout decision, 20 windows, J = 36")
def test_rollout_decision_python_reference(benchmark: Benchmark) -> None:
    n = 64
    samples = sampled_calendars(np.random.default_rng(n), n, WINDOWS, CURRENT[1])
    base = to_reference(CANDIDATE)
    want = benchmark.pedantic(
        forecast_reference.decide,
        args=(base, CURRENT, samples, "rollout", (0, 0, 0, False)),
        setup=reference.clear_caches,
        rounds=1,
        iterations=1,
    )
    got = rollout_decision(samples)
    assert (got.name, got.quanta, got.checkpoint, got.cold) == want


def online_spec(calendars: int, n: int) -> list[dict[str, Any]]:
    """SPEC objects: true calendars and N fixed samples from the same process."""
    rng = np.random.default_rng(2026)
    spec = []
    for _ in range(calendars):
        truth = sampled_calendars(rng, 1, WINDOWS, -5.0)[0]
        samples = sampled_calendars(rng, n, WINDOWS, -5.0)
        end = max(truth[-1][1], max(s[-1][1] for s in samples))
        scenario = ls.Scenario(truth, QUANTA, 5.0, 0.25, end + 480.0, ls.PAPER_COLD).to_json()
        scenario["forecast"] = {"samples": [[list(w) for w in s] for s in samples]}
        spec.append(scenario)
    return spec


@pytest.fixture(scope="module")
def spec_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same SPEC with its samples in a ``.npz`` beside it and inline."""
    folder = tmp_path_factory.mktemp("online")
    spec = online_spec(1000, 64)
    write_online_spec(folder / "spec.json", spec)
    (folder / "inline.json").write_text(json.dumps(spec), encoding="utf-8")
    return {"npz": folder / "spec.json", "inline": folder / "inline.json"}


@pytest.fixture(scope="module")
def spec_path(spec_paths: dict[str, Path]) -> Path:
    return spec_paths["npz"]


def run_online(path: Path, threads: int) -> dict[str, Any]:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):  # the command itself, as a user runs it
        status = main(["online", str(path), "--json", "--threads", str(threads)])
    assert status == 0
    return dict(json.loads(text.getvalue()))


@pytest.mark.benchmark(group="learnsched online, 1000 calendars x 20 windows x N = 64")
@pytest.mark.parametrize("threads", [1, 2])
def test_online_1000_calendars(benchmark: Benchmark, spec_path: Path, threads: int) -> None:
    out = benchmark.pedantic(run_online, args=(spec_path, threads), rounds=1, iterations=1)
    policies = out["policies"]
    assert len(policies["rollout"]["values"]) == 1000
    best = np.array(policies["clairvoyant"]["values"])
    for summary in policies.values():
        assert np.all(np.array(summary["values"]) <= best + 1e-9)


@pytest.mark.benchmark(group="learnsched online, 1000 calendars x 20 windows x N = 64")
@pytest.mark.parametrize("threads", [1, 2])
def test_online_1000_calendars_core_only(
    benchmark: Benchmark, spec_path: Path, threads: int
) -> None:
    cases = read_online_spec(spec_path)
    jobs = []
    for case in cases:
        fixed = case.forecaster.fixed_packed(case.samples)
        assert fixed is not None
        jobs.append((case.scenario.to_core(), *fixed))
    policies = [
        _core.finite.Policy.WINDOW,
        _core.finite.Policy.COSTED_WINDOW,
        _core.finite.Policy.ROLLOUT,
        _core.finite.Policy.DP,
    ]
    plans = benchmark.pedantic(_core.forecast.run_online, args=(jobs, policies, threads), rounds=1)
    assert len(plans) == 1000
    assert all(p[2].value <= p[4].value + 1e-9 for p in plans)  # rollout <= clairvoyant


@pytest.mark.benchmark(group="learnsched online SPEC forms, 1000 calendars x 20 windows x N = 64")
@pytest.mark.parametrize("form", ["npz", "inline"])
def test_online_spec_forms(benchmark: Benchmark, spec_paths: dict[str, Path], form: str) -> None:
    """The whole command on each form of the same SPEC (inline: the reference)."""
    out = benchmark.pedantic(run_online, args=(spec_paths[form], 1), rounds=1, iterations=1)
    assert out == run_online(spec_paths["npz" if form == "inline" else "inline"], 1)
