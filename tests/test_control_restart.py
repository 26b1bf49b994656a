"""Restarts that heal, one loop per engine and ledger, and clean stops.

Each test pins a failure a loop must not have: the engine left parked until a new
trainer has started, a failed return forgotten by the next run, a failed resume exiting
with the engine parked, two loops driving one engine, a process-group SIGTERM killing
the trainer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from learnsched.cli import exit_status, main
from learnsched.control.actuation import EnginePaused
from learnsched.control.healing import Backoff, EngineUnreturnable
from learnsched.control.journal import quarantine_of
from learnsched.control.locks import LEASE_DIR_ENV, LockHeld, RunLocks, engine_key
from learnsched.control.loop import LoopOptions
from learnsched.control.restart import engine_view
from learnsched.serving.endpoint import ServingEndpoint
from learnsched.serving.ledger import HandoffLedger, HandoffRecord, read_ledger
from learnsched.testing import EngineConfig, SimulatedEngine
from learnsched.testing.device import SimulatedDeviceReader

from control_support import COUNTING, live_records, make_loop
from engine_support import Client, strict_engine

TESTS = Path(__file__).resolve().parent
FAST = {"token_s": 0.001}


def run_argv(url: str, folder: Path, dialect: str = "vllm", **options: Any) -> list[str]:
    """``learnsched run`` on a relative calendar under ``folder``."""
    calendar = folder / "calendar.json"
    if not calendar.exists():
        calendar.write_text(json.dumps({"windows": [[0.3, 3.0], [3.5, 60.0]]}))
    trainer = {"work_quanta": 1000, "quantum_s": 0.02, **options.pop("trainer", {})}
    argv = [
        "run", "--engine", dialect, "--url", url, "--trainer", COUNTING,
        "--trainer-options", json.dumps(trainer), "--calendar", str(calendar),
        "--ledger", str(folder / "ledger.jsonl"), "--state-dir", str(folder / "state"),
        "--recovery-s", "0.2",
    ]  # fmt: skip
    for flag, value in options.items():
        argv += [f"--{flag.replace('_', '-')}", *([] if value is True else [str(value)])]
    return argv


def killed_while_parked(
    ledger: Path, endpoint: ServingEndpoint, *, acked: bool = True, steps: tuple[str, ...] = ()
) -> None:
    """What a run killed -9 inside a lent window leaves: an open park, the engine parked
    (``acked``), or only the park's ``steps`` recorded (killed before the answer)."""
    book = HandoffLedger(ledger)
    engine = endpoint.engine
    book.append(HandoffRecord("run-start", engine, durable_progress=0, detail={"run": 1}))
    book.append(HandoffRecord("reference", engine, detail={"run": 1, "text": endpoint.generate(
        4, 10.0).text}))  # fmt: skip
    book.append(HandoffRecord("park", engine, durable_progress=0,
                              detail={"run": 1, "deadline_unix": time.time() + 60}))  # fmt: skip
    for step in steps:
        book.append(HandoffRecord("park-step", engine, detail={"run": 1, "step": step}))
    if "paused" in steps:
        endpoint.dialect.pause(endpoint, 10.0)
    if acked:
        endpoint.release(level=1, tags=(), timeout_s=10.0)
        book.append(HandoffRecord("parked", engine, durable_progress=0, detail={"run": 1}))
    book.append(HandoffRecord("work", engine, durable_progress=0,
                              detail={"run": 1, "progress": 3}))  # fmt: skip


