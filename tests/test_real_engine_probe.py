"""``learnsched probe recovery`` against a real vLLM (CPU), and the ledger's memory.

The CPU worker moves no memory when it sleeps ("sleep mode is not supported on CPU,
ignore it"), and no NVML can watch it: every park here resumes in milliseconds having
freed nothing. The probe must say so in the profile it writes, the planners must refuse
that profile unless told to accept it, and the loop's ledger must show the engine's
memory unchanged across the park. A server without sleep mode, or without dev mode, is
refused before anything is touched. The times measured are printed (``-s``).
"""

from __future__ import annotations

import json
import shlex
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from learnsched.handoff import load_cost_profile
from learnsched.handoff.engine_memory import listening_pid
from learnsched.serving import read_ledger
from learnsched.testing import free_port

from conftest import one_line, planners_refuse_unconfirmed, run
from control_support import make_loop
from vllm_support import server_command

pytestmark = pytest.mark.real_engine

GIB = 2**30
QUICK = ("--parked-s=0.05", "--poll-ms=10", "--timeout-s=120")
WARM = {"warm_recovery_s", "warm_ready_s", "host_pss_awake_gib", "host_pss_parked_gib"}
NO_DEVICE = "unconfirmed: no device to watch (NVML unavailable or not given)"
# The KV cache alone is 1 GiB (vllm_support.KV_CACHE_GIB): a park that freed it would
# show; what the host PSS of a busy shared server drifts by is far less.
DRIFT_GIB = 0.25


def server_pid(url: str) -> int:
    """The PID of the server listening at ``url`` (this machine's)."""
    pid = listening_pid(int(urlsplit(url).port or 0))
    assert pid is not None, f"no process of this user listens at {url}"
    return pid


def is_sleeping(url: str) -> bool:
    """vLLM's own view (dev mode)."""
    with urllib.request.urlopen(url + "/is_sleeping", timeout=10) as answer:
        return bool(json.load(answer)["is_sleeping"])


def probe(capsys: pytest.CaptureFixture[str], url: str, *options: str) -> tuple[int, Any, str]:
    """``probe recovery --engine vllm --json``: its status, its runs and its stderr."""
    status, out, err = run(
        capsys, "probe", "recovery", "--engine=vllm", f"--url={url}", "--json", *QUICK, *options
    )
    return status, json.loads(out) if status == 0 else None, err


def report(capsys: pytest.CaptureFixture[str], label: str, runs: list[dict[str, Any]]) -> None:
    """Print what each run measured (seen with ``-s``)."""
    with capsys.disabled():
        for number, r in enumerate(runs, start=1):
            pss = {k: round(v, 3) for k, v in r["host_pss_gib"].items()}
            times = {k: round(r[k], 4) for k in ("ready_s", "resume_s") if k in r}
            print(f"\n{label} {r['kind']} #{number}: {times} host PSS GiB {pss}")


@pytest.mark.parametrize("level", [1, 2])
def test_a_park_that_frees_nothing_is_flagged_and_refused_by_the_planners(
    vllm_sleep: Any, level: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "profile.json"
    pid = server_pid(vllm_sleep.url)
    reload = ["--reload"] if level == 2 else []  # level 2 discarded the weights
    status, runs, err = probe(
        capsys, vllm_sleep.url, f"--level={level}", *reload, f"--pid={pid}", "--warm-runs=2",
        f"--out={out}",
    )  # fmt: skip
    assert status == 0, err
    report(capsys, f"level {level}", runs)
    assert not is_sleeping(vllm_sleep.url)
    for r in runs:
        assert r["failure"] is None  # the same greedy answer after each resume
        assert r["release"] == NO_DEVICE
        assert r["release_s"] is None
        # Nothing moved: parked, the engine holds what it held awake.
        awake, parked = r["host_pss_gib"]["awake"], r["host_pss_gib"]["parked"]
        assert abs(parked - awake) < DRIFT_GIB, r["host_pss_gib"]
    planners_refuse_unconfirmed(capsys, out, tmp_path)
    assert set(load_cost_profile(out).unconfirmed()) == WARM


def test_a_server_without_sleep_mode_is_refused_untouched(
    vllm_dev: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = probe(capsys, vllm_dev.url, "--warm-runs=1")
    assert status == 1
    line = one_line(err)
    assert line.startswith("learnsched probe recovery: error: ")
    assert "runs without --enable-sleep-mode" in line
    assert "restart it with --enable-sleep-mode" in line
    assert not is_sleeping(vllm_dev.url)


def test_a_server_without_dev_mode_is_refused(
    vllm_plain: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = probe(capsys, vllm_plain.url, "--warm-runs=1")
    assert status == 1
    line = one_line(err)
    assert "has no /is_sleeping: start it with VLLM_SERVER_DEV_MODE=1" in line


def test_launch_times_a_cold_start_then_warm_resumes(
    vllm_python: str, tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    argv, env = server_command(vllm_python, "sleep", tiny_model, port)
    launch = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *argv])
    out, log = tmp_path / "profile.json", tmp_path / "vllm.log"
    status, runs, err = probe(
        capsys, f"http://127.0.0.1:{port}", f"--launch={launch}", "--warm-runs=1",
        f"--engine-log={log}", "--timeout-s=420", f"--out={out}",
    )  # fmt: skip
    assert status == 0, f"{err}\n{log.read_text(errors='replace')[-3000:]}"
    report(capsys, "launched", runs)
    assert [r["kind"] for r in runs] == ["cold", "warm"]
    cold, warm = runs
    assert set(cold["stamps_ms"]) >= {"launched", "port_open", "first_token", "request_done"}
    assert warm["release"] == NO_DEVICE
    assert warm["failure"] is None
    # The launched engine's PID was watched: its host PSS, unchanged by the park.
    assert abs(warm["host_pss_gib"]["parked"] - warm["host_pss_gib"]["awake"]) < DRIFT_GIB
    assert listening_pid(port) is None  # stopped with its engine core
    profile = load_cost_profile(out)
    assert set(profile.unconfirmed()) == WARM  # the cold start is not a park
    assert profile.mean("cold_recovery_s") == cold["ready_s"]
    # A cold scenario reads no flagged figure: planned without the flag.
    costs = ("--costs", str(out), "--base", "paper")
    assert run(capsys, "explain", "S0348", *costs)[0] == 0
    assert run(capsys, "explain", "S0344", *costs)[0] == 2


def test_the_loop_records_the_engines_memory_around_each_park(
    vllm_sleep: Any, tmp_path: Path
) -> None:
    loop = make_loop(
        vllm_sleep.url, "vllm", [(0.5, 3.0)], tmp_path,
        trainer_options={"work_quanta": 10, "quantum_s": 0.05},
    )  # fmt: skip
    assert loop.run().handoffs == 1
    assert not is_sleeping(vllm_sleep.url)
    records = read_ledger(tmp_path / "ledger.jsonl")
    (park,) = [r for r in records if r.kind == "park"]
    (back,) = [r for r in records if r.kind == "return"]
    awake, parked, returned = park.host_before, back.host_before, back.host_after
    assert awake is not None, "the park record holds no memory"
    assert parked is not None
    assert returned is not None
    pid = server_pid(vllm_sleep.url)
    assert awake.pids[0] == parked.pids[0] == returned.pids[0] == pid
    print(
        f"ledger host PSS GiB: awake {awake.pss / GIB:.3f}, parked {parked.pss / GIB:.3f}, "
        f"returned {returned.pss / GIB:.3f}"
    )
    assert abs(parked.pss - awake.pss) < DRIFT_GIB * GIB  # the CPU park freed nothing
