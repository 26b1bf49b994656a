"""The loop's own metrics (Prometheus) and health, served over HTTP while it runs.

``learnsched run --metrics-port [HOST:]PORT`` serves, on loopback unless HOST is given:

- ``GET /metrics``: Prometheus text exposition (``prometheus_client``, the ``serve``
  extra) of what the loop has done, read from its totals at each scrape:
  ``learnsched_windows_total`` (windows reached), ``learnsched_windows_lent_total``
  (handoffs), ``learnsched_windows_skipped_total``, ``learnsched_quanta_done_total``,
  ``learnsched_durable_quanta``, ``learnsched_unsaved_lost_quanta_total``,
  ``learnsched_interrupted_quanta_total``,
  ``learnsched_late_returns_total``, ``learnsched_early_returns_total``,
  ``learnsched_held_requests_total`` and ``learnsched_added_latency_seconds`` (a
  histogram of each held request's added latency), ``learnsched_lent`` (1 while the
  engine is parked for the trainer), ``learnsched_quarantined`` (1 once the run has
  quarantined the engine), ``learnsched_decision_seconds`` (the last decision's latency)
  and ``learnsched_published``.
- ``GET /healthz``: ``200`` with a JSON status while the loop runs and has not
  quarantined the engine; ``503`` with the reason before it starts, once it has
  stopped, or after a quarantine (a service manager restarts on 503 only when it
  should: a quarantined engine needs an operator, ``--clear-quarantine``).

The server runs on daemon threads of the loop's process (stdlib ``http.server``); the
collector reads the loop's counters, which the control thread alone writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from .._extras import require
from .._http_server import SideServer

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from .loop import ControlLoop

__all__ = ["LATENCY_BUCKETS_S", "LoopObserver"]

LATENCY_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Upper bounds of the added-latency histogram's buckets, seconds."""

_COUNTERS = (
    ("windows", "windows", "Windows the loop reached"),
    ("windows_lent", "handoffs", "Windows lent to the trainer (engine parked, then back)"),
    ("windows_skipped", "skipped_windows", "Windows the policy would lend, not lent"),
    ("quanta_done", "quanta_done", "Quanta of work completed, saved or not"),
    ("unsaved_lost_quanta", "unsaved_lost", "Completed quanta lost unsaved"),
    ("interrupted_quanta", "interrupted_quanta", "Quanta cut short by an arrival (lost)"),
    ("late_returns", "late_returns", "Returns ready after their window's deadline"),
    ("early_returns", "early_returns", "Returns forced by arrivals inside a lent window"),
)


class _Collector:
    """Yields the loop's metric families at each scrape."""

    def __init__(self, loop: ControlLoop) -> None:
        self.loop = loop

    def collect(self) -> Iterator[Any]:
        core = require("prometheus_client.core", "serve")
        loop = self.loop
        totals = loop.totals
        for name, field, text in _COUNTERS:
            yield core.CounterMetricFamily(f"learnsched_{name}", text, getattr(totals, field))
        yield core.GaugeMetricFamily(
            "learnsched_durable_quanta", "Durable (checkpointed) quanta", totals.durable_quanta
        )
        held = list(loop.held_latency_s)
        yield core.CounterMetricFamily(
            "learnsched_held_requests", "Requests held while capacity was lent", len(held)
        )
        buckets = [(str(bound), sum(x <= bound for x in held)) for bound in LATENCY_BUCKETS_S]
        buckets.append(("+Inf", len(held)))
        total = 0.0
        for seconds in held:  # summed in arrival order
            total += seconds
        yield core.HistogramMetricFamily(
            "learnsched_added_latency_seconds", "Latency a held request gained, seconds",
            buckets=buckets, sum_value=total,
        )  # fmt: skip
        for name, value, text in (
            ("lent", loop.lent, "1 while the engine is parked for the trainer"),
            ("quarantined", totals.quarantined, "1 once the run quarantined the engine"),
            ("published", totals.published, "1 once the job is published"),
        ):
            yield core.GaugeMetricFamily(f"learnsched_{name}", text, float(value))
        decisions = loop.overhead.decision_s
        yield core.GaugeMetricFamily(
            "learnsched_decision_seconds", "The last decision's latency, seconds",
            decisions[-1] if decisions else 0.0,
        )  # fmt: skip


class LoopObserver(SideServer):
    """``/metrics`` and ``/healthz`` of a :class:`~.loop.ControlLoop`, on a thread.

    Parameters
    ----------
    loop
        The loop to observe.
    host, port
        Where to listen (port 0: a free one, see :attr:`port`).

    Raises
    ------
    MissingExtra
        ``prometheus_client`` is not installed (the ``serve`` extra).
    """

    def __init__(self, loop: ControlLoop, host: str = "127.0.0.1", port: int = 0) -> None:
        client = require("prometheus_client", "serve")
        registry = client.CollectorRegistry(auto_describe=False)
        registry.register(_Collector(loop))
        self.loop = loop
        self._registry = registry
        self._generate = client.generate_latest
        self._content_type = str(client.CONTENT_TYPE_LATEST)
        super().__init__(host, port, self._handler(), "learnsched-metrics")

    def metrics_text(self) -> bytes:
        """The Prometheus exposition of the loop now."""
        text: bytes = self._generate(self._registry)
        return text

    def health(self) -> tuple[int, dict[str, Any]]:
        """``/healthz``'s status and body."""
        loop = self.loop
        state = loop.state
        body: dict[str, Any] = {
            "status": state,
            "run": loop.run_id,
            "lent": loop.lent,
            "progress": loop.progress,
            "durable": loop.durable,
            "work_quanta": loop.work_quanta,
            "quarantined": loop.totals.quarantined,
        }
        healthy = state == "running" and not loop.totals.quarantined
        return (200 if healthy else 503), body

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        observer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return  # the loop's stderr carries its own progress line

            def do_GET(self) -> None:
                if self.path == "/metrics":
                    self._send(200, observer.metrics_text(), observer._content_type)
                elif self.path == "/healthz":
                    status, body = observer.health()
                    self._send(status, json.dumps(body).encode(), "application/json")
                else:
                    self._send(404, b"no such route: /metrics or /healthz\n", "text/plain")

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
