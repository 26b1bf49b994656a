"""Slow, obviously-correct references for learnsched.capacity, in plain Python.

Each follows the paper's definition literally: Eq. 6 checks every pair ``k <= i`` with
an explicit integral of the rate profile, the FIFO queue is the textbook recursion, and
the replay simulates requests one by one in time rather than in cumulative service.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence

from learnsched.capacity import RateProfile, Trace, check_feasibility, lend


def service(starts: Sequence[float], rates: Sequence[float], t0: float, t1: float) -> float:
    """Integral of the piecewise-constant rate over [t0, t1] (first rate also before
    starts[0], last one forever), summed segment by segment."""
    total = 0.0
    for j, rate in enumerate(rates):
        lo = -float("inf") if j == 0 else starts[j]
        hi = float("inf") if j == len(rates) - 1 else starts[j + 1]
        overlap = min(hi, t1) - max(lo, t0)
        if overlap > 0:
            total += rate * overlap
    return total


def slack(
    arrival: Sequence[float],
    work: Sequence[float],
    deadline: Sequence[float],
    starts: Sequence[float],
    rates: Sequence[float],
) -> list[float]:
    """Eq. 6 pair by pair: min over k <= i of service on [a_k, d_i] minus work k..i.

    O(n^2): for each i the work of k..i is summed as k walks back from i.
    """
    result = []
    for i in range(len(arrival)):
        worst = float("inf")
        total = 0.0
        for k in range(i, -1, -1):
            total += work[k]  # sum(work[k : i + 1])
            worst = min(worst, service(starts, rates, arrival[k], deadline[i]) - total)
        result.append(worst)
    return result


def _segment(starts: Sequence[float], t: float) -> int:
    """The segment holding time t (0 before starts[0]), by binary search from scratch."""
    return max(bisect_right(starts, t) - 1, 0)


def _service(profile: RateProfile, t: float) -> float:
    """G(t) as the kernels compute it, from t's segment."""
    j = _segment(profile.starts.tolist(), t)
    return float(profile.cumulative[j] + profile.rates[j] * (t - profile.starts[j]))


def relative_scan(trace: Trace, profile: RateProfile) -> list[float]:
    """The Eq. 6 kernel's relative scan, operation for operation, with each request's
    segments found by two binary searches (the kernel's forward cursors must find the
    same ones, so its slack is bitwise this one's)."""
    starts, rates = profile.starts.tolist(), profile.rates.tolist()
    cum = profile.cumulative.tolist()

    def between(t0: float, j0: int, t1: float, j1: int) -> float:
        if j1 <= j0:
            return rates[j0] * (t1 - t0)
        return (
            rates[j0] * (starts[j0 + 1] - t0)
            + (cum[j1] - cum[j0 + 1])
            + rates[j1] * (t1 - starts[j1])
        )

    arrival, work = trace.arrival.tolist(), trace.work.tolist()
    slacks, relative, previous = [], 0.0, 0
    for i, (a, d) in enumerate(zip(arrival, trace.deadline.tolist(), strict=True)):
        j_arrival, j_deadline = _segment(starts, a), _segment(starts, d)
        if i > 0:
            relative = min(
                0.0, relative + between(arrival[i - 1], previous, a, j_arrival) - work[i - 1]
            )
        slacks.append(between(a, j_arrival, d, j_deadline) - work[i] + relative)
        previous = j_arrival
    return slacks


def window_scan(
    trace: Trace, profile: RateProfile, before: float, best: float
) -> tuple[list[float], float]:
    """The kernel's cumulative scan of a window (scan_window), operation for operation,
    with binary-search segment lookups: its slack and the running minimum after it."""
    slacks = []
    for a, w, d in zip(
        trace.arrival.tolist(), trace.work.tolist(), trace.deadline.tolist(), strict=True
    ):
        best = min(best, before - _service(profile, a))
        before += w
        slacks.append(_service(profile, d) - before + best)
    return slacks, best


def first_violation(slacks: Sequence[float]) -> int | None:
    """The first request with negative slack."""
    return next((i for i, s in enumerate(slacks) if s < 0), None)


def fifo_finish(arrival: Sequence[float], work: Sequence[float], rate: float) -> list[float]:
    """Completion times of a FIFO queue served at a constant rate (work/s)."""
    finish = []
    free = -float("inf")
    for a, w in zip(arrival, work, strict=True):
        free = max(free, a) + w / rate
        finish.append(free)
    return finish


def replay(
    arrival: Sequence[float],
    work: Sequence[float],
    estimate: Sequence[float],
    rate: float,
    period_s: float,
    periods: int,
    rate_window_s: float,
    next_share: Callable[[float, float, float], float],
    initial_share: float,
    admits: Callable[[float, int], bool],
) -> tuple[list[float], list[float]]:
    """The replay model at a constant rate, simulated request by request in time.

    Each period: measure the arrival rate and backlog by brute force, update the share
    with ``next_share(share, arrival_rate, backlog_s)``, ask ``admits(in_flight_estimate,
    in_flight_count)``, then serve the FIFO queue at ``(1 - share) * rate`` between
    arrivals. Returns per-request finish times (inf if unfinished) and per-period shares.
    """
    n = len(arrival)
    finish = [float("inf")] * n
    remaining = list(work)
    queue: deque[int] = deque()
    shares = []
    share = initial_share
    arrived = 0
    for k in range(periods):
        t = arrival[0] + k * period_s
        t1 = t + period_s
        recent = sum(1 for a in arrival if t - rate_window_s <= a < t) / rate_window_s
        share = next_share(share, recent, sum(remaining[j] for j in queue) / rate)
        in_flight = sum(estimate[j] for j in queue)
        active = share if admits(in_flight, len(queue)) else 0.0
        shares.append(active)
        served = (1 - active) * rate
        now = t
        while True:
            until = arrival[arrived] if arrived < n and arrival[arrived] < t1 else t1
            while queue and served > 0:
                head = queue[0]
                done_at = now + remaining[head] / served
                if done_at > until:
                    remaining[head] -= served * (until - now)
                    break
                finish[head] = done_at
                remaining[head] = 0.0
                now = done_at
                queue.popleft()
            now = until
            if until >= t1:
                break
            queue.append(arrived)
            arrived += 1
    return finish, shares


def max_share_schedule_bisect(
    trace: Trace, capacity: RateProfile, tolerance: float, resolution: float
) -> list[float] | None:
    """The greedy per-segment schedule by plain bisection: every trial share re-checks the
    whole trace with one full Eq. 6 scan (O(m n log m log(1/resolution)))."""

    def feasible(shares: list[float]) -> bool:
        return check_feasibility(trace, lend(capacity, shares), tolerance).feasible

    shares = [0.0] * capacity.starts.shape[0]
    if not feasible(shares):
        return None
    for j in range(len(shares)):
        shares[j] = 1.0
        if feasible(shares):
            continue
        low, high = 0.0, 1.0
        while high - low > resolution:
            mid = 0.5 * (low + high)
            if not low < mid < high:
                break
            shares[j] = mid
            if feasible(shares):
                low = mid
            else:
                high = mid
        shares[j] = low
    return shares
