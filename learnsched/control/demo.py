"""The demo: the whole scheduler on one machine, on the shipped Azure trace, on CPU.

It starts the simulated engine (:mod:`learnsched.testing.engine`) in its strict mode
(it fails as the real vLLM or SGLang does) as a child process, puts the gate
(:class:`learnsched.gate.Gate`) in front of it, measures its return path once (park,
resume, first completed request), derives the lendable windows of the next
``seconds * speedup`` trace seconds (Eqs. 6-8, with the engine's own service time:
requests may arrive inside a window, and the gate holds them while the loop returns
capacity early), starts the reference LoRA trainer (:class:`~.lora_trainer.LoraTrainer`)
on CPU, and runs the loop while the load generator replays the trace, compressed
``speedup`` times, through the gate. The summary holds :data:`~.journal.SUMMARY_KEYS`.

Without the gate (``gate=False``) the load generator sends to the engine directly and
tells the loop of each arrival itself; the engine then runs batch-invariant
(``VLLM_BATCH_INVARIANT=1`` / ``--enable-deterministic-inference``), since the
same-model check after a return meets the requests the engine held meanwhile.

With ``url`` the demo runs next to an engine already serving instead (a real vLLM or
SGLang started with its park routes: ``docs/serving.md``), parked and resumed for real;
the windows then come from its measured service time.

A second demo on the same ledger and state folder resumes: the trainer from its last
durable checkpoint (``resumed_from_quanta``), the replay from where the first stopped.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._checks import integer, positive
from .._url import http_url
from ..capacity import ReturnPath
from ..job import Job
from ..scenario import HandoffCosts
from ..serving.endpoint import ServingEndpoint
from ..serving.ledger import HandoffLedger, HandoffRecord, read_ledger
from .actuation import ServingEngine
from .deciders import ModelDecider
from .front import gate_summary, held_arrivals
from .loadgen import LoadGenerator, read_requests
from .loop import ControlLoop, LoopOptions
from .trainer import TrainerCosts, TrainerProcess
from .windows import KnownCalendar, Window

if TYPE_CHECKING:
    from ..gate import Gate

__all__ = ["DemoOptions", "run_demo"]

TRAINER = "learnsched.control.lora_trainer:LoraTrainer"
# Decode time per token of the simulated engine, and tokens per replayed request.
TOKEN_S = 0.002
MAX_TOKENS = 8
MAX_RUNNING = 16


@dataclass(frozen=True)
class DemoOptions:
    """What the demo runs.

    Parameters
    ----------
    seconds
        Wall seconds of replay.
    speedup
        Time compression of the trace.
    ledger, state_dir
        The ledger file and the trainer's folder (defaults: the ledger in the state
        folder, the state folder beside the ledger, or both in a new temporary folder;
        the same ones again resume a demo).
    engine
        The simulated engine's dialect, ``"vllm"`` or ``"sglang"``.
    trace
        The request trace to replay (Azure or the project's CSV; ``None``: the
        shipped Azure trace).
    gate
        Put the gate in front of the engine.
    work_quanta
        ``J`` of the LoRA job (one quantum: two AdamW steps).
    slo_s
        Latency budget of every request, wall seconds.
    min_window_s
        Shortest wall window worth lending, seconds.
    url
        An engine already serving (``engine`` names its dialect), parked and resumed
        through its real control routes, instead of the simulated engine (``None``).
    trainer
        The trainer, ``module:Class`` (``None``: the reference LoRA trainer on CPU).
    """

    seconds: float = 60.0
    speedup: float = 10.0
    ledger: Path | None = None
    state_dir: Path | None = None
    engine: str = "vllm"
    trace: Path | None = None
    gate: bool = True
    work_quanta: int = 240
    slo_s: float = 2.0
    min_window_s: float = 1.0
    url: str | None = None
    trainer: str | None = None

    def __post_init__(self) -> None:
        positive("seconds", self.seconds)
        positive("speedup", self.speedup)
        integer("work_quanta", self.work_quanta, low=1)
        positive("slo_s", self.slo_s)
        positive("min_window_s", self.min_window_s)
        if self.url is not None:
            http_url("url", self.url)


def _trace_offset(records: list[HandoffRecord], trace: Path) -> float:
    """Where the last demo's replay of ``trace`` stopped, trace seconds (0: none yet)."""
    loads = [r for r in records if r.kind == "load"]
    last = loads[-1].detail if loads else {}
    same = last.get("trace", str(trace)) == str(trace)  # older ledgers name no trace
    return float(last["trace_end_s"]) if loads and same else 0.0


