"""The scheduler behind the gate, on the strict simulated engine (it fails as the real
vLLM and SGLang do), with requests arriving at random times around parks and resumes.

What must hold, for both dialects: no request fails or is lost, none is aborted, no park
meets a busy engine (a strict SGLang would die), every early return starts within one
poll (plus the quantum in progress) of the arrival that caused it, no arrival during a
loan waits for the window's end, and each held request's added latency is at most the
return path plus 1 s.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from learnsched.control.healing import EngineLost
from learnsched.serving import ServerConfigError, read_ledger
from learnsched.serving.engines import AnswerScanner
from learnsched.testing import EngineProcess

from control_support import found_within, in_background, make_loop, until_recorded
from engine_support import strict_config

pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")

from learnsched.gate import Gate

POLL_S = 0.05  # LoopOptions.poll_s
QUANTUM_S = 0.02  # CountingTrainer's quantum
# Scheduling noise on a loaded CI machine (two shared cores here).
SLACK_S = 0.1


@dataclass
class Sent:
    """One client request through the gate."""

    sent_ns: int
    status: int = 0
    failure: str | None = "not answered"
    done_ns: int = 0


def send(host: str, port: int, result: Sent) -> None:
    body = json.dumps({"model": "sim-model", "prompt": "hello", "max_tokens": 4,
                       "temperature": 0, "stream": True})  # fmt: skip
    conn = http.client.HTTPConnection(host, port, timeout=30.0)
    try:
        conn.request(
            "POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"}
        )
        answer = conn.getresponse()
        scanner = AnswerScanner(event_stream=True)
        while chunk := answer.read1(1 << 16):
            scanner.feed(chunk)
        result.status, result.failure = answer.status, scanner.close()
    except OSError as err:
        result.failure = f"connection: {err}"
    finally:
        conn.close()
        result.done_ns = time.perf_counter_ns()


def calendar(count: int, length_s: float = 0.6, gap_s: float = 0.35) -> list[tuple[float, float]]:
    start = 0.3
    return [(start + i * (length_s + gap_s), start + i * (length_s + gap_s) + length_s)
            for i in range(count)]  # fmt: skip


def arrival_times(
    windows: list[tuple[float, float]], count: int, rng: random.Random
) -> list[float]:
    """``count`` times around each window's park (its start), inside it (where the first
    arrival makes the loop return) and just after such a return."""
    times = []
    for i in range(count):
        start, end = windows[i % len(windows)]
        kind = rng.choice(["park", "inside", "resume"])
        if kind == "park":
            times.append(start + rng.uniform(-0.15, 0.15))  # just before, during, just after
        elif kind == "inside":
            times.append(rng.uniform(start + 0.1, end - 0.1))
        else:
            times.append(rng.uniform(start + 0.2, end) + rng.uniform(0.0, 0.25))
    return sorted(times)


def run_with_arrivals(dialect: str, folder: Path, windows: int, arrivals: int, seed: int) -> None:
    """Run the loop behind the gate with ``arrivals`` random requests; check everything."""
    rng = random.Random(seed)
    cal = calendar(windows)
    times = arrival_times(cal, arrivals, rng)
    results = [Sent(0) for _ in times]
    replays: list[threading.Thread] = []

    with (
        EngineProcess(strict_config(dialect), lifetime_s=300.0) as sim,
        Gate(sim.url, dialect) as gate,
        ThreadPoolExecutor(64) as pool,
    ):

        def inject(clock_start: float) -> None:
            def replay() -> None:
                for t, result in zip(times, results, strict=True):
                    delay = clock_start + t - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    result.sent_ns = time.perf_counter_ns()
                    pool.submit(send, "127.0.0.1", gate.port, result)

            replays.append(threading.Thread(target=replay, daemon=True))
            replays[0].start()

        # A long window an hour on makes the job worth starting now (it finishes there).
        later = [(3600.0, 7200.0)]
        loop = make_loop(sim.url, dialect, cal + later, folder, until_s=cal[-1][1] + 0.8,
                         trainer_options={"work_quanta": 20_000}, horizon_s=10_000.0,
                         on_ready=inject, door=gate)  # fmt: skip
        gate.on_arrival = lambda held: loop.watcher.notify_arrival() if held else None
        totals = loop.run()
        replays[0].join(30.0)  # the loop ends after its last window; the replay goes on
        pool.shutdown(wait=True)
        deadline = time.monotonic() + 10.0
        while gate.load().running and time.monotonic() < deadline:
            time.sleep(0.01)
        counts = gate.counts()
        state = json.loads(sim_state(sim))
        assert sim.alive(), sim.stderr_text()

    # No request failed, was lost or aborted; no park met a busy engine.
    assert [r.failure for r in results if r.failure is not None or r.status != 200] == []
    assert counts.arrivals == counts.completed == len(times)
    assert (counts.failed, counts.parks_on_busy_engine, counts.in_flight) == (0, 0, 0)
    assert state["aborted"] == 0
    assert totals.handoffs >= 1

    records = read_ledger(folder / "ledger.jsonl")
    returns = [r for r in records if r.kind == "return"]
    assert len(returns) == totals.handoffs
    sent = sorted(r.sent_ns for r in results)
    for record in returns:
        stamps = record.stamps_ns
        closed, resumed = stamps["idle_checked"], stamps["resume_sent"]
        during = [t for t in sent if stamps["release_ack"] < t < resumed]
        if record.detail["early"]:
            # The early return starts within one poll (and the quantum under way) of
            # the first arrival at the closed door.
            first = min(t for t in sent if t > closed)
            assert (stamps["interrupted"] - first) / 1e9 <= POLL_S + QUANTUM_S + SLACK_S
        else:
            # No arrival during a loan waited for its end: one seen here came as the
            # return was already under way (after the loop's last look).
            late = [(resumed - t) / 1e9 for t in during]
            assert all(wait <= POLL_S + QUANTUM_S + SLACK_S for wait in late), late
        # Each held request's added latency is at most the return path plus 1 s.
        for added in record.detail["added_latency_s"]:
            assert added <= record.readiness_s + (stamps["resume_sent"] - closed) / 1e9 + 1.0
            assert added <= 1.0 + 2 * record.readiness_s + 0.5  # and short in absolute terms
    assert sum(r.detail["held_requests"] for r in returns) <= counts.held


def sim_state(sim: EngineProcess) -> bytes:
    host, port = sim.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10.0)
    try:
        conn.request("GET", "/sim/state")
        return conn.getresponse().read()
    finally:
        conn.close()


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_random_arrivals_around_parks_and_resumes(dialect: str, tmp_path: Path) -> None:
    run_with_arrivals(dialect, tmp_path, windows=6, arrivals=40, seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_200_random_arrivals_around_parks_and_resumes(
    dialect: str, seed: int, tmp_path: Path
) -> None:
    run_with_arrivals(dialect, tmp_path, windows=30, arrivals=200, seed=seed)


def parked(ledger: Path, count: int, timeout_s: float = 30.0) -> None:
    """Wait until the ledger records the ``count``-th park (and a moment more)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = ledger.read_text() if ledger.exists() else ""
        if text.count('"kind": "park"') >= count:
            time.sleep(0.1)
            return
        time.sleep(0.02)
    raise AssertionError(f"no park number {count} within {timeout_s:g} s")


