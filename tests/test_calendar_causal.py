"""Causal scheduling: the simulator against a pure-Python reference, lateness recomputed
from the loans, the clairvoyant and the scenario-tree DP as bounds, decisions against a
reference scorer, and the no-look-ahead property."""

from __future__ import annotations

import itertools
import math
from typing import Any

import causal_reference as ref
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.calendar import EmpiricalForecaster, load_trace
from learnsched.calendar.causal import (
    CAUSAL_MOVES,
    CAUSAL_PLANS,
    CAUSAL_POLICIES,
    GAP_MODELS,
    CausalDecider,
    CausalForecast,
    CausalRules,
    CausalTrace,
    calendar_dp,
    clairvoyant,
    run_causal,
)
from learnsched.capacity import Trace

MOVES = list(CAUSAL_MOVES)


@st.composite
def traces(draw: st.DrawFn, max_requests: int = 24) -> tuple[list[float], ...]:
    """Bursty small traces: gaps from 0.05 to 60 s, feasible unlent (deadline >= the
    unlent finish)."""
    n = draw(st.integers(3, max_requests))
    gaps = draw(
        st.lists(
            st.one_of(st.floats(0.05, 2.0), st.floats(2.0, 60.0), st.integers(1, 40).map(float)),
            min_size=n,
            max_size=n,
        )
    )
    service = draw(st.lists(st.floats(0.1, 4.0), min_size=n, max_size=n))
    extra = draw(st.lists(st.floats(0.0, 20.0), min_size=n, max_size=n))
    arrival = list(np.cumsum(gaps) - gaps[0])
    finish = ref.unlent_finish(arrival, service)
    deadline = [f + e for f, e in zip(finish, extra, strict=True)]
    return arrival, service, deadline


@st.composite
def candidates(draw: st.DrawFn, span: float) -> ref.Candidate:
    return ref.Candidate(
        J=draw(st.integers(1, 5)),
        delta=draw(st.sampled_from([1.0, 2.5, 5.0])),
        g=draw(st.sampled_from([0.0, 0.25, 1.0, 2.0])),
        H=span + draw(st.floats(0.0, 200.0)),
        t_ret=draw(st.sampled_from([0.0, 0.5, 3.0, 12.0])),
        rho=draw(st.sampled_from([0.0, 0.06383])),
        t_ck=draw(st.sampled_from([0.0, 0.068075, 1.0])),
        t_ld=draw(st.sampled_from([0.0, 0.047748, 1.0])),
        price=draw(st.sampled_from([0.0, 0.1, 1.0, 10.0])),
    )


def core(c: ref.Candidate) -> _core.causal.CausalCandidate:
    return _core.causal.CausalCandidate(c.J, c.delta, c.g, c.H, c.t_ret, c.rho, c.t_ck, c.t_ld, c.price)


def schedule(trace: tuple[list[float], ...]) -> _core.causal.UnlentSchedule:
    arrival, service, deadline = trace
    return _core.causal.UnlentSchedule(np.array(arrival), np.array(service), np.array(deadline))


def causal_trace(trace: tuple[list[float], ...]) -> CausalTrace:
    arrival, service, deadline = trace
    return CausalTrace(Trace(np.array(arrival), np.array(service), np.array(deadline)))


def scenario(c: ref.Candidate) -> ls.Scenario:
    costs = ls.HandoffCosts(c.t_ret, c.rho, c.t_ck, c.t_ld)
    return ls.Scenario(((0.0, 1.0),), c.J, c.delta, c.g, c.H, costs)


# --- the simulator --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces())
def test_simulator_matches_the_reference_move_for_move(data: st.DataObject, trace: Any) -> None:
    span = trace[0][-1]
    c = data.draw(candidates(span))
    start = data.draw(st.floats(0.0, span / 2))
    sim = _core.causal.CausalSim(schedule(trace), core(c), start, span)
    mine = ref.RefSim(*trace, c, start, span)
    for _ in range(400):
        assert sim.deciding == mine.deciding
        if not sim.deciding:
            break
        assert sim.point == pytest.approx(mine.point(), abs=0, rel=0)
        allowed = [m for m in MOVES if sim.allows(m)]
        assert allowed == [m for m in MOVES if mine.allows(m)]
        move = data.draw(st.sampled_from(allowed))
        got = sim.apply(move)
        want = mine.apply(move)
        assert got[1] == want[1]
        assert got[0] == pytest.approx(want[0], abs=1e-9)
        assert got[2] == pytest.approx(want[2], abs=1e-9)
    assert (sim.late_requests, sim.handoffs, sim.checkpoints, sim.requests) == (
        mine.late,
        mine.handoffs,
        mine.checkpoints,
        mine.served,
    )
    assert sim.value == pytest.approx(sim.benefit - sim.cost - c.price * sim.lateness_s, abs=1e-9)
    # Lateness once more, from scratch: FIFO with the server down during each loan.
    first = sum(1 for a in trace[0] if a < start)
    late, total = ref.lateness_from_outages(*trace, mine.outages, first, first + mine.served)
    assert late == sim.late_requests
    assert total == pytest.approx(sim.lateness_s, abs=1e-6)


