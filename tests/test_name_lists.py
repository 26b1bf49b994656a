"""One home per list of names: the parsers offer what the registries and constants hold,
and the renamed constants still answer, with a warning, for one release."""

from __future__ import annotations

import argparse
import importlib
import math
import re

import pytest

from learnsched import _core
from learnsched.calendar import load_trace
from learnsched.calendar.causal import CAUSAL_POLICIES, GAP_MODELS, CausalTrace
from learnsched.cli import build_parser
from learnsched.control.deciders import RUN_FORECASTS
from learnsched.serving.engines import ENGINES


def choices(argv: list[str], dest: str) -> tuple[str, ...]:
    """The choices of the option ``dest`` of the sub-command ``argv``."""
    parser = build_parser()
    for name in argv:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    action = next(a for a in parser._actions if a.dest == dest)
    assert action.choices is not None
    return tuple(action.choices)


@pytest.mark.parametrize(
    ("argv", "dest", "names"),
    [
        (["run"], "engine", ENGINES),
        (["demo"], "engine", ENGINES),
        (["gate"], "engine", ENGINES),
        (["run"], "forecast", RUN_FORECASTS),
        (["online"], "forecaster", GAP_MODELS),
        (["portfolio"], "forecaster", GAP_MODELS),
        (["portfolio"], "candidate_policy", CAUSAL_POLICIES),
    ],
)
def test_the_parsers_offer_the_listed_names(
    argv: list[str], dest: str, names: tuple[str, ...]
) -> None:
    assert choices(argv, dest) == names


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("learnsched.control.deciders", "FORECASTERS", "RUN_FORECASTS"),
        ("learnsched.calendar.study", "FORECASTERS", "GAP_MODELS"),
        ("learnsched.portfolio.causal", "STUDY_POLICIES", "CAUSAL_STUDY_POLICIES"),
        ("learnsched.portfolio.study", "STUDY_POLICIES", "PORTFOLIO_STUDY_POLICIES"),
    ],
)
def test_the_old_list_names_warn_for_one_release(module: str, old: str, new: str) -> None:
    namespace = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{old}"):
        assert getattr(namespace, old) is getattr(namespace, new)


def test_the_core_reads_back_every_gap_model_it_lists() -> None:
    schedule = CausalTrace(load_trace()).schedule
    for model in GAP_MODELS:
        assert _core.causal.GapPool(schedule, 1800.0, math.inf, 300.0, 70.0, model, 8).size > 0
    refusal = f"gap model must be one of {', '.join(GAP_MODELS)}, got 'weekly'"
    with pytest.raises(ValueError, match=re.escape(refusal)):
        _core.causal.GapPool(schedule, 1800.0, math.inf, 300.0, 70.0, "weekly", 8)
