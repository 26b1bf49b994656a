"""Causal portfolios: several candidates on one GPU serving a request
trace, the idle gap's end unknown, on causal scheduling's simulator and decisions."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_calendar_causal import altered_after, causal_trace

import learnsched as ls
from learnsched import _core
from learnsched.calendar import AZURE_TRACE, load_trace
from learnsched.calendar.causal import (
    CAUSAL_POLICIES,
    CausalForecast,
    CausalRules,
    CausalTrace,
    run_causal,
)
from learnsched.calendar.study import make_forecaster
from learnsched.cli import main
from learnsched.portfolio import Portfolio, PortfolioCandidate, PortfolioModel, PortfolioPolicy
from learnsched.portfolio.causal import (
    CAUSAL_PORTFOLIO_POLICIES,
    CAUSAL_SETTINGS,
    KNOWN_CALENDAR,
    CausalPolicyStats,
    CausalPortfolioOutcome,
    candidate_scenario,
    known_calendar,
    run_causal_study,
    run_portfolio_causal,
)
from learnsched.scenario import InitialState

from conftest import write_spec

DOCS = Path(__file__).resolve().parents[1] / "docs" / "portfolio.md"
FROM_S, TO_S = 600.0, 1200.0


@cache
def shipped() -> CausalTrace:
    return CausalTrace(load_trace(AZURE_TRACE))


def jobs(count: int, seed: int, costs: ls.HandoffCosts = ls.PAPER_WARM) -> list[PortfolioCandidate]:
    rng = np.random.default_rng(seed)
    return [
        PortfolioCandidate(
            f"c{i}",
            int(rng.choice([6, 12, 24])),
            5.0,
            float(rng.choice([0.1, 0.5, 2.0])),
            TO_S + 480.0,
            costs.save_s,
            costs.load_s,
        )
        for i in range(count)
    ]


def portfolio(
    candidates: list[PortfolioCandidate], costs: ls.HandoffCosts = ls.PAPER_WARM
) -> Portfolio:
    return Portfolio.on_windows([(0.0, 1.0)], costs, candidates)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    cold=st.booleans(),
    policy=st.sampled_from(("rollout", "risk_rollout", "costed_window", "window")),
)
def test_one_candidate_is_causal_scheduling_bit_for_bit(seed: int, cold: bool, policy: str) -> None:
    costs = ls.PAPER_COLD if cold else ls.PAPER_WARM
    job = jobs(1, seed, costs)[0]
    p = portfolio([job], costs)
    forecaster = make_forecaster("empirical")
    names = [n for n in CAUSAL_PORTFOLIO_POLICIES if policy != "window" or n != "gain"]
    got = run_portfolio_causal(
        shipped(), p, FROM_S, TO_S, forecaster, names, candidate_policy=policy, samples=8, seed=seed
    )
    scenario = candidate_scenario(job, p)
    forecast = None
    if policy != "window":
        rng = np.random.default_rng([seed, 0])
        forecast = CausalForecast(shipped(), scenario, FROM_S, forecaster, 8, rng, CausalRules())
    want = run_causal(shipped(), scenario, FROM_S, TO_S, [policy], forecast, seed=seed)[policy]
    for name in names:
        out = got[name]
        assert (out.value, out.benefit, out.cost, out.lateness_s) == (
            want.value,
            want.benefit,
            want.cost,
            want.lateness_s,
        ), name
        assert (out.late_requests, out.requests, out.handoffs, out.checkpoints) == (
            want.late_requests,
            want.requests,
            want.handoffs,
            want.checkpoints,
        )
        assert out.publish_s == {job.name: want.publish_s}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), count=st.integers(2, 6), cold=st.booleans())
def test_accounts_add_up_and_sequential_keeps_list_order(seed: int, count: int, cold: bool) -> None:
    costs = ls.PAPER_COLD if cold else ls.PAPER_WARM
    p = portfolio(jobs(count, seed, costs), costs)
    runs = run_portfolio_causal(
        shipped(), p, FROM_S, TO_S, make_forecaster("empirical"), samples=8, seed=seed
    )
    for name, out in runs.items():
        assert math.isclose(
            out.value, out.benefit - out.cost - out.lateness_s, rel_tol=1e-9, abs_tol=1e-6
        ), name
        assert out.gpu_s == out.cost / (1.0 + costs.residency_rate)
        assert sum(out.loans.values()) == out.handoffs
        assert (out.late_requests == 0) == (out.lateness_s == 0.0)
        for c in p.candidates:  # publishing takes at least the candidate's work
            t = out.publish_s[c.name]
            assert t is None or t >= FROM_S + c.work_quanta * c.quantum_s
    seq = runs["sequential"]
    # One at a time in list order: a candidate is done (published, or abandoned while lent)
    # before the next is lent the GPU, so those ever lent are a prefix of the list and
    # publish in its order.
    lent = [seq.loans[c.name] > 0 for c in p.candidates]
    assert lent == sorted(lent, reverse=True)
    published = [t for c in p.candidates if (t := seq.publish_s[c.name]) is not None]
    assert published == sorted(published)


def one_policy(
    p: Portfolio, policy: str, candidate_policy: str, seed: int
) -> CausalPortfolioOutcome:
    """One portfolio policy over the shipped trace's horizon, 8 samples per candidate."""
    return run_portfolio_causal(
        shipped(),
        p,
        FROM_S,
        TO_S,
        make_forecaster("empirical"),
        [policy],
        candidate_policy=candidate_policy,
        samples=8,
        seed=seed,
    )[policy]


