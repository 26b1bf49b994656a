"""The control loop next to a real vLLM (a simulated trainer): what only the real engine
showed.

- A server that cannot park is named before the start-up heal touches it.
- ``/is_sleeping`` is true while merely paused (``POST /pause``, the RL weight-sync
  entry point): the loop neither heals nor lends an engine someone else paused.
- The load gauges cost the API server CPU at each read and lag the requests: the loop
  reads them rarely while nothing changes, and not at all while the engine is parked.
- An engine that dies while lent is found within seconds, not at the return; a stop
  checkpoints the unsaved work a later run resumes.

Tests that park or pause the shared sleep server run under ``flock /tmp/rv/sleep.lock``
(or CI's serial run) and leave it awake and unpaused; the one that kills its engine
starts its own.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from learnsched.cli import main
from learnsched.control.healing import Backoff
from learnsched.serving.ledger import HandoffLedger, HandoffRecord, read_ledger

from control_support import (
    COUNTING,
    found_within,
    in_background,
    make_loop,
    until_recorded,
)

pytestmark = pytest.mark.real_engine


def call(url: str, method: str, path: str, body: object = None) -> Any:
    """One exchange with the engine that must answer 200: its JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data if data is not None or method == "GET" else b"", method=method,
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def is_paused(url: str) -> bool:
    return bool(call(url, "GET", "/is_paused")["is_paused"])


@contextmanager
def paused(url: str) -> Iterator[None]:
    """The engine paused as an RL weight sync pauses it; resumed (and awake) after."""
    call(url, "POST", "/pause?mode=keep")
    try:
        yield
    finally:
        call(url, "POST", "/resume")
        if call(url, "GET", "/is_sleeping")["is_sleeping"]:
            call(url, "POST", "/wake_up")
        assert call(url, "GET", "/is_sleeping") == {"is_sleeping": False}


def open_park(ledger: Path, engine: str = "vllm") -> None:
    """What a run killed -9 inside a lent window leaves in its ledger: an open park."""
    book = HandoffLedger(ledger)
    book.append(HandoffRecord("run-start", engine, durable_progress=0, detail={"run": 1}))
    book.append(HandoffRecord("park", engine, durable_progress=0,
                              detail={"run": 1, "deadline_unix": time.time() + 60}))  # fmt: skip


def run_argv(url: str, folder: Path, *extra: str) -> list[str]:
    calendar = folder / "calendar.json"
    calendar.write_text(json.dumps({"windows": [[0.3, 3.0]]}))
    return [
        "run", "--engine", "vllm", "--url", url, "--trainer", COUNTING,
        "--calendar", str(calendar), "--ledger", str(folder / "ledger.jsonl"),
        "--state-dir", str(folder / "state"), "--recovery-s", "0.2", "--seconds", "2",
        *extra,
    ]  # fmt: skip


# --- a server that cannot park: named before any heal ------------------------------------
@pytest.mark.parametrize(
    ("kind", "named"),
    [("plain", "has no /is_sleeping: start it with VLLM_SERVER_DEV_MODE=1"),
     ("dev", "runs without --enable-sleep-mode")],
)  # fmt: skip
def test_a_server_that_cannot_park_is_named_before_the_heal(
    vllm_servers: Any, kind: str, named: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """A killed run's open park makes the start-up heal ask the engine first: the
    configuration check must come before it (a raw ``GET /is_sleeping answered 404``
    before, or a recorded return from an engine that can never be parked)."""
    server = vllm_servers(kind)
    ledger = tmp_path / "ledger.jsonl"
    open_park(ledger)
    assert main(run_argv(server.url, tmp_path)) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if "run:" in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"learnsched run: error: vLLM at {server.url} ")
    assert named in lines[0]
    kinds = [r.kind for r in read_ledger(ledger)]
    assert not {"return", "return-retry", "quarantine", "reference"} & set(kinds), kinds
    assert kinds[-1] == "run-end"


# --- a pause is not a park ----------------------------------------------------------------
def test_a_pause_at_start_is_waited_out_never_healed(vllm_sleep: Any, tmp_path: Path) -> None:
    """Another controller paused the engine (a weight sync) for 1.5 s as the run starts:
    the run waits for it, never un-pauses it, records no return, then runs as usual
    (before: un-paused within 0.5 s and a ``recovered`` return for a park that never
    happened)."""
    url = vllm_sleep.url
    with paused(url):
        loop = make_loop(url, "vllm", [(0.3, 1.0)], tmp_path, until_s=1.5)
        thread, out = in_background(loop)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            assert is_paused(url), "the run un-paused another controller's pause"
            time.sleep(0.1)
    thread.join(60)
    assert not thread.is_alive()
    assert "error" not in out, out
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert "trainer-ready" in [r.kind for r in records]
    assert not any(r.kind == "return" and r.detail["recovered"] for r in records)


