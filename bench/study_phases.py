"""Where a causal study setting's time goes: CPU time per phase, and the command itself.

Usage::

    learnsched synth --days 2 --out two-days.csv
    python bench/study_phases.py two-days.csv [--seeds 5] [--samples 16] [--threads 1 2]

First each phase of ``learnsched online --trace TRACE --seeds K --samples N`` run alone,
serially, in CPU time (``time.process_time``): reading the trace; one scan of its past gaps
(``GapRecords``); every horizon's gap pools with the calibration's scores; the exact
clairvoyants; the forecasts' sampled continuations (one per seed); the policies' own runs.
All but the last two are done once per horizon whatever ``--seeds``. Then the command
itself, in a fresh process on each ``--threads`` count: its wall time and CPU time.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from learnsched.calendar import load_trace
from learnsched.calendar.causal import (
    CAUSAL_POLICIES,
    GAP_MODELS,
    CausalForecast,
    CausalTrace,
    clairvoyant,
    run_causal,
)
from learnsched.calendar.study import _GapFits, horizon_starts, make_forecaster
from learnsched.cli import build_parser
from learnsched.cli.calendar import _candidate, _service, _settings

T = TypeVar("T")


def phases(trace_path: str, seeds: int, samples: int) -> dict[str, float]:
    """CPU seconds of each phase of the setting, run serially."""
    args = build_parser().parse_args(
        ["online", "--trace", trace_path, "--seeds", str(seeds), "--samples", str(samples)]
    )
    candidate, settings = _candidate(args), _settings(args)
    cpu: dict[str, float] = defaultdict(float)

    def timed(phase: str, work: Callable[..., T], *a: Any) -> T:
        started = time.process_time()
        out = work(*a)
        cpu[phase] += time.process_time() - started
        return out

    def read() -> CausalTrace:
        return CausalTrace(load_trace(trace_path, _service(args), args.sort), args.rate)

    trace = timed("read the trace", read)
    starts = horizon_starts(trace.span_s, settings.warmup_s, settings.horizon_s)
    fits = timed("scan the past gaps", _GapFits, trace, candidate, settings, starts)
    forecaster = make_forecaster(settings.forecaster, settings.history_s)
    for h, start in enumerate(starts):
        end = start + settings.horizon_s
        scenario = candidate.scenario(end)
        pool = timed("gap pools and calibration", fits.pool, start, settings.forecaster)
        for model in GAP_MODELS:
            fit = pool if model == settings.forecaster else fits.pool(start, model, False)
            timed("gap pools and calibration", fits.scores, h, model, fit)
        timed("clairvoyant", clairvoyant, trace, scenario, start, end, settings.rules)
        for seed in settings.seeds:
            rng = np.random.default_rng([seed, h, samples])
            forecast = timed(
                "forecasts (per seed)",
                CausalForecast,
                *(trace, scenario, start, forecaster, samples, rng, settings.rules, pool),
            )
            timed(
                "policies (per seed)",
                run_causal,
                *(trace, scenario, start, end, CAUSAL_POLICIES, forecast, seed, settings.rules),
            )
    return dict(cpu)


def command(trace_path: str, seeds: int, samples: int, threads: int) -> tuple[float, float]:
    """Wall and CPU seconds of the command in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    flags = ["--seeds", str(seeds), "--samples", str(samples), "--threads", str(threads)]
    subprocess.run(
        [sys.executable, "-m", "learnsched", "online", "--trace", trace_path, *flags],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    """Print the phases and the command's times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    args = parser.parse_args()
    cpu = phases(args.trace, args.seeds, args.samples)
    once = sum(v for k, v in cpu.items() if "per seed" not in k)
    for phase, seconds in cpu.items():
        print(f"{phase:28s} {seconds:7.2f} s CPU")
    print(f"{'once per horizon, in all':28s} {once:7.2f} s CPU")
    for threads in args.threads:
        wall, used = command(args.trace, args.seeds, args.samples, threads)
        print(f"the command on {threads} thread(s): {wall:.2f} s wall, {used:.2f} s CPU")


if __name__ == "__main__":
    main()
