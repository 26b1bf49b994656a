"""Serving load from an engine's Prometheus ``/metrics``: running and waiting requests.

The gauges (read in the engines' sources):

- vLLM: ``vllm:num_requests_running`` and ``vllm:num_requests_waiting``
  (``vllm/v1/metrics/loggers.py``; served on the API server's port by default);
- SGLang: ``sglang:num_running_reqs`` and ``sglang:num_queue_reqs``
  (``sglang/srt/metrics/collector.py``; served only with ``--enable-metrics``).

A gauge may be exported once per label set (one per model or data-parallel rank): the
load is the sum over them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..handoff.endpoint import ServingEndpoint
from ..handoff.engines import engine as engine_dialect

__all__ = ["LOAD_GAUGES", "Load", "parse_load", "read_load"]

LOAD_GAUGES: dict[str, tuple[str, str]] = {
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs"),
}
"""Per engine: the (running, waiting) gauge names."""


@dataclass(frozen=True)
class Load:
    """Requests in the engine at one instant.

    Parameters
    ----------
    running
        Requests being decoded.
    waiting
        Requests queued for a decode slot.
    """

    running: float
    waiting: float

    @property
    def busy(self) -> bool:
        """Whether any request is in the engine."""
        return self.running + self.waiting > 0


def _sample(line: str) -> tuple[str, float] | None:
    """``(metric name, value)`` of one exposition line, or ``None`` for comments/blanks."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if "{" in line:
        name, _, rest = line.partition("{")
        _, _, rest = rest.rpartition("}")
    else:
        name, _, rest = line.partition(" ")
    fields = rest.split()
    if not fields:
        raise ValueError(f"metrics line without a value: {line[:120]!r}")
    try:
        value = float(fields[0])
    except ValueError:
        raise ValueError(f"metrics line with a non-numeric value: {line[:120]!r}") from None
    return name.strip(), value


def parse_load(text: str, engine: str) -> Load:
    """The load in a Prometheus text exposition, summed over label sets.

    Parameters
    ----------
    text
        The body of ``GET /metrics``.
    engine
        ``"vllm"`` or ``"sglang"`` (which gauges to read).

    Raises
    ------
    ValueError
        Neither gauge is exported (SGLang without ``--enable-metrics``), or a value is
        not a finite number.
    """
    name = engine_dialect(engine).name
    if name not in LOAD_GAUGES:
        raise ValueError(
            f"engine {name!r}: its load gauges are not known (add them to LOAD_GAUGES)"
        )
    names = LOAD_GAUGES[name]
    totals = dict.fromkeys(names, 0.0)
    seen = set()
    for line in text.splitlines():
        sample = _sample(line)
        if sample is None or sample[0] not in totals:
            continue
        if not math.isfinite(sample[1]):
            raise ValueError(f"metric {sample[0]} must be finite, got {sample[1]!r}")
        totals[sample[0]] += sample[1]
        seen.add(sample[0])
    if not seen:
        hint = " (start SGLang with --enable-metrics)" if engine == "sglang" else ""
        raise ValueError(f"/metrics exports neither {names[0]} nor {names[1]}{hint}")
    return Load(running=totals[names[0]], waiting=totals[names[1]])


def read_load(endpoint: ServingEndpoint, timeout_s: float) -> Load:
    """``GET /metrics`` of ``endpoint`` and the load in it.

    Raises
    ------
    ConnectionError, TimeoutError
        The engine cannot be reached (names the URL).
    HttpStatusError
        ``/metrics`` answered other than 200.
    ValueError
        The load gauges are missing (see :func:`parse_load`).
    """
    body = endpoint.call("GET", "/metrics", None, timeout_s)
    return parse_load(body.decode(errors="replace"), endpoint.engine)