def test_an_arrival_forces_the_return_and_the_queue_serves_late() -> None:
    # One request at 0 (1 s), a gap until 30, then a burst of 3 due 5 s after arrival.
    arrival = [0.0, 30.0, 30.0, 31.0]
    service = [1.0, 1.0, 1.0, 1.0]
    deadline = [5.0, 35.0, 35.0, 36.0]
    c = ref.Candidate(J=4, delta=10.0, g=1.0, H=500.0, t_ret=20.0, t_ck=0.5, price=2.0)
    sim = _core.causal.CausalSim(schedule((arrival, service, deadline)), core(c), 0.0, 31.0)
    assert sim.point == (1.0, 1.0, 0, 0, False)  # the queue empties at 1
    assert sim.apply("work")[0] == pytest.approx(-10.0)  # quantum 1: 1..11
    sim.apply("save")  # durable 1 at 11.5
    sim.apply("work")  # quantum 2: 11.5..21.5
    reward, late, lateness = sim.apply("work")  # quantum 3 would end at 31.5: cut at 30
    # Work 21.5..30 then the 20 s return; capacity at 50: served 51, 52, 53.
    assert late == 3
    assert lateness == pytest.approx((51 - 35) + (52 - 35) + (53 - 36))
    assert reward == pytest.approx(-(30.0 - 21.5 + 20.0) - 2.0 * lateness)
    assert not sim.deciding  # the next gap begins after 31: outside the horizon
    assert sim.checkpoints == 1


# --- bounds: the calendar DP, the clairvoyant, the tree DP -----------------------------------


def small_forecast(trace: CausalTrace, c: ref.Candidate, now: float, n: int = 4) -> CausalForecast:
    return CausalForecast(
        trace,
        scenario(c),
        now,
        EmpiricalForecaster(),
        n,
        np.random.default_rng(0),
        CausalRules(lateness_price=c.price, close_s=5.0, history_s=None),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces(16))
def test_the_clairvoyant_bounds_every_causal_policy(data: st.DataObject, trace: Any) -> None:
    span = trace[0][-1]
    c = data.draw(candidates(span))
    start = span / 3
    ct = causal_trace(trace)
    rules = CausalRules(lateness_price=c.price)
    best = clairvoyant(ct, scenario(c), start, span, rules)
    forecast = small_forecast(ct, c, start)
    outs = run_causal(ct, scenario(c), start, span, CAUSAL_POLICIES, forecast, 3, rules)
    for name, out in outs.items():
        assert out.value <= best.value + 1e-9, name
        # Every lent second is charged at 1 + rho: the GPU time a study reports per day.
        assert out.cost == pytest.approx((1.0 + c.rho) * out.lent_s, abs=1e-9), name
    # Never lending lends nothing and costs nothing; a late request is the trace's own.
    never = outs["never"]
    assert (never.handoffs, never.lent_s, never.cost, never.benefit) == (0, 0.0, 0.0, 0.0)
    assert never.value == pytest.approx(-c.price * never.lateness_s, abs=1e-9)
    # The finite model on the causal calendar is a schedule of the trace too.
    plan = calendar_dp(ct, scenario(c), start, span)
    assert plan.value <= best.value + 1e-9
    # Pruning the moves dominated under full information keeps the optimum.
    full = _core.causal.stochastic_dp([ct.schedule], [1.0], core(c), start, span, 2_000_000, False)
    assert full == pytest.approx(best.value, abs=1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces(16))
