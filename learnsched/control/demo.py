"""The demo: the whole scheduler on one machine, on the shipped Azure trace, on CPU.

It starts the simulated engine (:mod:`learnsched.testing.engine`) as a child process,
measures its return path once (park, resume, first completed request), derives the
lendable windows of the next ``seconds * speedup`` trace seconds (Eqs. 6-8, with the
engine's own service time), starts the reference LoRA trainer
(:class:`~.lora_trainer.LoraTrainer`) on CPU, and runs the loop while the load generator
replays the trace, compressed ``speedup`` times, against the engine. The summary holds
:data:`~.journal.SUMMARY_KEYS`.

A second demo on the same ledger and state folder resumes: the trainer from its last
durable checkpoint (``resumed_from_quanta``), the replay from where the first stopped.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._checks import integer, positive
from ..capacity import ReturnPath
from ..handoff.endpoint import ServingEndpoint
from ..handoff.ledger import HandoffLedger, HandoffRecord, read_ledger
from ..scenario import HandoffCosts
from .actuation import ServingEngine
from .loadgen import LoadGenerator, read_requests
from .loop import ControlLoop, LoopOptions, ModelDecider
from .trainer import TrainerCosts, TrainerProcess
from .windows import KnownCalendar, Window

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
    work_quanta
        ``J`` of the LoRA job (one quantum: two AdamW steps).
    slo_s
        Latency budget of every request, wall seconds.
    min_window_s
        Shortest wall window worth lending, seconds.
    """

    seconds: float = 60.0
    speedup: float = 10.0
    ledger: Path | None = None
    state_dir: Path | None = None
    engine: str = "vllm"
    work_quanta: int = 240
    slo_s: float = 2.0
    min_window_s: float = 1.0

    def __post_init__(self) -> None:
        positive("seconds", self.seconds)
        positive("speedup", self.speedup)
        integer("work_quanta", self.work_quanta, low=1)
        positive("slo_s", self.slo_s)
        positive("min_window_s", self.min_window_s)


def _trace_offset(records: list[HandoffRecord]) -> float:
    """Where the last demo's replay stopped, trace seconds (0 for a new ledger)."""
    ends = [float(r.detail["trace_end_s"]) for r in records if r.kind == "load"]
    return ends[-1] if ends else 0.0


def _windows(
    requests_s: list[float], service_s: float, options: DemoOptions, return_s: float
) -> list[Window]:
    """Lendable wall-clock windows of the replay (Eqs. 6-8), via the trace wing.

    Each window is also cut at the next request's arrival: the demo's calendar is the
    trace's quiet gaps, known in advance (the paper's setting), so with an exact
    calendar no request finds the engine parked.
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
        path=ReturnPath(ready_s=return_s * speedup),
        min_useful_s=options.min_window_s * speedup,
    )
    windows = []
    for start, end in found.pairs():
        following = arrival[np.searchsorted(arrival, start, side="right") :]
        cut = min(end, float(following[0])) if following.size else end
        if (cut - start) / speedup >= options.min_window_s:
            windows.append(Window(start / speedup, cut / speedup))
    return windows


def _measure_return(engine: ServingEngine) -> float:
    """One park and return of the idle engine: the return path, seconds."""
    engine.park()
    stamps = engine.unpark()
    return (stamps["request_done"] - stamps["resume_sent"]) / 1e9


def run_demo(
    options: DemoOptions, progress: Callable[[str], None] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the demo; its summary (:data:`~.journal.SUMMARY_KEYS`) and a timeline.

    Returns
    -------
    (dict, dict)
        The summary, and what :func:`~.timeline.plot_timeline` draws.
    """
    from ..testing.engine import EngineConfig, EngineProcess

    state_dir, ledger = options.state_dir, options.ledger
    if state_dir is None:
        base = ledger.parent if ledger is not None else Path(tempfile.mkdtemp(prefix="learnsched-"))
        state_dir = base / "state"
    if ledger is None:
        ledger = state_dir / "ledger.jsonl"
    if not ledger.parent.is_dir() and ledger.parent != state_dir:
        raise ValueError(f"ledger {ledger}: folder {ledger.parent} does not exist")
    state_dir.mkdir(parents=True, exist_ok=True)
    records = read_ledger(ledger) if ledger.exists() else []
    offset = _trace_offset(records)
    span = options.seconds * options.speedup
    from ..calendar.traces import AZURE_TRACE

    # The calendar covers the rest of the trace (the job may finish in a later demo);
    # this demo replays, and lends in, its first `span` seconds.
    ahead = read_requests(AZURE_TRACE, slo_s=options.slo_s, max_tokens_cap=MAX_TOKENS,
                          start_s=offset)  # fmt: skip
    if not ahead:  # past the trace's end: start it over
        offset = 0.0
        ahead = read_requests(AZURE_TRACE, slo_s=options.slo_s, max_tokens_cap=MAX_TOKENS)
    requests = [r for r in ahead if r.arrival_s < span]
    config = EngineConfig(options.engine, token_s=TOKEN_S, max_running=MAX_RUNNING)
    with EngineProcess(config) as process:
        endpoint = ServingEndpoint(process.url, options.engine)
        engine = ServingEngine(endpoint)
        return_s = _measure_return(engine)
        service_s = 0.02 + MAX_TOKENS * TOKEN_S
        windows = _windows([r.arrival_s for r in ahead], service_s, options, return_s)
        recovery_s = 2.0 * return_s + 0.05  # the guard: twice what was measured
        loadgen = LoadGenerator(process.url, requests, speedup=options.speedup)

        def decider(work_quanta: int, costs: TrainerCosts) -> ModelDecider:
            handoff = HandoffCosts(recovery_s=recovery_s, save_s=costs.save_s, load_s=costs.load_s)
            horizon = options.seconds + 3600.0  # the adapter is useful for an hour after
            return ModelDecider(work_quanta, 1.5 * costs.quantum_s, handoff, 1.0, horizon)

        trainer = TrainerProcess(TRAINER, state_dir, {"work_quanta": options.work_quanta})
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
        loadgen.on_arrival = loop.watcher.notify_arrival
        started = time.monotonic()
        totals = loop.run()
        loadgen.stop()
        loadgen.join(timeout_s=options.slo_s + 30.0)
    load = loadgen.summary()
    HandoffLedger(ledger).append(
        HandoffRecord(
            kind="load",
            engine=options.engine,
            detail={
                "run": loop.run_id,
                "trace_start_s": offset,
                "trace_end_s": offset + span,
                "speedup": options.speedup,
                "return_path_s": return_s,
                "wall_s": time.monotonic() - started,
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
