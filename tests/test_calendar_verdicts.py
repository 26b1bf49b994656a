"""Verdicts against never lending: a policy's paired interval with the baseline, read."""

from __future__ import annotations

import numpy as np

from learnsched.calendar.study import StudyResult
from learnsched.calendar.summary import BASELINE, PolicySummary, differences, verdicts


def summary(values: list[list[float]], lent: list[list[float]] | None = None) -> PolicySummary:
    v = np.asarray(values, dtype=np.float64)
    zero = np.zeros_like(v)
    return PolicySummary(
        values_by_seed=v, regrets_by_seed=zero, handoffs_by_seed=zero,
        checkpoints_by_seed=zero, late_by_seed=zero, lateness_by_seed=zero,
        requests_by_seed=zero + 1.0, lent_by_seed=None if lent is None else np.asarray(lent),
    )  # fmt: skip


POLICIES = {
    BASELINE: summary([[0.0, 0.0, 0.0, 0.0]], [[0.0] * 4]),
    "pays": summary([[5.0, 6.0, 7.0, 6.5]], [[60.0] * 4]),
    "loses": summary([[-5.0, -6.0, -7.0, -6.5]], [[30.0] * 4]),
    "unclear": summary([[-5.0, 6.0, -7.0, 6.5]], [[10.0] * 4]),
    "same": summary([[0.0, 0.0, 0.0, 0.0]], [[0.0] * 4]),
}


def test_each_verdict_reads_the_paired_interval_with_never() -> None:
    found = verdicts(differences(POLICIES))
    assert set(found) == set(POLICIES) - {BASELINE}
    says = {name: v.says for name, v in found.items()}
    assert says == {
        "pays": "lending pays",
        "loses": "lending does not pay",
        "unclear": "cannot tell at 95%",
        "same": "cannot tell at 95%",
    }
    # never - policy is flipped: the verdict's mean is the policy's gain over never.
    assert found["pays"].mean == 6.125
    assert found["loses"].mean == -6.125
    lo, hi = found["loses"].ci95 or (0.0, 0.0)
    assert lo < -6.125 < hi < 0
    assert str(found["same"].mean) == "0.0"  # no negative zero in a printed table


def test_no_baseline_no_verdicts() -> None:
    without = {k: v for k, v in POLICIES.items() if k != BASELINE}
    assert verdicts(differences(without)) == {}


def test_values_and_gpu_time_per_day() -> None:
    result = StudyResult(POLICIES, tuple(differences(POLICIES)), horizon_s=600.0).to_json()
    pays = result["policies"]["pays"]
    assert pays["value_per_day"] == 6.125 * 144
    assert pays["gpu_hours_per_day"] == 60.0 * 144 / 3600  # 2.4 GPU-hours a day
    assert result["verdicts"]["pays"] == {
        "verdict": "lending pays",
        "mean": 6.125,
        "ci95": result["verdicts"]["pays"]["ci95"],
    }
    uncounted = StudyResult({"a": summary([[1.0, 2.0]])}, (), horizon_s=600.0).to_json()
    assert uncounted["policies"]["a"]["gpu_hours_per_day"] is None
