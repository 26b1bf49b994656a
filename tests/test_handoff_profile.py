"""Cost profile: the paper's default, a file round trip into the solver's costs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import learnsched as ls
from learnsched import handoff
from learnsched.handoff import (
    PAPER_PROFILE,
    QUANTITIES,
    CostProfile,
    Measurement,
    load_cost_profile,
)

from conftest import run_python


def test_paper_profile_is_the_solvers_paper_costs() -> None:
    assert PAPER_PROFILE.handoff_costs("cold") == ls.PAPER_COLD
    assert PAPER_PROFILE.handoff_costs("warm") == ls.PAPER_WARM


def test_paper_warm_figures_keep_resume_and_first_request_apart() -> None:
    # The solver plans with the 0.487 s resume; the probe's ready figure is 0.520 s.
    assert PAPER_PROFILE.mean("warm_recovery_s") == 0.487
    assert PAPER_PROFILE.mean("warm_ready_s") == 0.520
    assert QUANTITIES["warm_ready_s"] == "s"


def _one(name: str, value: float, unit: str, device: str | None) -> CostProfile:
    return CostProfile({name: Measurement.of((value,), unit, device=device)})


def test_measurements_from_different_devices_are_not_merged() -> None:
    cpu_load = _one("checkpoint_load_s", 0.01, "s", "cpu")
    gpu_warm = CostProfile(
        {"warm_recovery_s": Measurement.of((0.5,), "s", device="NVIDIA H100")},
        device={"name": "NVIDIA H100"},
    )
    with pytest.raises(
        ValueError,
        match=r"different devices .*checkpoint_load_s on cpu, warm_recovery_s on NVIDIA H100",
    ):
        cpu_load.merged(gpu_warm)
    # Same device, or a measurement whose device is not known: merged.
    merged = _one("checkpoint_load_s", 0.02, "s", "NVIDIA H100").merged(gpu_warm)
    assert merged.measurements["checkpoint_load_s"].device == "NVIDIA H100"
    assert _one("adapter_bytes", 1.0, "B", None).merged(gpu_warm).device == gpu_warm.device


def test_version_1_documents_are_still_read(tmp_path: Path) -> None:
    document = PAPER_PROFILE.to_json()
    document["version"] = 1
    for item in document["measurements"].values():
        del item["device"], item["note"], item["unconfirmed"]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(document))
    loaded = load_cost_profile(path)
    assert loaded.handoff_costs("warm") == ls.PAPER_WARM
    assert loaded.measurements["checkpoint_load_s"].device is None


def test_file_round_trip_into_handoff_costs(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    PAPER_PROFILE.write(path)
    loaded = load_cost_profile(path)
    assert loaded == PAPER_PROFILE
    assert loaded.handoff_costs("warm") == ls.PAPER_WARM
    document = json.loads(path.read_text())
    assert document["format"] == "learnsched-cost-profile"
    assert document["version"] == 3
    assert document["measurements"]["warm_ready_s"]["device"] == "NVIDIA A100-80GB"
    assert document["measurements"]["cold_recovery_s"]["unit"] == "s"


def test_measured_profile_feeds_a_scenario() -> None:
    profile = CostProfile(
        measurements={
            "checkpoint_save_s": Measurement.of((0.02, 0.04), "s", first=0.09),
            "checkpoint_load_s": Measurement.of((0.01,), "s"),
            "warm_recovery_s": Measurement.of((0.5, 0.7), "s"),
            "host_pss_awake_gib": Measurement.of((4.0,), "GiB"),
            "host_pss_parked_gib": Measurement.of((6.0,), "GiB"),
        }
    )
    costs = profile.handoff_costs("warm", residency_price=0.02)
    assert costs == ls.HandoffCosts(0.6, 2.0 * 0.02, 0.03, 0.01)
    scenario = ls.Scenario(
        windows=((0.0, 100.0),),
        work_quanta=4,
        quantum_s=5.0,
        benefit_rate=0.5,
        horizon_s=500.0,
        costs=costs,
    )
    assert scenario.costs.recovery_s == pytest.approx(0.6)
    with pytest.raises(
        ValueError, match="no cold_recovery_s; measure it with `learnsched probe recovery`"
    ):
        profile.handoff_costs("cold")


def test_every_missing_quantity_is_named_with_the_probe_flag_that_measures_it() -> None:
    """What a `probe all` without --pid or --launch leaves out, named in one error."""
    profile = CostProfile(
        measurements={
            "warm_recovery_s": Measurement.of((0.5,), "s"),
            "host_pss_awake_gib": Measurement.of((4.0,), "GiB"),
        }
    )
    with pytest.raises(ValueError, match="cost profile has no") as caught:
        profile.handoff_costs("warm")
    message = str(caught.value)
    assert message.startswith(
        "cost profile has no host_pss_parked_gib, checkpoint_save_s, checkpoint_load_s; "
    )
    assert (
        "host_pss_parked_gib with `learnsched probe recovery` (or `probe all`) with "
        "`--pid ENGINE_PID` or `--launch COMMAND`" in message
    )
    assert "checkpoint_save_s and checkpoint_load_s with `learnsched probe lora`" in message
    assert message.endswith("or fill them from a base profile (paper: --base NAME)")
    with pytest.raises(ValueError, match=r"no cold_recovery_s; .* with `--launch COMMAND`"):
        profile.mean("cold_recovery_s")


def test_parking_that_frees_host_memory_costs_no_residency() -> None:
    profile = PAPER_PROFILE.merged(
        CostProfile(
            {"host_pss_parked_gib": Measurement.of((1.0,), "GiB")},
            device={"name": "NVIDIA A100-80GB"},
        )
    )
    assert profile.handoff_costs("warm").residency_rate == 0.0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(version=4), r"version 4 is not supported .*reads versions 1, 2, 3"),
        (
            lambda d: d["measurements"]["cold_recovery_s"].pop("note"),
            "must have device, first, mean, note, samples, unconfirmed, unit",
        ),
        (
            lambda d: d["measurements"]["warm_recovery_s"].update(unconfirmed=""),
            "unconfirmed must be a non-empty string or null",
        ),
        (lambda d: d.update(format="other"), "format must be"),
        (
            lambda d: d["measurements"].update(
                speed={
                    "unit": "s",
                    "mean": 1,
                    "samples": [],
                    "first": None,
                    "device": None,
                    "note": "",
                    "unconfirmed": None,
                }
            ),
            "unknown quantity 'speed'",
        ),
        (lambda d: d["measurements"]["cold_recovery_s"].update(unit="ms"), "must be in s"),
        (
            lambda d: d["measurements"]["cold_recovery_s"].update(samples=[1.0, 2.0]),
            "is not the mean of its samples",
        ),
        (
            lambda d: d["measurements"]["cold_recovery_s"].update(mean="fast"),
            "mean must be a number",
        ),
        (lambda d: d.update(measurements=[]), "measurements must be a JSON object"),
    ],
)
def test_bad_documents_are_named(tmp_path: Path, edit: object, message: str) -> None:
    document = PAPER_PROFILE.to_json()
    edit(document)  # type: ignore[operator]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message):
        load_cost_profile(path)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="recovery must be 'cold' or 'warm', got 'hot'"):
        PAPER_PROFILE.handoff_costs("hot")
    with pytest.raises(ValueError, match="residency_price must be >= 0"):
        PAPER_PROFILE.handoff_costs("warm", residency_price=-1)
    with pytest.raises(ValueError, match="different GPUs"):
        PAPER_PROFILE.merged(CostProfile({}, device={"name": "NVIDIA H100"}))


def test_package_imports_without_the_gpu_extra(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for name in ('torch', 'safetensors', 'peft', 'pynvml', 'psutil'):\n"
        "    sys.modules[name] = None\n"
        "import learnsched.handoff as h\n"
        "import learnsched.serving as s\n"
        "from learnsched.cli import probe\n"
        "print(h.PAPER_PROFILE.handoff_costs('cold').recovery_s)\n"
        "try:\n"
        "    h.synthesise_adapter(h.BASE_SHAPES['tiny'], 2)\n"
        "except s.HandoffProbeError as err:\n"
        "    print(err)\n"
    )
    result = run_python(["-c", code], cwd=tmp_path, check=True)
    lines = result.stdout.splitlines()
    assert lines[0] == "69.988"
    assert lines[1].startswith("torch is not installed")
    assert "learnsched[gpu]" in lines[1]


# --- updates under a lock ---------------------------------------------------------------------


def test_two_processes_updating_one_profile_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    names = sorted(ls.handoff.profile.QUANTITIES)
    units = ls.handoff.profile.QUANTITIES
    script = textwrap.dedent(
        """
        import sys
        from learnsched.handoff.profile import CostProfile, Measurement, update_cost_profile
        path, names, units = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
        for rounds in range(4):
            for name, unit in zip(names, units):
                m = Measurement(mean=1.0 + rounds, unit=unit)
                update_cost_profile(path, CostProfile(measurements={name: m}))
        """
    )
    halves = [names[0::2], names[1::2]]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), ",".join(h), ",".join(units[n] for n in h)],
            cwd=tmp_path,
        )
        for h in halves
    ]
    assert [child.wait(timeout=300) for child in children] == [0, 0]
    profile = ls.handoff.load_cost_profile(path)
    assert sorted(profile.measurements) == names
    assert all(m.mean == 4.0 for m in profile.measurements.values())


# What the recovery probe writes for parks nothing could be seen freeing.
NOT_SEEN = "3 of 3 parks: no device to watch (NVML unavailable or not given)"


def _unconfirmed_warm() -> CostProfile:
    """The paper's profile with a warm resume measured on parks never seen to free memory."""
    return PAPER_PROFILE.merged(
        CostProfile(
            {"warm_recovery_s": Measurement.of((0.006,), "s", unconfirmed=NOT_SEEN)},
            device={"name": "NVIDIA A100-80GB"},
        )
    )


def test_unconfirmed_figures_are_refused_unless_accepted(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    _unconfirmed_warm().write(path)
    profile = load_cost_profile(path)
    assert profile.unconfirmed() == {"warm_recovery_s": NOT_SEEN}
    with pytest.raises(handoff.UnconfirmedRelease, match="warm_recovery_s were measured on") as err:
        profile.handoff_costs("warm")
    assert "accept_unconfirmed=True" in str(err.value)
    assert err.value.flagged == {"warm_recovery_s": NOT_SEEN}
    assert profile.handoff_costs("warm", accept_unconfirmed=True).recovery_s == 0.006
    # The cold path reads none of the flagged figures.
    assert profile.handoff_costs("cold") == ls.PAPER_COLD


def test_version_2_documents_carry_no_flag_and_plan_as_before(tmp_path: Path) -> None:
    document = _unconfirmed_warm().to_json()
    document["version"] = 2
    for item in document["measurements"].values():
        del item["unconfirmed"]
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(document))
    profile = load_cost_profile(path)
    assert profile.unconfirmed() == {}
    assert profile.handoff_costs("warm").recovery_s == 0.006