def test_with_an_instant_return_the_clairvoyant_is_the_finite_model_dp(
    data: st.DataObject, trace: Any
) -> None:
    """With t_ret = 0 capacity is back by the arrival whatever is done: the exact
    clairvoyant is the paper's DP (Eq. D.2) on the calendar [g, A], an independent code."""
    span = trace[0][-1]
    c = data.draw(candidates(span))
    c = ref.Candidate(c.J, c.delta, c.g, c.H, 0.0, c.rho, c.t_ck, c.t_ld, c.price)
    ct = causal_trace(trace)
    best = clairvoyant(ct, scenario(c), 0.0, span, CausalRules(lateness_price=c.price))
    plan = calendar_dp(ct, scenario(c), 0.0, span)
    assert best.value == pytest.approx(plan.value, abs=1e-9)
    assert best.late_requests == 0


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[tuple[list[float], ...]], list[float]]:
    """2-3 branches sharing a prefix of requests, then parting."""
    base = draw(traces(8))
    branches = [base]
    for _ in range(draw(st.integers(1, 2))):
        cut = draw(st.integers(1, len(base[0]) - 1))
        tail = draw(traces(8))
        shift = base[0][cut - 1] + draw(st.floats(0.5, 40.0))
        arrival = base[0][:cut] + [a + shift for a in tail[0]]
        service = base[1][:cut] + tail[1]
        finish = ref.unlent_finish(arrival, service)
        deadline = base[2][:cut] + [max(f, d) for f, d in zip(finish[cut:], tail[2], strict=True)]
        deadline = [max(d, f) for d, f in zip(deadline, finish, strict=True)]
        branches.append((arrival, service, deadline))
    weights = draw(st.lists(st.floats(0.1, 1.0), min_size=len(branches), max_size=len(branches)))
    total = math.fsum(weights)
    probabilities = [w / total for w in weights]
    probabilities[-1] = 1.0 - math.fsum(probabilities[:-1])
    return branches, probabilities


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tree=trees())
def test_the_tree_dp_bounds_every_causal_policy_in_expectation(
    data: st.DataObject, tree: Any
) -> None:
    branches, probabilities = tree
    end = min(b[0][-1] for b in branches)
    c = data.draw(candidates(end))
    start = data.draw(st.floats(0.0, end / 2))
    if not end > start:
        return
    cts = [causal_trace(b) for b in branches]
    rules = CausalRules(lateness_price=c.price)
    optimum = _core.causal.stochastic_dp([t.schedule for t in cts], probabilities, core(c), start, end)
    # Each causal policy decides from the requests seen so far (here with no forecast
    # history past the shared start, so every branch sees the same forecast).
    expected = dict.fromkeys(CAUSAL_POLICIES, 0.0)
    for ct, p in zip(cts, probabilities, strict=True):
        forecast = small_forecast(ct, c, start)
        outs = run_causal(ct, scenario(c), start, end, CAUSAL_POLICIES, forecast, 1, rules)
        for name, out in outs.items():
            expected[name] += p * out.value
    for name, value in expected.items():
        assert value <= optimum + 1e-9, name
    # With perfect information the optimum can only rise.
    perfect = math.fsum(
        p * clairvoyant(ct, scenario(c), start, end, rules).value
        for ct, p in zip(cts, probabilities, strict=True)
    )
    assert optimum <= perfect + 1e-9


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces(12))
def test_a_one_branch_tree_is_the_clairvoyant(data: st.DataObject, trace: Any) -> None:
    span = trace[0][-1]
    c = data.draw(candidates(span))
    ct = causal_trace(trace)
    best = clairvoyant(ct, scenario(c), 0.0, span, CausalRules(lateness_price=c.price))
    for prune in (True, False):
        one = _core.causal.stochastic_dp([ct.schedule], [1.0], core(c), 0.0, span, 2_000_000, prune)
        assert one == pytest.approx(best.value, abs=1e-9)


def test_tree_checks() -> None:
    ct = causal_trace(([0.0, 10.0, 20.0], [1.0, 1.0, 1.0], [5.0, 15.0, 25.0]))
    c = core(ref.Candidate(J=1, delta=1.0, g=1.0, H=100.0, t_ret=1.0))
    with pytest.raises(ValueError, match="sum to 1"):
        _core.causal.stochastic_dp([ct.schedule, ct.schedule], [0.5, 0.6], c, 0.0, 20.0)
    with pytest.raises(ValueError, match=r"probabilities\[0\] must be finite and > 0"):
        _core.causal.stochastic_dp([ct.schedule], [0.0], c, 0.0, 20.0)
    with pytest.raises(ValueError, match="1 to 64 branches"):
        _core.causal.stochastic_dp([], [], c, 0.0, 20.0)
    with pytest.raises(OverflowError, match="too large to solve exactly"):
        _core.causal.stochastic_dp([ct.schedule], [1.0], c, 0.0, 20.0, 1, False)


def test_a_horizon_too_long_for_the_clairvoyant_is_bad_input() -> None:
    """Past max_nodes the exact DP is refused as a ValueError naming the horizon (the
    CLI's exit 2), not an OverflowError (exit 70: an internal error)."""
    ct = causal_trace(([0.0, 10.0, 20.0], [1.0, 1.0, 1.0], [5.0, 15.0, 25.0]))
    c = ref.Candidate(J=1, delta=1.0, g=1.0, H=100.0, t_ret=1.0)
    with pytest.raises(ValueError, match=r"horizon \[0, 20\] s: .*max_nodes = 1 "):
        clairvoyant(ct, scenario(c), 0.0, 20.0, max_nodes=1)


# --- decisions --------------------------------------------------------------------------------


