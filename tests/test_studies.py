"""docs/studies.md's tables are what the code computes (the tables of other modules'
studies are checked beside those modules: test_two_path, test_economics_alerts)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learnsched.calendar import load_trace
from learnsched.calendar.causal import CausalTrace
from learnsched.calendar.summary import t_interval
from learnsched.calendar.synth import DAY_S
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


# --- the causal study (docs/studies.md's shipped hour, docs/causal-study.md's two days) --------
#
# Each table row starts with the `online --trace` flags of its setting; the test runs them
# and formats the result as the page does. Seeds and N are the pages' stated ones.

CAUSAL_PAGE = STUDIES.parent / "causal-study.md"
CAUSAL_NAMES = (
    "never",
    "window",
    "costed_window",
    "rollout",
    "mean_dp",
    "risk_rollout",
    "clairvoyant",
)
DIFFERENCE_PAIRS = (
    ("rollout", "costed_window"),
    ("risk_rollout", "rollout"),
    ("mean_dp", "rollout"),
    ("costed_window", "window"),
)
HOUR_SEEDS, DAYS_SEEDS, STUDY_N = 10, 5, 16
FLAGGED_ROW = re.compile(r"^\| `([^`]*)` \| (.+) \|$", re.MULTILINE)


def fixed(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals, without a sign on a rounded zero."""
    text = f"{x:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def interval(mean: float, ci: list[float] | None) -> str:
    return fixed(mean, 1) + ("" if ci is None else f" [{fixed(ci[0], 1)}, {fixed(ci[1], 1)}]")


def difference(result: dict[str, Any], a: str, b: str) -> str:
    """``a - b`` paired by horizon, its interval and its significance marks."""
    for d in result["differences"]:
        if (d["a"], d["b"]) in ((a, b), (b, a)):
            sign = 1.0 if d["a"] == a else -1.0
            lo, hi = sorted(sign * x for x in d["ci95"])
            marks = "\\*\\*" if d["holm_significant"] else "\\*" if d["significant"] else ""
            return interval(sign * d["mean"], [lo, hi]) + marks
    raise KeyError((a, b))


def causal_rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    """The page's rows of one setting: per policy, then the paired differences."""
    (sample,) = result["samples"].values()
    policies = sample["policies"]
    rows = []
    for name in (n for n in CAUSAL_NAMES if n in policies):
        p = policies[name]
        regret = "—" if name == "clairvoyant" else difference(sample, "clairvoyant", name)
        slo = "—" if p["slo_misses"] is None else fixed(100 * p["slo_misses"], 2) + "%"
        rows.append((
            name, interval(p["mean_value"], p["ci95"]), regret, fixed(p["late_requests"], 2),
            fixed(p["lateness_s"], 1), slo, fixed(p["handoffs"], 2),
        ))  # fmt: skip
    if "risk_rollout" in policies:
        rows.append(tuple(difference(sample, a, b) for a, b in DIFFERENCE_PAIRS))
    return rows


def calibration_rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    """Per gap model: queries, CRPS (s) and the PIT deciles."""
    return [
        (
            name,
            str(c["queries"]),
            fixed(c["crps_s"], 2),
            " ".join(fixed(x, 2) for x in c["pit_histogram"]),
        )
        for name, c in result["calibration"].items()
    ]


CALIBRATION_ROW = re.compile(
    r"^\| (empirical|repeat|mean) \| (\d+) \| ([\d.]+) \| ([\d. ]+) \|$", re.MULTILINE
)


LOAD_PAIRS = (("rollout", "costed_window"), ("risk_rollout", "rollout"))


def load_rows(result: dict[str, Any], arrival: Any) -> list[tuple[str, ...]]:
    """The horizons split at their median load (requests per second arriving in the
    horizon): per half, its mean load, ``risk_rollout``'s value and the deciding paired
    differences, each with its 95% interval (``\\*``: it excludes 0)."""
    (sample,) = result["samples"].values()
    policies = sample["policies"]
    horizon_s = result["settings"]["horizon_s"]
    starts = np.array(result["horizon_starts_s"])
    counts = np.searchsorted(arrival, starts + horizon_s) - np.searchsorted(arrival, starts)
    load = counts / horizon_s
    order = np.argsort(load, kind="stable")
    rows = []
    for half, part in (("calmer", order[: len(order) // 2]), ("busier", order[len(order) // 2 :])):
        values = {
            n: np.array(policies[n]["values"])[part]
            for n in ("costed_window", "rollout", "risk_rollout")
        }
        cells = [half, fixed(float(np.mean(load[part])), 2)]
        risk = values["risk_rollout"]
        cells.append(interval(float(np.mean(risk)), list(t_interval(risk) or ()) or None))
        for a, b in LOAD_PAIRS:
            d = values[a] - values[b]
            ci = t_interval(d)
            mark = "\\*" if ci is not None and (ci[0] > 0 or ci[1] < 0) else ""
            cells.append(interval(float(np.mean(d)), None if ci is None else list(ci)) + mark)
        rows.append(tuple(cells))
    return rows


def page_rows(page: Path, title: str) -> dict[str, list[tuple[str, ...]]]:
    text = page.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    rows: dict[str, list[tuple[str, ...]]] = {}
    for flags, cells in FLAGGED_ROW.findall(text[start : end if end >= 0 else None]):
        rows.setdefault(flags, []).append(tuple(c.strip() for c in cells.split(" | ")))
    return rows


def study(capsys: pytest.CaptureFixture[str], trace: list[str], flags: str, seeds: int) -> Any:
    argv = ["online", "--trace", *trace, *flags.split(), "--seeds", str(seeds), "--threads", "2"]
    if "--samples" not in argv:
        argv += ["--samples", str(STUDY_N)]
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


HOUR_ROWS = page_rows(STUDIES, "The Azure trace")
HOUR_QUICK = "--recovery cold --work-s 60 --benefit-rate 0.25"  # 1 s; the others are slow


@pytest.mark.parametrize(
    "flags", [f if f == HOUR_QUICK else pytest.param(f, marks=pytest.mark.slow) for f in HOUR_ROWS]
)
def test_shipped_hour_causal_table_is_what_online_computes(
    flags: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(HOUR_ROWS) >= 5
    assert causal_rows(study(capsys, [], flags, HOUR_SEEDS)) == HOUR_ROWS[flags]


DAYS_CHECKED = "--recovery cold --work-s 60 --benefit-rate 0.25"  # about a minute


@pytest.mark.slow
def test_two_day_causal_table_is_what_online_computes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = page_rows(CAUSAL_PAGE, "The study")
    assert len(rows) >= 8
    trace = tmp_path / "two-days.csv"
    assert main(["synth", "--days", "2", "--out", str(trace)]) == 0
    capsys.readouterr()
    result = study(capsys, [str(trace)], DAYS_CHECKED, DAYS_SEEDS)
    assert result["trace"]["synthetic"] is True
    assert result["horizons"] >= 280
    assert CausalTrace(load_trace(str(trace))).span_s > 1.9 * DAY_S
    (sample,) = result["samples"].values()
    for name, s in sample["policies"].items():
        assert s["mean_regret"] >= -1e-9, name
    assert any(d["significant"] for d in sample["differences"])
    assert causal_rows(result) == rows[DAYS_CHECKED]
    by_load = page_rows(CAUSAL_PAGE, "By load")
    assert load_rows(result, load_trace(str(trace)).arrival) == by_load[DAYS_CHECKED]
    text = CAUSAL_PAGE.read_text(encoding="utf-8")
    assert CALIBRATION_ROW.findall(text) == calibration_rows(result)