def steps_before(trace: CausalTrace, p: Portfolio, cut: float) -> dict[str, list[object]]:
    runs = run_portfolio_causal(
        trace, p, FROM_S, TO_S, make_forecaster("empirical"), samples=8, seed=4
    )
    return {name: [s for s in out.steps if s[0] < cut] for name, out in runs.items()}


@pytest.mark.parametrize(("cut", "seed"), [(700.0, 0), (905.0, 1), (1150.0, 2)])
@pytest.mark.parametrize("cold", [False, True])
def test_no_decision_looks_ahead(cut: float, seed: int, cold: bool) -> None:
    """Altering the trace strictly after ``cut`` changes no portfolio decision before it
    (which candidate, which move, when), the current gap's included."""
    costs = ls.PAPER_COLD if cold else ls.PAPER_WARM
    p = portfolio(jobs(6, seed, costs), costs)
    t = shipped().trace
    truth = (t.arrival.tolist(), t.work.tolist(), t.deadline.tolist())
    other = causal_trace(altered_after(truth, cut, np.random.default_rng(seed)))
    before = steps_before(shipped(), p, cut)
    assert all(before.values())  # the test decides something before the cut
    assert steps_before(other, p, cut) == before


def test_lent_gaps_pay_lateness_on_the_cold_path() -> None:
    """A case the study rests on: rollout candidates on the cold path lend into gaps the
    arrival cuts short, and the lateness is charged into the value."""
    p = portfolio(jobs(8, 0, ls.PAPER_COLD), ls.PAPER_COLD)
    out = one_policy(p, "density", "rollout", seed=0)
    assert out.late_requests > 0
    assert out.value < out.benefit - out.cost


def test_known_calendar_is_the_portfolio_rollout_on_the_trace_calendar() -> None:
    p = portfolio(jobs(5, 3))
    out = known_calendar(shipped(), p, FROM_S, TO_S)
    windows = shipped().windows(FROM_S, TO_S, 5.0, p.recovery_s)
    known = Portfolio(
        gpus=(windows,),
        recovery_s=p.recovery_s,
        residency_rate=p.residency_rate,
        candidates=p.candidates,
    )
    plan = PortfolioModel(known, [PortfolioPolicy.ROLLOUT]).solve(PortfolioPolicy.ROLLOUT)
    assert (out.value, out.publish_s, out.gpu_s) == (plan.value, plan.publish_s, plan.gpu_s)
    assert (out.late_requests, out.lateness_s) == (0, 0.0)


def test_same_seed_same_result_and_names_in_order() -> None:
    p = portfolio(jobs(4, 5))
    args = (shipped(), p, FROM_S, TO_S, make_forecaster("empirical"))
    a = run_portfolio_causal(*args, samples=8, seed=2)
    b = run_portfolio_causal(*args, samples=8, seed=2)
    assert a == b
    assert list(a) == list(CAUSAL_PORTFOLIO_POLICIES)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda p: Portfolio.on_windows(
                [(0, 1)], ls.HandoffCosts.choice(ls.PAPER_WARM, ls.PAPER_COLD), p.candidates
            ),
            "one return path",
        ),
        (
            lambda p: Portfolio.on_windows(
                [(0, 1)], ls.PAPER_WARM, p.candidates, budget_gpu_s=60.0
            ),
            "budget_gpu_s",
        ),
        (
            lambda p: portfolio([PortfolioCandidate("a", 6, 5.0, 1.0, 2000.0, half_life_s=60.0)]),
            r"candidates\[0\] \(a\): .*half_life_s",
        ),
        (
            lambda p: portfolio(
                [PortfolioCandidate("a", 6, 5.0, 1.0, 2000.0, initial=InitialState(2, 1, True))]
            ),
            "active",
        ),
        (
            lambda p: portfolio(
                [PortfolioCandidate("a", 6, 5.0, 1.0, 2000.0, initial=InitialState(2, 1, False))]
            ),
            "initial.progress = 2 must equal initial.durable = 1",
        ),
    ],
)
def test_what_causal_mode_cannot_take_is_named(change: object, match: str) -> None:
    bad = change(portfolio(jobs(2, 0)))  # type: ignore[operator]
    with pytest.raises(ValueError, match=match):
        run_portfolio_causal(shipped(), bad, FROM_S, TO_S, make_forecaster("empirical"))


