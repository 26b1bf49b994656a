"""The fault campaign: clients keep sending through ``learnsched run --gate`` while it meets
the faults a service meets, and none of them is failed by a false quarantine or a parked engine.

Clients (threads) send greedy completions through the gate, as a client behind a load
balancer would: a ``503`` is retried after its ``Retry-After``, a refused or broken connection
(the run restarting) and the gate's ``502``/``504`` (the engine down) after a short pause,
within a retry budget. Each round of a campaign starts a run on the same ledger and waits,
the clients quiet (the loop lends only a window they leave idle), until it has parked the
strict, batch-variant engine (a check that shared its batch would quarantine it); then the
clients send (held by the gate, they end the loan) through one fault drawn at random, the
restarts and the return:

- ``kill_run``: ``kill -9`` of the run (its gate dies with it), then a restart;
- ``sigterm_run``: SIGTERM to the run's process group: it returns the engine and exits 0;
- ``kill_engine``: ``kill -9`` of the engine, which is started again on its port; the run that
  lent it may quarantine it (a true loss), which the operator clears;
- ``disk_full``: the run's disk fills right after its first ``parked`` record
  (:class:`disk_support.FullDisk`): it returns the engine from the ledger's reserve and exits
  4; the restart, space freed, goes on;
- ``big_bodies``: request bodies past the gate's bounds (per request and in all): each is
  answered ``413`` or ``503`` (or served), the run goes on (no OOM).

Every round ends with a SIGTERM stop; then the engine must be alive, awake and unpaused, the
round's quarantines only the true ones (its engine killed, or SGLang left unable to say by a
``kill -9`` between a call and its record: :data:`test_control_kill.UNKNOWABLE`), and every
client request must have succeeded, or failed only while no live engine could serve it (it
overlapped an outage: the engine or the run down, until the restart was ready).

The quick forms run in every suite; the long ones carry ``@pytest.mark.slow``; the real-vLLM
form (``real_engine``) meets only the run's faults (its engine is never killed).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_control_kill import (
    UNKNOWABLE,
    _engine_as_it_was,
    _kill,
    _park_open,
    _restart,
    _start,
    _stderr_of,
)

from learnsched.testing import EngineProcess, free_port

from control_support import COUNTING, live_records, unix_calendar
from engine_support import on_threads, raw_request, strict_config

pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")

TESTS = Path(__file__).resolve().parent
SIM_FAULTS = ("kill_run", "sigterm_run", "kill_engine", "disk_full", "big_bodies")
REAL_FAULTS = ("kill_run", "sigterm_run")
# A client's retry budget (seconds): longer than a restart of the run on a loaded machine, so
# a request fails only where no engine came back to serve it in time.
RETRY_BUDGET_S = 90.0
# The gate's body bounds in a campaign's run (MiB): small, so pressure is cheap to make.
MAX_BODY_MIB, BODY_BUDGET_MIB = 2, 4
# How long a run that met its dead engine may take to exit (its gate, trainer and threads
# stopped), seconds: a run still there after it did not meet it.
ENGINE_DEATH_EXIT_S = 5.0
# What a run that met its dead engine says on stderr.
REFUSED = "Connection refused"
# Connection errors a restart causes (the gate gone, or going: an answer cut off too).
DOWN = (ConnectionError, http.client.BadStatusLine, http.client.IncompleteRead)


@dataclass(frozen=True)
class Outcome:
    """One client request: when it was first sent and when it ended (monotonic seconds),
    its final status (0: no answer) and tries."""

    sent: float
    ended: float
    status: int
    tries: int


@dataclass
class Clients:
    """``count`` clients sending ``body`` to the gate at ``url``, one request after another."""

    url: str
    body: dict[str, Any]
    count: int = 4
    outcomes: list[Outcome] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    # Set while a run waits to lend: the loop lends only a window its clients leave idle.
    quiet: threading.Event = field(default_factory=threading.Event)

    def one(self) -> Outcome:
        """One request, retried as a client behind a load balancer would."""
        sent, tries = time.monotonic(), 0
        while True:
            tries += 1
            pause = 0.05
            try:
                status, headers, _ = raw_request(self.url, "POST", "/v1/completions", self.body)
            except DOWN:
                status, headers = 0, {}
            except TimeoutError:
                status, headers = 0, {}
            if status == 200 or status not in (0, 502, 503, 504):
                return Outcome(sent, time.monotonic(), status, tries)
            if status == 503 and "retry-after" in headers:
                pause = float(headers["retry-after"])
            if time.monotonic() + pause - sent > RETRY_BUDGET_S or self.stop.is_set():
                return Outcome(sent, time.monotonic(), status, tries)
            time.sleep(pause)

    def _send(self) -> None:
        while not self.stop.is_set():
            if self.quiet.is_set():
                time.sleep(0.01)
                continue
            self.outcomes.append(self.one())

    @contextmanager
    def sending(self) -> Iterator[Clients]:
        """The clients send while in the ``with`` block."""
        with on_threads(self._send, self.count, self.stop, RETRY_BUDGET_S + 30.0):
            yield self


@dataclass
class Campaign:
    """One campaign's run command, engine and record of what it met."""

    folder: Path
    command: list[str]
    engine: Any
    dialect: str
    returned: Callable[[], None]
    restart_engine: Callable[[], None] | None = None
    outages: list[tuple[float, float]] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    true_quarantines: int = 0
    stopped: float | None = None  # when the last run was stopped (no gate until the next)
    window_s: float = 0.8  # the calendar's windows (seconds), each 0.3 s after the last

    @property
    def ledger(self) -> Path:
        """The runs' ledger (its folder is the one a full disk fills)."""
        return self.folder / "book" / "ledger.jsonl"

    def start(self, hook: list[str] | None = None) -> subprocess.Popen[str]:
        """A run (under ``hook``: a full disk), ready; an unknowable quarantine is cleared
        as the operator would."""
        unix_calendar(self.folder / "calendar.json", time.time() + 1.0, 400, self.window_s, 0.3)
        command = self.command if hook is None else [*hook, *self.command[3:]]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *_pythonpath()])}
        if hook is not None:
            loop = _start(command, self.folder, env, self.ledger)
        else:
            loop = _restart(command, self.folder, env, self.ledger, self.engine)
        if self.stopped is not None:
            self.down(self.stopped, loop)
            self.stopped = None
        return loop

    def down(self, since: float, loop: subprocess.Popen[str]) -> None:
        """An outage from ``since`` until ``loop`` is ready again (it is, on return)."""
        self.outages.append((since, time.monotonic()))
        assert loop.poll() is None