def reference_decision(
    c: ref.Candidate,
    point: tuple[float, float, int, int, bool],
    policy: str,
    level: float,
    pool: _core.causal.GapPool,
    tables: _core.forecast.SampleTables,
    seed: int,
) -> tuple[str, int]:
    """The plan a causal decision should pick, scored plan by plan in Python."""
    t, gap, p, pbar, lent = point
    n = tables.sample_count
    remaining, records = pool.draw(t - gap, n, seed)
    base = p if lent else pbar
    rest = c.J - base
    load = c.t_ld if (not lent and pbar > 0) else 0.0
    plans: list[tuple[str, int]] = (
        [("abandon", 0), ("checkpoint_return", 0), ("discard_return", 0)] if lent else [("wait", 0)]
    )
    plans += [("greedy", rest), ("publish", rest)] + [
        ("advance", u) for u in range(rest - 1, 0, -1)
    ]

    def outcome(plan: tuple[str, int], arrival: float, record: int) -> tuple[float, int, bool]:
        slack = pool.slack(record)

        def ended(ready: float, cost: float, durable: int) -> tuple[float, int, bool]:
            over = ready - arrival
            return -cost - c.price * pool.lateness(record, over), durable, not over > slack

        cut = ended(arrival + c.t_ret, c.charge(arrival - t + c.t_ret), pbar)
        kind, u = plan
        if kind == "wait":
            return 0.0, pbar, True
        if kind in ("abandon", "discard_return"):
            return ended(t + c.t_ret, c.charge(c.t_ret), -1 if kind == "abandon" else pbar)
        if kind == "checkpoint_return":
            if not ref.by_arrival(t + c.t_ck, arrival):
                return cut
            return ended(t + c.t_ck + c.t_ret, c.charge(c.t_ck + c.t_ret), p)
        if kind == "publish":
            work = load + u * c.delta
            if not ref.by_arrival(t + work, arrival):
                return cut
            r, d, ok = ended(t + work + c.t_ret, c.charge(work + c.t_ret), -1)
            return r + c.benefit(t + work), d, ok
        if kind == "advance":
            busy = load + u * c.delta + c.t_ck
            if not ref.by_arrival(t + busy, arrival):
                return cut
            return ended(t + busy + c.t_ret, c.charge(busy + c.t_ret), base + u)
        # greedy: save first if lent with unsaved work, then quantum + save pairs
        saves_first = lent and p > pbar
        begin = t + (c.t_ck if saves_first else load)
        if saves_first and not ref.by_arrival(begin, arrival):
            return cut
        pair = c.delta + c.t_ck
        publish = begin + (u - 1) * pair + c.delta
        if ref.by_arrival(publish, arrival):
            r, d, ok = ended(publish + c.t_ret, c.charge(publish - t + c.t_ret), -1)
            return r + c.benefit(publish), d, ok
        saved = 0 if arrival < begin else int(min(u - 1, math.floor((arrival - begin) / pair)))
        return cut[0], base + saved, cut[2]

    def score(table: str, plan: tuple[str, int]) -> tuple[float, float]:
        total, timely = 0.0, 0.0
        for i in range(n):
            arrival = t + remaining[i]
            r, d, ok = outcome(plan, arrival, int(records[i]))
            row = tables.row_after(i, arrival, table)
            total += r + (0.0 if d < 0 else row[d])
            timely += ok
        return total / n, timely

    def gate() -> tuple[str, int]:
        go = score("window", plans[3 if lent else 1])[0]
        stop = score("window", ("abandon", 0))[0] if lent else 0.0
        if go - stop > ref.TIE + 1e-12 * max(abs(go), abs(stop)):
            return plans[3 if lent else 1]
        return ("checkpoint_return" if p > pbar else "discard_return", 0) if lent else ("wait", 0)

    open_plans = [q for q in plans if q[0] != "checkpoint_return" or p > pbar]
    if policy == "never":  # idle: wait; lent: return keeping the completed work
        return ("checkpoint_return" if p > pbar else "discard_return", 0) if lent else ("wait", 0)
    if policy == "window":
        return plans[3 if lent else 1]
    if policy == "costed_window":
        return gate()
    table = "optimal" if policy == "mean_dp" else "reference"
    incumbent = plans[0] if policy == "mean_dp" else gate()
    scores = {q: score(table, q) for q in open_plans}
    allowed = open_plans
    if policy == "risk_rollout":
        allowed = [q for q in open_plans if scores[q][1] >= level * n - 1e-9]
        if not allowed:
            return max(open_plans, key=lambda q: (scores[q][1], scores[q][0]))  # approx. ties
        if incumbent not in allowed:
            incumbent = allowed[0]
    best = scores[incumbent][0]
    for q in allowed:
        if scores[q][0] - best > ref.TIE + 1e-12 * max(abs(best), abs(scores[q][0])):
            best, incumbent = scores[q][0], q
    return incumbent


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces(20))
def test_decisions_match_the_reference_scorer(data: st.DataObject, trace: Any) -> None:
    span = trace[0][-1]
    c = data.draw(candidates(span))
    ct = causal_trace(trace)
    now = data.draw(st.floats(span / 4, span / 2))
    forecast = small_forecast(ct, c, now, n=data.draw(st.integers(1, 6)))
    policy = data.draw(st.sampled_from(CAUSAL_POLICIES))
    level = data.draw(st.sampled_from([0.0, 0.5, 0.95, 1.0]))
    seed = data.draw(st.integers(0, 1000))
    lent = data.draw(st.booleans())
    durable = data.draw(st.integers(0, c.J - 1))
    progress = data.draw(st.integers(durable, c.J - 1)) if lent else durable
    age = data.draw(st.floats(0.0, 60.0))
    point = (now + age, now, progress, durable, lent)
    rules = CausalRules(lateness_price=c.price, return_level=level)
    decider = _core.causal.CausalDecider(
        core(c), policy, level, forecast.pool, forecast.tables, _core.causal.stream_seed(seed, 0, 0)
    )
    plan, quanta, _ = decider.decide(*point)
    want = reference_decision(
        c, point, policy, level, forecast.pool, forecast.tables, _core.causal.stream_seed(seed, 0, 0)
    )
    assert (plan, quanta) == want, rules


# --- no look-ahead ------------------------------------------------------------------------------


