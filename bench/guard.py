"""The benchmark guard: each hot path of bench/ in CPU time beside its floor, in one run.

Usage::

    python bench/guard.py [--rounds 7] [--tolerance 1.0] [--json FILE] [CASE ...]

Each case is a hot path and its floor: a fixed calibration of the same shape that no
change to learnsched can speed up (the same call through the same binding doing nothing,
a memory stream or gather over the same entries, a numpy pass over the same rows, the
bare batch solve under a sweep). Both run in this process, taking turns round by round,
each round a loop of calls timed with ``time.process_time`` (CPU time: the machine's other
load costs wall time, far less CPU time). A case's ratio is the fastest round of the path
over the fastest round of its floor (the minimum is the least noisy statistic of CPU time;
taking turns puts a change of load on both), and a ratio above the case's documented
ceiling times ``--tolerance`` fails the guard, printing ``SLOWER name: ratio``. The
ceilings (``CASES``; docs/performance.md lists them) are the largest ratios measured
when they were set, x 1.3: runs of one build spread by up to 1.1x (the memory-bound
floors by up to 1.3x), so a slowdown of a third fails and a smaller one may pass.
Machines whose caches hold a memory-bound floor's data run it relatively faster; where
their ratios were larger, the ceiling covers them too (docs/performance.md says which
machines and runs set each ceiling). Each path's own answer is checked once before
timing (a fast wrong answer fails too).

Run it against an installed build from anywhere (``.ci/run``'s bench step runs it in the
main interpreter's bare environment): it puts only bench/ and tests/ (their helpers) on
the import path. Exit status: 0 every ratio within its ceiling, 1 a case slower, 2 bad
arguments.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

import learnsched as ls
from learnsched import _core

Call = Callable[[], object]


@dataclass(frozen=True)
class Pair:
    """A prepared hot path and its floor, each one call; ``calls`` of each make a round."""

    path: Call
    floor: Call
    calls: int


@dataclass(frozen=True)
class Case:
    """One guarded hot path: how to prepare it, what its floor is, its ceiling."""

    name: str
    floor: str
    ceiling: float  # the largest path / floor CPU-time ratio that passes
    prepare: Callable[[], Pair]


@dataclass(frozen=True)
class Measured:
    name: str
    floor: str
    path_s: float  # fastest round of the path, CPU seconds per call
    floor_s: float  # fastest round of the floor, CPU seconds per call
    ceiling: float

    @property
    def ratio(self) -> float:
        return self.path_s / self.floor_s


def _decide() -> Pair:
    """decide on the paper-size scenario (J = 36) against the same binding doing nothing
    (from the second call on, a remembered decision)."""
    from test_bench_solver import decide_scenario

    scenario = decide_scenario("unsaved_active")
    model = ls.Model(scenario)
    init = scenario.initial
    args = (0, init.progress, init.durable, init.active, "rollout")
    first = ls.solve(scenario, "rollout").steps[0]
    action = model.decide(*args)
    assert (action.name, action.quanta, action.checkpoint) == (
        first.action,
        first.quanta,
        first.checkpoint,
    )
    # partial: the loop calls the binding itself, with no Python frame of ours between.
    floor = partial(model._model._decide_floor, *args)
    return Pair(partial(model.decide, *args), floor, 200_000)


def _decide_many() -> Pair:
    """decide_many on 200,000 shuffled states at K = 4, J = 360,000 against a random
    gather of one double per state from a table of that model's states. The states are
    asked again and again, so the rounds read the decision memo (armed by the check below),
    which a batch computed anew would not."""
    from test_bench_decide import prepared, python_loop, shuffled

    model, states = prepared("4x360000")
    states = shuffled(states)
    window, progress, durable, active = states
    got = model.decide_many(*states, policy="rollout")
    every = tuple(c[::997] for c in states)
    want = python_loop(model, every, "rollout")  # type: ignore[arg-type]
    assert got.kind[::997].tolist() == [int(a.kind) for a in want]
    quanta = model.scenario.work_quanta + 1
    table = np.ones(2 * (len(model.scenario.windows) + 1) * quanta)
    index = (2 * (window.astype(np.int64) * quanta + progress) + active).astype(np.intp)
    return Pair(
        lambda: model.decide_many(window, progress, durable, active, "rollout"),
        lambda: table.take(index),
        3,
    )


def _grid() -> Pair:
    """The paper grid (1920 x 6 policies) against writing one double per table entry:
    (K + 1) (J + 1) states x 2 (idle, active) x 6 policies."""
    from test_bench_solver import GRID, SCENARIOS

    summary = ls.summarize(GRID, ls.solve_batch(SCENARIOS))
    assert (summary.wins, summary.ties, summary.losses) == (91, 1829, 0)
    entries = sum(2 * 6 * (len(s.windows) + 1) * (s.work_quanta + 1) for s in SCENARIOS)
    table = np.empty(entries)
    return Pair(lambda: ls.solve_batch(SCENARIOS), lambda: table.fill(1.0), 10)


def _madvise_hugepage(enabled: bool) -> bool:
    """Turn numpy's huge-page advice for large arrays on or off; the setting before."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _set_madvise_hugepage
    return bool(_set_madvise_hugepage(enabled))


