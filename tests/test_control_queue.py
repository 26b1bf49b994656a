"""A queue of trainers next to the simulated engine: the portfolio decides whom each window
serves, every job's loop parks, works and returns as a single job's does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from learnsched.cli import main
from learnsched.control.actuation import ServingEngine
from learnsched.control.journal import replay
from learnsched.control.loop import LoopOptions
from learnsched.control.queue import QueuedJob, TrainerQueue, read_queue
from learnsched.control.windows import KnownCalendar, Window
from learnsched.serving.endpoint import ServingEndpoint
from learnsched.serving.ledger import read_ledger
from learnsched.testing import EngineConfig, SimulatedEngine

from control_support import COUNTING

FAST = {"token_s": 0.001}


def jobs() -> list[QueuedJob]:
    """A small job worth little and a larger one worth much more: the portfolio runs the
    valuable one first, then the other."""
    quick = {"work_quanta": 6, "quantum_s": 0.05}
    return [
        QueuedJob("small", COUNTING, quick, 6, 0.05, 0.1, 3600.0, 0.005, 0.005),
        QueuedJob(
            "big", COUNTING, {**quick, "work_quanta": 12}, 12, 0.05, 5.0, 3600.0, 0.005, 0.005
        ),
    ]


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_the_queue_runs_each_job_in_the_windows_the_portfolio_gives_it(
    dialect: str, tmp_path: Path
) -> None:
    with SimulatedEngine(EngineConfig(dialect, **FAST)) as engine:
        queue = TrainerQueue(
            ServingEngine(ServingEndpoint(engine.url, dialect), timeout_s=20.0),
            jobs(),
            KnownCalendar([Window(0.5, 2.5), Window(3.0, 5.0), Window(5.5, 8.0)]),
            tmp_path / "ledger.jsonl",
            tmp_path / "state",
            recovery_s=0.2,
            loop_options=LoopOptions(),
        )
        turns = queue.run()
        assert not engine.state.sleeping
    summary = queue.summary()
    assert summary["big"]["published"]
    assert summary["small"]["published"]
    assert summary["big"]["late_returns"] == summary["small"]["late_returns"] == 0
    ledgers = {name: tmp_path / f"ledger-{name}.jsonl" for name in ("small", "big")}
    first_publish = {}
    for name, path in ledgers.items():
        records = read_ledger(path)
        run = max(r.detail["run"] for r in records)
        assert replay(records, run) == turns[name][-1]
        first_publish[name] = next(r.detail["t_s"] for r in records if r.kind == "publish")
        assert (tmp_path / "state" / name / "published.json").exists()
    assert first_publish["big"] < first_publish["small"]  # the valuable job first
    windows_of = {
        name: {tuple(r.detail["window"]) for r in read_ledger(p) if r.kind == "park"}
        for name, p in ledgers.items()
    }
    assert not windows_of["big"] & windows_of["small"]  # one job per window


def test_a_queue_file_names_the_job_and_field(tmp_path: Path) -> None:
    path = tmp_path / "queue.json"
    good = {
        "name": "a", "trainer": COUNTING, "trainer_options": {}, "work_quanta": 4,
        "quantum_s": 0.1, "save_s": 0.0, "load_s": 0.0, "benefit_rate": 1.0, "horizon_s": 100.0,
    }  # fmt: skip
    path.write_text(json.dumps({"jobs": [good, {**good, "name": "b", "quantum_s": -1}]}))
    with pytest.raises(ValueError, match=r"jobs\[1\]: quantum_s must be > 0, got -1"):
        read_queue(path)
    path.write_text(json.dumps({"jobs": [good, good]}))
    with pytest.raises(ValueError, match="job names must be unique"):
        read_queue(path)
    path.write_text(json.dumps({"jobs": [good]}))
    assert read_queue(path)[0].name == "a"


def test_run_with_a_queue_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queue = tmp_path / "queue.json"
    queue.write_text(json.dumps({"jobs": [
        {"name": job.name, "trainer": job.trainer, "trainer_options": dict(job.options),
         "work_quanta": job.work_quanta, "quantum_s": job.quantum_s, "save_s": job.save_s,
         "load_s": job.load_s, "benefit_rate": job.benefit_rate, "horizon_s": job.horizon_s}
        for job in jobs()
    ]}))  # fmt: skip
    (tmp_path / "cal.json").write_text(
        json.dumps({"windows": [[0.5, 2.5], [3.0, 5.0], [5.5, 8.0]]})
    )
    with SimulatedEngine(EngineConfig("vllm", **FAST)) as engine:
        argv: list[Any] = [
            "run", "--engine", "vllm", "--url", engine.url, "--queue", str(queue),
            "--calendar", str(tmp_path / "cal.json"), "--ledger", str(tmp_path / "l.jsonl"),
            "--state-dir", str(tmp_path / "state"), "--recovery-s", "0.2", "--json",
        ]  # fmt: skip
        assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {name: job["published"] for name, job in out["jobs"].items()} == {
        "small": True,
        "big": True,
    }