def _pythonpath() -> list[str]:
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _wait_for(ledger: Path, kind: str, after: int, loop: subprocess.Popen[str]) -> None:
    """Until a ``kind`` record beyond index ``after`` (the run must not end first)."""
    deadline = time.monotonic() + 120.0
    while not any(r.kind == kind for r in live_records(ledger)[after:]):
        assert loop.poll() is None, f"the run ended (exit {loop.returncode}) before {kind}"
        assert time.monotonic() < deadline, f"no {kind} record within 120 s"
        time.sleep(0.02)


def _stop(loop: subprocess.Popen[str], check: bool = True) -> int:
    """SIGTERM to the run's group: it must return the engine and exit 0 (``check``); its
    exit status."""
    os.killpg(loop.pid, signal.SIGTERM)
    loop.communicate(timeout=60.0)
    assert not check or loop.returncode == 0, f"SIGTERM: exit {loop.returncode}"
    return loop.returncode


def big_bodies(url: str, model: str) -> list[int]:
    """Bodies past the gate's bounds, sent at once: one past the per-request bound, and
    enough within it to pass the budget; their statuses (0: refused before it was sent)."""
    pad = (MAX_BODY_MIB * 1024 - 64) * 1024
    inside = json.dumps({"model": model, "prompt": "hi", "max_tokens": 1, "pad": "x" * pad})
    sizes = [inside.encode()] * (2 * BODY_BUDGET_MIB // MAX_BODY_MIB + 2)
    sizes.append(b"x" * (MAX_BODY_MIB + 1) * 1024 * 1024)
    statuses: list[int] = []

    def send(body: bytes) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60.0)
        try:
            conn.request("POST", "/v1/completions", body=body)
            statuses.append(conn.getresponse().status)
        except (BrokenPipeError, ConnectionResetError):  # answered while the body went out
            statuses.append(0)
        finally:
            conn.close()

    threads = [threading.Thread(target=send, args=(body,)) for body in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90.0)
    return statuses


