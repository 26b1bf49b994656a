"""Hypothesis strategies: small random scenarios, with exact ties and exact fits likely."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

import learnsched as ls

from reference import RefScenario

# Small integers make exact Eq. 10 boundaries and exact value ties common.
seconds = st.one_of(st.integers(0, 12).map(float), st.floats(0, 12))
lengths = st.one_of(st.integers(1, 12).map(float), st.floats(0.5, 12))

# Any JSON document, small: what a field of a file a command reads may be replaced by.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


RATES = (0.0, 0.1, 0.25, 1.0, 2.0, 5.0)


@st.composite
def benefit_schedules(draw: st.DrawFn, until_s: float) -> tuple[tuple[float, float], ...]:
    """1-4 pieces starting anywhere from before time 0 to past ``until_s``."""
    starts = draw(
        st.lists(
            st.one_of(st.integers(-5, int(until_s) + 5).map(float), st.floats(-5, until_s + 5)),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    return tuple((t, draw(st.sampled_from(RATES))) for t in sorted(starts))


@st.composite
def scenarios(
    draw: st.DrawFn,
    max_windows: int = 4,
    max_quanta: int = 8,
    two_path: bool = False,
    scheduled: bool = False,
) -> ls.Scenario:
    """A valid scenario with 1..max_windows windows and 1..max_quanta quanta; with
    ``two_path`` it offers a cold return path beside the warm one; with ``scheduled`` its
    benefit rate is a piecewise-constant schedule."""
    windows, start = [], draw(seconds)
    for _ in range(draw(st.integers(1, max_windows))):
        length = draw(lengths)
        windows.append((start, start + length))
        start += length + draw(seconds)
    work_quanta = draw(st.integers(1, max_quanta))
    recovery_s = draw(seconds)
    cold_recovery_s = draw(seconds) if two_path else None
    progress = draw(st.integers(0, work_quanta))
    active = draw(st.booleans())
    durable = draw(st.integers(0, progress)) if active else progress
    fastest_s = min(recovery_s, cold_recovery_s if cold_recovery_s is not None else recovery_s)
    assume(not active or fastest_s <= windows[0][1] - windows[0][0])
    horizon_s = start + draw(seconds) * 5
    rate = draw(benefit_schedules(horizon_s) if scheduled else st.sampled_from(RATES))
    return ls.Scenario(
        windows=tuple(windows),
        work_quanta=work_quanta,
        quantum_s=draw(st.sampled_from([0.5, 1.0, 2.0, 2.5, 3.0])),
        benefit_rate=rate,
        horizon_s=horizon_s,
        costs=ls.HandoffCosts(
            recovery_s=recovery_s,
            residency_rate=draw(st.sampled_from([0.0, 0.06383, 0.5])),
            save_s=draw(st.sampled_from([0.0, 0.068075, 0.5, 1.0])),
            load_s=draw(st.sampled_from([0.0, 0.047748, 0.5, 1.0])),
            cold_recovery_s=cold_recovery_s,
        ),
        initial=ls.InitialState(progress, durable, active),
    )


def to_reference(scenario: ls.Scenario) -> RefScenario:
    """The same scenario for the pure-Python reference."""
    return RefScenario.from_json(scenario.to_json())
