"""Exhaustive search over a small portfolio's plans: an oracle written from the rules alone.

It follows docs/portfolio.md rule by rule and shares no code with learnsched: every
GPU's windows in order of start (ties by GPU index) are the stages; at each one the
stage's GPU waits or runs one free candidate's finite-model action (every feasible one,
advances without a checkpoint included); a candidate is busy until its segment's
capacity-ready time; an active candidate runs on its GPU (the i-th active one on the
i-th GPU) and is that GPU's alone in the GPU's first window; a working segment must fit
the budget left. Every plan is enumerated (no memo) and the best value returned.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

TOLERANCE = 1e-9
TIME_ULPS = 16 * sys.float_info.epsilon
INF = math.inf


def fits(duration_s: float, start_s: float, end_s: float) -> bool:
    """Eq. 10's tolerant check: ``duration_s`` fits ``[start_s, end_s]``."""
    return duration_s <= (end_s - start_s) + TOLERANCE + TIME_ULPS * max(abs(start_s), abs(end_s))


@dataclass(frozen=True)
class RefCandidate:
    """One candidate: work, benefit and its own checkpoint costs."""

    work_quanta: int
    quantum_s: float
    benefit_rate: float | tuple[tuple[float, float], ...]  # a constant, or (start, rate) pieces
    horizon_s: float
    save_s: float
    load_s: float
    progress: int
    durable: int
    active: bool
    half_life_s: float | None

    def benefit(self, publish_s: float) -> float:
        """Phi(t_p): the integral from t_p to H of g(v), times 2^(-(v - t_p)/h) with a
        half-life h; each piece's integral in closed form, summed with fsum."""
        if publish_s >= self.horizon_s:
            return 0.0
        if isinstance(self.benefit_rate, (int, float)):
            pieces = [(-INF, float(self.benefit_rate))]
        else:
            pieces = list(self.benefit_rate)
        ends = [start for start, _ in pieces[1:]] + [INF]
        parts = []
        for (start, rate), end in zip(pieces, ends, strict=True):
            lo, hi = max(start, publish_s), min(end, self.horizon_s)
            if hi <= lo:
                continue
            if self.half_life_s is None:
                parts.append(rate * (hi - lo))
            else:
                tau = self.half_life_s / math.log(2.0)
                age_lo, age_hi = lo - publish_s, hi - publish_s
                parts.append(rate * tau * (math.exp(-age_lo / tau) - math.exp(-age_hi / tau)))
        return math.fsum(parts)


@dataclass(frozen=True)
class RefPortfolio:
    """GPU calendars, the shared return path(s), a budget and the candidates."""

    gpus: tuple[tuple[tuple[float, float], ...], ...]
    recovery_s: float
    residency_rate: float
    cold_recovery_s: float | None
    budget_gpu_s: float | None
    candidates: tuple[RefCandidate, ...]

    @classmethod
    def from_json(cls, spec: dict[str, Any]) -> RefPortfolio:
        """From the SPEC of ``learnsched portfolio``."""
        if "gpus" in spec:
            gpus = tuple(tuple(map(tuple, g["windows"])) for g in spec["gpus"])
        else:
            gpus = (tuple(map(tuple, spec["windows"])),)
        two = "cold_recovery_s" in spec
        return cls(
            gpus=gpus,
            recovery_s=spec["warm_recovery_s" if two else "recovery_s"],
            residency_rate=spec["residency_rate"],
            cold_recovery_s=spec["cold_recovery_s"] if two else None,
            budget_gpu_s=spec.get("budget_gpu_s"),
            candidates=tuple(
                RefCandidate(
                    c["work_quanta"],
                    c["quantum_s"],
                    c["benefit_rate"]
                    if isinstance(c["benefit_rate"], (int, float))
                    else tuple(map(tuple, c["benefit_rate"])),
                    c["horizon_s"],
                    c["save_s"],
                    c["load_s"],
                    c["initial"]["progress"],
                    c["initial"]["durable"],
                    c["initial"]["active"],
                    c.get("half_life_s"),
                )
                for c in spec["candidates"]
            ),
        )

    def paths(self) -> list[tuple[float, float, bool]]:
        """(t_ret, rho, cold) of each offered return path."""
        out = [(self.recovery_s, self.residency_rate, False)]
        if self.cold_recovery_s is not None:
            out.append((self.cold_recovery_s, 0.0, True))
        return out


# A candidate's state: (progress, durable, active, done, busy_until_s).
CState = tuple[int, int, bool, bool, float]


def stages(p: RefPortfolio) -> list[tuple[float, int, int]]:
    """(start, gpu, window) of every GPU's windows, by start then GPU."""
    return sorted(
        ((w[0], g, k) for g, cal in enumerate(p.gpus) for k, w in enumerate(cal)),
        key=lambda s: (s[0], s[1]),
    )


def holders(p: RefPortfolio) -> dict[int, int]:
    """GPU -> its initially active candidate."""
    active = [i for i, c in enumerate(p.candidates) if c.active]
    return dict(enumerate(active))


