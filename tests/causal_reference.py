"""Slow, obviously-correct causal scheduling (tests only): the simulator, an independent
recomputation of lateness from the loans, and the scoring of one decision.

Written from the rules of docs/causal-study.md, not from the C++ core: plain lists, one
request at a time, every float in the order the rules state it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

LATE_TOLERANCE_S = 1e-6
TIE = 1e-9


@dataclass(frozen=True)
class Candidate:
    J: int
    delta: float
    g: float
    H: float
    t_ret: float
    rho: float = 0.0
    t_ck: float = 0.0
    t_ld: float = 0.0
    price: float = 0.0

    def benefit(self, t: float) -> float:
        return self.g * max(0.0, self.H - t)

    def charge(self, seconds: float) -> float:
        return (1.0 + self.rho) * seconds


def by_arrival(end: float, arrival: float) -> bool:
    return end <= arrival + TIE + 16 * 2.220446049250313e-16 * abs(arrival)


def unlent_finish(arrival: list[float], service: list[float]) -> list[float]:
    free = -math.inf
    out = []
    for a, s in zip(arrival, service, strict=True):
        free = max(a, free) + s
        out.append(free)
    return out


@dataclass
class RefSim:
    """One horizon, a move at a time."""

    arrival: list[float]
    service: list[float]
    deadline: list[float]
    c: Candidate
    from_s: float
    to_s: float
    i: int = 0
    free: float = -math.inf
    gap_end: float = 0.0
    t: float = 0.0
    gap_start: float = 0.0
    progress: int = 0
    durable: int = 0
    lent: bool = False
    loan_start: float = 0.0
    deciding: bool = False
    done: bool = False
    value: float = 0.0
    benefit: float = 0.0
    cost: float = 0.0
    late: int = 0
    lateness: float = 0.0
    served: int = 0
    handoffs: int = 0
    checkpoints: int = 0
    outages: list[tuple[float, float]] = field(default_factory=list)
    _pending_late: int = 0
    _pending_lateness: float = 0.0

    def __post_init__(self) -> None:
        self.i = sum(1 for a in self.arrival if a < self.from_s)
        if self.i > 0:
            self.free = unlent_finish(self.arrival, self.service)[self.i - 1]
        self._next_gap()

    def point(self) -> tuple[float, float, int, int, bool]:
        return (self.t, self.gap_start, self.progress, self.durable, self.lent)

    def _serve(self) -> None:
        start = max(self.arrival[self.i], self.free)
        self.free = start + self.service[self.i]
        late = self.free - self.deadline[self.i]
        if late > LATE_TOLERANCE_S:
            self._pending_late += 1
            self._pending_lateness += late
        self.served += 1
        self.i += 1

    def _next_gap(self) -> None:
        while True:
            if self.i >= len(self.arrival):
                self.deciding = False
                return
            if self.arrival[self.i] > self.free and self.free >= self.from_s:
                if self.free >= self.to_s or self.done:
                    self.deciding = False
                    return
                self.gap_end = self.arrival[self.i]
                self.t = self.gap_start = self.free
                self.lent = False
                self.deciding = True
                return
            self._serve()

    def _end_gap(self, ready: float) -> None:
        if self.lent or ready > -math.inf:
            self.outages.append((self.loan_start, ready))
        self.lent = False
        self.free = max(self.free, ready)
        self._serve()
        self._next_gap()

    def allows(self, move: str) -> bool:
        if not self.deciding:
            return False
        if move == "wait":
            return not self.lent
        if move == "work":
            return True
        if move in ("save", "checkpoint_return"):
            return self.lent and self.progress > self.durable
        return self.lent  # discard_return, abandon

    def apply(self, move: str) -> tuple[float, int, float]:
        assert self.allows(move), move
        self._pending_late = 0
        self._pending_lateness = 0.0
        c, t, a = self.c, self.t, self.gap_end
        benefit0, cost0 = self.benefit, self.cost

        def cut() -> None:
            self.cost += c.charge(a - t + c.t_ret)
            self.progress = self.durable
            self._end_gap(a + c.t_ret)

        if move == "wait":
            if t + c.delta >= a:
                self._end_gap(-math.inf)
            else:
                self.t = t + c.delta
        elif move == "work":
            load = 0.0
            if not self.lent:
                self.lent = True
                self.loan_start = t
                self.handoffs += 1
                load = c.t_ld if self.durable > 0 else 0.0
            end = t + load + c.delta
            if not by_arrival(end, a):
                cut()
            else:
                self.progress += 1
                self.cost += c.charge(load + c.delta)
                if self.progress == c.J:
                    self.benefit += c.benefit(end)
                    self.cost += c.charge(c.t_ret)
                    self.durable = self.progress
                    self.done = True
                    self._end_gap(end + c.t_ret)
                else:
                    self.t = end
        elif move == "save":
            end = t + c.t_ck
            if not by_arrival(end, a):
                cut()
            else:
                self.durable = self.progress
                self.checkpoints += 1
                self.cost += c.charge(c.t_ck)
                self.t = end
        elif move == "checkpoint_return":
            end = t + c.t_ck
            if not by_arrival(end, a):
                cut()
            else:
                self.durable = self.progress
                self.checkpoints += 1
                self.cost += c.charge(c.t_ck + c.t_ret)
                self._end_gap(end + c.t_ret)
        elif move == "discard_return":
            self.progress = self.durable
            self.cost += c.charge(c.t_ret)
            self._end_gap(t + c.t_ret)
        else:  # abandon
            self.cost += c.charge(c.t_ret)
            self.done = True
            self._end_gap(t + c.t_ret)
        self.late += self._pending_late
        self.lateness += self._pending_lateness
        reward = (self.benefit - benefit0) - (self.cost - cost0) - c.price * self._pending_lateness
        self.value += reward
        return reward, self._pending_late, self._pending_lateness


def lateness_from_outages(
    arrival: list[float],
    service: list[float],
    deadline: list[float],
    outages: list[tuple[float, float]],
    first: int,
    last: int,
) -> tuple[int, float]:
    """Late requests and request-seconds of requests ``first..last-1`` served FIFO from
    scratch with the server down during each outage (a second, independent computation)."""
    finish = unlent_finish(arrival[:first], service[:first])
    free = finish[-1] if finish else -math.inf
    late, total = 0, 0.0
    for i in range(first, last):
        start = max(arrival[i], free)
        for s, r in outages:  # an outage the request would start in holds it until r
            if s <= start < r:
                start = r
        free = start + service[i]
        tardy = free - deadline[i]
        if tardy > LATE_TOLERANCE_S:
            late += 1
            total += tardy
    return late, total
