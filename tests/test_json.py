"""learnsched._json: the nesting depth it measures, against a recursive reference."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnsched._json import MAX_DEPTH, _value_depth, parse

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=30,
)


def depth(value: Any) -> int:
    """The obviously correct depth: 1 + the deepest child of a dict or list."""
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(values)
def test_the_depth_of_any_json_value(value: Any) -> None:
    assert _value_depth(json.loads(json.dumps(value))) == depth(value)


def test_the_limit_is_inclusive() -> None:
    assert parse("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x") is not None
    text = '{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    with pytest.raises(
        ValueError, match=f"x: JSON nesting depth 33 exceeds the limit of {MAX_DEPTH}"
    ):
        parse(text, "x")