def decisions(ct: CausalTrace, c: ref.Candidate, start: float, end: float) -> list[tuple[Any, ...]]:
    forecast = small_forecast(ct, c, start)
    rules = CausalRules(lateness_price=c.price)
    outs = run_causal(ct, scenario(c), start, end, CAUSAL_POLICIES, forecast, 7, rules, True)
    rows = []
    for name, out in outs.items():
        s = out.steps
        for k in range(len(s["t"])):
            rows.append(
                (
                    name,
                    float(s["t"][k]),
                    int(s["progress"][k]),
                    int(s["durable"][k]),
                    bool(s["lent"][k]),
                    int(s["plan"][k]),
                    int(s["quanta"][k]),
                    int(s["move"][k]),
                )
            )
    return rows


def altered_after(trace: tuple[list[float], ...], cut: float, rng: np.random.Generator) -> Any:
    """The trace with every request after ``cut`` replaced (the last arrival kept)."""
    arrival, service, deadline = trace
    last = arrival[-1]
    if cut + 1e-6 >= last:  # nothing after the cut but the end of the trace
        return trace
    keep = [i for i, a in enumerate(arrival) if a <= cut]
    new = [*sorted(rng.uniform(cut + 1e-06, last, size=rng.integers(0, 8)).tolist()), last]
    a2 = [arrival[i] for i in keep] + new
    s2 = [service[i] for i in keep] + rng.uniform(0.1, 3.0, size=len(new)).tolist()
    finish = ref.unlent_finish(a2, s2)
    d2 = [deadline[i] for i in keep] + [f + float(rng.uniform(0, 10)) for f in finish[len(keep) :]]
    d2 = [max(d, f) for d, f in zip(d2, finish, strict=True)]
    return a2, s2, d2


def assert_no_look_ahead(
    trace: Any, c: ref.Candidate, start: float, end: float, cut: float, seed: int
) -> None:
    before = [r for r in decisions(causal_trace(trace), c, start, end) if r[1] < cut]
    other = altered_after(trace, cut, np.random.default_rng(seed))
    again = [r for r in decisions(causal_trace(other), c, start, end) if r[1] < cut]
    assert before == again


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces(20))
def test_no_decision_looks_ahead_on_random_traces(data: st.DataObject, trace: Any) -> None:
    span = trace[0][-1]
    c = data.draw(candidates(span))
    start = span / 4
    cut = data.draw(st.floats(start, span))
    assert_no_look_ahead(trace, c, start, span, cut, data.draw(st.integers(0, 99)))


def test_no_decision_looks_ahead_on_the_shipped_trace() -> None:
    trace = load_trace()
    arrival, work, deadline = (
        list(map(float, x)) for x in (trace.arrival, trace.work, trace.deadline)
    )
    c = ref.Candidate(
        J=12, delta=5.0, g=0.25, H=1680.0, t_ret=69.988, t_ck=0.068075, t_ld=0.047748, price=1.0
    )
    for cut, seed in ((700.0, 0), (905.0, 1), (1150.0, 2)):
        assert_no_look_ahead((arrival, work, deadline), c, 600.0, 1200.0, cut, seed)


def test_known_windows_look_ahead() -> None:
    """The negative control: a window's end is Eq. 6 over later requests, so one request
    more after a decision changes that window, and the paper's decision with it."""
    from learnsched.calendar import ServiceModel, idle_windows
    from learnsched.capacity import ReturnPath

    trace = load_trace()
    path = ReturnPath(ready_s=69.988)
    base = idle_windows(trace, 1.0, path).windows
    first = base[0]
    # A request of 110 tokens 65 s after the window opens (the example).
    i = int(np.searchsorted(trace.arrival, first.start_s + 65.0))
    work = 110 / ServiceModel().decode_tokens_per_s
    arrival = np.insert(trace.arrival, i, first.start_s + 65.0)
    works = np.insert(trace.work, i, work)
    deadline = np.insert(trace.deadline, i, first.start_s + 65.0 + work + 20.0)
    changed = idle_windows(Trace(arrival, works, deadline), 1.0, path).windows[0]
    assert changed.start_s == first.start_s
    assert changed.ready_by_s != first.ready_by_s


# --- forecasts of the current gap -----------------------------------------------------------------


