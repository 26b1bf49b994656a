"""End to end on CPU: the simulated engine, the load generator and the real LoRA trainer.

Real processes on loopback: the engine is a child process, the trainer a child of the
loop's forkserver, the requests real HTTP streams. Skipped without the gpu extra.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from control_support import LORA, make_loop

for _module in ("torch", "peft", "safetensors", "transformers"):
    pytest.importorskip(_module, reason="the reference LoRA trainer needs the gpu extra")

from learnsched.capacity import Trace, write_trace_csv
from learnsched.control.journal import SUMMARY_KEYS, replay
from learnsched.control.loadgen import LoadGenerator, read_requests
from learnsched.control.lora_trainer import read_checkpoint_quanta
from learnsched.serving.ledger import read_ledger
from learnsched.testing import EngineConfig, EngineProcess

SLO_S = 2.0
# Never finished within a test's windows, even on a quiet machine where a quantum of the
# tiny model is fast (a published job's last checkpoint would no longer be the last durable
# state the test checks); on a loaded one still worth starting over the long window.
TRAINER = {"work_quanta": 2000, "steps_per_quantum": 1}


def bursts(path: Path, starts: list[float], per_burst: int = 6) -> None:
    """A project trace CSV: bursts of requests 50 ms apart, each with a 2 s budget."""
    arrival = np.concatenate([s + 0.05 * np.arange(per_burst) for s in starts])
    n = arrival.shape[0]
    trace = Trace(
        arrival=arrival, work=np.ones(n), deadline=arrival + SLO_S,
        prompt_tokens=np.full(n, 16.0), max_output_tokens=np.full(n, 8.0),
    )  # fmt: skip
    write_trace_csv(path, trace)


# Each dialect against the strict engine (it fails as the real one does; batch-invariant,
# as an engine checked without the gate must be started), and vLLM's forgiving one.
ENGINES = ["vllm", "vllm --strict", "sglang --strict"]


def engine_config(kind: str) -> EngineConfig:
    dialect, _, strict = kind.partition(" ")
    if strict:
        return EngineConfig.strict(dialect, batch_variant=False, token_s=0.002)
    return EngineConfig(dialect, token_s=0.002)


def run_with_load(tmp_path: Path, kind: str, windows: list[tuple[float, float]],
                  starts: list[float], until_s: float) -> tuple[object, LoadGenerator, Path]:  # fmt: skip
    bursts(tmp_path / "trace.csv", starts)
    requests = read_requests(tmp_path / "trace.csv")
    config = engine_config(kind)
    with EngineProcess(config, lifetime_s=600.0) as engine:
        load = LoadGenerator(engine.url, requests)
        loop = make_loop(
            engine.url, config.dialect, windows, tmp_path, trainer=LORA,
            trainer_options=TRAINER, until_s=until_s, on_ready=load.start, recovery_s=0.3,
        )  # fmt: skip
        load.on_arrival = loop.watcher.notify_arrival
        totals = loop.run()
        load.join(30.0)
        assert engine.alive(), engine.stderr_text()
    return totals, load, tmp_path / "ledger.jsonl"


@pytest.mark.parametrize("kind", ENGINES)
def test_known_calendar_no_late_return_and_no_slo_miss(tmp_path: Path, kind: str) -> None:
    # Quiet gaps between the bursts at 0, 4 and 8 s, known in advance (a long one after).
    windows = [(0.6, 3.8), (4.6, 7.8), (8.6, 600.0)]
    totals, load, ledger = run_with_load(tmp_path, kind, windows, [0.0, 4.0, 8.0], until_s=8.4)
    assert totals.handoffs == 2
    assert totals.late_returns == 0
    assert totals.early_returns == 0
    assert totals.quanta_done > 0
    assert totals.durable_quanta == totals.quanta_done
    summary = load.summary()
    assert summary["requests"] == 18
    assert summary["slo_misses"] == 0
    records = read_ledger(ledger)
    assert replay(records, 1) == totals
    assert read_checkpoint_quanta(tmp_path / "state") == totals.durable_quanta
    losses = [r.detail["loss"] for r in records if r.kind == "work"]
    assert losses[-1] < losses[0]  # it really trains


@pytest.mark.parametrize("kind", ENGINES)
def test_requests_arriving_early_make_the_loop_return_at_once(tmp_path: Path, kind: str) -> None:
    # The calendar says idle until 20 s; a burst comes at 1.2 s, well before the planned
    # work can end (the plan fills the window).
    totals, load, ledger = run_with_load(
        tmp_path, kind, [(0.6, 20.0), (21.0, 600.0)], [0.0, 1.2], until_s=2.0
    )
    assert totals.early_returns == 1
    assert totals.late_returns == 0
    back = next(r for r in read_ledger(ledger) if r.kind == "return")
    assert back.detail["early"]
    assert back.detail["t_s"] - 1.2 < 1.0
    assert load.summary()["slo_misses"] == 0  # refused while parked, served within budget
    assert replay(read_ledger(ledger), 1) == totals


def _demo(tmp_path: Path, ledger: Path, state: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "learnsched", "demo", "--seconds", "8", "--speedup", "20",
         "--ledger", str(ledger), "--state-dir", str(state), "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    summary: dict[str, object] = json.loads(done.stdout)
    return summary


def test_demo_twice_resumes_where_the_first_stopped(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp", reason="the demo's gate needs the serve extra")
    ledger, state = tmp_path / "ledger.jsonl", tmp_path / "state"
    first = _demo(tmp_path, ledger, state)
    assert tuple(first) == SUMMARY_KEYS
    assert first["late_returns"] == 0
    assert first["ledger"] == str(ledger)
    second = _demo(tmp_path, ledger, state)
    assert second["resumed_from_quanta"] == first["durable_quanta"]
    records = read_ledger(ledger)
    for run, summary in ((1, first), (2, second)):
        totals = replay(records, run).to_json()
        assert {k: summary[k] for k in totals if k in summary} == {
            k: v for k, v in totals.items() if k in summary
        }
    starts = [r.detail["trace_start_s"] for r in records if r.kind == "load"]
    assert starts == [0.0, 160.0]  # the second replays the next 8 s x 20 of the trace
