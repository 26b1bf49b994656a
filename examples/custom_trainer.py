"""A minimal custom trainer for ``learnsched run``.

The scheduler drives any :class:`learnsched.control.Trainer` in whole quanta: ``resume``
from the last durable checkpoint, ``advance(u)``, ``checkpoint`` or ``discard`` before
it returns the GPU, and ``publish`` when all ``J`` quanta are done. It builds the trainer
as ``Class(state_dir, **options)`` (from ``--trainer MODULE:CLASS --trainer-options
JSON``) in a child process, so the trainer's state must live under ``state_dir``: a fresh
instance on the same folder resumes where the last checkpoint left off.

This one fits a least-squares line by gradient descent with numpy (one quantum = a few
hundred steps); swap in your own model, keeping the five operations.

Run: ``python examples/custom_trainer.py`` starts the simulated serving engine, writes a
calendar of short idle windows and runs ``learnsched run`` with this trainer until it
publishes (about 15 s; no extras).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from learnsched.control import Advanced, Trainer, TrainerCosts

STEPS_PER_QUANTUM = 1000


class LineFitTrainer(Trainer):
    """Gradient descent on ``y = a*x + b``; the checkpoint is ``(a, b, quanta)`` as JSON."""

    def __init__(self, state_dir: Path, *, work_quanta: int = 60, seed: int = 0) -> None:
        super().__init__(state_dir)
        self._work_quanta = work_quanta
        rng = np.random.default_rng(seed)
        self.x = rng.uniform(-1.0, 1.0, 256)
        self.y = 3.0 * self.x - 0.5 + rng.normal(0.0, 0.1, self.x.size)
        self.params = np.zeros(2)
        self.progress = 0
        self.loaded = False

    @property
    def work_quanta(self) -> int:
        return self._work_quanta

    @property
    def _checkpoint(self) -> Path:
        return self.state_dir / "line.json"

    def costs(self) -> TrainerCosts:
        start = time.perf_counter()
        self._steps(STEPS_PER_QUANTUM, np.zeros(2))  # measure one quantum
        quantum_s = time.perf_counter() - start
        return TrainerCosts(quantum_s=max(quantum_s, 0.01), save_s=0.005, load_s=0.005)

    def resume(self) -> int:
        if self._checkpoint.exists():
            saved = json.loads(self._checkpoint.read_text())
            self.params = np.array(saved["params"])
            self.progress = int(saved["quanta"])
        self.loaded = True
        return self.progress

    def advance(self, quanta: int) -> Advanced:
        if not self.loaded:
            raise RuntimeError("advance before resume")
        self.params = self._steps(quanta * STEPS_PER_QUANTUM, self.params)
        self.progress += quanta
        return Advanced(self.progress, self._loss(self.params))

    def checkpoint(self) -> int:
        saved = {"params": self.params.tolist(), "quanta": self.progress}
        _write_durably(self._checkpoint, json.dumps(saved))
        return self.progress

    def discard(self) -> int:
        self.loaded = False  # unsaved steps are gone; resume() reloads the checkpoint
        if not self._checkpoint.exists():
            return 0
        return int(json.loads(self._checkpoint.read_text())["quanta"])

    def publish(self) -> str:
        path = self.state_dir / "published.json"
        a, b = self.params
        _write_durably(path, json.dumps({"a": a, "b": b, "loss": self._loss(self.params)}))
        return str(path)

    def _steps(self, steps: int, params: NDArray[np.float64]) -> NDArray[np.float64]:
        a, b = params
        for _ in range(steps):
            err = a * self.x + b - self.y
            a -= 0.1 * float(np.mean(err * self.x))
            b -= 0.1 * float(np.mean(err))
        return np.array([a, b])

    def _loss(self, params: NDArray[np.float64]) -> float:
        return float(np.mean((params[0] * self.x + params[1] - self.y) ** 2))


def _write_durably(path: Path, text: str) -> None:
    """Write, fsync, then rename over ``path``: a crash leaves the old or the new file."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(folder: Path) -> None:
    from learnsched.testing import EngineConfig, EngineProcess

    here = Path(__file__).resolve().parent
    calendar = folder / "calendar.json"
    # Relative seconds after the loop is ready: eight 1.5 s idle windows, 0.5 s apart.
    windows = [[2.0 * k + 1.0, 2.0 * k + 2.5] for k in range(8)]
    calendar.write_text(json.dumps({"windows": windows, "clock": "relative"}))
    with EngineProcess(EngineConfig("vllm", token_s=0.001), lifetime_s=120.0) as engine:
        command = [
            sys.executable, "-m", "learnsched", "run", "--engine", "vllm",
            "--url", engine.url, "--trainer", "custom_trainer:LineFitTrainer",
            "--trainer-options", json.dumps({"work_quanta": 60}),
            "--calendar", str(calendar), "--ledger", str(folder / "ledger.jsonl"),
            "--state-dir", str(folder / "job"), "--recovery-s", "0.2",
            "--seconds", "20", "--json",
        ]  # fmt: skip
        # The trainer's module must be importable in the scheduler's child process.
        path = [str(here), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
        done = subprocess.run(
            command, env=env, cwd=folder, text=True, capture_output=True, check=False
        )
    print(done.stderr, end="")  # the loop's progress lines
    print(done.stdout, end="")  # its totals (--json)
    if done.returncode != 0:
        raise SystemExit(f"learnsched run exited {done.returncode}")
    published = folder / "job" / "published.json"
    if published.exists():
        print("published:", published.read_text())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "job").mkdir()
        main(Path(tmp))
