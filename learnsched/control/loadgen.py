"""A load generator: replay a request trace against an OpenAI-compatible server, open loop.

Each request is sent at its trace time divided by the time-compression factor
``speedup``, whatever happened to the earlier ones (open loop: a slow server does not
slow the arrivals), as a streamed ``POST /v1/completions``. Latency runs from the
scheduled arrival to the last streamed byte, so time a request spent queued in the
generator, refused (503 or 429, retried every ``retry_s``), held at the gate or waiting
in the server all counts. A request misses its SLO when it has not completed within its
latency budget; it failed when it got an error status, an error event or an aborted
stream (vLLM ends streams it aborts normally, with ``finish_reason: "abort"``), a
stream cut off before its ``[DONE]`` (its engine died), or its connection broke. Each stream is read as it arrives
(:class:`~learnsched.serving.engines.AnswerScanner`; vLLM's usage-only last event,
``"choices": []``, is an ordinary event). Traces: the Azure format (``TIMESTAMP,ContextTokens,GeneratedTokens``)
with one budget for every request, or the project's trace CSV, whose budget is each
row's ``deadline - arrival``.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .._checks import integer, nonnegative, positive
from .._csvfile import csv_header
from ..capacity import read_trace_csv
from ..serving.engines import AnswerScanner, ends_at_close

__all__ = ["LoadGenerator", "RequestResult", "TraceRequest", "read_requests"]

AZURE_HEADER = "TIMESTAMP"
RETRY_STATUSES = (429, 503)
# Words in a prompt at most: the simulated engine's cost is in the generated tokens, and
# a 5,000-word prompt per request would load the generator, not the engine.
PROMPT_WORDS_CAP = 64
STREAM_CHUNK = 1 << 16


@dataclass(frozen=True)
class TraceRequest:
    """One request to replay.

    Parameters
    ----------
    arrival_s
        Trace time, seconds from the first request.
    prompt_tokens, max_tokens
        Prompt length and tokens to generate.
    slo_s
        Latency budget, seconds (wall clock: not compressed).
    """

    arrival_s: float
    prompt_tokens: int
    max_tokens: int
    slo_s: float


def read_requests(
    path: str | Path,
    *,
    slo_s: float = 2.0,
    max_tokens_cap: int = 16,
    start_s: float = 0.0,
    duration_s: float | None = None,
) -> list[TraceRequest]:
    """The requests of a trace CSV in either format (told apart by the header).

    Parameters
    ----------
    path
        Azure or project trace CSV.
    slo_s
        Latency budget of Azure requests, seconds (project traces carry their own).
    max_tokens_cap
        Generated tokens per request at most (the trace's count is capped).
    start_s, duration_s
        Keep requests with trace time in ``[start_s, start_s + duration_s)``, shifted
        so the first kept time is ``arrival - start_s``.

    Raises
    ------
    ValueError
        A malformed trace (the message names the line), or bad arguments.
    """
    positive("slo_s", slo_s)
    integer("max_tokens_cap", max_tokens_cap, low=1)
    nonnegative("start_s", start_s)
    end = math.inf if duration_s is None else start_s + positive("duration_s", duration_s)
    header = csv_header(path)
    rows: list[tuple[float, float, float, float]] = []
    if AZURE_HEADER in header:
        from ..calendar.traces import read_azure_trace  # the trace wing's reader

        azure = read_azure_trace(path)
        for t, prompt, out in zip(
            azure.arrival, azure.context_tokens, azure.generated_tokens, strict=True
        ):
            rows.append((float(t), float(prompt), float(out), slo_s))
    else:
        trace = read_trace_csv(path)
        prompts = trace.prompt_tokens
        outs = trace.max_output_tokens
        for i in range(len(trace)):
            budget = float(trace.deadline[i] - trace.arrival[i])
            if budget <= 0:
                raise ValueError(f"{path}: row {i + 1}: deadline must be after arrival")
            prompt = 0.0 if prompts is None else float(prompts[i])
            out = float(max_tokens_cap) if outs is None else float(outs[i])
            rows.append((float(trace.arrival[i]), prompt, out, budget))
    return [
        TraceRequest(t - start_s, int(prompt), max(1, min(int(out), max_tokens_cap)), budget)
        for t, prompt, out, budget in rows
        if start_s <= t < end
    ]


@dataclass(frozen=True)
class RequestResult:
    """What happened to one replayed request.

    Parameters
    ----------
    scheduled_s
        When it was due, seconds after the replay started (wall clock).
    latency_s
        Scheduled arrival to completion, seconds (``None``: not completed in budget).
    slo_s
        Its latency budget, seconds.
    retries
        Refusals retried (503/429, refused connections).
    status
        The last HTTP status (0: no answer).
    failure
        Why it failed (an error status, ``"error event"``, ``"aborted"``, a broken
        connection), or ``None``.
    """

    scheduled_s: float
    latency_s: float | None
    slo_s: float
    retries: int
    status: int
    failure: str | None = None

    @property
    def missed(self) -> bool:
        """Whether it missed its SLO (or never completed)."""
        return self.latency_s is None or self.latency_s > self.slo_s


class LoadGenerator:
    """Replay ``requests`` against ``url`` on a thread, open loop.

    Parameters
    ----------
    url
        ``http://HOST:PORT`` of an OpenAI-compatible server.
    requests
        The requests, in arrival order.
    speedup
        Time compression: trace second ``t`` is sent at ``t / speedup`` s.
    on_arrival
        Called with the scheduled time (seconds after the start) as each request is
        sent: the scheduler's arrival signal.
    workers
        Requests in flight at most (later ones wait in the generator, and that wait
        counts in their latency).
    retry_s
        Pause between retries of a refused request, seconds.
    model
        The served model (default: the first of ``GET /v1/models``).
    """

    def __init__(
        self,
        url: str,
        requests: Sequence[TraceRequest],
        *,
        speedup: float = 1.0,
        on_arrival: Callable[[float], None] | None = None,
        workers: int = 32,
        retry_s: float = 0.02,
        model: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or parts.port is None:
            raise ValueError(f"url must be http://HOST:PORT, got {url!r}")
        self.host, self.port = parts.hostname, parts.port
        self.requests = list(requests)
        self.speedup = positive("speedup", speedup)
        self.on_arrival = on_arrival
        self.workers = integer("workers", workers, low=1)
        self.retry_s = positive("retry_s", retry_s)
        self.model = model
        self.results: list[RequestResult] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.start_s = 0.0

    def _served_model(self) -> str:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10.0)
        try:
            conn.request("GET", "/v1/models")
            data = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        return str(data["data"][0]["id"])

    def start(self, start_s: float | None = None) -> None:
        """Start replaying; trace time 0 is ``start_s`` (``time.monotonic()``; now)."""
        if self.model is None:
            self.model = self._served_model()
        self.start_s = time.monotonic() if start_s is None else start_s
        self._thread = threading.Thread(target=self._run, name="learnsched-load", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Send no more requests (those in flight finish)."""
        self._stop.set()

    def join(self, timeout_s: float | None = None) -> None:
        """Wait until every sent request has finished."""
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        with ThreadPoolExecutor(self.workers, thread_name_prefix="learnsched-req") as pool:
            for request in self.requests:
                due = request.arrival_s / self.speedup
                if self._stop.wait(max(0.0, self.start_s + due - time.monotonic())):
                    break
                if self.on_arrival is not None:
                    self.on_arrival(due)
                pool.submit(self._send, request, due)

    def _send(self, request: TraceRequest, due: float) -> None:
        deadline = self.start_s + due + request.slo_s
        body = json.dumps(
            {
                "model": self.model,
                "prompt": " ".join(["hello"] * min(request.prompt_tokens, PROMPT_WORDS_CAP)),
                "max_tokens": request.max_tokens,
                "temperature": 0,
                "stream": True,
            }
        )
        retries, status, latency, failure = 0, 0, None, None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                status, failure = self._post(body, left)
            except (TimeoutError, ConnectionRefusedError):
                status = 0  # not answered (yet): retried; at the budget's end, a miss
            except (OSError, http.client.HTTPException) as err:
                status, failure = 0, f"connection broken: {err}"
                break
            if status == 200:
                latency = time.monotonic() - (self.start_s + due)
                break
            if status not in (0, *RETRY_STATUSES):
                failure = f"status {status}"
                break
            retries += 1
            time.sleep(self.retry_s)
        result = RequestResult(due, latency, request.slo_s, retries, status, failure)
        with self._lock:
            self.results.append(result)

    def _post(self, body: str, timeout_s: float) -> tuple[int, str | None]:
        """One try: the status, and why a 200's answer failed (``None``: it did not)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        try:
            conn.request(
                "POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"}
            )
            response = conn.getresponse()
            kind = response.getheader("Content-Type") or ""
            until_close = ends_at_close(
                response.getheader("Content-Length"), response.getheader("Transfer-Encoding")
            )
            scanner = AnswerScanner(kind.startswith("text/event-stream"), until_close=until_close)
            while chunk := response.read1(STREAM_CHUNK):  # the whole stream, to [DONE]
                scanner.feed(chunk)
            return response.status, scanner.close() if response.status == 200 else None
        finally:
            conn.close()

    def summary(self) -> dict[str, float | int]:
        """Requests sent, SLO misses, failures, and latency quantiles of completed ones (s)."""
        with self._lock:
            results = list(self.results)
        done = sorted(r.latency_s for r in results if r.latency_s is not None)
        return {
            "requests": len(results),
            "slo_misses": sum(r.missed for r in results),
            "failed": sum(r.failure is not None for r in results),
            "completed": len(done),
            "latency_p50_s": done[len(done) // 2] if done else 0.0,
            "latency_p99_s": done[min(len(done) - 1, int(0.99 * len(done)))] if done else 0.0,
            "retried": sum(r.retries > 0 for r in results),
        }
