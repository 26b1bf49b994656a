"""Benefit accumulation over slots (Appendix C.4, Eq. C.7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from learnsched.economics import accumulated_value


def reference(done: list[float], benefits: np.ndarray, costs: list[float], k: int) -> float:
    """The last line of Eq. C.7: completed-before-K candidates from k_j + 1, minus all costs."""
    total = 0.0
    for j, k_j in enumerate(done):
        if k_j < k:  # an unfinished candidate (inf) never qualifies
            total += sum(benefits[j, slot] for slot in range(int(k_j) + 1, k + 1))
    return total - sum(costs[: k + 1])


def test_small_example() -> None:
    benefits = np.array([[5.0, 5.0, 5.0, 5.0], [9.0, 9.0, 9.0, 9.0], [7.0, 7.0, 7.0, 7.0]])
    costs = [4.0, 4.0, 1.0, 0.0]
    g = accumulated_value([0, 2, math.inf], benefits, costs)
    # slot 0: nothing credited yet; slot 1: candidate 0; slot 3: candidates 0 and 1
    np.testing.assert_allclose(g, [-4.0, -3.0, 1.0, 15.0])


@given(
    data=st.data(),
    n_candidates=st.integers(1, 5),
    n_slots=st.integers(1, 8),
)
def test_matches_the_closed_form(data: st.DataObject, n_candidates: int, n_slots: int) -> None:
    done = data.draw(
        st.lists(
            st.one_of(st.integers(0, n_slots + 2).map(float), st.just(math.inf)),
            min_size=n_candidates,
            max_size=n_candidates,
        )
    )
    benefits = data.draw(
        hnp.arrays(np.float64, (n_candidates, n_slots), elements=st.floats(-100, 100))
    )
    costs = data.draw(st.lists(st.floats(0, 100), min_size=n_slots, max_size=n_slots))
    g = accumulated_value(done, benefits, costs)
    for k in range(n_slots):
        assert g[k] == pytest.approx(reference(done, benefits, costs, k), abs=1e-6)


def test_unfinished_work_is_charged_and_never_credited() -> None:
    g = accumulated_value([math.inf], [[100.0, 100.0]], [3.0, 2.0])
    np.testing.assert_allclose(g, [-3.0, -5.0])


@pytest.mark.parametrize(
    ("done", "benefits", "costs", "match"),
    [
        ([0.5], [[1.0]], [0.0], "completion_slots"),
        ([-1.0], [[1.0]], [0.0], "completion_slots"),
        ([math.nan], [[1.0]], [0.0], "completion_slots"),
        ([], np.zeros((0, 1)), [0.0], "completion_slots"),
        ([0.0], [[1.0]], [-1.0], "costs"),
        ([0.0], [[1.0, 2.0]], [0.0], "benefits"),
        ([0.0], [[math.nan]], [0.0], "benefits"),
        ([0.0], [[1.0]], [], "costs"),
    ],
)
def test_rejects(done: list[float], benefits: object, costs: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        accumulated_value(done, benefits, costs)  # type: ignore[arg-type]
