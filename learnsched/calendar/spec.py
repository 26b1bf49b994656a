"""The ``learnsched online`` SPEC: true calendars with their forecasts, as JSON.

A SPEC is one object, or a list of them. Each is a ``learnsched solve`` scenario object
(its ``windows`` are the true calendar) plus ``"forecast"``: ``"exact"`` (the forecast is
the truth), or ``{"samples": [[[start, end], ...], ...]}``: sampled calendars, each a
full calendar from time 0 of which only the windows starting at or after the current
window's end are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import _core
from .._checks import indexed
from ..scenario import Scenario
from .forecast import PackedCalendars, SampleForecaster
from .online import OnlineCase

__all__ = ["MAX_DEPTH", "parse_online_spec", "read_online_spec"]

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects a SPEC may have (one with samples nests 5)."""


def read_online_spec(text: str | bytes, source: str) -> object:
    """A SPEC's JSON, read in C++: the values Python's json module gives (standard JSON
    only: no NaN or Infinity; at most :data:`MAX_DEPTH` levels), each forecast's samples
    as :class:`~.forecast.PackedCalendars` when they are plain calendars.

    Raises
    ------
    ValueError
        ``{source} is not valid JSON: ...`` with the line and column, or ``{source}: JSON
        nesting depth N exceeds the limit of 32``.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    try:
        return _core.read_online_spec(data, MAX_DEPTH, PackedCalendars)
    except ValueError as err:
        message = str(err)
        joint = " is " if message.startswith("not valid JSON") else ": "
        raise ValueError(f"{source}{joint}{message}") from None


def _case(obj: object) -> OnlineCase:
    if not isinstance(obj, Mapping):
        raise ValueError(f"a SPEC entry must be a JSON object, got {type(obj).__name__}")  # noqa: TRY004
    if "forecast" not in obj:
        raise ValueError('forecast is missing: give "exact" or {"samples": [...]}')
    rest: dict[str, Any] = {k: v for k, v in obj.items() if k != "forecast"}
    scenario = Scenario.from_json(rest)
    forecast = obj["forecast"]
    if forecast == "exact":
        return OnlineCase.exact(scenario)
    if not isinstance(forecast, Mapping) or set(forecast) != {"samples"}:
        raise ValueError(f'forecast must be "exact" or {{"samples": [...]}}, got {forecast!r:.80}')
    forecaster = SampleForecaster(forecast["samples"])
    return OnlineCase(scenario, forecaster, samples=forecaster.count)


def parse_online_spec(data: object) -> list[OnlineCase]:
    """The online cases of a parsed SPEC (one object or a list of them).

    Raises
    ------
    ValueError
        Naming the entry and field, e.g. ``spec[2]: forecast.samples[0][1] starts at ...``.
    """
    if isinstance(data, list):
        if not data:
            raise ValueError("spec must hold at least one scenario object, got []")
        return indexed("spec", data, _case)
    return [_case(data)]
