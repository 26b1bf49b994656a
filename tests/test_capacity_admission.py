"""Work-based admission and the count-threshold baseline (Section 4.4)."""

from __future__ import annotations

import math
import threading
import time

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
    assert admission.try_admit(0, 10_000) is not None  # 2 in flight before it: admitted
    assert admission.in_flight_count == 3
    assert admission.try_admit(0, 1) is None  # 3 in flight > 2


def test_count_threshold_counts_in_flight_before_the_stage() -> None:
    """Sections 4.4/6.2 sweep thresholds 0-12 as a baseline that admits work: threshold 0
    admits a stage only when nothing is in flight, not never."""
    idle = CountThresholdAdmission(0)
    stage = idle.try_admit(0, 1)
    assert stage is not None
    assert idle.try_admit(0, 1) is None  # one in flight now
    idle.release(stage)
    request = idle.track(0, 64)  # a foreground request in flight blocks threshold 0
    assert idle.try_admit(0, 1) is None
    idle.release(request)
    assert idle.try_admit(0, 1) is not None
    for threshold in range(13):  # the paper's sweep: t in flight still admits, t + 1 not
        rule = CountThresholdAdmission(threshold)
        tickets = [rule.track(0, 1) for _ in range(threshold)]
        assert rule.try_admit(0, 1) is not None
        assert rule.try_admit(0, 1) is None
        assert len(tickets) == threshold


def test_release_is_exact_and_independent_of_open_tickets() -> None:
    """Release subtracts in O(1) from an exact sum: no drift after many odd amounts."""
    admission = WorkBudgetAdmission(1e9)
    tickets = [admission.track(0.1 * k, 0.3) for k in range(1, 2001)]
    for ticket in tickets[::2]:
        admission.release(ticket)
    expected = math.fsum(ticket.work for ticket in tickets[1::2])
    assert admission.in_flight_work == expected
    for ticket in tickets[1::2]:
        admission.release(ticket)
    assert admission.in_flight_work == 0.0
    assert admission.in_flight_count == 0


def test_release_cost_does_not_grow_with_open_tickets() -> None:
    def release_time(open_tickets: int) -> float:
        admission = WorkBudgetAdmission(1e12)
        for _ in range(open_tickets):
            admission.track(0, 1)
        tickets = [admission.track(0, 1) for _ in range(200)]
        start = time.perf_counter()
        for ticket in tickets:
            admission.release(ticket)
        return time.perf_counter() - start

    small = min(release_time(10) for _ in range(3))
    large = min(release_time(100_000) for _ in range(3))
    assert large < 20 * small + 0.01  # O(open tickets) would be ~10^4 times slower


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
            # a work budget caps the total; a threshold of 10 allows 10 + the stage
            if rule.in_flight_work > 640.0 or rule.in_flight_count > 11:
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
