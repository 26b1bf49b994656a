"""Model.decide_many and the indexed lookahead: the same actions as decide and as
the linear scan over every feasible action, in every state, ties and tolerance chains included."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _core
from learnsched.calendar import ForecastDecision

import reference
from strategies import scenarios, to_reference

POLICIES = [p.value for p in ls.Policy]


def every_state(scenario: ls.Scenario) -> tuple[np.ndarray, ...]:
    """Columns of every valid decision state: service (p = pbar) and active (pbar <= p)."""
    model = ls.Model(scenario)
    rows = []
    for k in range(len(scenario.windows)):
        for p in range(scenario.work_quanta + 1):
            rows.append((k, p, p, False))
            for d in range(p + 1):
                try:
                    model.decide(k, p, d, True, policy="never")  # validates the state
                except ValueError:
                    break  # no return path fits this window: no active state here
                rows.append((k, p, d, True))
    window, progress, durable, active = zip(*rows, strict=True)
    return np.array(window), np.array(progress), np.array(durable), np.array(active)


def as_tuples(d: ls.solver.Decisions) -> list[tuple[int, int, bool, bool]]:
    return list(
        zip(d.kind.tolist(), d.quanta.tolist(), d.checkpoint.tolist(), d.cold.tolist(), strict=True)
    )


def action_tuple(a: ls.Action) -> tuple[int, int, bool, bool]:
    return (int(a.kind), a.quanta, a.checkpoint, a.cold)


def linear_scan(scenario: ls.Scenario, states: tuple[np.ndarray, ...], policy: str) -> list:
    """Rollout and DP by the C++ linear scan over every feasible action, unsaved advances
    included: guarded with zero score noise (epsilon 0) for Rollout, and a forecast whose one
    sample is the true rest of the calendar (same tables, best_action) for DP."""
    model = ls.Model(scenario)
    windows = list(scenario.windows)
    forecasts = [
        ForecastDecision(scenario, windows[k], [tuple(windows[k + 1 :])], policies=[policy])
        for k in range(len(windows))
    ]
    out = []
    for k, p, d, a in zip(*(c.tolist() for c in states), strict=True):
        if policy == "rollout":
            act = model.decide(k, p, d, a, "guarded", score_noise=lambda s, x: 0.0)
        else:
            act = forecasts[k].decide(p, d, a, policy)
        out.append(action_tuple(act))
    return out


def check_against_every_reference(scenario: ls.Scenario) -> None:
    model = ls.Model(scenario)
    states = every_state(scenario)
    ref = to_reference(scenario)
    for policy in POLICIES:
        many = as_tuples(model.decide_many(*states, policy=policy))
        one = [
            action_tuple(model.decide(k, p, d, a, policy))
            for k, p, d, a in zip(*(c.tolist() for c in states), strict=True)
        ]
        assert many == one, policy
        # Asked again, Costed Window, Rollout and DP answer from their memo (decision_memo.hpp):
        # every hit, and decide_many's mix of hits and misses, must be the same actions.
        again = [
            action_tuple(model.decide(k, p, d, a, policy))
            for k, p, d, a in zip(*(c.tolist() for c in states), strict=True)
        ]
        assert again == many, policy
        assert as_tuples(model.decide_many(*states, policy=policy)) == many, policy
        if policy in ("rollout", "dp"):
            assert many == linear_scan(scenario, states, policy), policy
        if policy != "guarded":
            kinds = {int(k): k.name.lower() for k in _core.finite.ActionKind.__members__.values()}
            theirs = [
                reference.policy_action(ref, policy, (k, p, d, a))
                for k, p, d, a in zip(*(c.tolist() for c in states), strict=True)
            ]
            assert [(kinds[k], q, c, cold) for k, q, c, cold in many] == theirs, policy


@settings(max_examples=60, deadline=None)
@given(st.booleans().flatmap(lambda two: scenarios(max_windows=3, max_quanta=40, two_path=two)))
def test_decisions_equal_the_linear_scan_at_every_state(scenario: ls.Scenario) -> None:
    """Every policy, every service and active state, one path or two: decide_many equals
    decide, Rollout and DP equal the full linear scan, all equal the pure-Python reference."""
    check_against_every_reference(scenario)


def long_windows(quanta: int, costs: ls.HandoffCosts, benefit_rate: float) -> ls.Scenario:
    """Three windows each holding most of the work at 1 s quanta: long advance ranges."""
    spans = (
        (0.0, 100.0 + quanta * 0.8),
        (quanta + 200.0, 2.0 * quanta + 300.0),
        (2.0 * quanta + 400.0, 2.6 * quanta + 500.0),
    )
    return ls.Scenario(
        windows=spans,
        work_quanta=quanta,
        quantum_s=1.0,
        benefit_rate=benefit_rate,
        horizon_s=4.0 * quanta,
        costs=costs,
        initial=ls.InitialState(0, 0, False),
    )


@pytest.mark.parametrize("benefit_rate", [0.05, 0.5, 2.0])
@pytest.mark.parametrize(
    "costs",
    [
        ls.PAPER_COLD,
        ls.PAPER_WARM,
        # Residency above the benefit rate: every shorter warm advance beats the longer one.
        ls.HandoffCosts(
            recovery_s=30.0, residency_rate=0.6, save_s=0.5, load_s=0.5, cold_recovery_s=69.988
        ),
    ],
    ids=["cold", "warm", "two-path"],
)
def test_long_ranges_equal_the_linear_scan(costs: ls.HandoffCosts, benefit_rate: float) -> None:
    """Ranges of hundreds of advances (many tree levels, runs of winners) at every state."""
    scenario = long_windows(300, costs, benefit_rate)
    model = ls.Model(scenario)
    states = every_state(scenario)
    step = max(1, len(states[0]) // 4000)  # a spread of states, every kind of them
    states = tuple(c[::step] for c in states)
    for policy in ("rollout", "dp"):
        many = as_tuples(model.decide_many(*states, policy=policy))
        assert many == linear_scan(scenario, states, policy), policy


def near_ties(quantum_s: float, horizon_s: float, residency_rate: float) -> ls.Scenario:
    """Two paths and two windows: the first holds advances only, the second the publication.
    At tiny quanta, or large values (the relative tolerance), neighbouring advances score
    within the tie tolerance of each other, so the scan's first-beats-by-tolerance rule (not
    the maximum) decides."""
    q = 300
    d = quantum_s
    return ls.Scenario(
        windows=((0.0, (0.5 * q + 40) * d), ((q + 200.0) * d, (2.0 * q + 300.0) * d)),
        work_quanta=q,
        quantum_s=d,
        benefit_rate=0.5,
        horizon_s=horizon_s,
        costs=ls.HandoffCosts(
            recovery_s=5.0 * d,
            residency_rate=residency_rate,
            save_s=0.5 * d,
            load_s=0.5 * d,
            cold_recovery_s=74.0 * d,
        ),
        initial=ls.InitialState(0, 0, False),
    )


@pytest.mark.parametrize(
    ("quantum_s", "horizon_s", "residency_rate"),
    [
        (1.0, 2000.0, 0.6),
        (4e-9, 8e-6, 0.6),  # values near 1e-6 s-eq.: the absolute 1e-9 (unsaved advances scanned)
        (2e-5, 1e7, 0.6),  # values near 5e6 s-eq.: the relative 1e-12
        (1.0, 2000.0, 0.5 + 4e-10),  # residency a hair above the benefit rate
    ],
)
def test_near_ties_follow_the_scan(
    quantum_s: float, horizon_s: float, residency_rate: float
) -> None:
    scenario = near_ties(quantum_s, horizon_s, residency_rate)
    model = ls.Model(scenario)
    states = every_state(scenario)
    step = max(1, len(states[0]) // 3000)
    states = tuple(c[::step] for c in states)
    for policy in ("rollout", "dp"):
        many = as_tuples(model.decide_many(*states, policy=policy))
        assert many == linear_scan(scenario, states, policy), policy


def test_the_paper_grid_decides_as_decide() -> None:
    for g in ls.paper_grid().scenarios[::97]:
        model = ls.Model(g.scenario)
        states = every_state(g.scenario)
        for policy in POLICIES:
            many = as_tuples(model.decide_many(*states, policy=policy))
            assert many == [
                action_tuple(model.decide(k, p, d, a, policy))
                for k, p, d, a in zip(*(c.tolist() for c in states), strict=True)
            ]


def test_guarded_takes_epsilon_and_exact_scores() -> None:
    scenario = ls.scenario_by_id("S0348").scenario
    model = ls.Model(scenario)
    states = every_state(scenario)
    for epsilon in (0.0, 0.05, 1.0, float("inf")):
        many = as_tuples(model.decide_many(*states, policy="guarded", epsilon=epsilon))
        assert many == [
            action_tuple(model.decide(k, p, d, a, "guarded", epsilon, lambda s, x: 0.0))
            for k, p, d, a in zip(*(c.tolist() for c in states), strict=True)
        ]


def test_results_are_arrays_of_the_documented_types() -> None:
    model = ls.Model(ls.scenario_by_id("S0348").scenario)
    d = model.decide_many([0, 3], [0, 2], [0, 2], [False, False], "dp")
    assert (d.kind.dtype, d.quanta.dtype, d.checkpoint.dtype, d.cold.dtype) == (
        np.uint8,
        np.int32,
        np.bool_,
        np.bool_,
    )
    assert ls.ActionKind(int(d.kind[1])) == ls.ActionKind.PUBLISH == model.decide(3, 2, 2).kind
    kind, quanta, checkpoint, cold = model.decide_many([], [], [], [])
    assert kind.shape == quanta.shape == checkpoint.shape == cold.shape == (0,)
    # Other integer dtypes and strided arrays are taken when every value fits.
    big = np.array([0, 9, 0, 9, 3, 9], dtype=np.int64)[::2]
    assert as_tuples(model.decide_many(big, big, big, np.zeros(3, bool))) == [
        action_tuple(model.decide(k, k, k)) for k in (0, 0, 3)
    ]


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (([0.0], [0], [0], [False]), {}, TypeError, "window must hold integers, got .*float64"),
        (([0], [0], [0], [0]), {}, TypeError, "active must hold bools"),
        (([0], [True], [0], [False]), {}, TypeError, "progress must hold integers, got .*bool"),
        (([[0]], [0], [0], [False]), {}, ValueError, "window must be one-dimensional"),
        (
            ([0, 1], [0], [0, 0], [False, False]),
            {},
            ValueError,
            r"progress must have the length of window \(2\), got 1",
        ),
        (([0], [0], [0], "no"), {}, TypeError, "active must be a sequence of bools, got str"),
        (([0], [2**31], [0], [False]), {}, ValueError, r"progress\[0\] = 2147483648 does not fit"),
        (
            ([0, 0], [0, 1], [0, 2], [False, True]),
            {},
            ValueError,
            r"states\[1\]: durable must be in \[0, progress=1\], got 2",
        ),
        (
            ([0, 9], [0, 0], [0, 0], [False, False]),
            {},
            ValueError,
            r"states\[1\]: window must be in \[0, 4\), got 9",
        ),
        (([0], [0], [0], [False]), {"policy": "greedy"}, ValueError, "policy must be one of"),
        (([0], [0], [0], [False]), {"epsilon": 1.0}, ValueError, "only to policy 'guarded'"),
        (
            ([0], [0], [0], [False]),
            {"policy": "guarded", "epsilon": -1.0},
            ValueError,
            "epsilon must be >= 0",
        ),
    ],
)
def test_bad_arguments_name_the_field(
    args: tuple[object, ...], kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    model = ls.Model(ls.scenario_by_id("S0348").scenario)
    with pytest.raises(error, match=match):
        model.decide_many(*args, **kwargs)  # type: ignore[arg-type]


def test_the_core_takes_only_exact_dtypes() -> None:
    core = _core.finite.Model(ls.scenario_by_id("S0348").scenario.to_core())
    i32, flags = np.zeros(2, np.int32), np.zeros(2, bool)
    dp = _core.finite.Policy.DP
    with pytest.raises(
        TypeError, match="window must be a 1-D numpy array of int32, got dtype int64"
    ):
        core.decide_many(np.zeros(2, np.int64), i32, i32, flags, dp)
    with pytest.raises(TypeError, match="active must be a 1-D numpy array of bool, got list"):
        core.decide_many(i32, i32, i32, [False, False], dp)
    with pytest.raises(ValueError, match=r"durable must have the length of window \(2\), got 1"):
        core.decide_many(i32, i32, i32[:1], flags, dp)
    with pytest.raises(ValueError, match="progress must be 1-D, got 2 dimensions"):
        core.decide_many(i32, np.zeros((2, 1), np.int32), i32, flags, dp)
    with pytest.raises(ValueError, match="policy must be one of the seven Policy values, got 99"):
        core.decide_many(i32, i32, i32, flags, _core.finite.Policy(99))
    kind, quanta, checkpoint, cold = core.decide_many(i32, i32, i32, flags, dp)
    first = core.decide(0, 0, 0, False, dp)
    assert kind.tolist() == [int(first.kind)] * 2
    assert quanta.tolist() == [first.quanta] * 2
    assert checkpoint.tolist() == [first.checkpoint] * 2
    assert cold.tolist() == [first.cold] * 2


def test_threads_sharing_a_fresh_model_decide_as_one() -> None:
    """The lookahead index is built lazily and the decision memo armed on a second call;
    threads racing to build, arm and fill them agree with a serial run."""
    scenario = long_windows(300, ls.PAPER_WARM, 0.5)
    states = every_state(scenario)
    serial = {
        p: as_tuples(ls.Model(scenario).decide_many(*states, policy=p)) for p in ("rollout", "dp")
    }
    shared = ls.Model(scenario)
    results: dict[tuple[int, str], list[tuple[int, int, bool, bool]]] = {}

    def work(i: int) -> None:
        for policy in ("rollout", "dp", "rollout", "dp") if i % 2 else ("dp", "rollout") * 2:
            results[i, policy] = as_tuples(shared.decide_many(*states, policy=policy))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[i, p] == serial[p] for i in range(4) for p in ("rollout", "dp"))


def shuffled_states(scenario: ls.Scenario, n: int, seed: int) -> tuple[np.ndarray, ...]:
    """n valid states in random order, half of them active (durable <= progress)."""
    rng = np.random.default_rng(seed)
    window = rng.integers(0, len(scenario.windows), n)
    progress = rng.integers(0, scenario.work_quanta + 1, n)
    active = rng.random(n) < 0.5
    durable = np.where(active, (progress * rng.random(n)).astype(np.int64), progress)
    return window, progress, durable, active


@pytest.mark.parametrize(("quanta", "n"), [(9_000, 20_000), (20_000, 40_000)])
def test_large_shuffled_batches_decide_as_in_the_order_given(quanta: int, n: int) -> None:
    """Tables of 2^15 entries and more and batches of 2^14 states and more are decided in
    (window, start) order: every entry is still its own state's decision, the
    same as in batches too small to be reordered."""
    scenario = long_windows(quanta, ls.PAPER_WARM, 0.5)
    model = ls.Model(scenario)
    states = shuffled_states(scenario, n, seed=quanta)
    for policy in ("rollout", "dp", "costed_window"):
        whole = as_tuples(model.decide_many(*states, policy=policy))
        pieces = [
            as_tuples(model.decide_many(*(c[i : i + 1000] for c in states), policy=policy))
            for i in range(0, n, 1000)
        ]
        assert whole == [a for piece in pieces for a in piece], policy
        # Now remembered (active states keep the last durable asked per progress): the mix
        # of memo hits and a reordered batch of misses gives the same columns.
        assert as_tuples(model.decide_many(*states, policy=policy)) == whole, policy


def test_a_reordered_batch_names_its_first_invalid_state() -> None:
    scenario = long_windows(9_000, ls.PAPER_WARM, 0.5)
    window, progress, durable, active = shuffled_states(scenario, 20_000, seed=1)
    durable[[7_000, 12_345]] = progress[[7_000, 12_345]] + 1  # durable above progress
    with pytest.raises(ValueError, match=r"states\[7000\]: durable must be in"):
        ls.Model(scenario).decide_many(window, progress, durable, active)