def _gate(url: str, engine: str) -> Gate:
    """The gate in front of the demo's engine (loopback, a free port)."""
    from ..gate import Gate

    return Gate(url, engine)


def _windows(
    requests_s: list[float],
    service_s: float,
    options: DemoOptions,
    measured_recovery_s: float,
) -> list[Window]:
    """Lendable wall-clock windows of the replay (Eqs. 6-8), via the trace wing.

    A window runs from the moment the queue empties to the latest ready time that keeps
    every deadline feasible: requests may arrive inside it, and the loop returns early
    for them.
    """
    import numpy as np

    from ..calendar.traces import ServiceModel, TokenTrace
    from ..calendar.windows import idle_windows

    speedup = options.speedup
    arrival = np.asarray(requests_s, dtype=np.float64)
    tokens = np.zeros_like(arrival)
    # Trace time runs `speedup` times faster than the engine: a wall second of service
    # or of latency budget is `speedup` trace seconds.
    service = ServiceModel(request_s=service_s * speedup, slo_s=options.slo_s * speedup)
    trace = TokenTrace(arrival, tokens, tokens).to_trace(service)
    found = idle_windows(
        trace,
        rate=float(MAX_RUNNING),  # the engine decodes this many requests at once
        path=ReturnPath(ready_s=measured_recovery_s * speedup),
        min_useful_s=options.min_window_s * speedup,
    )
    return [
        Window(start / speedup, end / speedup)
        for start, end in found.pairs()
        if (end - start) / speedup >= options.min_window_s
    ]


def _lent_intervals(ledger: Path, run: int) -> list[tuple[float, float]]:
    """``(park, return)`` times of a run's loans, seconds on the loop's clock."""
    intervals, parked = [], None
    for record in read_ledger(ledger):
        if record.detail.get("run") != run:
            continue
        if record.kind == "park":
            parked = float(record.detail["t_s"])
        elif record.kind == "return" and parked is not None:
            intervals.append((parked, float(record.detail["t_s"])))
            parked = None
    return intervals


def _measure_return(engine: ServingEngine) -> float:
    """One park and return of the idle engine: the return path, seconds."""
    engine.park()
    stamps = engine.unpark()
    return (stamps["request_done"] - stamps["resume_sent"]) / 1e9