def test_run_with_gate_and_notify_from_the_command_line(tmp_path: Path) -> None:
    """``learnsched run --gate --notify``: requests through the gate, a router's arrival
    notification, and the summary's gate keys."""
    calendar_file = tmp_path / "calendar.json"
    windows = [[0.5, 2.5], [3.0, 5.0], [3600.0, 7200.0]]
    calendar_file.write_text(json.dumps({"windows": windows, "clock": "relative"}))
    with EngineProcess(strict_config("sglang"), lifetime_s=120.0) as sim:
        command = [
            sys.executable, "-m", "learnsched", "run", "--engine", "sglang", "--url", sim.url,
            "--trainer", "control_support:CountingTrainer",
            "--trainer-options", '{"work_quanta": 20000}', "--horizon", "10000",
            "--calendar", str(calendar_file), "--ledger", str(tmp_path / "ledger.jsonl"),
            "--state-dir", str(tmp_path / "state"), "--seconds", "6", "--json",
            "--gate", "127.0.0.1:0", "--notify", "127.0.0.1:0",
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
        with subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) as child:  # fmt: skip
            assert child.stderr is not None
            gate_url = child.stderr.readline().split("gate ")[1].split(" ->")[0]
            notify_url = child.stderr.readline().split("POST ")[1].strip()
            host, port = gate_url.removeprefix("http://").rsplit(":", 1)
            parked(tmp_path / "ledger.jsonl", 1)  # the first loan: held, the loop returns early
            results = [Sent(time.perf_counter_ns()) for _ in range(3)]
            for result in results:
                send(host, int(port), result)
            parked(tmp_path / "ledger.jsonl", 2)  # the second loan: a router's notification
            parts = notify_url.removeprefix("http://").split("/")[0].rsplit(":", 1)
            conn = http.client.HTTPConnection(parts[0], int(parts[1]), timeout=5.0)
            conn.request("POST", "/arrival", body=b"")
            assert conn.getresponse().status == 204
            conn.close()
            out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        assert sim.alive(), sim.stderr_text()
    summary = json.loads(out)
    assert [r.failure for r in results] == [None, None, None]
    assert summary["early_returns"] == 2
    assert summary["held_requests"] >= 1
    assert summary["failed_requests"] == 0
    assert summary["parks_on_busy_engine"] == 0
    assert 0 < summary["added_latency_p50_s"] <= summary["added_latency_p99_s"] < 1.5
    assert isinstance(summary["skipped_windows"], int)