def one_round(campaign: Campaign, clients: Clients, fault: str, rng: random.Random) -> None:
    """Start a run, wait for its park (the clients quiet), meet ``fault`` with the clients
    sending, recover what died, and stop the run cleanly."""
    book = campaign.ledger.parent
    hook = None
    if fault == "disk_full":
        hook = [sys.executable, str(TESTS / "disk_support.py"), str(book), "parked", "0"]
    clients.quiet.set()
    loop = campaign.start(hook)
    try:
        seen = len(live_records(campaign.ledger))
        _wait_for(campaign.ledger, "parked", seen, loop)
        clients.quiet.clear()  # held by the gate, they end the loan
        # Each fault's first time, and half the others, land while surely parked; the rest in
        # or after the return.
        first = campaign.faults[fault] == 0
        time.sleep(0.0 if first else rng.choice([0.0, rng.uniform(0.0, 0.4)]))
        since = time.monotonic()
        said = _stderr_of(campaign.ledger).stat().st_size
        if fault == "kill_run":
            _kill(loop)
            loop = campaign.start()
            campaign.down(since, loop)
        elif fault == "sigterm_run":
            _stop(loop)
            loop = campaign.start()
            campaign.down(since, loop)
        elif fault == "kill_engine":
            assert campaign.restart_engine is not None
            campaign.restart_engine()
            loop = _after_engine_death(campaign, loop, seen)
            campaign.down(since, loop)
        elif fault == "disk_full":
            assert loop.wait(timeout=120.0) == 4, "a full disk: exit 4"
            _kill(loop)
            loop = campaign.start()
            campaign.down(since, loop)
        else:
            statuses = big_bodies(loop_url(campaign), clients.body["model"])
            assert set(statuses) <= {0, 200, 413, 503}, statuses
            assert 413 in statuses or 0 in statuses, statuses
            assert 503 in statuses, statuses
            assert loop.poll() is None
        campaign.faults[fault] += 1
        campaign.stopped = time.monotonic()
        status = _stop(loop, check=False)
        if status != 0:  # only a run that met its dead engine after all, and said so
            late = _stderr_of(campaign.ledger).read_text()[said:]
            assert fault == "kill_engine", f"SIGTERM: exit {status}"
            assert REFUSED in late, f"SIGTERM: exit {status}"
            campaign.outages.append((since, campaign.stopped))
    finally:
        _kill(loop)
    campaign.returned()


def loop_url(campaign: Campaign) -> str:
    """The gate's URL in the run's command."""
    return "http://" + campaign.command[campaign.command.index("--gate") + 1]


def _after_engine_death(
    campaign: Campaign, loop: subprocess.Popen[str], seen: int
) -> subprocess.Popen[str]:
    """The run once its engine died and was started again: still going, or restarted (with
    the quarantine it recorded cleared: the engine was lost, a true loss). A run that met
    the dead engine exits: lent, once it records the loss (4); serving, at the call that
    was refused (1), which the restart's seconds leave behind it, though its shutdown may
    still be under way. So a run is going on only once it is not lent and has outlived
    that shutdown."""
    deadline = time.monotonic() + 30.0
    settled = time.monotonic() + ENGINE_DEATH_EXIT_S
    while loop.poll() is None and time.monotonic() < deadline:
        kinds = {r.kind for r in live_records(campaign.ledger)[seen:]}
        if "engine-lost" in kinds:  # lost while lent: the run is on its way out (exit 4)
            loop.wait(timeout=60.0)
            break
        if time.monotonic() >= settled and not _park_open(campaign.ledger):
            return loop
        time.sleep(0.05)
    if loop.poll() is None:
        return loop
    _kill(loop)
    records = live_records(campaign.ledger)[seen:]
    campaign.true_quarantines += sum(r.kind == "quarantine" for r in records)
    command = [*campaign.command, "--clear-quarantine"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *_pythonpath()])}
    return _start(command, campaign.folder, env, campaign.ledger)


def check(campaign: Campaign, clients: Clients) -> dict[str, int]:
    """The campaign's invariants; its counts."""
    if campaign.stopped is not None:  # the clients' last requests met no gate
        campaign.outages.append((campaign.stopped, float("inf")))
    records = live_records(campaign.ledger)
    quarantines = [r for r in records if r.kind == "quarantine"]
    unknowable = [r for r in quarantines if UNKNOWABLE in str(r.detail.get("reason"))]
    false = len(quarantines) - len(unknowable) - campaign.true_quarantines
    assert false == 0, [r.detail for r in quarantines]
    failed = [o for o in clients.outcomes if o.status != 200]
    unexcused = [
        o for o in failed if not any(o.sent <= end and start <= o.ended
                                     for start, end in campaign.outages)
    ]  # fmt: skip
    assert unexcused == [], unexcused[:10]
    assert len(clients.outcomes) > len(failed), "no client request was served"
    return {
        "sent": len(clients.outcomes),
        "succeeded": len(clients.outcomes) - len(failed),
        **Counter(f"failed_in_outage_{o.status}" for o in failed),
        "quarantines_true": campaign.true_quarantines + len(unknowable),
        **campaign.faults,
    }


