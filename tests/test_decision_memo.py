"""The decision memo: Costed Window's, Rollout's and DP's decisions are remembered
per state from a policy's second call since the (re)build on. A remembered answer must be the
computed one, a rebuild must forget every answer, and an invalid state must raise as before."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_decide_many import action_tuple, as_tuples, every_state, long_windows, shuffled_states

import learnsched as ls

from strategies import scenarios

MEMOISED = ("costed_window", "rollout", "dp")


def fresh_decisions(scenario: ls.Scenario, states: tuple[np.ndarray, ...], policy: str) -> list:
    """Each state's decision as computed: a model's first call remembers nothing."""
    return as_tuples(ls.Model(scenario).decide_many(*states, policy=policy))


def decide_each(model: ls.Model, states: tuple[np.ndarray, ...], policy: str) -> list:
    return [
        action_tuple(model.decide(k, p, d, a, policy))
        for k, p, d, a in zip(*(c.tolist() for c in states), strict=True)
    ]


@settings(max_examples=25, deadline=None)
@given(
    st.booleans().flatmap(lambda two: scenarios(max_windows=3, max_quanta=12, two_path=two)),
    st.booleans().flatmap(lambda two: scenarios(max_windows=3, max_quanta=12, two_path=two)),
)
def test_a_rebuild_forgets_every_remembered_decision(
    first: ls.Scenario, second: ls.Scenario
) -> None:
    """A model that answered from its memo, rebuilt for another scenario (any shape), decides
    exactly as a fresh model of that scenario, by decide and decide_many alike."""
    model = ls.Model(first)
    states = every_state(first)
    for policy in MEMOISED:
        decide_each(model, states, policy)
        decide_each(model, states, policy)  # remembered
    model.rebuild(second)
    states = every_state(second)
    for policy in MEMOISED:
        want = fresh_decisions(second, states, policy)
        assert decide_each(model, states, policy) == want, policy
        assert decide_each(model, states, policy) == want, policy
        assert as_tuples(model.decide_many(*states, policy=policy)) == want, policy


def test_a_rebuild_to_the_same_shape_does_not_answer_from_the_old_scenario() -> None:
    """Same K and J, so every old entry would be in range: the warm costs' answers differ from
    the cold ones' in some states, and none of the old answers survives the rebuild."""
    cold, warm = long_windows(300, ls.PAPER_COLD, 0.5), long_windows(300, ls.PAPER_WARM, 0.5)
    states = tuple(c[::7] for c in every_state(cold))
    model = ls.Model(cold)
    for policy in MEMOISED:
        model.decide_many(*states, policy=policy)
        model.decide_many(*states, policy=policy)  # armed and filled
    model.rebuild(warm)
    for policy in MEMOISED:
        want = fresh_decisions(warm, states, policy)
        assert want != fresh_decisions(cold, states, policy), policy
        assert decide_each(model, states, policy) == want, policy
        assert decide_each(model, states, policy) == want, policy


INVALID = [
    ((9, 0, 0, False), r"window must be in \[0, 4\), got 9"),
    ((-1, 0, 0, False), r"window must be in \[0, 4\), got -1"),
    ((0, 5, 0, False), "a service-mode state keeps no unsaved work"),
    ((0, 2, 3, True), r"durable must be in \[0, progress=2\], got 3"),
    ((0, 2, -1, True), r"durable must be in \[0, progress=2\], got -1"),
    ((0, 7, 7, False), r"progress must be in \[0, work_quanta=6\], got 7"),
    ((0, -1, -1, False), r"progress must be in \[0, work_quanta=6\], got -1"),
]


@pytest.mark.parametrize("policy", MEMOISED)
@pytest.mark.parametrize(("state", "match"), INVALID)
def test_an_invalid_state_raises_with_the_memo_armed(
    policy: str, state: tuple[int, int, int, bool], match: str
) -> None:
    """Only validated states are remembered: a state next to remembered ones (the same window
    and progress, another durable) is checked and refused as on a fresh model."""
    model = ls.Model(ls.scenario_by_id("S0348").scenario)
    states = every_state(model.scenario)
    decide_each(model, states, policy)
    decide_each(model, states, policy)
    with pytest.raises(ValueError, match=match):
        model.decide(*state, policy)
    with pytest.raises(ValueError, match=match):
        ls.Model(model.scenario).decide(*state, policy)


def test_active_states_sharing_a_progress_replace_each_other() -> None:
    """One entry per (window, progress) for active states: asking durables in turn misses and
    recomputes, and every answer is still its own state's."""
    scenario = long_windows(300, ls.PAPER_WARM, 0.5)
    model = ls.Model(scenario)
    durables = [0, 150, 0, 299, 150, 299, 0]
    want = [action_tuple(ls.Model(scenario).decide(0, 299, d, True, "rollout")) for d in durables]
    for _ in range(3):
        assert [action_tuple(model.decide(0, 299, d, True, "rollout")) for d in durables] == want


def test_a_model_without_a_policys_tables_still_refuses_it() -> None:
    """Asking a policy whose tables were not built never arms its memo into answering."""
    model = ls.Model(ls.scenario_by_id("S0348").scenario, policies=["window"])
    for _ in range(3):
        with pytest.raises(ValueError, match="built without"):
            model.decide(0, 0, 0, False, "rollout")
        with pytest.raises(ValueError, match="built without"):
            model.decide_many([0], [0], [0], [False], "dp")


def test_batches_of_new_states_then_repeated_ones_decide_as_computed() -> None:
    """decide_many stops using the memo while batches keep missing it (new states each
    time), probes it every few batches, and takes it up again when states repeat: every
    batch is its states' decisions throughout."""
    scenario = long_windows(30_000, ls.PAPER_WARM, 0.5)  # batches hit under 2% of the time
    model = ls.Model(scenario)
    batches = [shuffled_states(scenario, 300, seed) for seed in range(12)]
    for states in batches + [batches[0]] * 4 + batches[:3] * 3:
        want = fresh_decisions(scenario, states, "rollout")
        assert as_tuples(model.decide_many(*states, policy="rollout")) == want
