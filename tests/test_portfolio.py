"""Portfolios: the model against an exhaustive search, its policies' guarantees, and the
reduction of one candidate to today's finite model, bit for bit."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.portfolio import (
    Portfolio,
    PortfolioCandidate,
    PortfolioModel,
    PortfolioPolicy,
    StateSpaceError,
    solve_portfolio,
)

from portfolio_reference import RefPortfolio, best_value, specs
from strategies import scenarios

POLICIES = tuple(PortfolioPolicy)
SMALL = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def close(a: float, b: float) -> bool:
    """Equal up to the order of summation (the tie tolerance)."""
    return abs(a - b) <= 1e-9 + 1e-12 * max(abs(a), abs(b))


def one_candidate(scenario: ls.Scenario) -> Portfolio:
    """The scenario as a portfolio of one candidate on one GPU, without a budget."""
    i = scenario.initial
    candidate = PortfolioCandidate(
        "only",
        scenario.work_quanta,
        scenario.quantum_s,
        scenario.benefit_rate,
        scenario.horizon_s,
        scenario.costs.save_s,
        scenario.costs.load_s,
        ls.InitialState(i.progress, i.durable, i.active),
    )
    return Portfolio.on_windows(scenario.windows, scenario.costs, [candidate])


# --- one candidate is today's model, bit for bit ------------------------------------

REDUCED = ("costed_window", "rollout", "dp")


def assert_reduces(scenario: ls.Scenario) -> None:
    """Costed Window, Rollout and DP of the one-candidate portfolio are today's plans."""
    portfolio = one_candidate(scenario)
    model = PortfolioModel(portfolio, REDUCED)
    today = ls.Model(scenario)
    for name in REDUCED:
        ours, theirs = model.solve(name), today.solve(name)
        assert ours.value == theirs.value, (name, ours.value, theirs.value)
        assert ours.publish_s["only"] == theirs.publish_s, name
        assert ours.benefit == theirs.benefit, name
        acted = [s for s in ours.steps if s.action != "wait"]
        assert [(s.window, s.action, s.quanta, s.checkpoint, s.cold) for s in acted] == [
            (s.window, s.action, s.quanta, s.checkpoint, s.path is ls.Recovery.COLD)
            for s in theirs.steps
            if s.action != "wait"
        ], name
    state = model.initial_state()
    i = scenario.initial
    assert model.reference_value(state) == today.reference_value(0, i.progress, i.durable, i.active)


def test_one_candidate_is_todays_model_on_the_paper_grid() -> None:
    for item in ls.paper_grid().scenarios:
        assert_reduces(item.scenario)


@pytest.mark.parametrize("residency_rate", [0.6383, 6.383])
def test_one_candidate_is_todays_model_with_both_return_paths(residency_rate: float) -> None:
    # Where parked state is dear, today's Costed Window follows the better fixed path
    # (path_reference.hpp), and so does the portfolio's.
    for item in ls.paper_grid().scenarios:
        if item.recovery == "cold":
            costs = ls.HandoffCosts.choice(
                ls.HandoffCosts(
                    0.487, residency_rate, item.scenario.costs.save_s, item.scenario.costs.load_s
                ),
                item.scenario.costs,
            )
            assert_reduces(item.scenario.with_costs(costs))


@settings(max_examples=300, deadline=None)
@given(scenarios(two_path=False) | scenarios(two_path=True) | scenarios(scheduled=True))
def test_one_candidate_is_todays_model(scenario: ls.Scenario) -> None:
    assert_reduces(scenario)


def test_the_worked_example_reduces(s0348: ls.Scenario) -> None:
    plans = solve_portfolio(one_candidate(s0348), ["costed_window", "rollout"])
    assert plans["costed_window"].publish_s == {"only": 325.047748}
    assert plans["rollout"].publish_s == {"only": 330.0}
    assert plans["rollout"].value == ls.solve(s0348, "rollout").value  # 72.512


