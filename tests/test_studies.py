"""docs/studies.md's tables are what the code computes (the tables of other modules'
studies are checked beside those modules: test_two_path, test_economics_alerts)."""

from __future__ import annotations

import re
from pathlib import Path

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
