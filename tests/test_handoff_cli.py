"""``learnsched probe``: exit statuses, JSON keys, profile and ledger files."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from learnsched.cli import main
from learnsched.handoff import load_cost_profile
from learnsched.handoff.nvml import device_count
from learnsched.serving import read_ledger
from learnsched.serving.errors import NvmlUnavailable
from learnsched.testing import free_port

from conftest import one_line, planners_refuse_unconfirmed, run, run_python
from engine_support import engine, shell_command


def run_probe(*argv: str) -> int:
    """Run ``learnsched probe ARGV`` through the real dispatcher; its exit status."""
    return main(["probe", *argv])


def has_gpu() -> bool:
    try:
        return device_count() > 0
    except NvmlUnavailable:
        return False


@pytest.mark.skipif(has_gpu(), reason="this machine has a GPU; the no-GPU path cannot run")
def test_nvml_without_gpu_exits_3_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("nvml") == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("learnsched probe nvml: NVML is unavailable: ")


def test_lora_json_on_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="the LoRA probe needs torch")
    out = tmp_path / "profile.json"
    assert (
        run_probe("lora", "--device=cpu", "--shape=tiny", "--runs=3", "--json", f"--out={out}") == 0
    )
    summary = json.loads(capsys.readouterr().out)
    for key in (
        "adapter_bytes",
        "save_ms",
        "save_durable_ms",
        "load_ms",
        "first_save_ms",
        "first_load_ms",
    ):
        assert summary[key] > 0
    profile = load_cost_profile(out)
    assert profile.mean("checkpoint_save_s") == pytest.approx(
        sum(profile.measurements["checkpoint_save_s"].samples) / 2
    )
    assert profile.device is None
    assert "learnsched" in profile.packages


def test_lora_on_a_missing_gpu_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch", reason="the LoRA probe needs torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert run_probe("lora", "--device=cuda", "--shape=tiny", "--runs=2") == 1
    assert "torch sees no CUDA GPU" in capsys.readouterr().err


def test_lora_bad_rank_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="the LoRA probe needs torch")
    assert run_probe("lora", "--device=cpu", "--shape=tiny", "--rank=-1") == 2
    assert "rank must be >= 1, got -1" in capsys.readouterr().err


def test_memory(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("memory", f"--pid={os.getpid()}", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["host"]["pss"] > 0
    assert report["host"]["pids"][0] == os.getpid()
    if report["device"] is None:
        assert report["device_unavailable"].startswith("NVML is unavailable")


def test_memory_unreadable_pid(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("memory", "--pid=-5") == 2
    assert "pid must be >= 1, got -5" in capsys.readouterr().err


def test_waits(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_probe("waits", "--step-ms=40", "--slice-ms=4", "--commands=8") == 0
    table = capsys.readouterr().out
    assert "ack delay coarse" in table
    assert "ack delay pollable" in table


def test_a_release_no_device_showed_is_flagged_and_refused_by_the_planners(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No NVML watches the simulated engine: nothing can show its park freeing memory.
    out = tmp_path / "profile.json"
    with engine("vllm") as sim:
        argv = [f"--url={sim.url}", f"--pid={sim.pid}", "--parked-s=0.01", "--poll-ms=10"]
        assert run_probe("recovery", "--engine=vllm", *argv, "--warm-runs=2", f"--out={out}") == 0
    err = capsys.readouterr().err
    assert "flagged unconfirmed" in err
    assert "refuse them without --accept-unconfirmed" in err
    flagged = load_cost_profile(out).unconfirmed()
    assert set(flagged) == {
        "warm_recovery_s", "warm_ready_s", "host_pss_awake_gib", "host_pss_parked_gib",
    }  # fmt: skip
    assert set(flagged.values()) == {
        "2 of 2 parks: no device to watch (NVML unavailable or not given)"
    }
    planners_refuse_unconfirmed(capsys, out, tmp_path)


def test_recovery_writes_ledger_and_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the launched engine starts outside the source tree
    port = free_port()
    launch = shell_command("vllm", port, weights_mib=16, kv_mib=16)
    ledger, out = tmp_path / "handoffs.jsonl", tmp_path / "profile.json"
    status = run_probe(
        "recovery",
        "--engine=vllm",
        f"--url=http://127.0.0.1:{port}",
        f"--launch={launch}",
        "--warm-runs=2",
        "--parked-s=0.01",
        "--poll-ms=10",
        "--timeout-s=20",
        f"--ledger={ledger}",
        f"--out={out}",
        "--json",
    )
    assert status == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["kind"] for r in runs] == ["cold", "warm", "warm"]
    kinds = [r.kind for r in read_ledger(ledger)]
    assert kinds == ["cold-recovery", "warm-recovery", "warm-recovery"]
    profile = load_cost_profile(out)
    assert len(profile.measurements["warm_recovery_s"].samples) == 2
    assert profile.mean("cold_recovery_s") == runs[0]["ready_s"]
    # Resume latency and first-request latency are kept apart, each from its own stamps.
    warm = runs[1:]
    assert profile.measurements["warm_recovery_s"].samples == tuple(r["resume_s"] for r in warm)
    assert profile.measurements["warm_ready_s"].samples == tuple(r["ready_s"] for r in warm)
    assert all(r["resume_s"] <= r["ready_s"] for r in warm)
    # On cpu the simulated device is host memory: parked, its KV cache's pages are gone.
    assert profile.mean("host_pss_parked_gib") < profile.mean("host_pss_awake_gib")
    with pytest.raises(
        ValueError, match="no checkpoint_save_s, checkpoint_load_s; measure checkpoint_save_s and"
    ):
        profile.handoff_costs("warm")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--poll-ms=5", r"--poll-ms must be within 10-50 ms, got 5\.0"),
        ("--poll-ms=80", r"--poll-ms must be within 10-50 ms, got 80\.0"),
        # the flag's own unit: it said "poll_s must be within ..., got 1e+305"
        ("--poll-ms=1e308", r"--poll-ms must be within 10-50 ms, got 1e\+308"),
        ("--cold-runs=0", "--cold-runs must be >= 1"),
        ("--pid=0", "pid must be >= 1, got 0"),
    ],
)
def test_recovery_bad_input_is_named(
    option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["recovery", "--engine=vllm", "--url=http://127.0.0.1:1", "--launch=x", option]
    assert run_probe(*argv) == 2
    assert re.search(message, capsys.readouterr().err)


def test_recovery_level_is_1_or_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_probe("recovery", "--engine=vllm", "--url=http://127.0.0.1:1", "--level=3")
    assert "invalid choice: 3" in capsys.readouterr().err


def test_recovery_unknown_engine_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_probe("recovery", "--engine=tgi", "--url=http://127.0.0.1:1")
    assert "invalid choice: 'tgi'" in capsys.readouterr().err


def test_recovery_unreachable_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    # An engine that does not answer is an environment failure (exit 4), not bad input.
    assert run_probe("recovery", "--engine=sglang", f"--url={url}", "--timeout-s=2") == 4
    assert url in capsys.readouterr().err


def test_all_runs_what_it_can_and_merges_the_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="the LoRA probe needs torch")
    monkeypatch.chdir(tmp_path)  # the launched engine starts outside the source tree
    port = free_port()
    launch = shell_command("sglang", port)
    out = tmp_path / "profile.json"
    status = run_probe(
        "all",
        "--device=cpu",
        "--shape=tiny",
        "--runs=3",
        "--step-ms=20",
        "--slice-ms=2",
        "--commands=4",
        "--engine=sglang",
        f"--url=http://127.0.0.1:{port}",
        f"--launch={launch}",
        "--warm-runs=1",
        "--parked-s=0.01",
        "--poll-ms=10",
        "--timeout-s=20",
        f"--out={out}",
    )
    assert status == 0
    table = capsys.readouterr().out
    assert "save durable" in table
    assert "warm #2" in table
    profile = load_cost_profile(out)
    assert profile.handoff_costs("cold").recovery_s == profile.mean("cold_recovery_s")
    # No NVML watches the simulated engine: its warm figures are flagged, and accepted here.
    warm = profile.handoff_costs("warm", accept_unconfirmed=True)
    assert warm.save_s == profile.mean("checkpoint_save_s")


ALL_QUICK = (
    "--device=cpu",
    "--shape=tiny",
    "--runs=2",
    "--step-ms=10",
    "--slice-ms=2",
    "--commands=2",
)


def test_all_keeps_what_ran_when_the_server_is_unreachable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch", reason="the LoRA probe needs torch")
    url = f"http://127.0.0.1:{free_port()}"
    out = tmp_path / "profile.json"
    argv = [*ALL_QUICK, "--engine=sglang", f"--url={url}", "--timeout-s=2", f"--out={out}"]
    assert run_probe("all", *argv) == 1
    captured = capsys.readouterr()
    assert "save durable" in captured.out  # the LoRA part ran and is reported
    assert re.search(rf"recovery +failed: .*{url}", captured.out)
    profile = load_cost_profile(out)  # ... and its costs were written
    assert profile.measurements["checkpoint_load_s"].device == "cpu"
    assert "warm_recovery_s" not in profile.measurements


def test_all_checks_its_input_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = int(run_python(["-c", "import os; print(os.getpid())"], cwd=tmp_path).stdout)
    assert run_probe("all", *ALL_QUICK, f"--pid={dead}") == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert f"pid {dead}: no such process" in captured.err
    assert run_probe("all", *ALL_QUICK, "--engine=vllm") == 2
    assert "needs both --engine and --url" in capsys.readouterr().err


def test_vllm_reloads_exactly_when_the_level_discards_the_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--level 2`` reloads on each return without ``--reload``; ``--reload`` at level 1
    would only time a needless reload and is refused."""
    from learnsched.cli import build_parser
    from learnsched.cli.probe.recovery import check_recovery

    base = ["probe", "recovery", "--engine", "vllm", "--url", "http://127.0.0.1:9"]
    args = build_parser(base).parse_args([*base, "--level", "2"])
    check_recovery(args)
    assert args.reload is True
    args = build_parser(base).parse_args([*base, "--level", "1"])
    check_recovery(args)
    assert args.reload is False
    assert main([*base, "--level", "1", "--reload"]) == 2
    assert "a level-1 sleep keeps the weights in host memory" in capsys.readouterr().err


# --- bounds -----------------------------------------------------------------------------------


def test_probe_runs_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    """``--runs`` is bounded: ``probe lora --runs 2147483648`` would not end."""
    status, _, err = run(
        capsys, "probe", "lora", "--device=cpu", "--shape=tiny", "--runs", "2147483648"
    )
    assert status == 2
    assert one_line(err).endswith("--runs must be <= 10000, got 2147483648")
