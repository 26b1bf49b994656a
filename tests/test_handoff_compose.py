"""Profiles that compose (``--costs PARTIAL --base paper``), the paper's adapter, honest
durability, and device errors that say what they are."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import learnsched as ls
from learnsched.cli import main
from learnsched.handoff import PAPER_PROFILE, CostProfile, Measurement, load_cost_profile
from learnsched.handoff import nvml as nvml_module
from learnsched.handoff.filesystem import filesystem_of
from learnsched.handoff.profile import costs_quantities, provenance
from learnsched.serving.errors import DeviceMismatch, NvmlUnavailable

LORA_ONLY = {
    "checkpoint_save_s": Measurement.of((0.010, 0.012), "s", device="cpu"),
    "checkpoint_load_s": Measurement.of((0.004,), "s", device="cpu"),
}


def lora_only(tmp_path: Path) -> Path:
    path = tmp_path / "lora-only.json"
    CostProfile(LORA_ONLY, source="learnsched probe lora").write(path)
    return path


def test_filled_profile_takes_what_it_lacks_from_the_base() -> None:
    partial = CostProfile(LORA_ONLY)
    filled = partial.filled_from(PAPER_PROFILE)
    warm = filled.handoff_costs("warm")
    assert warm.save_s == 0.011
    assert warm.load_s == 0.004
    assert warm.recovery_s == PAPER_PROFILE.mean("warm_recovery_s")
    assert warm.residency_rate == ls.PAPER_WARM.residency_rate
    origin = provenance(partial, "mine", PAPER_PROFILE, "paper", costs_quantities("cold"))
    assert origin == {
        "cold_recovery_s": "paper",
        "checkpoint_save_s": "mine",
        "checkpoint_load_s": "mine",
    }
    assert "filled from LearnSched paper" in filled.source


def test_grid_with_a_lora_only_profile_and_the_paper_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    costs = lora_only(tmp_path)
    assert main(["grid", "--costs", str(costs), "--base", "paper", "--fresh-only", "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["costs_from"]["checkpoint_save_s"] == str(costs)
    assert report["costs_from"]["cold_recovery_s"] == "paper"
    assert report["costs_from"]["warm_recovery_s"] == "paper"
    line = captured.err.strip().splitlines()[-1]
    assert line.startswith("costs: ")
    assert f"checkpoint_save_s, checkpoint_load_s from {costs}" in line
    assert "warm_recovery_s, host_pss_awake_gib, host_pss_parked_gib" in line


def test_partial_profile_without_a_base_names_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["grid", "--costs", str(lora_only(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    # Every quantity of both return paths the grid reads, named at once.
    for name in ("cold_recovery_s", "warm_recovery_s", "host_pss_parked_gib"):
        assert name in err[0].partition(";")[0]
    assert "--base NAME" in err[0]
    assert main(["grid", "--base", "paper"]) == 2
    assert "give --costs too" in capsys.readouterr().err
    assert main(["grid", "--costs", str(lora_only(tmp_path)), "--base", "h100"]) == 2
    assert "base must be one of paper, got 'h100'" in capsys.readouterr().err


def test_explain_and_solve_take_the_base_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    costs = str(lora_only(tmp_path))
    assert main(["explain", "S0348", "--costs", costs, "--base", "paper"]) == 0  # cold
    err = capsys.readouterr().err
    assert f"cold_recovery_s from paper; checkpoint_save_s, checkpoint_load_s from {costs}" in err
    scenario = tmp_path / "s.json"
    scenario.write_text(
        '{"windows": [[0, 80]], "work_quanta": 2, "quantum_s": 5, "benefit_rate": 0.25, '
        '"horizon_s": 200, "recovery_s": 1, "residency_rate": 0, "save_s": 0, "load_s": 0, '
        '"initial": {"progress": 0, "durable": 0, "active": false}}'
    )
    argv = ["solve", str(scenario), "--costs", costs, "--base", "paper", "--recovery", "warm"]
    assert main([*argv, "--json"]) == 0
    assert "warm_recovery_s, host_pss_awake_gib, host_pss_parked_gib from paper" in (
        capsys.readouterr().err
    )


def test_out_onto_another_devices_profile_fails_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch", reason="the LoRA probe needs torch")
    out = tmp_path / "h100.json"
    gpu = {"warm_recovery_s": Measurement.of((0.5,), "s", device="NVIDIA H100")}
    CostProfile(gpu, device={"name": "NVIDIA H100", "uuid": None, "driver": None}).write(out)
    before = out.read_bytes()
    start = time.monotonic()
    status = main(["probe", "lora", "--device=cpu", "--shape=paper", "--runs=50", f"--out={out}"])
    assert status == 2
    assert time.monotonic() - start < 5  # refused up front: 50 runs of 13 MB never ran
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "(nothing was measured)" in captured.err
    assert out.read_bytes() == before
    (tmp_path / "broken.json").write_text("{")
    assert main(["probe", "lora", "--device=cpu", f"--out={tmp_path / 'broken.json'}"]) == 2
    assert "broken.json" in capsys.readouterr().err


def test_recovery_out_is_checked_before_the_engine_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    url = "http://127.0.0.1:1"  # nothing listens: touching it would fail differently
    assert main(["probe", "recovery", "--engine=vllm", f"--url={url}", f"--out={broken}"]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err
    assert url not in err


def test_paper_preset_matches_the_papers_adapter_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("safetensors", reason="the LoRA probe needs safetensors")
    status = main(
        ["probe", "lora", "--device=cpu", "--runs=2", "--json", f"--folder={tmp_path}"]
    )  # --shape paper is the default
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["adapter_bytes"] == pytest.approx(PAPER_PROFILE.mean("adapter_bytes"), rel=0.02)
    assert summary["filesystem"] == filesystem_of(tmp_path).fs_type
    assert summary["filesystem_volatile"] is filesystem_of(tmp_path).volatile


def test_a_tmpfs_checkpoint_folder_is_warned_about_and_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("safetensors", reason="the LoRA probe needs safetensors")
    shm = Path("/dev/shm")
    if not shm.is_dir() or not filesystem_of(shm).volatile:
        pytest.skip("no tmpfs at /dev/shm here")
    out = tmp_path / "profile.json"
    argv = ["probe", "lora", "--device=cpu", "--shape=tiny", "--runs=2", f"--folder={shm}"]
    assert main([*argv, f"--out={out}"]) == 0
    err = capsys.readouterr().err
    assert "warning: checkpoints were written to /dev/shm, a tmpfs" in err
    note = load_cost_profile(out).measurements["checkpoint_save_s"].note
    assert "tmpfs at /dev/shm (memory-backed: not durable" in note


def test_cuda_index_out_of_range_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    from learnsched.handoff.lora import target_gpu

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match=r"'cuda:5': torch sees 2 CUDA GPU\(s\), cuda:0..cuda:1"):
        target_gpu("cuda:5")


def test_cuda_index_out_of_range_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch", reason="needs torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert main(["probe", "lora", "--device=cuda:3", "--shape=tiny", "--runs=2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "torch sees 1 CUDA GPU(s)" in err[0]


def test_uuid_mismatch_is_missing_hardware_not_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_uuid(device: object) -> object:
        raise ValueError("no GPU with this UUID")

    monkeypatch.setattr(nvml_module, "open_device", no_such_uuid)
    monkeypatch.setattr(nvml_module, "device_count", lambda: 1)
    with pytest.raises(DeviceMismatch, match="NVML is unavailable for cuda:0") as caught:
        nvml_module.device_for_torch(0, "1234-abcd")
    assert isinstance(caught.value, NvmlUnavailable)  # exit 3, like NVML missing
    assert not isinstance(caught.value, ValueError)