# --- restarts that heal -------------------------------------------------------------------
@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_a_parked_engine_returns_before_the_new_trainer_starts(
    tmp_path: Path, dialect: str
) -> None:
    """The trainer takes 2 s to build: a killed run's parked engine must be serving
    again before that, not after (10.7 s median before, minutes with a real model)."""
    with SimulatedEngine(EngineConfig(dialect, **FAST)) as engine:
        killed_while_parked(tmp_path / "ledger.jsonl", ServingEndpoint(engine.url, dialect))
        assert engine.state.sleeping
        loop = make_loop(
            engine.url, dialect, [(0.2, 1.0), (2.0, 60.0)], tmp_path, until_s=0.5,
            trainer_options={"work_quanta": 100, "quantum_s": 0.02, "start_s": 2.0},
        )  # fmt: skip
        totals = loop.run()
        assert not engine.state.sleeping
    records = read_ledger(tmp_path / "ledger.jsonl")
    recovered = next(r for r in records if r.kind == "return" and r.detail["recovered"])
    ready = next(r for r in records if r.kind == "trainer-ready" and r.detail["run"] == 2)
    assert recovered.wall_time < ready.wall_time - 1.5
    assert recovered.unsaved_lost == 3
    assert totals.handoffs >= 1


def test_an_engine_found_asleep_is_returned_first(tmp_path: Path) -> None:
    """vLLM says it is asleep though the ledger has no open park: returned at start."""
    with SimulatedEngine(EngineConfig("vllm", **FAST)) as engine:
        ServingEndpoint(engine.url, "vllm").release(level=1, tags=(), timeout_s=10.0)
        loop = make_loop(engine.url, "vllm", [(5.0, 60.0)], tmp_path, until_s=0.3)
        loop.run()
        assert not engine.state.sleeping
    assert [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")][:2] == ["run-start", "return"]


def test_sglang_killed_before_its_release_was_answered_is_quarantined_not_resumed(
    tmp_path: Path,
) -> None:
    """A resume of memory never released kills a real SGLang (strict): with a park
    recorded but no answer to its release, the loop must not resume blindly."""
    with strict_engine("sglang", slow_health_s=0.0) as engine:
        endpoint = ServingEndpoint(engine.url, "sglang")
        killed_while_parked(
            tmp_path / "ledger.jsonl", endpoint, acked=False, steps=("paused", "release_sent")
        )
        status = main(run_argv(engine.url, tmp_path, "sglang"))
        assert engine.alive(), engine.stderr_text()
    assert status == 3
    assert quarantine_of(read_ledger(tmp_path / "ledger.jsonl")) is not None


@pytest.mark.parametrize("unknowable", ["release", "resume"])
def test_sglang_killed_with_a_call_unanswered_is_quarantined_until_the_operator_clears(
    tmp_path: Path, unknowable: str
) -> None:
    """Killed after sending a release, or the return's resume, before recording the
    answer: SGLang may be parked or not and cannot say, and a guess kills its scheduler
    (a resume of memory never released, a request on released memory). The restart
    quarantines (3) and leaves the engine alive; once the operator has seen to the
    engine, --clear-quarantine returns it with a completed request only, resuming
    nothing (before, the resume case killed the strict engine, as kill -9 campaigns on
    a loaded machine found, and the release case re-quarantined at every clear)."""
    ledger = tmp_path / "ledger.jsonl"
    with strict_engine("sglang", slow_health_s=0.0) as engine:
        endpoint = ServingEndpoint(engine.url, "sglang")
        resume = unknowable == "resume"
        killed_while_parked(ledger, endpoint, acked=resume, steps=("paused", "release_sent"))
        if resume:  # the resume went out and was done; then the run was killed
            endpoint.resume(tags=(), timeout_s=10.0)
            HandoffLedger(ledger).append(HandoffRecord(
                "park-step", "sglang", detail={"run": 1, "step": "resume_sent"}))  # fmt: skip
        assert main(run_argv(engine.url, tmp_path, "sglang")) == 3
        assert engine.alive(), engine.stderr_text()
        quarantine = quarantine_of(read_ledger(ledger))
        assert quarantine is not None
        assert f"sent a {unknowable} whose answer it never recorded" in quarantine.reason
        # The operator looks: the engine serves (its generation continued, as a
        # restarted server's would be); then clears the quarantine.
        endpoint.dialect.unpause(endpoint, 10.0)
        assert SimulatedDeviceReader(engine.url).state()["sleeping_tags"] == []
        seen = len(read_ledger(ledger))
        status = main(run_argv(engine.url, tmp_path, "sglang", seconds=0.2,
                               clear_quarantine=True))  # fmt: skip
        assert engine.alive(), engine.stderr_text()
    assert status == 0
    after = read_ledger(ledger)[seen:]
    assert [r.kind for r in after][:2] == ["quarantine-cleared", "run-start"]
    back = next(r for r in after if r.kind == "return")
    assert back.detail["recovered"]
    assert "resume_ack" not in back.stamps_ns  # readiness only: nothing resumed
    assert quarantine_of(read_ledger(ledger)) is None


def test_sglang_returns_are_written_ahead(tmp_path: Path) -> None:
    """Every SGLang return records ``resume_sent`` before the resume goes out (what a
    killed run's restart must know); vLLM's, which /is_sleeping settles, do not."""
    for dialect in ("sglang", "vllm"):
        folder = tmp_path / dialect
        folder.mkdir()
        with strict_engine(dialect, slow_health_s=0.0) as engine:
            assert main(run_argv(engine.url, folder, dialect, seconds=4.0)) == 0
        kinds = [
            (r.kind, r.detail.get("step")) for r in read_ledger(folder / "ledger.jsonl")
            if r.kind in ("parked", "park-step", "return")
        ]  # fmt: skip
        returns = [i for i, kind in enumerate(kinds) if kind[0] == "return"]
        assert returns
        for i in returns:
            written_ahead = kinds[i - 1] == ("park-step", "resume_sent")
            assert written_ahead == (dialect == "sglang"), (dialect, kinds)


@pytest.mark.parametrize("recorded", [True, False])
def test_sglang_killed_after_its_pause_only_continues_generation(
    tmp_path: Path, recorded: bool
) -> None:
    """Killed between the pause and the release, its pause recorded or (killed between
    the pause's answer and its record) not: continue generation (a no-op had the pause
    not gone out), resume nothing (the strict engine dies on a resume of memory never
    released), instead of waiting on a request that never runs."""
    with strict_engine("sglang", slow_health_s=0.0) as engine:
        endpoint = ServingEndpoint(engine.url, "sglang")
        steps = ("paused",) if recorded else ()
        killed_while_parked(tmp_path / "ledger.jsonl", endpoint, acked=False, steps=steps)
        if not recorded:
            endpoint.dialect.pause(endpoint, 10.0)
        status = main(run_argv(engine.url, tmp_path, "sglang", seconds=0.2, timeout=5))
        assert engine.alive(), engine.stderr_text()
        state = SimulatedDeviceReader(engine.url).state()
    assert status == 0
    assert state["paused"] is None
    back = next(r for r in read_ledger(tmp_path / "ledger.jsonl") if r.kind == "return")
    assert back.detail["recovered"]
    assert "continued" in back.stamps_ns


def test_a_failed_return_quarantines_until_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The weights do not come back: the run stops (1) and quarantines the engine; the
    next run refuses (3) until --clear-quarantine, rather than take a fresh reference
    answer from the broken engine and lend again."""
    with SimulatedEngine(EngineConfig("vllm", weights_backup=False, **FAST)) as engine:
        assert main(run_argv(engine.url, tmp_path)) == 1
        assert "weights not restored" in capsys.readouterr().err
        seen = len(read_ledger(tmp_path / "ledger.jsonl"))
        assert main(run_argv(engine.url, tmp_path)) == 3
        err = [line for line in capsys.readouterr().err.splitlines() if "run:" in line]
        assert len(err) == 1
        assert "quarantined since" in err[0]
        assert "--clear-quarantine" in err[0]
        second = [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")[seen:]]
        assert "park" not in second
        assert "reference" not in second  # no fresh answer taken from the broken engine
        # The operator reloads the weights, then clears the quarantine: the run takes
        # its reference again and would lend (it stops before the first window here).
        engine.state.reload_weights()
        seen = len(read_ledger(tmp_path / "ledger.jsonl"))
        status = main(run_argv(engine.url, tmp_path, seconds=0.2, clear_quarantine=True))
        assert status == 0
    third = [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")[seen:]]
    assert third[:3] == ["quarantine-cleared", "run-start", "reference"]
    assert quarantine_of(read_ledger(tmp_path / "ledger.jsonl")) is None


def test_a_failed_resume_is_retried_with_backoff(tmp_path: Path) -> None:
    """Two resumes answer 500, the third works: the engine is returned, not left parked."""
    config = EngineConfig("vllm", resume_status=500, resume_failures=2, **FAST)
    with SimulatedEngine(config) as engine:
        loop = make_loop(engine.url, "vllm", [(0.2, 1.5), (2.0, 60.0)], tmp_path, until_s=1.8)
        loop.options = LoopOptions(until_s=1.8, return_backoff=Backoff(tries=4, first_s=0.05))
        totals = loop.run()
        assert not engine.state.sleeping
    retries = [r for r in read_ledger(tmp_path / "ledger.jsonl") if r.kind == "return-retry"]
    assert [r.detail["wait_s"] for r in retries] == [0.05, 0.1]
    assert totals.handoffs == 1
    assert not totals.quarantined


def test_an_unreturnable_engine_exits_3_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every resume answers 500: bounded retries, then exit 3 naming the engine, and
    quarantined, never an exit with the engine still parked and nothing recorded."""
    with SimulatedEngine(EngineConfig("vllm", resume_status=500, **FAST)) as engine:
        argv = run_argv(engine.url, tmp_path, return_tries=3, return_backoff=0.05)
        assert main(argv) == 3
    err = [line for line in capsys.readouterr().err.splitlines() if "learnsched run:" in line]
    assert err == [
        (
            f"learnsched run: vllm at {engine.url}: not returned to serving after 3 "
            f"tries (POST {engine.url}/wake_up answered 500: "
            '{"error": {"message": "resume refused", "type": "InternalServerError", '
            '"param": null, "code": 500}}); it may still be parked'
        )
    ]
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert [r.kind for r in records].count("return-retry") == 2
    assert quarantine_of(records) is not None


def test_backoff_waits_are_bounded() -> None:
    waits: list[float] = []
    calls = iter([ConnectionError("refused")] * 6)

    def failing() -> None:
        raise next(calls)

    with pytest.raises(EngineUnreturnable, match="after 6 tries"):
        Backoff(tries=6, first_s=1.0, max_s=4.0).run(failing, what="x", sleep=waits.append)
    assert waits == [1.0, 2.0, 4.0, 4.0, 4.0]
    with pytest.raises(ValueError, match="not retryable"):  # raised at once
        Backoff().run(lambda: (_ for _ in ()).throw(ValueError("not retryable")), what="x")


def test_an_unreachable_engine_is_an_environment_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Connection refused is the environment's failure (exit 4), not bad input (2): the
    input is fine."""
    from learnsched.testing import free_port

    assert main(run_argv(f"http://127.0.0.1:{free_port()}", tmp_path)) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "Connection refused" in err[0]


# --- one loop per engine and per ledger ---------------------------------------------------
def test_a_second_loop_on_the_same_ledger_or_engine_exits_3_naming_the_holder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SimulatedEngine(EngineConfig("vllm", **FAST)) as engine:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        with RunLocks(tmp_path / "a" / "ledger.jsonl", engine.url):
            assert main(run_argv(engine.url, tmp_path / "a")) == 3  # same ledger
            err = capsys.readouterr().err.strip().splitlines()
            assert err == [
                f"learnsched run: the ledger {tmp_path / 'a' / 'ledger.jsonl'} is held "
                f"by another learnsched run (pid {os.getpid()} on {os.uname().nodename}"
                + err[0].split(os.uname().nodename, 1)[1]
            ]
            assert main(run_argv(engine.url, tmp_path / "b")) == 3  # same engine
            err = capsys.readouterr().err.strip()
            assert f"the engine {engine_key(engine.url)} is held" in err
            assert f"pid {os.getpid()}" in err
            assert not (tmp_path / "b" / "ledger.jsonl").exists()
        assert main(run_argv(engine.url, tmp_path / "b", seconds=0.2)) == 0  # free again


def test_locks_go_with_their_holder(tmp_path: Path) -> None:
    """A lock of a process killed -9 is gone at once (a kernel flock), never stale."""
    code = (
        "import sys, time; from learnsched.control.locks import RunLocks; "
        "l = RunLocks(sys.argv[1], 'http://127.0.0.1:9'); l.__enter__(); "
        "print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "ledger.jsonl")], stdout=subprocess.PIPE,
        text=True, cwd=tmp_path, env={**os.environ},
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(LockHeld, match=f"pid {holder.pid}") as caught:
            RunLocks(tmp_path / "ledger.jsonl", None).__enter__()
        assert caught.value.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    with RunLocks(tmp_path / "ledger.jsonl", "http://127.0.0.1:9"):
        pass


def test_lease_names_compare_scheme_host_and_port() -> None:
    assert engine_key("HTTP://LocalHost:8000/") == "http://localhost:8000"
    assert engine_key("https://h") == "https://h:443"
    assert engine_key("http://h") == "http://h:80"


# --- signals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_process_group_signal_ends_the_quantum_returns_and_exits_0(
    tmp_path: Path, signum: int
) -> None:
    """systemd's default stop and Ctrl-C signal the whole process group: the trainer runs
    in its own session (else it would die of the signal, its work lost as a trainer death)
    and the loop ends the quantum, returns the engine and exits 0."""
    with SimulatedEngine(EngineConfig("vllm", **FAST)) as engine:
        argv = run_argv(engine.url, tmp_path, trainer={"work_quanta": 100, "quantum_s": 0.2})
        env = {**os.environ, "PYTHONPATH": str(TESTS), LEASE_DIR_ENV: str(tmp_path / "leases")}
        loop = subprocess.Popen(
            [sys.executable, "-m", "learnsched", *argv, "--json"], cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            start_new_session=True,  # its own group, as a service manager starts it
        )  # fmt: skip
        try:
            ledger = tmp_path / "ledger.jsonl"
            end = time.monotonic() + 60
            while not any(r.kind == "work" for r in live_records(ledger)):
                assert time.monotonic() < end
                assert loop.poll() is None
                time.sleep(0.05)
            signalled = time.monotonic()
            os.killpg(loop.pid, signum)
            out, _ = loop.communicate(timeout=30)
            stopped_s = time.monotonic() - signalled
        finally:
            if loop.poll() is None:
                loop.kill()
                loop.communicate()
        assert loop.returncode == 0
        assert not engine.state.sleeping
    # The documented bound: one quantum, a checkpoint and the return path (seconds).
    assert stopped_s < 10.0
    records = read_ledger(tmp_path / "ledger.jsonl")
    kinds = [r.kind for r in records]
    assert "trainer-lost" not in kinds
    assert kinds[-1] == "run-end"
    assert "return" in kinds[kinds.index("parked") :]
    assert json.loads(out)["handoffs"] == 1


def test_an_engine_without_load_gauges_is_refused_not_run_blind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SGLang without --enable-metrics cannot be polled for idleness (the loop would run
    blind and say nothing): the run refuses before lending, naming the flag."""
    config = EngineConfig("sglang", metrics=False, **FAST)
    with SimulatedEngine(config) as engine:
        assert main(run_argv(engine.url, tmp_path, "sglang")) == 1
        assert not engine.state.sleeping
    err = [line for line in capsys.readouterr().err.splitlines() if "run:" in line]
    assert len(err) == 1
    assert "--enable-metrics" in err[0]
    assert "park" not in [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")]


# --- what a heal must not undo: a server that cannot park, another controller's pause ---
def test_a_server_that_cannot_park_is_named_before_the_heal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A killed run's open park sends the start-up heal to the engine first: the
    configuration check comes before it, so nothing is recorded as returned from an
    engine that can never be parked (a real vLLM without dev mode even answered the heal
    with a raw 404)."""
    with SimulatedEngine(EngineConfig("vllm", memory_saver=False, **FAST)) as engine:
        killed_while_parked(tmp_path / "ledger.jsonl", ServingEndpoint(engine.url, "vllm"),
                            acked=False)  # fmt: skip
        assert main(run_argv(engine.url, tmp_path)) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "run:" in line]
    assert len(err) == 1
    assert "restart it with --enable-sleep-mode" in err[0]
    kinds = [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")]
    assert "return" not in kinds


def test_a_pause_by_another_controller_is_waited_out_never_healed(tmp_path: Path) -> None:
    """vLLM's /is_sleeping is true while generation is merely paused (POST /pause, an RL
    weight sync); only its sleep-state gauge says nothing was released. The run waits
    for the pause to end, never ends it itself, and records no return for it."""
    with SimulatedEngine(EngineConfig("vllm", **FAST)) as engine:
        client = Client(engine.url)
        assert client.call("POST", "/pause?mode=keep")[0] == 200
        resumed = threading.Timer(1.0, client.call, ("POST", "/resume"))
        resumed.start()
        loop = make_loop(engine.url, "vllm", [(5.0, 60.0)], tmp_path, until_s=0.3)
        loop.run()
        resumed.join()
        ready = next(r for r in read_ledger(tmp_path / "ledger.jsonl") if r.kind == "reference")
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert "return" not in [r.kind for r in records]
    assert ready.wall_time - records[0].wall_time >= 1.0  # waited for the other controller


def test_a_pause_that_outlasts_the_wait_is_refused_and_left_alone(tmp_path: Path) -> None:
    with SimulatedEngine(EngineConfig("vllm", **FAST)) as engine:
        Client(engine.url).call("POST", "/pause?mode=keep")
        loop = make_loop(engine.url, "vllm", [(5.0, 60.0)], tmp_path, until_s=0.3)
        loop.options = replace(loop.options, pause_wait_s=0.3)
        with pytest.raises(EnginePaused, match="POST /resume") as raised:
            loop.run()
        assert engine.state.is_paused()
        assert not engine.state.sleeping
    assert exit_status(raised.value) == 3
    kinds = [r.kind for r in read_ledger(tmp_path / "ledger.jsonl")]
    assert kinds == ["run-start", "run-end"]


@pytest.mark.parametrize(
    ("state", "open_park", "view"),
    [(None, False, None), ("serving", True, False), ("parked", False, True),
     ("unconfirmed", True, True), ("unconfirmed", False, EnginePaused),
     ("paused", True, EnginePaused), ("paused", False, EnginePaused)],
)  # fmt: skip
def test_a_heal_undoes_only_a_park_the_ledger_shows_or_the_engine_confirms(
    state: str | None, open_park: bool, view: object
) -> None:
    """``unconfirmed``: vLLM says it sleeps without the sleep-state gauge that tells a
    park from another controller's pause; only the ledger's open park settles it."""
    records = [HandoffRecord("run-start", "vllm", detail={"run": 1})]
    if open_park:
        records.append(HandoffRecord("park", "vllm", detail={"run": 1}))
    if view is EnginePaused:
        with pytest.raises(EnginePaused, match="did not park it"):
            engine_view(state, records)
    else:
        assert engine_view(state, records) is view