# --- small random portfolios --------------------------------------------------------


def build(spec: dict[str, Any], policies: tuple[PortfolioPolicy, ...] = POLICIES) -> PortfolioModel:
    portfolio, _ = Portfolio.from_json(spec)
    return PortfolioModel(portfolio, policies)


@SMALL
@given(specs())
def test_dp_equals_exhaustive_search(spec: dict[str, Any]) -> None:
    model = build(spec, (PortfolioPolicy.DP,))
    optimum = model.optimal_value(model.initial_state())
    assert close(optimum, best_value(spec)), (optimum, best_value(spec))
    assert close(model.solve("dp").value, optimum)  # the DP's plan attains V*


@SMALL
@given(specs())
def test_no_policy_beats_the_dp_and_rollout_never_falls_below_its_reference(
    spec: dict[str, Any],
) -> None:
    plans = build(spec).solve_all()
    plans["dp"] = build(spec, (PortfolioPolicy.DP,)).solve("dp")
    for name, plan in plans.items():
        assert plan.value <= plans["dp"].value + 1e-9 * (1 + abs(plan.value)), name
        budget = spec.get("budget_gpu_s")
        if budget is not None:  # a working segment fits the budget; returns may exceed it
            worked = sum(s.gpu_s for s in plan.steps if s.action in ("publish", "advance"))
            assert worked <= budget + 1e-9, name
    assert plans["rollout"].value >= plans["costed_window"].value - 1e-9 * (
        1 + abs(plans["costed_window"].value)
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs(max_candidates=6, max_quanta=8, max_stages=8))
def test_rollout_never_below_its_reference_from_every_visited_state(spec: dict[str, Any]) -> None:
    model = build(spec, (PortfolioPolicy.ROLLOUT, PortfolioPolicy.COSTED_WINDOW))
    state = model.initial_state()
    while state.stage < model.stage_count:
        reference = model.reference_value(state)
        value, probe = 0.0, state
        while probe.stage < model.stage_count:  # V^rollout(state), by following rollout
            step, probe = model.step(probe, model.decide(probe, "rollout"))
            value += step.segment.benefit - step.segment.cost.total
        assert value >= reference - 1e-9 * (1 + abs(reference))
        _, state = model.step(state, model.decide(state, "rollout"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs(max_candidates=8, max_quanta=10, max_stages=10), st.integers(0, 6))
def test_rollout_scores_every_choice_by_the_reference_value(
    spec: dict[str, Any], steps: int
) -> None:
    # Rollout's choice, from a state some stages in, is the argmax (first on ties) of
    # R(a) + V^pi0(x') over the choices, V^pi0 evaluated state by state: the core's
    # shortcut through the wait-successor's trajectory changes no score.
    model = build(spec, (PortfolioPolicy.ROLLOUT, PortfolioPolicy.COSTED_WINDOW))
    state = model.initial_state()
    for _ in range(min(steps, model.stage_count - 1)):
        _, state = model.step(state, model.decide(state, "costed_window"))
    incumbent = model.decide(state, "costed_window")

    def score(action: _core.portfolio.PortfolioAction) -> float:
        step, after = model.step(state, action)
        reward = step.segment.benefit - step.segment.cost.total
        if after.stage == model.stage_count:
            return reward + 0.0
        return reward + model.reference_value(after)

    best, best_q = incumbent, score(incumbent)
    for action in model._model.choices(state):
        q = score(action)
        if q - best_q > 1e-9 + 1e-12 * max(abs(q), abs(best_q)):
            best, best_q = action, q
    assert model.decide(state, "rollout") == best


def test_rollout_improves_on_the_reference_where_waiting_pays() -> None:
    # Two candidates on the worked example's back-loaded cold calendar: the reference
    # starts the more valuable one in the first 80 s window, rollout waits for the 240 s one.
    jobs = [
        PortfolioCandidate("tool", 6, 5.0, 0.25, 1020.0),
        PortfolioCandidate("lora", 12, 5.0, 0.5, 1020.0),
    ]
    portfolio = Portfolio.on_windows(
        [(0, 80), (100, 180), (200, 280), (300, 540)], ls.PAPER_COLD, jobs
    )
    plans = solve_portfolio(portfolio, POLICIES)
    assert plans["rollout"].value > plans["costed_window"].value + 100
    assert close(plans["rollout"].value, plans["dp"].value)
    assert plans["rollout"].publish_s == {"tool": None, "lora": 360.0}


# --- the model's rules ---------------------------------------------------------------


def test_a_candidate_works_on_one_gpu_at_a_time() -> None:
    # Two GPUs share one long window; one candidate cannot run on both at once.
    job = PortfolioCandidate("solo", 4, 10.0, 1.0, 1000.0)
    portfolio = Portfolio.on_windows([(0, 100)], ls.HandoffCosts(recovery_s=1.0), [job], gpus=2)
    plan = solve_portfolio(portfolio, ["dp"])["dp"]
    assert sorted(s.candidate or "" for s in plan.steps) == ["", "solo"]
    assert plan.publish_s == {"solo": 40.0}
    model = PortfolioModel(portfolio, ["dp"])
    advance = _core.portfolio.PortfolioAction(0, ls.Action(ls.ActionKind.ADVANCE, 2, True))
    step, state = model.step(model.initial_state(), advance)  # GPU 0 runs it until 21 s
    assert (step.gpu, state.candidates[0].busy_until_s) == (0, 21.0)
    with pytest.raises(ValueError, match="cannot start on this GPU now"):
        model.step(state, advance)  # GPU 1's window starts at 0 too


def test_the_budget_bounds_working_segments() -> None:
    jobs = [PortfolioCandidate(f"j{i}", 2, 10.0, 1.0, 1000.0) for i in range(3)]
    costs = ls.HandoffCosts(recovery_s=5.0)
    free = Portfolio.on_windows([(0, 30), (40, 70), (80, 110)], costs, jobs)
    bounded = Portfolio.on_windows([(0, 30), (40, 70), (80, 110)], costs, jobs, budget_gpu_s=50.0)
    assert sum(t is not None for t in solve_portfolio(free, ["dp"])["dp"].publish_s.values()) == 3
    plan = solve_portfolio(bounded, ["dp"])["dp"]
    assert sum(t is not None for t in plan.publish_s.values()) == 2  # 25 GPU-s each
    assert plan.gpu_s == 50.0
    for name, p in solve_portfolio(bounded, POLICIES).items():
        assert p.gpu_s <= 50.0, name


def test_an_active_candidate_is_its_gpus_alone_in_the_first_window() -> None:
    running = PortfolioCandidate("running", 4, 5.0, 0.0, 100.0, initial=ls.InitialState(2, 0, True))
    other = PortfolioCandidate("other", 1, 5.0, 10.0, 1000.0)
    portfolio = Portfolio.on_windows(
        [(0, 10), (20, 40)], ls.HandoffCosts(recovery_s=1.0), [running, other]
    )
    model = PortfolioModel(portfolio, POLICIES)
    state = model.initial_state()
    with pytest.raises(ValueError, match="must decide its active candidate 0 first"):
        model.step(state, _core.portfolio.PortfolioAction(-1, ls.Action(ls.ActionKind.WAIT)))
    for name in ("costed_window", "rollout", "dp"):
        first = model.solve(name).steps[0]
        assert first.candidate == "running", name
        assert first.action in (
            "abandon",
            "discard_return",
            "checkpoint_return",
            "advance",
            "publish",
        )


def test_age_decay_lowers_the_benefit_as_eq_c7_reads() -> None:
    plain = PortfolioCandidate("a", 1, 10.0, 1.0, 110.0)
    aged = PortfolioCandidate("a", 1, 10.0, 1.0, 110.0, half_life_s=50.0)
    costs = ls.HandoffCosts(recovery_s=0.0)
    t = {
        n: solve_portfolio(Portfolio.on_windows([(0, 10)], costs, [c]), ["dp"])["dp"]
        for n, c in [("plain", plain), ("aged", aged)]
    }
    assert t["plain"].benefit == 100.0  # g (H - t_p)
    tau = 50.0 / math.log(2.0)
    assert math.isclose(t["aged"].benefit, tau * (1 - math.exp(-100.0 / tau)), rel_tol=1e-14)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-50, 500), st.floats(0, 3)), min_size=1, max_size=6),
    st.one_of(st.none(), st.floats(0.5, 400)),
    st.floats(-100, 700),
)
def test_benefit_with_a_schedule_and_age_decay(
    pieces: list[tuple[float, float]], half_life: float | None, t: float
) -> None:
    starts = sorted({round(s, 3) for s, _ in pieces})
    schedule = [[s, g] for s, (_, g) in zip(starts, pieces, strict=False)]
    job = PortfolioCandidate("a", 1, 1.0, schedule, 600.0, half_life_s=half_life)
    model = PortfolioModel(
        Portfolio.on_windows([(0, 10)], ls.HandoffCosts(recovery_s=1.0), [job]), ["rollout"]
    )
    ours = model._model.benefit(0, t)
    expected = RefPortfolio.from_json(model.portfolio.to_json()).candidates[0].benefit(t)
    assert math.isclose(ours, expected, rel_tol=1e-11, abs_tol=1e-9)
    if half_life is None:  # the finite model's Phi, bit for bit
        scenario = ls.Scenario(
            [(0.0, 10.0)], 1, 1.0, [tuple(p) for p in schedule], 600.0, ls.HandoffCosts(1.0)
        )
        assert ours == scenario.benefit(t)