def test_gap_draws_come_from_longer_past_gaps_and_lateness_is_the_sum() -> None:
    trace = load_trace()
    ct = CausalTrace(trace)
    start, arrival, _ = ct.gaps()
    pool = _core.causal.GapPool(ct.schedule, 1800.0, math.inf, 300.0, 69.988, "empirical", 8)
    closed = arrival + 300.0 <= 1800.0
    lengths = np.sort((arrival - start)[closed])
    assert pool.size == lengths.size
    for age in (0.0, 3.0, 30.0):
        remaining, records = pool.draw(age, 500, 11)
        assert np.all(remaining > 0)
        assert np.all(np.isin(np.round(age + remaining, 9), np.round(lengths[lengths > age], 9)))
    # Past the longest gap: the Pareto tail, from the longest record.
    remaining, records = pool.draw(float(lengths[-1]) + 1.0, 200, 3)
    assert np.all(records == pool.size - 1)
    assert np.median(remaining) == pytest.approx(lengths[-1] + 1.0, rel=0.5)
    # Lateness of a record: sum over its requests of (overrun - slack)^+.
    for r in (0, pool.size // 2, pool.size - 1):
        for over in (0.0, 10.0, 40.0, 69.0):
            lateness = pool.lateness(r, over)
            assert lateness >= 0.0
            assert (lateness > 0) == (over > pool.slack(r))
    assert pool.lateness(-1, 5.0) == 5.0


def test_calibration_scores_against_brute_force() -> None:
    ct = CausalTrace(load_trace())
    pool = _core.causal.GapPool(ct.schedule, 1800.0, math.inf, 300.0, 69.988, "empirical", 8)
    start, arrival, _ = ct.gaps()
    closed = arrival + 300.0 <= 1800.0
    lengths = np.sort((arrival - start)[closed])
    for age, y in ((0.0, 0.3), (2.0, 10.0), (20.0, 5.0), (0.0, 100.0)):
        pit, crps = pool.scores(np.array([age]), np.array([y]), 9)
        r = lengths[lengths > age] - age
        f_lo, f_hi = np.mean(r < y), np.mean(r <= y)
        assert f_lo - 1e-12 <= pit[0] <= f_hi + 1e-12
        brute = np.mean(np.abs(r - y)) - 0.5 * np.mean(np.abs(r[:, None] - r[None, :]))
        assert crps[0] == pytest.approx(brute, rel=1e-9, abs=1e-9)
    for model in ("repeat", "mean"):
        p = _core.causal.GapPool(ct.schedule, 1800.0, math.inf, 300.0, 69.988, model, 8)
        pit, crps = p.scores(np.array([0.0, 1.0]), np.array([0.5, 2.0]), 1)
        assert np.all((pit >= 0) & (pit <= 1))
        assert np.all(crps >= 0)


def assert_same_pool(a: _core.causal.GapPool, b: _core.causal.GapPool, reach: float) -> None:
    """Two pools forecast and price alike, bit for bit."""
    assert a.size == b.size
    assert np.array_equal(a.windows(1.0, 0.5), b.windows(1.0, 0.5))
    for age in (0.0, 0.3, 2.0, 30.0):
        for x, y in zip(a.draw(age, 16, 7), b.draw(age, 16, 7), strict=True):
            assert np.array_equal(x, y)
    ages, remaining = np.array([0.0, 1.0, 4.0, 50.0]), np.array([0.5, 3.0, 1.0, 2.0])
    for x, y in zip(a.scores(ages, remaining, 5), b.scores(ages, remaining, 5), strict=True):
        assert np.array_equal(x, y)
    for r in range(-1, a.size):
        assert a.slack(r) == b.slack(r)
        for over in (0.0, 0.5 * reach, reach, 2.0 * reach + 1.0):
            assert a.lateness(r, over) == b.lateness(r, over)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), trace=traces(max_requests=40))
def test_pools_from_shared_records_are_the_pools_fitted_alone(
    data: st.DataObject, trace: Any
) -> None:
    """A pool cut from a trace's shared records (any reach up to theirs, scanned on any
    number of threads) is the pool fitted on the trace at that time, for every gap model."""
    s = schedule(trace)
    span = trace[0][-1]
    now = data.draw(st.floats(0.0, span + 10.0))
    history = data.draw(st.sampled_from([math.inf, 5.0, 30.0, 120.0]))
    close = data.draw(st.sampled_from([0.0, 2.0, 20.0]))
    reach = data.draw(st.sampled_from([0.0, 1.0, 8.0, 40.0]))
    cut = data.draw(st.sampled_from([0.0, 0.5, 1.0])) * reach
    first, last = now - history - data.draw(st.floats(0.0, 50.0)), now + data.draw(st.floats(0, 50))
    threads = data.draw(st.integers(1, 3))
    records = _core.causal.GapRecords(s, first, last, close, reach, threads)
    for model in GAP_MODELS:
        alone = _core.causal.GapPool(s, now, history, close, cut, model, 3)
        shared = _core.causal.GapPool(records, now, history, cut, model, 3)
        assert_same_pool(shared, alone, cut)
    assert_same_pool(
        _core.causal.GapPool(records, now, history, None, "mean", 3),
        _core.causal.GapPool(s, now, history, close, reach, "mean", 3),
        reach,
    )


def test_a_pool_reads_only_inside_its_records() -> None:
    s = CausalTrace(load_trace()).schedule
    records = _core.causal.GapRecords(s, 600.0, 1800.0, 300.0, 60.0)
    with pytest.raises(ValueError, match="reads gaps outside the records"):
        _core.causal.GapPool(records, 1900.0, 600.0)
    with pytest.raises(ValueError, match="reads gaps outside the records"):
        _core.causal.GapPool(records, 1800.0, math.inf)
    with pytest.raises(ValueError, match=r"reach_s must be in \[0, the records' reach"):
        _core.causal.GapPool(records, 1800.0, 600.0, 61.0)
    with pytest.raises(ValueError, match="until_s must be finite"):
        _core.causal.GapRecords(s, 0.0, math.inf, 300.0, 60.0)
    with pytest.raises(ValueError, match="close_s must be finite and >= 0"):
        _core.causal.GapRecords(s, 0.0, 600.0, -1.0, 60.0)
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"):
        _core.causal.GapRecords(s, 0.0, 600.0, 300.0, 60.0, 0)


