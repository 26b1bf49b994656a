"""docs/studies.md's tables are what the code computes (the tables of other modules'
studies are checked beside those modules: test_two_path, test_economics_alerts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from learnsched.cli import main
from learnsched.sweep import sweep

STUDIES = Path(__file__).resolve().parents[1] / "docs" / "studies.md"
COLD_SWEEP = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [0, 20, 40, 69.988, 120]},
    "policies": ["costed_window", "rollout"],
}


def section(title: str) -> str:
    text = STUDIES.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_cold_recovery_sweep_table_is_what_the_code_computes(tmp_path: Path) -> None:
    rows = re.findall(
        r"^\| ([\d.]+)(?: \(paper\))? \| (\d+) \| ([\d.]+) \| ([\d.]+) \| (\d+) / (\d+) / (\d+) \|$",
        section("The cold-recovery sweep"),
        re.MULTILINE,
    )
    result = sweep(COLD_SWEEP, tmp_path / "cold.csv", workers=1, progress=False)
    computed = [
        (
            f"{s.params[0][1]:g}",
            str(s.invalid),
            f"{s.mean_value['costed_window']:.3f}",
            f"{s.mean_value['rollout']:.3f}",
            str(s.wins),
            str(s.ties),
            str(s.losses),
        )
        for s in result.summaries
    ]
    assert rows == computed


AZURE_ROW = re.compile(
    r"^\| (cold|warm) \| (\d+) \| ([\d.]+) \| (\d+) \| (\d+) \| (.+) \|$", re.MULTILINE
)
POLICIES = ("window", "costed_window", "rollout", "dp")


def azure_rows() -> dict[tuple[str, str, str], list[tuple[str, ...]]]:
    """The Azure study's rows by (recovery, work s, g)."""
    settings: dict[tuple[str, str, str], list[tuple[str, ...]]] = {}
    for recovery, work, rate, horizons, n, cells in AZURE_ROW.findall(section("The Azure trace")):
        row = (horizons, n, *(c.strip() for c in cells.split("|")))
        settings.setdefault((recovery, work, rate), []).append(row)
    return settings


SETTINGS = sorted(azure_rows())
QUICK = ("cold", "30", "0.25")  # 3 s; the others are the thorough step's


@pytest.mark.parametrize(
    "setting",
    [s if s == QUICK else pytest.param(s, marks=pytest.mark.slow) for s in SETTINGS],
    ids="-".join,
)
def test_azure_study_table_is_what_online_computes(
    setting: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    recovery, work, rate = setting
    argv = ["online", "--trace", "--recovery", recovery, "--work-s", work]
    assert main([*argv, "--benefit-rate", rate, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    computed = []
    for n, sample in result["samples"].items():
        policies = sample["policies"]
        cells = [
            f"{policies[p]['mean_value']:.1f} ({policies[p]['mean_regret']:.1f})" for p in POLICIES
        ]
        clairvoyant = f"{policies['clairvoyant']['mean_value']:.1f}"
        computed.append((str(result["calendars"]), n, *cells, clairvoyant))
    assert azure_rows()[setting] == computed