def test_sglang_without_metrics_is_refused_at_start_unless_the_gate_counts(tmp_path: Path) -> None:
    with EngineProcess(strict_config("sglang", metrics=False), lifetime_s=120.0) as sim:
        loop = make_loop(sim.url, "sglang", [(0.2, 0.8)], tmp_path / "alone", until_s=1.0)
        with pytest.raises(ServerConfigError, match="--enable-metrics"):
            loop.run()
        with Gate(sim.url, "sglang") as gate:
            loop = make_loop(sim.url, "sglang", [(0.2, 0.8), (3600.0, 7200.0)], tmp_path / "gate",
                             trainer_options={"work_quanta": 20_000}, horizon_s=10_000.0,
                             until_s=1.0, door=gate)  # fmt: skip
            totals = loop.run()
        assert totals.handoffs == 1
        assert sim.alive(), sim.stderr_text()
    notes = [r.detail["preflight"] for r in read_ledger(tmp_path / "gate" / "ledger.jsonl")
             if "preflight" in r.detail]  # fmt: skip
    assert any("gate's counts alone" in note for note in notes[0])


def test_an_engine_that_dies_while_lent_lets_its_held_requests_fail_at_once(
    tmp_path: Path,
) -> None:
    """A request waits at the closed door while the engine is lent, and the engine dies:
    the run stops within about a second and lets the request go, to fail at once (the
    gate's 502) rather than wait for a return that cannot come."""
    held = Sent(0)
    with (
        EngineProcess(strict_config("vllm"), lifetime_s=120.0) as sim,
        Gate(sim.url, "vllm") as gate,
    ):
        loop = make_loop(sim.url, "vllm", [(0.3, 30.0)], tmp_path, door=gate,
                         trainer_options={"work_quanta": 300, "quantum_s": 0.05})  # fmt: skip
        thread, out = in_background(loop)
        until_recorded(tmp_path / "ledger.jsonl", "work", thread, out, 30.0)
        held.sent_ns = time.perf_counter_ns()
        sender = threading.Thread(target=send, args=("127.0.0.1", gate.port, held), daemon=True)
        sender.start()
        deadline = time.monotonic() + 30.0
        while gate.load().waiting == 0:  # held at the door (nothing tells the loop)
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sim.process.kill()
        killed_ns = time.perf_counter_ns()
        found_within(loop, thread, 10.0)
        sender.join(10.0)
    assert isinstance(out.get("error"), EngineLost), out
    assert held.status == 502, held
    assert (held.done_ns - killed_ns) / 1e9 < 3.0
    lost = next(r for r in read_ledger(tmp_path / "ledger.jsonl") if r.kind == "engine-lost")
    assert lost.detail["held_requests"] == 1