# --- named errors --------------------------------------------------------------------


def test_state_space_bounds_are_named_errors() -> None:
    jobs = [PortfolioCandidate(f"j{i}", 60, 1.0, 1.0, 1e4) for i in range(6)]
    windows = [(100.0 * k, 100.0 * k + 80) for k in range(20)]
    portfolio = Portfolio.on_windows(windows, ls.PAPER_WARM, jobs)
    with pytest.raises(
        StateSpaceError,
        match=r"dp: up to .* states \(stages x prod \(work_quanta \+ 2\)\), above the limit of 1048576",
    ):
        solve_portfolio(portfolio, ["dp"])
    assert issubclass(StateSpaceError, ValueError)
    # The other policies solve it.
    assert solve_portfolio(portfolio, ["rollout"])["rollout"].value > 0
    huge = [PortfolioCandidate("huge", 2**22, 1e-3, 1.0, 1e4)]
    with pytest.raises(
        StateSpaceError,
        match=r"12582915 entries .* x 9 doubles, above the limit of 33554432 doubles",
    ):
        Portfolio.on_windows([(0, 10), (20, 30)], ls.PAPER_WARM, huge)
    small = Portfolio.on_windows(
        [(0, 10), (20, 30)], ls.PAPER_WARM, [PortfolioCandidate("a", 2**20, 1e-3, 1.0, 1e4)]
    )
    with pytest.raises(StateSpaceError, match=r"x 11 doubles"):  # sequential's models too
        PortfolioModel(small, ["sequential"])
    many = [PortfolioCandidate(f"j{i}", 1, 1.0, 1.0, 10.0) for i in range(_core.portfolio.MAX_CANDIDATES + 1)]
    with pytest.raises(StateSpaceError, match="candidates must number at most 4096, got 4097"):
        Portfolio.on_windows([(0, 10)], ls.PAPER_WARM, many)