def drive(campaign: Campaign, faults: list[str], rng: random.Random, model: str) -> dict[str, int]:
    """A round for each of ``faults`` with clients sending all along; the counts."""
    body = {"model": model, "prompt": "hello", "max_tokens": 8, "temperature": 0}
    clients = Clients(loop_url(campaign), body)
    with clients.sending():
        for fault in faults:
            one_round(campaign, clients, fault, rng)
    counts = check(campaign, clients)
    assert all(counts[fault] for fault in faults)
    return counts


def run_command(url: str, dialect: str, folder: Path, gate_port: int) -> list[str]:
    """``learnsched run --gate`` on short windows, with small body bounds."""
    (folder / "book").mkdir(exist_ok=True)
    return [
        sys.executable, "-m", "learnsched", "run", "--engine", dialect, "--url", url,
        "--trainer", COUNTING, "--trainer-options",
        json.dumps({"work_quanta": 5000, "quantum_s": 0.02}),
        "--calendar", str(folder / "calendar.json"),
        "--ledger", str(folder / "book" / "ledger.jsonl"), "--state-dir", str(folder / "state"),
        "--recovery-s", "0.2", "--gate", f"127.0.0.1:{gate_port}",
        "--max-body-mib", str(MAX_BODY_MIB), "--body-budget-mib", str(BODY_BUDGET_MIB),
    ]  # fmt: skip


def sim_campaign(folder: Path, dialect: str, rounds: int, seed: int) -> dict[str, int]:
    """``rounds`` rounds of random faults (each fault once in every ``len(SIM_FAULTS)``) on
    the strict simulated engine; the counts."""
    rng = random.Random(seed)
    config = strict_config(dialect, batch_variant=True)
    with ExitStack() as engines:
        engine = engines.enter_context(EngineProcess(config, lifetime_s=900.0))
        command = run_command(engine.url, dialect, folder, free_port())
        campaign = Campaign(folder, command, engine, dialect,
                            returned=lambda: _engine_as_it_was(campaign.engine, dialect))  # fmt: skip

        def restart_engine() -> None:  # kill -9, then the operator starts it on its port
            campaign.engine.process.kill()
            campaign.engine.process.wait()
            again = EngineProcess(config, port=engine.port, lifetime_s=900.0)
            campaign.engine = engines.enter_context(again)

        campaign.restart_engine = restart_engine
        faults = [SIM_FAULTS[i % len(SIM_FAULTS)] for i in range(rounds)]
        rng.shuffle(faults)
        return drive(campaign, faults, rng, "sim-model")


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_fault_campaign_quick(tmp_path: Path, dialect: str) -> None:
    """Each fault once, the first of each while the engine is surely parked."""
    sim_campaign(tmp_path, dialect, rounds=len(SIM_FAULTS), seed=1)


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_fault_campaign(tmp_path: Path, dialect: str) -> None:
    """Each fault six times, at random moments of the loan and its return."""
    sim_campaign(tmp_path, dialect, rounds=6 * len(SIM_FAULTS), seed=20261207)


@pytest.mark.real_engine
def test_fault_campaign_on_a_real_vllm(own_vllm: Any, tmp_path: Path) -> None:
    """The run's faults (``kill -9``, SIGTERM) in front of a real vLLM, twice each: its
    engine is never killed, so no client may fail but while the run is down."""
    from test_real_engine_lifetime import is_sleeping

    server = own_vllm("sleep")

    def returned() -> None:  # awake and answering
        assert not is_sleeping(server.url)
        body = {"model": server.model_name, "prompt": "hi", "max_tokens": 1}
        assert raw_request(server.url, "POST", "/v1/completions", body)[0] == 200

    command = run_command(server.url, "vllm", tmp_path, free_port())
    # Longer windows: a real vLLM's park and return take a CPU vLLM seconds.
    campaign = Campaign(tmp_path, command, server, "vllm", returned=returned, window_s=2.0)
    rng = random.Random(20261207)
    counts = drive(campaign, [*REAL_FAULTS, *REAL_FAULTS], rng, server.model_name)
    assert counts["quarantines_true"] == 0