def _service_s(endpoint: ServingEndpoint) -> float:
    """A real engine's service time of one replayed request (the median of five), s."""
    times = []
    for _ in range(5):
        started = time.perf_counter_ns()
        endpoint.generate(MAX_TOKENS, 30.0)
        times.append((time.perf_counter_ns() - started) / 1e9)
    return sorted(times)[len(times) // 2]


def run_demo(
    options: DemoOptions, progress: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the demo; its summary (:data:`~.journal.SUMMARY_KEYS`) and a timeline.

    Returns
    -------
    (dict, dict)
        The summary, and what :func:`~.timeline.plot_timeline` draws.
    """
    from ..calendar.traces import AZURE_TRACE
    from ..testing.engine import EngineConfig, EngineProcess

    state_dir, ledger = options.state_dir, options.ledger
    if state_dir is None:
        base = ledger.parent if ledger is not None else Path(tempfile.mkdtemp(prefix="learnsched-"))
        state_dir = base / "state"
    if ledger is None:
        ledger = state_dir / "ledger.jsonl"
    if not ledger.parent.is_dir() and ledger.parent != state_dir:
        raise ValueError(f"ledger {ledger}: folder {ledger.parent} does not exist")
    trace = Path(AZURE_TRACE if options.trace is None else options.trace)
    if not trace.is_file():
        raise ValueError(f"trace {trace}: no such file")
    state_dir.mkdir(parents=True, exist_ok=True)
    records = read_ledger(ledger) if ledger.exists() else []
    offset = _trace_offset(records, trace)
    span = options.seconds * options.speedup
    # The calendar covers the rest of the trace (the job may finish in a later demo);
    # this demo replays, and lends in, its first `span` seconds.
    ahead = read_requests(trace, slo_s=options.slo_s, max_tokens_cap=MAX_TOKENS, start_s=offset)
    if not ahead:  # past the trace's end: start it over
        offset = 0.0
        ahead = read_requests(trace, slo_s=options.slo_s, max_tokens_cap=MAX_TOKENS)
    requests = [r for r in ahead if r.arrival_s < span]
    # The real engines' failure modes; without the gate, batch-invariant (see above).
    config = EngineConfig.strict(
        options.engine, token_s=TOKEN_S, max_running=MAX_RUNNING, batch_variant=options.gate
    )
    with ExitStack() as stack:
        url = options.url or stack.enter_context(EngineProcess(config)).url
        gate = stack.enter_context(_gate(url, options.engine)) if options.gate else None
        endpoint = ServingEndpoint(url, options.engine)
        engine = ServingEngine(endpoint, door=gate)
        measured_recovery_s = _measure_return(engine)
        service_s = _service_s(endpoint) if options.url else 0.02 + MAX_TOKENS * TOKEN_S
        windows = _windows([r.arrival_s for r in ahead], service_s, options, measured_recovery_s)
        recovery_s = 2.0 * measured_recovery_s + 0.05  # the guard: twice what was measured
        front = url if gate is None else gate.url
        loadgen = LoadGenerator(front, requests, speedup=options.speedup)

        def decider(work_quanta: int, costs: TrainerCosts) -> ModelDecider:
            horizon = options.seconds + 3600.0  # the adapter is useful for an hour after
            job = Job(work_quanta, 1.5 * costs.quantum_s, 1.0, horizon, costs.save_s, costs.load_s)
            return ModelDecider.from_job(job, HandoffCosts(recovery_s=recovery_s))

        trainer = TrainerProcess(
            options.trainer or TRAINER, state_dir, {"work_quanta": options.work_quanta}
        )
        loop = ControlLoop(
            engine,
            trainer,
            KnownCalendar(windows),
            decider,
            ledger,
            recovery_s=recovery_s,
            options=LoopOptions(until_s=options.seconds),
            progress=progress,
            on_ready=loadgen.start,
        )
        if gate is None:
            loadgen.on_arrival = loop.watcher.notify_arrival  # the only arrival signal
        else:
            gate.on_arrival = held_arrivals(loop.watcher.notify_arrival)
        started = time.monotonic()
        totals = loop.run()
        loadgen.stop()
        loadgen.join(timeout_s=options.slo_s + 30.0)
        at_gate = None if gate is None else gate.counts()
    load = loadgen.summary()
    lent = _lent_intervals(ledger, loop.run_id)
    load["slo_misses_while_lent"] = sum(
        any(a <= r.scheduled_s <= b for a, b in lent) for r in loadgen.results if r.missed
    )
    HandoffLedger(ledger).append(
        HandoffRecord(
            kind="load",
            engine=options.engine,
            detail={
                "run": loop.run_id,
                "trace": str(trace),
                "trace_start_s": offset,
                "trace_end_s": offset + span,
                "speedup": options.speedup,
                "return_path_s": measured_recovery_s,
                "wall_s": time.monotonic() - started,
                "gate": None if at_gate is None else at_gate.to_json(),
                **load,
            },
        )
    )
    summary = {
        "windows": totals.windows,
        "decisions": totals.decisions,
        "quanta_done": totals.quanta_done,
        "durable_quanta": totals.durable_quanta,
        "resumed_from_quanta": totals.resumed_from_quanta,
        "handoffs": totals.handoffs,
        "late_returns": totals.late_returns,
        "early_returns": totals.early_returns,
        "requests": load["requests"],
        "slo_misses": load["slo_misses"],
        "published": totals.published,
        "ledger": str(ledger),
        **gate_summary(at_gate, failed=int(load["failed"]), skipped=totals.skipped_windows),
    }
    timeline = {
        "windows": [(w.start_s, w.end_s) for w in windows if w.start_s < options.seconds],
        "load": list(loop.watcher.samples),
        "arrivals": [r.scheduled_s for r in loadgen.results],
        "misses": [r.scheduled_s for r in loadgen.results if r.missed],
        "ledger": ledger,
        "run": loop.run_id,
        "overhead": loop.overhead.to_json(),
    }
    return summary, timeline