def test_bad_portfolios_name_the_field() -> None:
    warm = ls.PAPER_WARM
    job = PortfolioCandidate("a", 2, 5.0, 1.0, 100.0)
    cases: list[tuple[Any, str]] = [
        (
            lambda: Portfolio.on_windows([(0, 10)], warm, [job, job]),
            r"candidates\[1\] \(a\): name must be unique",
        ),
        (
            lambda: Portfolio.on_windows(
                [(0, 10)], warm, [PortfolioCandidate("", 2, 5.0, 1.0, 100.0)]
            ),
            r"candidates\[0\]: name must not be empty",
        ),
        (
            lambda: Portfolio.on_windows(
                [(0, 10)], warm, [PortfolioCandidate("a", 2, -5.0, 1.0, 100.0)]
            ),
            r"candidates\[0\] \(a\): quantum_s must be > 0, got -5",
        ),
        (
            lambda: Portfolio.on_windows(
                [(0, 10)], warm, [PortfolioCandidate("a", 2, 5.0, 1.0, 100.0, half_life_s=0.0)]
            ),
            r"half_life_s must be finite and > 0, got 0",
        ),
        (
            lambda: Portfolio.on_windows([(0, 10)], warm, [job], budget_gpu_s=math.nan),
            "budget_gpu_s must be finite and >= 0, got nan",
        ),
        (
            lambda: Portfolio((((0.0, 10.0),), ((5.0, 1.0),)), 1.0, 0.0, (job,)),
            r"gpus\[1\]: windows\[0\] must end after it starts",
        ),
        (
            lambda: Portfolio.on_windows(
                [(0, 10)],
                warm,
                [PortfolioCandidate("a", 2, 5.0, 1.0, 100.0, initial=ls.InitialState(1, 0, True))]
                * 1
                + [
                    PortfolioCandidate("b", 2, 5.0, 1.0, 100.0, initial=ls.InitialState(1, 0, True))
                ],
            ),
            r"candidates\[1\] \(b\): more candidates are active than there are GPUs \(1\)",
        ),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def test_the_core_guards_states_and_actions() -> None:
    job = PortfolioCandidate("a", 2, 5.0, 1.0, 100.0)
    model = PortfolioModel(Portfolio.on_windows([(0, 30)], ls.PAPER_WARM, [job]), POLICIES)
    bad = _core.portfolio.PortfolioState(0, 0.0, [_core.portfolio.CandidateState(3, 0, False, False, -math.inf)])
    with pytest.raises(
        ValueError, match=r"candidates\[0\].progress must be in \[0, work_quanta=2\], got 3"
    ):
        model.decide(bad, "rollout")
    with pytest.raises(ValueError, match=r"stage must be in \[0, 1\), got 1"):
        model.decide(
            _core.portfolio.PortfolioState(1, 0.0, [_core.portfolio.CandidateState(0, 0, False, False, 0.0)]), "dp"
        )
    with pytest.raises(ValueError, match="one state per candidate"):
        model.reference_value(_core.portfolio.PortfolioState(0, 0.0, []))
    with pytest.raises(ValueError, match="candidate must be in"):
        model.step(
            model.initial_state(), _core.portfolio.PortfolioAction(5, ls.Action(ls.ActionKind.PUBLISH, 2))
        )
    with pytest.raises(ValueError, match="is not feasible"):
        model.step(
            model.initial_state(),
            _core.portfolio.PortfolioAction(0, ls.Action(ls.ActionKind.ADVANCE, 7, True)),
        )
    with pytest.raises(ValueError, match="sequential reads today's models"):
        PortfolioModel(model.portfolio, ["rollout"]).solve("sequential")
    with pytest.raises(IndexError, match="candidate must be in"):
        model._model.benefit(3, 0.0)


# --- SPEC round trip -----------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(specs(max_candidates=3))
def test_spec_round_trips(spec: dict[str, Any]) -> None:
    portfolio, policies = Portfolio.from_json(spec)
    again, _ = Portfolio.from_json(portfolio.to_json())
    assert again == portfolio
    assume(policies)
    assert policies == tuple(p for p in PortfolioPolicy if p is not PortfolioPolicy.DP)