# --- the Python layer -----------------------------------------------------------------------------


def test_runs_do_not_depend_on_threads_and_steps_are_consistent() -> None:
    ct = CausalTrace(load_trace())
    c = ref.Candidate(
        J=12,
        delta=5.0,
        g=0.25,
        H=1680.0,
        t_ret=0.487,
        rho=0.06383,
        t_ck=0.068075,
        t_ld=0.047748,
        price=1.0,
    )
    forecast = small_forecast(ct, c, 600.0, n=16)
    one = run_causal(ct, scenario(c), 600.0, 1200.0, CAUSAL_POLICIES, forecast, 2, None, True, 1)
    two = run_causal(ct, scenario(c), 600.0, 1200.0, CAUSAL_POLICIES, forecast, 2, None, True, 2)
    for name in CAUSAL_POLICIES:
        a, b = one[name], two[name]
        assert (a.value, a.late_requests, a.handoffs) == (b.value, b.late_requests, b.handoffs)
        assert math.fsum(a.steps["reward"].tolist()) == pytest.approx(a.value, abs=1e-9)
        assert int(a.steps["late_requests"].sum()) == a.late_requests
        assert all(0 <= k < len(CAUSAL_PLANS) for k in a.steps["plan"].tolist())


def test_decider_and_checks() -> None:
    ct = CausalTrace(load_trace())
    c = ref.Candidate(
        J=12, delta=5.0, g=0.25, H=1680.0, t_ret=69.988, t_ck=0.068075, t_ld=0.047748, price=1.0
    )
    forecast = small_forecast(ct, c, 600.0, n=8)
    decider = CausalDecider(scenario(c), "rollout", forecast)
    plan, quanta, move = decider.decide(700.0, 690.0, 0, 0, False)
    assert plan in CAUSAL_PLANS
    assert move in CAUSAL_MOVES
    assert quanta >= 0
    assert CausalDecider(scenario(c), "window", None).decide(700.0, 700.0, 3, 3, False) == (
        "greedy",
        9,
        "work",
    )
    with pytest.raises(ValueError, match="needs a forecast"):
        CausalDecider(scenario(c), "rollout", None)
    with pytest.raises(ValueError, match="causal policy must be one of"):
        CausalDecider(scenario(c), "dp", forecast)
    with pytest.raises(ValueError, match="invalid state"):
        decider.decide(700.0, 690.0, 3, 4, True)
    two_path = ls.HandoffCosts(0.487, 0.06383, 0.068075, 0.047748, cold_recovery_s=69.988)
    with pytest.raises(ValueError, match="one return path"):
        CausalDecider(ls.Scenario(((0.0, 1.0),), 2, 5.0, 0.25, 99.0, two_path), "window", None)
    with pytest.raises(ValueError, match=r"misses deadline\[1\]"):
        _core.causal.UnlentSchedule(np.array([0.0, 0.5]), np.array([1.0, 1.0]), np.array([1.0, 1.5]))
    with pytest.raises(ValueError, match=r"arrival\[1\] = 0.000000 is earlier"):
        _core.causal.UnlentSchedule(np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([9.0, 9.0]))
    with pytest.raises(ValueError, match="after the trace's last request"):
        _core.causal.CausalSim(ct.schedule, core(c), 0.0, 1e9)


