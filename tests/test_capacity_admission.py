"""Work-based admission and the count-threshold baseline (Section 4.4)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from learnsched.capacity import (
    GUIDANCE_BUDGET,
    TOOL_BUDGET,
    CountThresholdAdmission,
    Ticket,
    WorkBudgetAdmission,
    estimate_work,
)


def test_estimate_is_max_output_plus_sixteenth_of_prompt() -> None:
    assert estimate_work(1024, 512) == 512 + 64
    assert estimate_work(np.array([0.0, 16.0]), np.array([64.0, 0.0])).tolist() == [64.0, 1.0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-1.0, 10.0), "prompt_tokens must be >= 0"),
        ((1.0, float("nan")), "max_output_tokens must be finite"),
        ((np.array([1.0, -2.0]), np.array([1.0, 1.0])), r"prompt_tokens\[1\] must be >= 0"),
        ((np.array([1.0]), np.array([1.0, 1.0])), "max_output_tokens has 2 entries"),
    ],
)
def test_bad_estimates(args: tuple[object, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        estimate_work(*args)  # type: ignore[call-overload]


def test_paper_budgets() -> None:
    assert (TOOL_BUDGET, GUIDANCE_BUDGET) == (1536.0, 1024.0)
    assert WorkBudgetAdmission().budget == TOOL_BUDGET


def test_work_budget_admits_until_full_and_release_frees() -> None:
    admission = WorkBudgetAdmission(1024)
    first = admission.try_admit(prompt_tokens=1024, max_output_tokens=448)  # 512
    second = admission.try_admit(prompt_tokens=0, max_output_tokens=512)
    assert first is not None
    assert second is not None
    assert admission.try_admit(prompt_tokens=16, max_output_tokens=0) is None  # 1 over
    assert admission.in_flight_work == 1024
    admission.release(first)
    assert admission.in_flight_work == 512
    assert admission.in_flight_count == 1
    assert admission.try_admit(prompt_tokens=0, max_output_tokens=512) is not None


def test_tracked_service_work_counts_against_stages() -> None:
    admission = WorkBudgetAdmission(GUIDANCE_BUDGET)
    request = admission.track(prompt_tokens=8192, max_output_tokens=512)  # 1024, always in
    assert admission.try_admit(prompt_tokens=0, max_output_tokens=1) is None
    admission.release(request)
    assert admission.try_admit(prompt_tokens=0, max_output_tokens=1) is not None


def test_count_threshold_ignores_work() -> None:
    admission = CountThresholdAdmission(2)
    assert admission.try_admit(0, 10_000) is not None
    assert admission.try_admit(0, 10_000) is not None
    assert admission.try_admit(0, 1) is None
    assert CountThresholdAdmission(0).try_admit(0, 1) is None


def test_release_twice_or_foreign_ticket_raises() -> None:
    admission = WorkBudgetAdmission(100)
    ticket = admission.try_admit(0, 10)
    assert ticket is not None
    admission.release(ticket)
    with pytest.raises(ValueError, match="is not open"):
        admission.release(ticket)
    with pytest.raises(ValueError, match="is not open"):
        admission.release(Ticket(id=99, work=1.0))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: WorkBudgetAdmission(-1.0), "budget must be >= 0"),
        (lambda: WorkBudgetAdmission(float("inf")), "budget must be finite"),
        (lambda: CountThresholdAdmission(-1), "threshold must be >= 0"),
    ],
)
def test_bad_rules(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_count_threshold_must_be_an_integer() -> None:
    with pytest.raises(TypeError, match="threshold must be an integer"):
        CountThresholdAdmission(2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prompt_tokens must be a number"):
        WorkBudgetAdmission().try_admit(np.array([1.0]), 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", [WorkBudgetAdmission(640.0), CountThresholdAdmission(10)])
def test_concurrent_admission_never_overfills(
    rule: WorkBudgetAdmission | CountThresholdAdmission,
) -> None:
    overfilled = threading.Event()
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        for _ in range(2000):
            ticket = rule.try_admit(prompt_tokens=0, max_output_tokens=64)
            if ticket is None:
                continue
            if rule.in_flight_work > 640.0 or rule.in_flight_count > 10:
                overfilled.set()
            rule.release(ticket)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not overfilled.is_set()
    assert rule.in_flight_work == 0.0
    assert rule.in_flight_count == 0
