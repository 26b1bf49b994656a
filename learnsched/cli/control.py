"""``learnsched run`` (the scheduler next to a real engine) and ``learnsched demo``."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ..control.config import RunConfig, build_run
from ..gate import DEFAULT_MAX_HELD
from ..gate.limits import add_limit_flags
from ._config import ConfigFlags
from ._engine import add_connection_arguments
from .costs import add_cost_flags, profile_costs
from .gate import address, url_argument
from .output import (
    EXIT_MISSING,
    EXIT_OK,
    EXIT_VIOLATION,
    emit_json,
    print_rows,
    print_values,
    text_value,
)

__all__ = ["register"]


def _run_errors() -> tuple[type[Exception], ...]:
    from ..control.trainer import TrainerError
    from ..serving.errors import HandoffProbeError

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
    from ..control.deciders import RUN_FORECASTS
    from ..serving.engines import ENGINES

    run = commands.add_parser(
        "run", help="run the scheduler next to a vLLM or SGLang server and a trainer"
    )
    add = run.add_argument
    add("--engine", choices=ENGINES, required=True, help="the serving engine")
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
        "--forecast", choices=RUN_FORECASTS,
        help="decide under a forecast; causal: the policy of `learnsched online --trace` "
        "(the idle gap's end unknown), fitted on --history TRACE.csv",
    )  # fmt: skip
    add(
        "--samples",
        type=int,
        default=RunConfig.samples,
        help="sampled calendars per forecast decision",
    )
    add(
        "--history", metavar="FILE",
        help="what the forecast is fitted on: past windows (calendar JSON), or with "
        "--forecast causal past requests (a trace CSV, as `learnsched online --trace` reads)",
    )  # fmt: skip
    add("--ledger", required=True, type=Path, help="the fsynced JSON-lines ledger")
    add("--state-dir", required=True, type=Path, help="the trainer's folder")
    add("--policy", default=RunConfig.policy, help="the model's policy (default rollout)")
    add(
        "--benefit-rate",
        type=float,
        default=RunConfig.benefit_rate,
        help="g, s-eq. per s after publishing",
    )
    add("--horizon", type=float, help="H on the loop's clock, s (default: last window + 1 h)")
    add(
        "--recovery-s",
        type=float,
        help=f"return path t_ret, s (default {RunConfig.recovery_s:g}, or --costs PROFILE's "
        "warm one; 0.487 paper warm)",
    )
    add(
        "--residency-rate",
        type=float,
        help=f"rho, s-eq. per parked s (default {RunConfig.residency_rate:g}, or --costs "
        "PROFILE's)",
    )
    add_cost_flags(run)
    add(
        "--quantum-margin",
        type=float,
        default=RunConfig.quantum_margin,
        help="plan with this x measured quantum",
    )
    add("--lookahead", type=int, default=RunConfig.lookahead_windows, metavar="K",
        help="plan each decision over the next K windows (default %(default)s) ...")  # fmt: skip
    add("--lookahead-cover", type=float, default=RunConfig.lookahead_cover, metavar="C",
        help="... or more, until they hold C x the work left (default %(default)s; "
             "at most 1024 windows)")  # fmt: skip
    add(
        "--level",
        type=int,
        default=RunConfig.sleep_level,
        help="vLLM sleep level (1 keeps weights in host RAM)",
    )
    add("--timeout", type=float, default=RunConfig.timeout_s, help="bound on each engine call, s")
    add(
        "--gate", type=address, metavar="[HOST:]PORT",
        help="serve the gate here (an OpenAI-compatible proxy in front of --url; loopback "
        "unless HOST is given) and send clients to it: a park waits for its requests in "
        "flight, holds new ones and returns early for them (needs the serve extra). It "
        "ends with the run: for production, --attach",
    )  # fmt: skip
    add(
        "--attach", metavar="URL",
        help="drive the door of a running `learnsched gate --control` instead: the "
        "http://HOST:PORT of its control listener (it must front --url); the gate, and "
        "its clients' address, outlive the run",
    )  # fmt: skip
    add(
        "--notify", type=address, metavar="[HOST:]PORT",
        help="serve POST /arrival here, for a router that sends to the engine directly "
        "and tells the scheduler of each arrival",
    )  # fmt: skip
    add(
        "--drain-s", type=float, default=RunConfig.drain_s,
        help="with a gate: how long the requests in flight may take to finish before a "
        "park, s (else the window is skipped; default 5)",
    )  # fmt: skip
    add(
        "--max-held", type=int, default=RunConfig.max_held,
        help="with --gate: requests held at the closed door at most (later ones are "
        f"answered 503 with Retry-After; default {DEFAULT_MAX_HELD})",
    )  # fmt: skip
    add_limit_flags(run, "with --gate: ")
    add(
        "--metrics-port", type=address, metavar="[HOST:]PORT",
        help="serve the loop's Prometheus /metrics and its /healthz here (loopback unless "
        "HOST is given; needs the serve extra)",
    )  # fmt: skip
    add("--seconds", type=float, help="stop after this long, s")
    add("--return-tries", type=int, default=RunConfig.return_tries,
        help="tries of a failed return before exit 3 (default %(default)s)")  # fmt: skip
    add("--return-backoff", type=float, default=RunConfig.return_backoff_s, metavar="S",
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
    add("--engine", choices=ENGINES, default="vllm",
        help="the engine's dialect (simulated unless --url)")  # fmt: skip
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
    add(
        "--url", type=url_argument,
        help="an engine already serving (--engine names its dialect), parked and resumed "
        "for real, instead of the simulated one (default: the simulated engine)",
    )  # fmt: skip
    add(
        "--trainer", metavar="MODULE:CLASS",
        help="the trainer (default: the reference LoRA trainer on CPU, which needs the gpu "
        "extra)",
    )  # fmt: skip
    add("--plot", type=Path, metavar="FILE.png", help="draw the timeline")
    add("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(func=run_demo)


def _stop_on_signals(stop: Any) -> None:
    """SIGTERM and SIGINT stop the loop cleanly (a lent window returns first)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _check_demo_extras(gate: bool, trainer: str | None) -> None:
    """The demo's reference trainer needs the gpu extra, its gate the serve extra: say so
    before starting anything."""
    from importlib.util import find_spec

    from .._extras import MissingExtra, install_hint

    for module in ("torch", "transformers", "peft", "safetensors"):
        if trainer is None and find_spec(module) is None:
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