def moves(p: RefPortfolio, c: RefCandidate, cs: CState, start: float, end: float, used: float):
    """Every feasible finite-model action of ``c`` in ``[start, end]``, as
    (reward, gpu_s, next state, publish time or None)."""
    progress, durable, active, _, _ = cs
    base = progress if active else durable
    rest = c.work_quanta - base
    out = []
    for t_ret, rho, _cold in p.paths():
        if active:  # zero-work returns: abandon, checkpoint-return, discard-return
            for save, keep, done in (
                (0.0, durable, True),
                (c.save_s, progress, False),
                (0.0, durable, False),
            ):
                dur = save + t_ret
                if fits(dur, start, end):
                    out.append(
                        (-(dur * (1 + rho)), dur, (keep, keep, False, done, start + dur), None)
                    )
        load = c.load_s if (not active and durable > 0) else 0.0
        for u in range(0 if rest == 0 else 1, rest + 1):  # a complete candidate publishes 0
            for ckpt in (True, False):
                if u == rest and ckpt:
                    continue  # publishing needs no checkpoint
                dur = load + u * c.quantum_s + (c.save_s if ckpt else 0.0) + t_ret
                if not fits(dur, start, end):
                    continue
                if p.budget_gpu_s is not None and not fits(dur, used, p.budget_gpu_s):
                    continue
                cost = dur * (1 + rho)
                if u == rest:  # publish
                    t_p = start + load + u * c.quantum_s
                    nxt = (c.work_quanta, c.work_quanta, False, True, start + dur)
                    out.append((c.benefit(t_p) - cost, dur, nxt, t_p))
                else:
                    keep = base + u if ckpt else durable
                    out.append((-cost, dur, (keep, keep, False, False, start + dur), None))
    return out


def best_value(spec: dict[str, Any]) -> float:
    """The largest plan value of the portfolio SPEC, by enumerating every plan."""
    p = RefPortfolio.from_json(spec)
    order = stages(p)
    held = holders(p)
    initial = tuple(
        (c.progress, c.durable, c.active, False, INF if c.active else -INF) for c in p.candidates
    )

    def search(i: int, used: float, states: tuple[CState, ...]) -> float:
        if i == len(order):
            return 0.0
        start, gpu, k = order[i]
        end = p.gpus[gpu][k][1]
        forced = held.get(gpu) if k == 0 else None
        if forced is not None and not states[forced][2]:
            forced = None
        options = [] if forced is not None else [(0.0, 0.0, None, None)]
        for j, (c, cs) in enumerate(zip(p.candidates, states, strict=True)):
            if forced is not None and j != forced:
                continue
            if forced is None and (cs[2] or cs[3] or cs[4] > start):
                continue
            options += [(r, g, nxt, j) for r, g, nxt, _ in moves(p, c, cs, start, end, used)]
        best = -INF
        for reward, gpu_s, nxt, j in options:
            after = states if j is None else (*states[:j], nxt, *states[j + 1 :])
            best = max(best, reward + search(i + 1, used + gpu_s, after))
        return best

    return search(0, 0.0, initial)


# --- small portfolios to enumerate: hypothesis strategies of SPEC objects ------------

seconds = st.one_of(st.integers(0, 10).map(float), st.floats(0, 10))
lengths = st.one_of(st.integers(1, 12).map(float), st.floats(0.5, 12))


@st.composite
def calendars(draw: st.DrawFn, max_windows: int) -> list[list[float]]:
    windows, start = [], draw(seconds)
    for _ in range(draw(st.integers(1, max_windows))):
        length = draw(lengths)
        windows.append([start, start + length])
        start += length + draw(seconds)
    return windows


@st.composite
def specs(
    draw: st.DrawFn, max_candidates: int = 3, max_quanta: int = 3, max_stages: int = 4
) -> dict[str, Any]:
    """A portfolio SPEC small enough to enumerate every plan of."""
    gpus = draw(st.integers(1, 2))
    if gpus == 2 and draw(st.booleans()):
        shared = draw(calendars(max(1, max_stages // 2)))
        cals = [shared, shared]
    else:
        cals = [draw(calendars(max(1, max_stages // gpus))) for _ in range(gpus)]
    last = max(w[-1][1] for w in cals)
    spec: dict[str, Any] = (
        {"gpus": [{"windows": w} for w in cals]} if gpus > 1 else {"windows": cals[0]}
    )
    recovery = draw(seconds)
    if draw(st.booleans()):
        spec["warm_recovery_s"] = recovery
        spec["cold_recovery_s"] = draw(seconds)
    else:
        spec["recovery_s"] = recovery
    spec["residency_rate"] = draw(st.sampled_from([0.0, 0.06383, 0.5]))
    if draw(st.booleans()):
        spec["budget_gpu_s"] = draw(st.sampled_from([0.0, 3.0, 7.5, 12.0, 30.0]))
    fastest = min(recovery, spec.get("cold_recovery_s", recovery))
    candidates, active = [], 0
    for i in range(draw(st.integers(1, max_candidates))):
        work = draw(st.integers(1, max_quanta))
        progress = draw(st.integers(0, work))
        can_run = active < gpus and fastest <= cals[active][0][1] - cals[active][0][0]
        is_active = can_run and draw(st.booleans())
        active += is_active
        rate: Any = draw(st.sampled_from([0.0, 0.25, 1.0, 2.0, 5.0]))
        if draw(st.integers(0, 3)) == 0:  # a benefit schedule: rates by pieces over time
            starts = sorted(
                set(draw(st.lists(st.integers(0, int(last) + 8), min_size=1, max_size=3)))
            )
            rate = [[float(t), draw(st.sampled_from([0.0, 0.5, 2.0, 4.0]))] for t in starts]
        cand = {
            "name": f"c{i}",
            "work_quanta": work,
            "quantum_s": draw(st.sampled_from([0.5, 1.0, 2.0, 2.5])),
            "benefit_rate": rate,
            "horizon_s": last + draw(seconds) * 4,
            "save_s": draw(st.sampled_from([0.0, 0.068075, 0.5])),
            "load_s": draw(st.sampled_from([0.0, 0.047748, 0.5])),
            "initial": {
                "progress": progress,
                "durable": draw(st.integers(0, progress)) if is_active else progress,
                "active": is_active,
            },
        }
        if draw(st.integers(0, 3)) == 0:
            cand["half_life_s"] = draw(st.sampled_from([1.0, 5.0, 40.0]))
        candidates.append(cand)
    spec["candidates"] = candidates
    return spec
