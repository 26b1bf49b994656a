"""``learnsched run`` (the scheduler next to a real engine) and ``learnsched demo``."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from .._json import parse as parse_json
from ..gate import DEFAULT_MAX_HELD
from ._config import ConfigFlags
from ._engine import add_connection_arguments, endpoint_from_args
from .gate import address
from .output import EXIT_MISSING, EXIT_OK, EXIT_VIOLATION, emit_json, print_rows

__all__ = ["register"]


def _run_errors() -> tuple[type[Exception], ...]:
    from ..control.trainer import TrainerError
    from ..handoff.errors import HandoffProbeError

    return (TrainerError, HandoffProbeError)


class _ProgressLine:
    """One status line on stderr: redrawn in place on a terminal, else once a second."""

    def __init__(self, stream: TextIO | None = None, every_s: float = 1.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self.last = -float("inf")
        self.tty = self.stream.isatty()

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        if self.tty:
            self.stream.write(f"\r{line[:150]:<150}")
        elif now - self.last >= self.every_s:
            self.stream.write(line + "\n")
        else:
            return
        self.last = now
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``run`` and ``demo``."""
    run = commands.add_parser(
        "run", help="run the scheduler next to a vLLM or SGLang server and a trainer"
    )
    add = run.add_argument
    add("--engine", choices=("vllm", "sglang"), required=True, help="the serving engine")
    add("--url", required=True, help="the engine's http(s)://HOST:PORT")
    add_connection_arguments(run)
    add(
        "--trainer", action="append", metavar="MODULE:CLASS",
        help="a learnsched Trainer class; given once per job, a queue: every window goes to "
        "the job the portfolio's rollout picks (docs/portfolio.md)",
    )  # fmt: skip
    add("--trainer-options", default="{}", metavar="JSON", help="its keyword arguments")
    add(
        "--queue", metavar="FILE",
        help='a queue of jobs instead of --trainer: {"jobs": [{"name", "trainer", '
        '"trainer_options", "work_quanta", "quantum_s", "save_s", "load_s", "benefit_rate", '
        '"horizon_s"}, ...]}; job NAME keeps LEDGER-NAME.jsonl and STATE_DIR/NAME',
    )  # fmt: skip
    add(
        "--calendar", required=True, metavar="FILE",
        help='windows JSON: {"windows": [[start, deadline], ...], "clock": "relative" '
        '(seconds after the loop is ready) or "unix"}',
    )  # fmt: skip
    add(
        "--forecast", choices=("empirical", "exact", "causal"),
        help="decide under a forecast; causal: the policy of `learnsched online --trace` "
        "(the idle gap's end unknown), fitted on --history TRACE.csv",
    )  # fmt: skip
    add("--samples", type=int, default=64, help="sampled calendars per forecast decision")
    add(
        "--history", metavar="FILE",
        help="what the forecast is fitted on: past windows (calendar JSON), or with "
        "--forecast causal past requests (a trace CSV, as `learnsched online --trace` reads)",
    )  # fmt: skip
    add("--ledger", required=True, type=Path, help="the fsynced JSON-lines ledger")
    add("--state-dir", required=True, type=Path, help="the trainer's folder")
    add("--policy", default="rollout", help="the model's policy (default rollout)")
    add("--benefit-rate", type=float, default=1.0, help="g, s-eq. per s after publishing")
    add("--horizon", type=float, help="H on the loop's clock, s (default: last window + 1 h)")
    add("--recovery-s", type=float, default=0.5, help="return path t_ret, s (0.487 paper warm)")
    add("--residency-rate", type=float, default=0.0, help="rho, s-eq. per parked s")
    add("--quantum-margin", type=float, default=1.5, help="plan with this x measured quantum")
    add("--lookahead", type=int, default=64, metavar="K",
        help="plan each decision over the next K windows (default %(default)s) ...")  # fmt: skip
    add("--lookahead-cover", type=float, default=2.0, metavar="C",
        help="... or more, until they hold C x the work left (default %(default)s; "
             "at most 1024 windows)")  # fmt: skip
    add("--level", type=int, default=1, help="vLLM sleep level (1 keeps weights in host RAM)")
    add("--timeout", type=float, default=60.0, help="bound on each engine call, s")
    add(
        "--gate", type=address, metavar="[HOST:]PORT",
        help="serve the gate here (an OpenAI-compatible proxy in front of --url; loopback "
        "unless HOST is given) and send clients to it: a park waits for its requests in "
        "flight, holds new ones and returns early for them (needs the serve extra)",
    )  # fmt: skip
    add(
        "--notify", type=address, metavar="[HOST:]PORT",
        help="serve POST /arrival here, for a router that sends to the engine directly "
        "and tells the scheduler of each arrival",
    )  # fmt: skip
    add(
        "--drain-s", type=float, default=5.0,
        help="with --gate: how long the requests in flight may take to finish before a "
        "park, s (else the window is skipped; default 5)",
    )  # fmt: skip
    add(
        "--max-held", type=int, default=DEFAULT_MAX_HELD,
        help="with --gate: requests held at the closed door at most (later ones go on to "
        f"the engine, which holds them itself while parked; default {DEFAULT_MAX_HELD})",
    )  # fmt: skip
    add(
        "--metrics-port", type=address, metavar="[HOST:]PORT",
        help="serve the loop's Prometheus /metrics and its /healthz here (loopback unless "
        "HOST is given; needs the serve extra)",
    )  # fmt: skip
    add("--seconds", type=float, help="stop after this long, s")
    add("--return-tries", type=int, default=5,
        help="tries of a failed return before exit 3 (default %(default)s)")  # fmt: skip
    add("--return-backoff", type=float, default=0.5, metavar="S",
        help="wait after the first failed return, doubling up to 8 s (default %(default)s)")  # fmt: skip
    add("--clear-quarantine", action="store_true",
        help="the engine was checked: lift the ledger's quarantine and lend again")  # fmt: skip
    add("--json", action="store_true", help="print the totals as JSON")
    run.set_defaults(func=run_run, config_flags=ConfigFlags(run))

    demo = commands.add_parser(
        "demo", help="the scheduler on the simulated engine, Azure trace and CPU LoRA trainer"
    )
    add = demo.add_argument
    add("--seconds", type=float, default=60.0, help="wall seconds of replay (default 60)")
    add("--speedup", type=float, default=10.0, help="trace time compression (default 10)")
    add("--ledger", type=Path, help="ledger file (default: STATE_DIR/ledger.jsonl)")
    add("--state-dir", type=Path, help="the trainer's folder (default: beside the ledger)")
    add("--engine", choices=("vllm", "sglang"), default="vllm", help="simulated dialect")
    add(
        "--trace", type=Path, metavar="FILE",
        help="the request trace to replay (Azure or the project's CSV; default: the "
        "shipped Azure trace)",
    )  # fmt: skip
    add(
        "--no-gate", dest="gate", action="store_false",
        help="send the requests to the engine directly (the load generator tells the loop "
        "of arrivals; the engine runs batch-invariant)",
    )  # fmt: skip
    add("--work-quanta", type=int, default=240, help="J of the LoRA job")
    add("--plot", type=Path, metavar="FILE.png", help="draw the timeline")
    add("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(func=run_demo)


def _stop_on_signals(stop: Any) -> None:
    """SIGTERM and SIGINT stop the loop cleanly (a lent window returns first)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _check_demo_extras(gate: bool) -> None:
    """The demo's trainer needs the gpu extra, its gate the serve extra: say so before
    starting anything."""
    from importlib.util import find_spec

    from .._extras import MissingExtra, install_hint

    for module in ("torch", "transformers", "peft", "safetensors"):
        if find_spec(module) is None:
            raise MissingExtra(f"the demo's LoRA trainer needs {module}: {install_hint('gpu')}")
    if gate and find_spec("aiohttp") is None:
        raise MissingExtra(
            f"the demo's gate needs aiohttp: {install_hint('serve')} (or run it --no-gate)"
        )


def _failed(prog: str, err: Exception) -> int:
    """A trainer or engine that failed mid-run: one line, status 1 (or the error's own
    ``exit_status``: 3 for an engine that cannot be returned or is quarantined)."""
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    status = getattr(type(err), "exit_status", EXIT_VIOLATION)
    status = status if isinstance(status, int) else EXIT_VIOLATION
    kind = "" if status == EXIT_MISSING else "error: "  # as every command's status-3 line
    print(f"{prog}: {kind}{first}", file=sys.stderr)
    return status


def _windows_file(path: str | None, start_unix: float) -> list[Any]:
    from ..control.windows import read_calendar

    return [] if path is None else read_calendar(path, start_unix).windows


def run_run(args: argparse.Namespace) -> int:
    """``learnsched run``."""
    args = args.config_flags.resolve(args)
    from ..control.actuation import ServingEngine
    from ..control.deciders import ModelDecider
    from ..control.front import gate_summary
    from ..control.healing import Backoff
    from ..control.lookahead import DEFAULT_LOOKAHEAD, Lookahead
    from ..control.loop import ControlLoop, LoopOptions
    from ..control.trainer import TrainerCosts, TrainerProcess
    from ..control.windows import read_calendar
    from ..scenario import HandoffCosts

    trainers = args.trainer or []
    if (args.queue is None) == (not trainers):
        raise ValueError("give --trainer MODULE:CLASS (once per job for a queue) or --queue FILE")
    options = parse_json(args.trainer_options, "--trainer-options")
    if not isinstance(options, dict):
        raise TypeError(f"--trainer-options must be a JSON object, got {args.trainer_options!r}")
    if not args.ledger.parent.is_dir():
        raise ValueError(f"--ledger {args.ledger}: folder {args.ledger.parent} does not exist")
    start_unix = time.time()
    calendar = read_calendar(args.calendar, start_unix)
    causal = args.forecast == "causal"
    if causal and args.history is None:
        raise ValueError("--forecast causal is fitted on past requests: give --history TRACE.csv")
    history = [] if causal else _windows_file(args.history, start_unix)
    if args.drain_s <= 0:
        raise ValueError(f"--drain-s must be positive, got {args.drain_s!r}")
    if args.max_held < 0:
        raise ValueError(f"--max-held must be at least 0, got {args.max_held!r}")
    gate = None
    if args.gate is not None:
        from ..gate import Gate

        gate = Gate(args.url, args.engine, host=args.gate[0], port=args.gate[1],
                    max_held=args.max_held)  # fmt: skip
    engine = ServingEngine(
        endpoint_from_args(args), level=args.level, timeout_s=args.timeout,
        door=gate, drain_s=args.drain_s,
    )  # fmt: skip
    try:  # the flags' names, not the fields'
        lookahead = Lookahead(
            windows=args.lookahead, cover=args.lookahead_cover,
            max_windows=max(args.lookahead, DEFAULT_LOOKAHEAD.max_windows),
        )  # fmt: skip
    except (ValueError, TypeError) as err:
        raise ValueError(f"--lookahead/--lookahead-cover: {err}") from None
    last = calendar.windows[-1].end_s if calendar.windows else 0.0
    horizon = args.horizon if args.horizon is not None else last + 3600.0
    if args.queue is not None or len(trainers) > 1:
        return _run_queue(args, engine, gate, calendar, lookahead, horizon, options)

    def decider(work_quanta: int, costs: TrainerCosts) -> Any:
        handoff = HandoffCosts(
            recovery_s=args.recovery_s,
            residency_rate=args.residency_rate,
            save_s=costs.save_s,
            load_s=costs.load_s,
        )
        quantum_s = args.quantum_margin * costs.quantum_s
        if args.forecast is None:
            return ModelDecider(
                work_quanta, quantum_s, handoff, args.benefit_rate, horizon, args.policy,
                lookahead,
            )  # fmt: skip
        if causal:
            from ..calendar import load_trace
            from ..control.deciders import CausalForecastDecider

            return CausalForecastDecider(
                work_quanta, quantum_s, handoff, args.benefit_rate, horizon,
                history=load_trace(args.history), policy=args.policy, samples=args.samples,
            )  # fmt: skip
        from ..control.deciders import ForecastDecider

        return ForecastDecider(
            work_quanta, quantum_s, handoff, args.benefit_rate, horizon,
            forecaster=args.forecast, samples=args.samples, history=history,
            truth=calendar.windows, policy=args.policy,
        )  # fmt: skip

    line = _ProgressLine()
    loop = ControlLoop(
        engine,
        TrainerProcess(trainers[0], args.state_dir, options),
        calendar,
        decider,
        args.ledger,
        recovery_s=args.recovery_s,
        options=LoopOptions(
            until_s=args.seconds,
            return_backoff=Backoff(tries=args.return_tries, first_s=args.return_backoff),
            clear_quarantine=args.clear_quarantine,
        ),
        progress=line,
    )
    _stop_on_signals(loop.stop)
    with ExitStack() as stack:
        _serve_fronts(args, gate, loop.watcher.notify_arrival, stack, lambda: loop.gap_open)
        if args.metrics_port is not None:
            from ..control.observe import LoopObserver

            observer = LoopObserver(loop, *args.metrics_port).start()
            stack.callback(observer.stop)
            print(f"{args.command_prog}: metrics {observer.url}/metrics, health "
                  f"{observer.url}/healthz", file=sys.stderr)  # fmt: skip
        try:
            totals = loop.run()
        except _run_errors() as err:
            return _failed(args.command_prog, err)
        finally:
            line.close()
        counts = None if gate is None else gate.counts()
    result = {
        **totals.to_json(),
        **gate_summary(counts, failed=None, skipped=totals.skipped_windows),
        "ledger": str(args.ledger),
        "overhead": loop.overhead.to_json(),
    }
    if args.json:
        emit_json(result)
    else:
        print_rows([(key, str(value)) for key, value in result.items() if key != "overhead"])
    return EXIT_OK


def _serve_fronts(
    args: argparse.Namespace, gate: Any, notify_arrival: Any, stack: ExitStack,
    gap_open: Any = None,
) -> None:  # fmt: skip
    """Start the gate and the arrival server (if asked), telling ``notify_arrival`` (of
    held arrivals, and of all while ``gap_open()``: see ``held_arrivals``)."""
    from ..control.front import held_arrivals

    if gate is not None:
        gate.on_arrival = held_arrivals(notify_arrival, gap_open)
        stack.enter_context(gate)
        print(f"{args.command_prog}: gate {gate.url} -> {args.url}", file=sys.stderr)
    if args.notify is not None:
        from ..gate import NotifyServer

        host, port = args.notify
        notify = stack.enter_context(NotifyServer(notify_arrival, host, port))
        print(f"{args.command_prog}: arrivals to POST {notify.url}", file=sys.stderr)


def _queue_jobs(args: argparse.Namespace, options: dict[str, Any], horizon: float) -> list[Any]:
    """``--queue FILE``'s jobs, or one per ``--trainer`` (each started once to read its
    ``J`` and timings; named job-0, job-1, ...; every one with ``--benefit-rate``)."""
    from ..control.trainer import TrainerProcess
    from ..portfolio.queue import QueuedJob, read_queue

    if args.queue is not None:
        return read_queue(args.queue)
    jobs = []
    for i, spec in enumerate(args.trainer):
        name = f"job-{i}"
        probe = TrainerProcess(spec, args.state_dir / name, options)
        try:
            probe.start()
            costs, work = probe.costs, probe.work_quanta
        finally:
            probe.close()
        jobs.append(
            QueuedJob(
                name,
                spec,
                options,
                work,
                costs.quantum_s,
                args.benefit_rate,
                horizon,
                costs.save_s,
                costs.load_s,
            )
        )
    return jobs


def _run_queue(
    args: argparse.Namespace, engine: Any, gate: Any, calendar: Any, lookahead: Any,
    horizon: float, options: dict[str, Any],
) -> int:  # fmt: skip
    """``learnsched run`` with several jobs: the portfolio decides whom each window serves."""
    from ..control.front import gate_summary
    from ..control.healing import Backoff
    from ..control.loop import LoopOptions
    from ..portfolio.queue import TrainerQueue

    if args.metrics_port is not None:  # LoopObserver reads one loop's totals
        raise ValueError("--metrics-port serves a run with one trainer, not a --queue")
    jobs = _queue_jobs(args, options, horizon)
    line = _ProgressLine()
    queue = TrainerQueue(
        engine, jobs, calendar, args.ledger, args.state_dir,
        recovery_s=args.recovery_s, residency_rate=args.residency_rate,
        quantum_margin=args.quantum_margin, policy=args.policy, lookahead=lookahead,
        loop_options=LoopOptions(
            until_s=args.seconds,
            return_backoff=Backoff(tries=args.return_tries, first_s=args.return_backoff),
            clear_quarantine=args.clear_quarantine,
        ),
        progress=line,
    )  # fmt: skip
    _stop_on_signals(queue.stop)
    with ExitStack() as stack:
        _serve_fronts(args, gate, queue.notify_arrival, stack)
        try:
            turns = queue.run()
        except _run_errors() as err:
            return _failed(args.command_prog, err)
        finally:
            line.close()
        counts = None if gate is None else gate.counts()
    skipped = sum(t.skipped_windows for ts in turns.values() for t in ts)
    result = {
        "jobs": queue.summary(),
        **gate_summary(counts, failed=None, skipped=skipped),
        "ledgers": {job.name: str(path) for job, path in zip(jobs, queue.ledgers, strict=True)},
    }
    if args.json:
        emit_json(result)
    else:
        print_rows(
            [
                (f"{name} {k}", str(v))
                for name, job in result["jobs"].items()
                for k, v in job.items()
            ]
        )
    return EXIT_OK


def run_demo(args: argparse.Namespace) -> int:
    """``learnsched demo``."""
    from ..control.demo import DemoOptions
    from ..control.demo import run_demo as demo

    _check_demo_extras(args.gate)
    if args.plot is not None:
        from .._figures import pyplot

        pyplot()  # fail on a missing matplotlib before running, not after
    options = DemoOptions(
        seconds=args.seconds,
        speedup=args.speedup,
        ledger=args.ledger,
        state_dir=args.state_dir,
        engine=args.engine,
        trace=args.trace,
        gate=args.gate,
        work_quanta=args.work_quanta,
    )
    line = _ProgressLine()
    try:
        summary, timeline = demo(options, progress=line)
    except _run_errors() as err:
        return _failed(args.command_prog, err)
    finally:
        line.close()
    if args.plot is not None:
        from ..control.timeline import plot_timeline

        plot_timeline(
            args.plot,
            ledger=timeline["ledger"],
            run=timeline["run"],
            windows=timeline["windows"],
            load=timeline["load"],
            arrivals=timeline["arrivals"],
            misses=timeline["misses"],
        )
    if args.json:
        emit_json(summary)
    else:
        print_rows([(key, str(value)) for key, value in summary.items()])
    return EXIT_OK