def test_bad_policies_and_a_window_gain_are_refused() -> None:
    p = portfolio(jobs(2, 0))
    forecaster = make_forecaster("empirical")
    with pytest.raises(ValueError, match="causal portfolio policy must be one of"):
        run_portfolio_causal(shipped(), p, FROM_S, TO_S, forecaster, ["rollout"])
    with pytest.raises(ValueError, match="candidate_policy must be one of"):
        run_portfolio_causal(shipped(), p, FROM_S, TO_S, forecaster, candidate_policy="dp")
    with pytest.raises(ValueError, match="gain portfolio policy ranks by forecast scores"):
        run_portfolio_causal(
            shipped(), p, FROM_S, TO_S, forecaster, ["gain"], candidate_policy="window"
        )
    assert set(CAUSAL_POLICIES) >= {"rollout", "risk_rollout"}


def test_gain_ranks_costed_window_candidates_by_their_gate() -> None:
    """Costed Window's decision carries its gate's score under V_G (it has no other), so
    gain ranks by it: the richer of two candidates that differ only in benefit is lent the
    GPU first, not the first in list order."""
    costs = ls.PAPER_WARM
    poor, rich = (
        PortfolioCandidate(name, 6, 5.0, rate, TO_S + 480.0, costs.save_s, costs.load_s)
        for name, rate in (("poor", 0.1), ("rich", 2.0))
    )
    run = one_policy(portfolio([poor, rich], costs), "gain", "costed_window", seed=3)
    first = next(c for _, c, move in run.steps if move == "work")
    assert first == "rich"
    assert run.publish_s["rich"] is not None


def test_the_core_refuses_candidates_with_different_return_paths() -> None:
    a = candidate_scenario(jobs(1, 0)[0], portfolio(jobs(1, 0)))
    b = candidate_scenario(jobs(1, 0)[0], portfolio(jobs(1, 0), ls.PAPER_COLD))
    from learnsched.calendar.causal import core_candidate

    with pytest.raises(ValueError, match=r"candidates\[1\]: the return path"):
        _core.portfolio.run_portfolio_causal(
            shipped().schedule,
            [core_candidate(a, 1.0), core_candidate(b, 1.0)],
            [0, 0],
            [None, None],
            [None, None],
            FROM_S,
            TO_S,
            "density",
            "window",
            0.95,
            0,
        )


def causal_spec() -> dict[str, object]:
    spec = portfolio(jobs(3, 4)).to_json()
    del spec["windows"]  # causal mode: the trace's gaps are the windows
    return spec


def test_cli_trace_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_spec(tmp_path, causal_spec())
    status = main(["portfolio", path, "--trace", "--to-s", "1200", "--samples", "8", "--json"])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    data = json.loads(out)
    assert list(data) == ["policies", "trace"]
    assert list(data["policies"]) == [*CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR]
    for plan in data["policies"].values():
        assert list(plan)[:3] == ["value", "publish_s", "gpu_s"]
        assert set(plan["publish_s"]) == {"c0", "c1", "c2"}
    assert data["trace"]["synthetic"] is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--candidate-policy", "dp"], "invalid choice: 'dp'"),
        (["--from-s", "5000"], "horizon"),
        (["--samples", "0"], "--samples"),
    ],
)
def test_cli_trace_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    path = write_spec(tmp_path, causal_spec())
    try:
        status = main(["portfolio", path, "--trace", *argv])
    except SystemExit as usage:  # argparse's own errors
        status = int(str(usage.code))
    out, err = capsys.readouterr()
    assert (status, out, err.count("\n")) == (2, "", 1), err
    assert message in err


def test_cli_trace_policies_from_the_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = causal_spec()
    spec["policies"] = ["gain", "sequential"]
    status = main(["portfolio", write_spec(tmp_path, spec), "--trace", "--to-s", "1200", "--json"])
    out, _ = capsys.readouterr()
    assert status == 0
    assert list(json.loads(out)["policies"]) == ["gain", "sequential"]
    spec["policies"] = ["dp"]
    assert main(["portfolio", write_spec(tmp_path, spec), "--trace"]) == 2


def docs_rows(setting: str) -> list[str]:
    return [
        r for r in DOCS.read_text(encoding="utf-8").splitlines() if r.startswith(f"| {setting} |")
    ]


def test_the_causal_study_has_intervals_and_gains_paired_by_draw() -> None:
    result = run_causal_study(2, ["azure_causal_warm"])
    stats = result.settings["azure_causal_warm"]
    assert list(stats) == [*CAUSAL_PORTFOLIO_POLICIES, KNOWN_CALENDAR]
    assert stats["sequential"].gains == (0.0, 0.0)
    for s in stats.values():
        j = s.to_json()
        assert j["ci95"][0] <= j["mean_value"] <= j["ci95"][1]
        assert {"mean_late_requests", "mean_lateness_s", "slo_misses"} <= set(j)
    known = stats[KNOWN_CALENDAR]
    assert isinstance(known, CausalPolicyStats)
    assert known.late_requests == (0, 0)
    assert known.to_json()["slo_misses"] is None
    seq = stats["sequential"].to_json()
    assert seq["slo_misses"] is not None
    assert 0.0 <= seq["slo_misses"] <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("setting", CAUSAL_SETTINGS)
def test_the_docs_causal_rows_are_what_the_code_computes(setting: str) -> None:
    result = run_causal_study(20, [setting])
    assert result.markdown().splitlines()[2:] == docs_rows(setting)