def _first_touch(doubles: int) -> np.ndarray:
    """A new array of `doubles` ones without numpy's huge-page advice: the core maps its
    tables plainly, so both take the same page faults whatever the kernel's THP setting
    (with the advice and THP on madvise, np.ones faulted 4.5x less than the core)."""
    before = _madvise_hugepage(False)
    try:
        return np.ones(doubles)
    finally:
        _madvise_hugepage(before)


def _fresh_build() -> Pair:
    """A cap-size Model (one window of 2^23 - 1 quanta) built anew, tables first touched,
    against first-touching as many doubles as its tables hold (a new numpy array)."""
    from test_bench_solver import BUILDS, assert_built

    scenario = BUILDS["MAX_STATES"]
    core = scenario.to_core()
    assert_built(_core.finite.Model(core), scenario)
    doubles = 384 * 2**20 // 8  # the tables' 384 MiB (test_bench_solver's cap build)
    return Pair(lambda: _core.finite.Model(core), partial(_first_touch, doubles), 1)


def _request_floor(n: int) -> Call:
    """One numpy reduction over n requests' three columns (what an O(n) kernel must read)."""
    columns = np.random.default_rng(0).random((3, n))
    return lambda: columns.sum(axis=1)


def _scan() -> Pair:
    """The Eq. 6 feasibility scan of 1000 requests against a pass over its columns."""
    from test_bench_capacity import RATE, assert_scan, steady_trace

    from learnsched.capacity import RateProfile, check_feasibility

    trace, capacity = steady_trace(1000), RateProfile.constant(RATE)
    result = check_feasibility(trace, capacity)
    assert_scan(result.slack, result.first_violation, 1000)
    return Pair(lambda: check_feasibility(trace, capacity), _request_floor(1000), 5000)


def _replay() -> Pair:
    """The AIMD replay of 1000 requests against a pass over its columns."""
    from capacity_support import poisson_trace
    from test_bench_capacity import RATE, REPLAY_CONFIG

    from learnsched.capacity import RateProfile, replay

    trace, capacity = poisson_trace(1000), RateProfile.constant(RATE)
    assert np.all(replay(trace, capacity, REPLAY_CONFIG).finish >= trace.arrival)
    return Pair(lambda: replay(trace, capacity, REPLAY_CONFIG), _request_floor(1000), 2000)


def _windows() -> Pair:
    """idle_windows of a 100,000-row bursty trace against a running sum of its work
    (numpy's cumsum: one chain of dependent float adds, scalar code as the walk's Eq. 6
    scans are), not a sort of its arrivals: numpy's sort is SIMD code, whose speed against
    scalar code differs by machine (docs/performance.md)."""
    from test_bench_windows import PATH
    from test_calendar_windows_scale import bursty_trace

    from learnsched.calendar import idle_windows

    trace = bursty_trace(3, 100_000, 1.0, 20.0)
    assert len(idle_windows(trace, 1.0, PATH, 10.0).windows) > 1000
    work = np.ascontiguousarray(trace.work)
    return Pair(lambda: idle_windows(trace, 1.0, PATH, 10.0), lambda: np.cumsum(work), 3)


def _trace_read() -> Pair:
    """load_trace of a 100,000-row synthetic Azure trace (read column by column) against
    numpy's CSV parser on its two token columns."""
    from test_bench_traces import azure_file, numpy_floor, row_by_row, trace_bits

    from learnsched.calendar import load_trace

    folder = tempfile.TemporaryDirectory(prefix="learnsched-guard-")  # gone at exit
    path = azure_file(Path(folder.name), 100_000)
    assert trace_bits(load_trace(path)) == trace_bits(row_by_row(path))

    def read() -> object:
        return load_trace(Path(folder.name) / path.name)

    return Pair(read, partial(numpy_floor, path), 1)


def _sweep() -> Pair:
    """`sweep` of the paper grid over 5 cold recovery times (9600 rows, one thread, CSV
    written) against a bare solve_batch of as many paper-grid rows."""
    from test_bench_solver import SCENARIOS
    from test_bench_sweep import GRID_SPEC

    from learnsched.sweep import sweep

    folder = tempfile.TemporaryDirectory(prefix="learnsched-guard-")  # gone at exit
    counter = itertools.count()

    def run() -> object:
        out = Path(folder.name) / f"run{next(counter)}.csv"  # a new sweep, not a resume
        return sweep(GRID_SPEC, out, workers=1, progress=False)

    paper = run().summaries[3]  # type: ignore[attr-defined]
    assert (paper.wins, paper.ties, paper.losses) == (91, 1829, 0)
    rows = SCENARIOS * 5
    return Pair(run, lambda: ls.solve_batch(rows), 2)


