"""Helpers for the control-loop tests: a trainer without torch, and a loop builder."""

from __future__ import annotations

import json
import math
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from learnsched._atomic import atomic_write_text
from learnsched.control.actuation import ServingEngine
from learnsched.control.deciders import ForecastDecider, ModelDecider
from learnsched.control.loop import ControlLoop, LoopOptions
from learnsched.control.trainer import Advanced, Trainer, TrainerCosts, TrainerProcess
from learnsched.control.windows import KnownCalendar, Window
from learnsched.scenario import HandoffCosts
from learnsched.serving.endpoint import ServingEndpoint
from learnsched.serving.errors import HandoffProbeError
from learnsched.serving.ledger import HandoffRecord, TornRecordWarning, read_ledger

COUNTING = "control_support:CountingTrainer"
LORA = "learnsched.control.lora_trainer:LoraTrainer"


def live_records(ledger: Path) -> list[HandoffRecord]:
    """The records a running loop has committed so far (none before its first).

    A test polls the ledger while a loop appends to it, so a final line without its
    newline is expected there: an append still in progress, or one a killed run left
    (the next run's first append cuts it). It is left out without the
    :class:`TornRecordWarning` that the checks after a run, reading with
    :func:`read_ledger`, still turn into an error.
    """
    if not ledger.exists():
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornRecordWarning)
        return read_ledger(ledger)


class CountingTrainer(Trainer):
    """A trainer whose quantum is a sleep: the protocol and its durability, without torch.

    The checkpoint is a JSON file written atomically; ``fail_at`` makes ``advance``
    raise at that progress (a trainer error, not a crash), ``loss_at`` report the loss
    ``loss`` from there (a diverged trainer: ``"nan"``, ``"inf"``), ``start_s`` makes building it take
    that long (a slow base model). A quantum checks :meth:`Trainer.interrupted` every
    10 ms and stops there, undone; ``honour_interrupt=False`` never checks it (a trainer
    the loop must kill).
    """

    def __init__(
        self, state_dir: Path, *, work_quanta: int = 20, quantum_s: float = 0.02,
        fail_at: int | None = None, loss_at: int | None = None, loss: float | str = math.nan,
        start_s: float = 0.0, honour_interrupt: bool = True,
    ) -> None:  # fmt: skip
        super().__init__(state_dir)
        time.sleep(start_s)
        self._work_quanta = work_quanta
        self.quantum_s = quantum_s
        self.fail_at = fail_at
        self.loss_at = loss_at
        self.loss = float(loss)  # "nan", "inf": strict JSON options cannot hold them
        self.honour_interrupt = honour_interrupt
        self.progress = self.durable = self.read()
        self.loaded = False

    def read(self) -> int:
        path = self.state_dir / "count.json"
        return int(json.loads(path.read_text())["quanta"]) if path.exists() else 0

    @property
    def work_quanta(self) -> int:
        return self._work_quanta

    def costs(self) -> TrainerCosts:
        return TrainerCosts(quantum_s=self.quantum_s, save_s=0.005, load_s=0.005)

    def resume(self) -> int:
        self.progress = self.durable = self.read()
        self.loaded = True
        return self.durable

    def advance(self, quanta: int) -> Advanced:
        if not self.loaded:
            raise RuntimeError("advance before resume")
        if self.fail_at is not None and self.progress >= self.fail_at:
            raise RuntimeError(f"failing at {self.progress} as asked")
        end = time.monotonic() + quanta * self.quantum_s
        while (left := end - time.monotonic()) > 0:
            if self.honour_interrupt and self.interrupted():
                return Advanced(self.progress, None, interrupted=True)  # nothing to undo
            time.sleep(min(left, 0.01))
        self.progress += quanta
        diverged = self.loss_at is not None and self.progress >= self.loss_at
        return Advanced(self.progress, self.loss if diverged else 1.0 / self.progress)

    def checkpoint(self) -> int:
        atomic_write_text(self.state_dir / "count.json", json.dumps({"quanta": self.progress}))
        self.durable = self.progress
        return self.durable

    def discard(self) -> int:
        self.loaded = False
        self.progress = self.durable
        return self.durable

    def publish(self) -> str:
        path = self.state_dir / "published.json"
        atomic_write_text(path, json.dumps({"quanta": self.progress}))
        return str(path)