def test_a_pause_that_outlasts_the_wait_is_refused_untouched(
    vllm_sleep: Any, tmp_path: Path
) -> None:
    from learnsched.control.actuation import EnginePaused

    url = vllm_sleep.url
    with paused(url):
        loop = make_loop(url, "vllm", [(0.3, 1.0)], tmp_path, until_s=1.5)
        loop.options = replace(loop.options, pause_wait_s=0.5)
        with pytest.raises(EnginePaused, match="POST /resume"):
            loop.run()
        assert is_paused(url)
    kinds = [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")]
    assert "return" not in kinds
    assert "trainer-ready" not in kinds
    assert EnginePaused.exit_status == 3


def test_an_engine_paused_during_the_run_is_not_lent(vllm_sleep: Any, tmp_path: Path) -> None:
    """Paused by someone else between windows: the window is skipped; a park would have
    slept the engine, and its wake-up un-paused the other controller's pause."""
    url = vllm_sleep.url
    loop = make_loop(
        url, "vllm", [(1.0, 2.0)], tmp_path, until_s=2.5,
        on_ready=lambda _: call(url, "POST", "/pause?mode=keep"),
    )  # fmt: skip
    try:
        totals = loop.run()
        assert is_paused(url)
    finally:
        call(url, "POST", "/resume")
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert "parked" not in [r.kind for r in records]
    skip = next(r for r in records if r.kind == "skip")
    assert skip.detail["reason"] == "paused"
    assert totals.skipped_windows == 1


# --- the load gauges: read rarely, never while parked --------------------------------------
def test_the_gauges_are_read_rarely_while_nothing_changes(
    vllm_sleep: Any, tmp_path: Path
) -> None:
    """Each /metrics read costs vLLM's API server 7-10 ms of CPU (at 20 Hz a tenth of a
    core or more), and the gauges cannot move while the engine sleeps: a lent window
    reads none, and a serving stretch backs off (the simulated engine's test shows a
    backed-off poll still sees a request: the real gauges miss many, whatever the poll)."""
    url = vllm_sleep.url
    loop = make_loop(url, "vllm", [(0.3, 2.0), (3.8, 60.0)], tmp_path, until_s=4.0,
                     trainer_options={"work_quanta": 1000})  # fmt: skip
    reads: list[float] = []
    load = loop.engine.load

    def counted() -> Any:
        reads.append(loop.now())
        return load()

    loop.engine.load = counted  # type: ignore[method-assign]
    loop.run()
    records = read_ledger(tmp_path / "ledger.jsonl")
    parked = next(r for r in records if r.kind == "parked").detail["t_s"]
    returned = next(r for r in records if r.kind == "return")
    # Lent until the return's readiness request completed, before its record was written.
    resumed = returned.detail["t_s"] - (returned.readiness_s or 0.0)
    assert not [t for t in reads if parked < t < resumed], (parked, resumed, reads)
    assert len(reads) <= 20, reads  # 20 Hz would be about 70


# --- a dead engine, and a stop ------------------------------------------------------------
def test_an_engine_that_dies_while_lent_is_found_within_seconds(
    own_vllm: Any, tmp_path: Path
) -> None:
    """Killed 0.5 s into a 60 s loan: the run stops within seconds, records it and lends
    no more (before: found only at the return, a minute later, then quarantined)."""
    server = own_vllm("sleep")
    loop = make_loop(
        server.url, "vllm", [(0.3, 60.0)], tmp_path,
        trainer_options={"work_quanta": 500, "quantum_s": 0.05},
    )  # fmt: skip
    loop.options = replace(loop.options, return_backoff=Backoff(tries=2, first_s=0.1))
    thread, out = in_background(loop)
    ledger = tmp_path / "ledger.jsonl"
    until_recorded(ledger, "parked", thread, out, 60.0)
    time.sleep(0.5)
    server.kill()
    assert found_within(loop, thread, 10.0) < 5.0, out
    from learnsched.control.healing import EngineLost

    assert isinstance(out.get("error"), EngineLost), out
    kinds = [r.kind for r in read_ledger(ledger)]
    assert "engine-lost" in kinds
    assert not {"quarantine", "return-retry", "return"} & set(kinds), kinds


def test_a_stop_checkpoints_the_work_a_later_run_resumes(vllm_sleep: Any, tmp_path: Path) -> None:
    """Stopped inside the calendar's last window: the model alone sees no window to
    continue in and would discard; a later run can resume, and the save is milliseconds."""
    url = vllm_sleep.url
    options = {"work_quanta": 500, "quantum_s": 0.02}
    first = make_loop(url, "vllm", [(0.3, 30.0)], tmp_path, until_s=1.5,
                      trainer_options=options).run()  # fmt: skip
    assert first.quanta_done > 0
    assert first.unsaved_lost == 0
    assert first.durable_quanta == first.quanta_done
    second = make_loop(url, "vllm", [(5.0, 30.0)], tmp_path, until_s=0.2,
                       trainer_options=options).run()  # fmt: skip
    assert second.resumed_from_quanta == first.durable_quanta