def _loop_decision() -> Pair:
    """The control loop's decision (600 windows ahead, J = 240, the kept model rebuilt)
    against rebuilding that model for the same plan and deciding on it in C++ alone."""
    from test_bench_control import COSTS, QUANTUM_S, WORK_QUANTA, calendar

    from learnsched.control.deciders import ModelDecider

    ahead = calendar(600)
    decider = ModelDecider(WORK_QUANTA, QUANTUM_S, COSTS, 1.0, 10.0 * 600 + 3600.0)
    decider.decide(ahead, 0, 0, False)
    planned = decider.scenario(ahead, 0, 0, False)
    expected = ls.solve(planned, "rollout").steps[0]
    action = decider.decide(ahead, 0, 0, False)
    assert (action.name, action.quanta) == (expected.action, expected.quanta)
    core_scenario = planned.to_core()
    kept = _core.finite.Model(core_scenario)

    def floor() -> object:
        kept.rebuild(core_scenario)
        return kept._decide_floor(0, 0, 0, False, "rollout")

    return Pair(lambda: decider.decide(ahead, 0, 0, False), floor, 300)


def _one_shot_solve() -> Pair:
    """A one-shot rollout solve at 1000 x 3600 (``ls.solve``: a new model, its tables from
    the thread's table cache) against the same solve into a kept model, rebuilt."""
    from test_bench_solver import ONE_SHOT, solve_into_kept_model

    scenario = ONE_SHOT["one path"]
    reused = solve_into_kept_model(scenario, "rollout")
    assert ls.solve(scenario, "rollout") == reused()
    return Pair(partial(ls.solve, scenario, "rollout"), reused, 20)


# Ceilings: the largest ratio of the runs on each development machine, x 1.3, rounded up
# (docs/performance.md, "The benchmark guard", lists the machines and the ratios).
CASES = (
    Case("decide", "the same binding doing nothing", 1.7, _decide),
    Case("decide_many, shuffled, 4 x 360,000", "a gather per state", 31.2, _decide_many),
    Case("paper grid, 1920 x 6", "a double written per table entry", 14.2, _grid),
    Case("fresh cap-size Model build", "first touch of its 384 MiB", 4.6, _fresh_build),
    Case("Eq. 6 scan, 1000 requests", "a numpy reduction over its columns", 5.6, _scan),
    Case("AIMD replay, 1000 requests", "a numpy reduction over its columns", 27.5, _replay),
    Case("idle windows, 100,000 rows", "a running sum of its work", 83.0, _windows),
    Case("reading a trace, 100,000 rows", "np.loadtxt of its token columns", 1.9, _trace_read),
    Case("sweep, 9600 rows to CSV", "bare solve_batch of as many rows", 10.5, _sweep),
    Case("loop decision, 600 windows ahead", "the kept model rebuilt", 1.8, _loop_decision),
    Case("one-shot solve, 1000 x 3600", "a solve into a kept model", 1.4, _one_shot_solve),
)


def _cpu_per_call(call: Call, calls: int) -> float:
    start = time.process_time()
    for _ in itertools.repeat(None, calls):
        call()
    return (time.process_time() - start) / calls


def measure(case: Case, rounds: int) -> Measured:
    """The fastest round of the path and of its floor, the two taking turns."""
    pair = case.prepare()
    pair.path(), pair.floor()  # warm: indexes, caches, the allocator's pools
    best = [float("inf"), float("inf")]
    for r in range(rounds):
        for side in (0, 1) if r % 2 == 0 else (1, 0):
            call = (pair.path, pair.floor)[side]
            best[side] = min(best[side], _cpu_per_call(call, pair.calls))
    return Measured(case.name, case.floor, best[0], best[1], case.ceiling)


def report(results: Sequence[Measured], tolerance: float) -> int:
    """Print every case; 1 if any ratio exceeds its ceiling x tolerance."""
    print(f"{'ratio':>7} {'ceiling':>7} {'path (us)':>12} {'floor (us)':>12}  case (floor)")
    for m in results:
        print(
            f"{m.ratio:7.2f} {m.ceiling * tolerance:7.2f} {m.path_s * 1e6:12.2f} "
            f"{m.floor_s * 1e6:12.2f}  {m.name} ({m.floor})"
        )
    slower = [m for m in results if m.ratio > m.ceiling * tolerance]
    for m in slower:
        print(f"SLOWER {m.name}: {m.ratio:.2f}x its floor (ceiling {m.ceiling * tolerance:.2f}x)")
    print(f"guard: {len(results)} cases, {len(slower)} slower than their ceilings")
    return 1 if slower else 0


@contextmanager
def _timed(name: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    print(f"guard: {name} measured in {time.perf_counter() - start:.1f} s", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="turns of path and floor")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1.0,
        help="factor on every ceiling (> 1 loosens the guard; default 1)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the ratios as JSON")
    parser.add_argument("cases", nargs="*", help="case names (default: every case)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or not args.tolerance > 0:
        parser.error("--rounds must be >= 1 and --tolerance > 0")
    unknown = set(args.cases) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown case(s) {sorted(unknown)}; cases: {[c.name for c in CASES]}")
    results = []
    for case in CASES:
        if not args.cases or case.name in args.cases:
            with _timed(case.name):
                results.append(measure(case, args.rounds))
    if args.json:
        rows = [{**vars(m), "ratio": m.ratio} for m in results]
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return report(results, args.tolerance)


if __name__ == "__main__":
    sys.exit(main())