def test_run_forecast_causal_decides_as_online_and_reads_no_window_end() -> None:
    """`learnsched run --forecast causal` (CausalForecastDecider) makes the study's C++
    causal decision over its history, and its window-start decision never reads the
    window's end (the live loop does not know it)."""
    from dataclasses import replace

    from learnsched.calendar.study import make_forecaster
    from learnsched.control.deciders import CausalForecastDecider
    from learnsched.control.windows import Window
    from learnsched.solver import ActionKind

    whole = load_trace()
    keep = whole.arrival < 1800.0
    history = Trace(whole.arrival[keep], whole.work[keep], whole.deadline[keep])

    def live(
        seed: int, costs: ls.HandoffCosts = ls.PAPER_COLD, past: Trace = history
    ) -> CausalForecastDecider:
        return CausalForecastDecider(
            12, 5.0, costs, 0.25, 3600.0, history=past, samples=16, seed=seed
        )

    # The decision `online` makes, built by hand on the same history (loop clock: the
    # history's last arrival at 0, every gap of it closed) with the same seeds.
    end = float(history.arrival[-1])
    shifted = CausalTrace(Trace(history.arrival - end, history.work, history.deadline - end))
    rules = CausalRules()
    decider = live(3)
    candidate = decider.scenario([Window(0.0, 1.0)], 0, 0, False)
    forecast = CausalForecast(
        shifted, candidate, 0.0, make_forecaster("empirical"), 16, np.random.default_rng(3),
        replace(rules, close_s=0.0),
    )  # fmt: skip
    online = CausalDecider(candidate, "rollout", forecast, rules, 3)
    points = [(t, 10.0, 0, 0, False) for t in (10.0, 15.0, 20.0, 60.0)]
    points += [(30.0, 10.0, 2, 1, True), (45.0, 40.0, 0, 0, False), (50.0, 40.0, 3, 0, True)]
    for point in points:
        assert decider.next_move(*point) == online.decide(*point)

    # The window-start decision: the same action whatever the window's end, mapped from
    # the causal plan (wait, a checkpointed advance, or publishing the rest). A young gap
    # of the shipped trace usually ends soon (wait); one of a sparse history lends.
    gaps = np.cumsum(np.random.default_rng(0).exponential(120.0, 60))
    sparse = Trace(gaps, np.full(60, 2.0), gaps + 30.0)
    plans = set()
    for past, costs, start in itertools.product(
        (history, sparse), (ls.PAPER_COLD, ls.PAPER_WARM), (5.0, 30.0, 90.0)
    ):
        for progress, durable, active in ((0, 0, False), (4, 4, False), (5, 2, True)):
            a = live(7, costs, past).decide([Window(start, start + 1.0)], progress, durable, active)
            b = live(7, costs, past).decide(
                [Window(start, start + 500.0)], progress, durable, active
            )
            assert a == b
            plan, quanta, _ = live(7, costs, past).next_move(
                start, start, progress, durable, active
            )
            plans.add(plan)
            if active:
                assert a.kind in (
                    ActionKind.ABANDON,
                    ActionKind.DISCARD_RETURN,
                    ActionKind.CHECKPOINT_RETURN,
                )
            elif plan == "wait":
                assert a.kind == ActionKind.WAIT
            elif plan == "advance":
                assert (a.kind, a.quanta, a.checkpoint) == (ActionKind.ADVANCE, quanta, True)
            else:
                assert (a.kind, a.quanta) == (ActionKind.PUBLISH, 12 - durable)
    assert plans - {"wait", "checkpoint_return", "discard_return", "abandon"}  # some lend


# --- the bindings' argument checks ------------------------------------------------------------


def _causal() -> tuple[Any, Any, Any]:
    arrival = np.array([0.0, 10.0, 30.0])
    schedule = _core.causal.UnlentSchedule(arrival, np.ones(3), arrival + 5.0)
    pool = _core.causal.GapPool(schedule, 100.0, 1000.0, 0.0, 10.0)
    candidate = _core.causal.CausalCandidate(2, 1.0, 1.0, 100.0, 0.5, 0.0, 0.1, 0.1, 1.0)
    return schedule, pool, candidate


def test_causal_bindings_guard_their_arguments() -> None:
    """The bindings check what C++ would otherwise use blindly: a record past the pool in
    GapPool.lateness/slack and a None branch of stochastic_dp would be read out of bounds,
    GapPool.draw(n = 2**40) would exhaust memory, and a wrong pool, tables, candidate or seed
    would be pybind11's unnamed RuntimeError ("Unable to cast Python instance ...")."""
    schedule, pool, candidate = _causal()
    assert pool.size == 2
    for method in (lambda r: pool.lateness(r, 5.0), pool.slack):
        with pytest.raises(ValueError, match=r"record must be -1 or in \[0, 2\), got 2"):
            method(2)
        with pytest.raises(ValueError, match="got -2"):
            method(-2)
        assert method(-1) >= 0.0
        assert method(1) >= 0.0
    with pytest.raises(ValueError, match=r"n must be <= 16777216, got 1099511627776"):
        pool.draw(1.0, 2**40, 0)
    assert pool.draw(1.0, 3, 0)[0].shape == (3,)
    with pytest.raises(ValueError, match=r"branches\[1\] must be an UnlentSchedule, got None"):
        _core.causal.stochastic_dp([schedule, None], [0.5, 0.5], candidate, 0.0, 25.0)
    with pytest.raises(TypeError, match="pool must be a GapPool or None, got 'x'"):
        _core.causal.CausalDecider(candidate, "rollout", 0.5, "x", None, 0)
    with pytest.raises(TypeError, match="tables must be SampleTables or None, got 3"):
        _core.causal.CausalDecider(candidate, "rollout", 0.5, None, 3, 0)
    fields = (candidate, 0.0, 25.0, "window", 0.5, None, None, 0, False)
    job = _core.causal.CausalJob(*fields)
    for at, bad, message in (
        (0, "x", r"jobs\[0\].candidate must be a CausalCandidate, got 'x'"),
        (5, "p", r"jobs\[0\].pool must be a GapPool or None, got 'p'"),
        (7, -1, r"jobs\[0\].seed must be an int in \[0, 2\*\*64\), got -1"),
        (1, "0", r"jobs\[0\].from_s must be a number, got '0'"),
    ):
        with pytest.raises(TypeError, match=message):
            _core.causal.run_causal(
                schedule, [_core.causal.CausalJob(*fields[:at], bad, *fields[at + 1 :])]
            )
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 1025"):
        _core.causal.run_causal(schedule, [job], 1025)
    both = _core.causal.run_causal(schedule, [job, job], 2)[0]
    one = _core.causal.run_causal(schedule, [job])[0]
    assert {k: v for k, v in both.items() if k != "steps"} == {
        k: v for k, v in one.items() if k != "steps"
    }
