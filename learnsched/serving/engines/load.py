"""The load an engine reports: running and waiting requests from its Prometheus ``/metrics``.

vLLM exports ``vllm:num_requests_running`` / ``vllm:num_requests_waiting`` by default
(``--disable-log-stats`` removes them); SGLang exports ``sglang:num_running_reqs`` /
``sglang:num_queue_reqs`` only with ``--enable-metrics``. Both are refreshed by the
engine's own stats logging (vLLM after a step, SGLang at batch logging and at idle), so
while an engine is parked they do not move: arrivals then are seen only by a front door
(:mod:`learnsched.gate`) or a notification.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Load", "load_of", "metric_sum"]


@dataclass(frozen=True)
class Load:
    """Requests an engine (or the gate in front of it) reports.

    Parameters
    ----------
    running
        Requests being decoded (the gate: forwarded and not finished).
    waiting
        Requests queued (the gate: held at its closed door).
    """

    running: int
    waiting: int

    @property
    def idle(self) -> bool:
        """Nothing running or waiting."""
        return self.running == 0 and self.waiting == 0


def metric_sum(text: str, name: str) -> float | None:
    """The sum of every sample of gauge ``name`` in Prometheus text (``None``: absent)."""
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric = head.split("{", 1)[0].strip()
        if metric != name:
            continue  # a longer name sharing the prefix
        try:
            total += float(value)
        except ValueError:
            continue
        seen = True
    return total if seen else None


def load_of(text: str, names: tuple[str, str]) -> Load | None:
    """The running and waiting gauges ``names`` in Prometheus ``text`` (``None``: either
    is absent)."""
    running, waiting = (metric_sum(text, name) for name in names)
    if running is None or waiting is None:
        return None
    return Load(int(running), int(waiting))