def _handoff_costs(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the return path, residency, save and load the run plans with: a
    probe's profile (``--costs``: its warm path, the run returns by resume), or the flags
    and the trainer's own timings."""
    measured = profile_costs(args, ("warm",))
    if measured is None:
        return args  # the flags (RunConfig's defaults where unset), the trainer's timings
    flags = (("--recovery-s", "recovery_s"), ("--residency-rate", "residency_rate"))
    given = [flag for flag, dest in flags if getattr(args, dest) is not None]
    if given:
        raise ValueError(
            f"--costs {args.costs} gives the return path and residency: drop {', '.join(given)}"
        )
    costs = measured["warm"]
    args.recovery_s, args.residency_rate = costs.recovery_s, costs.residency_rate
    args.save_s, args.load_s = costs.save_s, costs.load_s
    return args


def run_run(args: argparse.Namespace) -> int:
    """``learnsched run``."""
    config = RunConfig.from_args(_handoff_costs(args.config_flags.resolve(args)))
    line = _ProgressLine()
    run = build_run(config, progress=line)
    _stop_on_signals(run.stop)

    def announce(text: str) -> None:
        print(f"{args.command_prog}: {text}", file=sys.stderr)

    try:
        result = run.run(announce)
    except _run_errors() as err:
        return _failed(args.command_prog, err)
    finally:
        line.close()
    if args.json:
        emit_json(result)
    elif run.queue is not None:
        jobs = result["jobs"].items()
        print_rows([(f"{name} {k}", text_value(v)) for name, job in jobs for k, v in job.items()])
    else:
        print_values({key: value for key, value in result.items() if key != "overhead"})
    return EXIT_OK


def run_demo(args: argparse.Namespace) -> int:
    """``learnsched demo``."""
    from ..control.demo import DemoOptions
    from ..control.demo import run_demo as demo

    _check_demo_extras(args.gate, args.trainer)
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
        url=args.url,
        trainer=args.trainer,
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
        print_values(summary)
    return EXIT_OK