def make_loop(
    url: str,
    dialect: str,
    windows: list[tuple[float, float]],
    folder: Path,
    *,
    trainer: str = COUNTING,
    trainer_options: dict[str, Any] | None = None,
    recovery_s: float = 0.2,
    until_s: float | None = None,
    horizon_s: float = 3600.0,
    on_ready: Any = None,
    forecast: str | None = None,
    door: Any = None,
    drain_s: float = 2.0,
    gauge_lag_s: float = 0.0,
) -> ControlLoop:
    """A loop on a known calendar (relative seconds), ledger and state under ``folder``;
    ``forecast`` (``"empirical"``, ``"exact"``) decides under sampled calendars; ``door``
    is a gate in front of the engine; ``gauge_lag_s`` is waited out after a pause (0: the
    simulated engine's gauges are exact unless it is given a lag)."""

    def decider(work_quanta: int, costs: TrainerCosts) -> Any:
        handoff = HandoffCosts(recovery_s=recovery_s, save_s=costs.save_s, load_s=costs.load_s)
        if forecast is None:
            return ModelDecider(work_quanta, 1.5 * costs.quantum_s, handoff, 1.0, horizon_s)
        return ForecastDecider(
            work_quanta, 1.5 * costs.quantum_s, handoff, 1.0, horizon_s, forecaster=forecast,
            samples=16, truth=[Window(a, b) for a, b in windows],
        )  # fmt: skip

    return ControlLoop(
        ServingEngine(
            ServingEndpoint(url, dialect),
            timeout_s=20.0,
            door=door,
            drain_s=drain_s,
            gauge_lag_s=gauge_lag_s,
        ),
        TrainerProcess(trainer, folder / "state", trainer_options or {}),
        KnownCalendar([Window(a, b) for a, b in windows]),
        decider,
        folder / "ledger.jsonl",
        recovery_s=recovery_s,
        options=LoopOptions(until_s=until_s),
        on_ready=on_ready,
    )


def unix_calendar(path: Path, start_unix: float, count: int, length_s: float, gap_s: float) -> None:
    """``count`` windows of ``length_s`` every ``length_s + gap_s`` from ``start_unix``,
    then one long window an hour later (so the job is always worth advancing)."""
    windows = [
        [start_unix + i * (length_s + gap_s), start_unix + i * (length_s + gap_s) + length_s]
        for i in range(count)
    ]
    last = windows[-1][1]
    windows.append([last + 3600.0, last + 7200.0])
    path.write_text(json.dumps({"windows": windows, "clock": "unix"}))


def in_background(loop: ControlLoop) -> tuple[threading.Thread, dict[str, Any]]:
    """``loop.run()`` on a thread; its totals (``"totals"``) or the error it stopped with
    (``"error"``, for the test to read) land in the dict."""
    out: dict[str, Any] = {}

    def body() -> None:
        try:
            out["totals"] = loop.run()
        except HandoffProbeError as err:
            out["error"] = err

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, out


def until_recorded(
    ledger: Path, kind: str, thread: threading.Thread, out: dict[str, Any], timeout_s: float
) -> None:
    """Wait until the run on ``thread`` (:func:`in_background`) records a ``kind``."""
    deadline = time.monotonic() + timeout_s
    while kind not in [r.kind for r in live_records(ledger)]:
        assert time.monotonic() < deadline, out
        assert thread.is_alive(), out
        time.sleep(0.02)


def found_within(loop: ControlLoop, thread: threading.Thread, timeout_s: float) -> float:
    """Seconds until the run on ``thread`` ended, at most ``timeout_s``; a run still going
    is stopped then (so the test fails with it cleaned up)."""
    start = time.monotonic()
    thread.join(timeout_s)
    waited = time.monotonic() - start
    if thread.is_alive():
        loop.stop()
        thread.join(60.0)
    return waited
