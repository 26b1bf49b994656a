"""The scheduler as ``learnsched run`` assembles it: a typed :class:`RunConfig` and
:func:`build_run`.

``learnsched run`` parses its flags (and ``--config FILE.toml``), turns them into a
:class:`RunConfig` (:meth:`RunConfig.from_args`) and runs :func:`build_run`'s
:class:`SchedulerRun`; a Python program builds the same run from a :class:`RunConfig`
it writes itself::

    from learnsched.control import RunConfig, build_run

    config = RunConfig(
        engine="vllm", url="http://127.0.0.1:8000", trainers=("mypkg.train:Job",),
        calendar="calendar.json", ledger=Path("ledger.jsonl"), state_dir=Path("state"),
    )
    summary = build_run(config).run()  # the totals `learnsched run --json` prints

:func:`build_run` checks the configuration (``ValueError``/``TypeError`` naming the
flag of ``learnsched run``), reads the calendar, makes the gate, the engine control and
the control loop with its decider (or, for several jobs, the trainer queue), and starts
nothing: :meth:`SchedulerRun.run` serves the gate, the arrival server and the metrics
while the loop runs, and stops them when it ends.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._json import parse as parse_json
from ..gate import DEFAULT_MAX_HELD
from ..gate.limits import GateLimits

if TYPE_CHECKING:
    from ..gate import Gate, RemoteGate
    from ..serving.endpoint import ServingEndpoint
    from .actuation import ServingEngine
    from .deciders import Decider
    from .lookahead import Lookahead
    from .loop import ControlLoop, LoopOptions
    from .queue import QueuedJob, TrainerQueue
    from .trainer import TrainerCosts
    from .windows import KnownCalendar, Window

__all__ = ["API_KEY_ENV", "RunConfig", "SchedulerRun", "build_run", "serving_endpoint"]

API_KEY_ENV = "LEARNSCHED_API_KEY"
"""The environment variable the engine's API key defaults to (keeps the key off the
command line)."""

Address = tuple[str, int]
"""``(host, port)`` to serve on."""

# learnsched run's flags whose destination is not the field's name (the fields carry units).
_RENAMED = {
    "trainer": "trainers",
    "horizon": "horizon_s",
    "lookahead": "lookahead_windows",
    "level": "sleep_level",
    "timeout": "timeout_s",
    "seconds": "until_s",
    "return_backoff": "return_backoff_s",
}


@dataclass(frozen=True)
class RunConfig:
    """Every option of ``learnsched run``, typed (the flag's name where a field is renamed).

    Parameters
    ----------
    engine
        The serving engine's dialect, ``"vllm"`` or ``"sglang"`` (``--engine``).
    url
        The engine's ``http(s)://HOST:PORT`` (``--url``).
    calendar
        The windows JSON file (``--calendar``): ``{"windows": [[start, deadline], ...],
        "clock": "relative" | "unix"}``.
    ledger
        The fsynced JSON-lines ledger (``--ledger``); its folder must exist.
    state_dir
        The trainer's folder (``--state-dir``).
    trainers
        ``MODULE:CLASS`` of each job's :class:`~.trainer.Trainer` (``--trainer``, once
        per job); several make a queue the portfolio shares the windows among.
    trainer_options
        The trainers' keyword arguments (``--trainer-options``).
    queue
        A queue file of jobs instead of ``trainers`` (``--queue``).
    api_key
        Sent as ``Authorization: Bearer KEY`` (``--api-key``; ``None``: the
        :data:`API_KEY_ENV` environment variable, if set).
    ca_file
        Certificate authorities for an ``https://`` engine URL, PEM (``--ca-file``).
    forecast
        Decide under a forecast: ``"empirical"``, ``"exact"`` or ``"causal"``
        (``--forecast``; ``None``: on the calendar itself).
    samples
        Sampled calendars per forecast decision, ``N`` (``--samples``).
    history
        What the forecast is fitted on (``--history``): past windows (calendar JSON), or
        with ``forecast="causal"`` past requests (a trace CSV).
    policy
        The model's policy (``--policy``).
    benefit_rate
        ``g`` after publishing, s-eq. per s (``--benefit-rate``).
    horizon_s
        ``H`` on the loop's clock, seconds (``--horizon``; ``None``: the last window's
        end plus one hour).
    recovery_s
        The return path's estimate ``t_ret``, seconds (``--recovery-s``).
    residency_rate
        ``rho``, s-eq. per parked second (``--residency-rate``).
    save_s, load_s
        The checkpoint's save and load, seconds (``--costs PROFILE``'s; ``None``: the
        trainer's own timings, :class:`~.trainer.TrainerCosts`).
    quantum_margin
        Plan each quantum as this many times the measured one (``--quantum-margin``).
    lookahead_windows
        Windows each decision plans over, ``K`` (``--lookahead``) ...
    lookahead_cover
        ... or more, until they hold this many times the work left (``--lookahead-cover``).
    sleep_level
        vLLM's sleep level (``--level``; 1 keeps the weights in host memory).
    timeout_s
        Bound on each engine call, seconds (``--timeout``).
    gate
        Serve the gate at this ``(host, port)`` and send clients to it (``--gate``); it
        lives as long as the run.
    attach
        Drive the door of a long-lived ``learnsched gate --control`` instead, at this
        ``http://HOST:PORT`` of its control listener (``--attach``); it outlives the run.
    notify
        Serve ``POST /arrival`` at this ``(host, port)`` (``--notify``).
    drain_s
        With a gate: how long the requests in flight may take to finish before a park,
        seconds (``--drain-s``).
    max_held
        With a gate: requests held at the closed door at most (``--max-held``).
    gate_limits
        With a gate: its bounds on bodies, waits and connections (``--max-body-mib``,
        ``--body-budget-mib``, ``--header-timeout-s``, ``--body-timeout-s``,
        ``--upstream-timeout-s``, ``--max-connections``).
    metrics_port
        Serve the loop's Prometheus ``/metrics`` and ``/healthz`` at this
        ``(host, port)`` (``--metrics-port``; one trainer only).
    until_s
        Stop after this long, seconds (``--seconds``; ``None``: when the calendar ends).
    return_tries
        Tries of a failed return before the run stops (``--return-tries``).
    return_backoff_s
        Wait after the first failed return, seconds, doubling up to 8 s
        (``--return-backoff``).
    clear_quarantine
        The engine was checked: lift the ledger's quarantine (``--clear-quarantine``).
    """

    engine: str
    url: str
    calendar: str | os.PathLike[str]
    ledger: Path
    state_dir: Path
    trainers: tuple[str, ...] = ()
    trainer_options: Mapping[str, Any] = field(default_factory=dict)
    queue: str | os.PathLike[str] | None = None
    api_key: str | None = None
    ca_file: str | None = None
    forecast: str | None = None
    samples: int = 64
    history: str | os.PathLike[str] | None = None
    policy: str = "rollout"
    benefit_rate: float = 1.0
    horizon_s: float | None = None
    recovery_s: float = 0.5
    residency_rate: float = 0.0
    save_s: float | None = None
    load_s: float | None = None
    quantum_margin: float = 1.5
    lookahead_windows: int = 64
    lookahead_cover: float = 2.0
    sleep_level: int = 1
    timeout_s: float = 60.0
    gate: Address | None = None
    attach: str | None = None
    notify: Address | None = None
    drain_s: float = 5.0
    max_held: int = DEFAULT_MAX_HELD
    gate_limits: GateLimits = field(default_factory=GateLimits)
    metrics_port: Address | None = None
    until_s: float | None = None
    return_tries: int = 5
    return_backoff_s: float = 0.5
    clear_quarantine: bool = False

    def checkpoint_s(self, trainer: TrainerCosts) -> dict[str, float]:
        """``{"save_s", "load_s"}`` a plan uses: ``--costs``'s, else the trainer's own."""
        return {
            "save_s": trainer.save_s if self.save_s is None else self.save_s,
            "load_s": trainer.load_s if self.load_s is None else self.load_s,
        }

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunConfig:
        """The configuration of ``learnsched run``'s parsed flags (``--config`` already
        resolved): each field from the flag of its name, or of the name without the unit
        (``--horizon`` gives ``horizon_s``; ``--trainer``, ``trainers``; ``--lookahead``,
        ``lookahead_windows``; ``--level``, ``sleep_level``; ``--seconds``, ``until_s``),
        a field no flag gave (``None`` for ``--recovery-s`` and ``--residency-rate``) its
        default, ``--trainer-options`` parsed from its JSON (``ValueError``/``TypeError``
        naming the flag)."""
        trainers = tuple(args.trainer or ())
        _check_job_source(trainers, args.queue)
        options = parse_json(args.trainer_options, "--trainer-options")
        if not isinstance(options, dict):
            raise TypeError(
                f"--trainer-options must be a JSON object, got {args.trainer_options!r}"
            )
        names = {_RENAMED.get(dest, dest): dest for dest in vars(args)}
        values = {
            f: getattr(args, names[f])
            for f in cls.__dataclass_fields__
            if f in names and f not in ("trainers", "trainer_options")
        }
        for unset in ("recovery_s", "residency_rate"):  # None: the default
            if values.get(unset, 0.0) is None:
                del values[unset]
        limits = GateLimits.from_args(args)
        return cls(trainers=trainers, trainer_options=options, gate_limits=limits, **values)


def _check_job_source(trainers: tuple[str, ...], queue: object) -> None:
    """Jobs come from ``--trainer`` or from ``--queue``, one of the two."""
    if (queue is None) == (not trainers):
        raise ValueError("give --trainer MODULE:CLASS (once per job for a queue) or --queue FILE")


def serving_endpoint(
    url: str, engine: str, api_key: str | None = None, ca_file: str | None = None
) -> ServingEndpoint:
    """The engine at ``url`` speaking ``engine``, with its key (default: the
    :data:`API_KEY_ENV` environment variable) and certificate authorities."""
    from ..serving.endpoint import ServingEndpoint

    key = api_key if api_key is not None else os.environ.get(API_KEY_ENV) or None
    return ServingEndpoint(url, engine, api_key=key, ca_file=ca_file)


class SchedulerRun:
    """The scheduler :func:`build_run` assembled, ready to :meth:`run`.

    Attributes
    ----------
    config
        What it was built from.
    engine
        The engine control (:class:`~.actuation.ServingEngine`).
    gate
        The gate in front of the engine: served by the run, or attached to
        (``None``: none).
    loop
        The control loop of a run with one trainer (``None`` for a queue).
    queue
        The trainer queue of a run with several jobs (``None`` for one trainer).
    """

    def __init__(
        self,
        config: RunConfig,
        engine: ServingEngine,
        gate: Gate | RemoteGate | None,
        loop: ControlLoop | None = None,
        queue: TrainerQueue | None = None,
    ) -> None:
        self.config = config
        self.engine = engine
        self.gate = gate
        self.loop = loop
        self.queue = queue

    def stop(self) -> None:
        """Stop the run cleanly: a lent window returns the engine first (for signals)."""
        if self.loop is not None:
            self.loop.stop()
        elif self.queue is not None:
            self.queue.stop()

    def run(self, announce: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Serve the gate, arrival server and metrics, run the loop (or the queue) to its
        end, stop them; the summary ``learnsched run --json`` prints.

        Parameters
        ----------
        announce
            Told where each server listens, one line each (``learnsched run`` prints
            them on stderr).

        Returns
        -------
        dict
            One trainer: the run's totals, the gate's counts, ``ledger`` and the loop's
            ``overhead``. A queue: ``jobs`` (each job's summary), the gate's counts and
            ``ledgers`` (each job's ledger).

        Raises
        ------
        learnsched.control.TrainerError, learnsched.serving.errors.HandoffProbeError
            The trainer or the engine failed mid-run (an engine that cannot be returned
            or is quarantined: :class:`~.healing.EngineUnreturnable`,
            :class:`~.healing.Quarantined`).
        """
        from .front import gate_summary

        say = announce if announce is not None else _silent
        with ExitStack() as stack:
            if self.loop is not None:
                loop = self.loop
                self._serve_fronts(stack, say, loop.watcher.notify_arrival, lambda: loop.gap_open)
                if self.config.metrics_port is not None:
                    from .observe import LoopObserver

                    observer = LoopObserver(loop, *self.config.metrics_port).start()
                    stack.callback(observer.stop)
                    say(f"metrics {observer.url}/metrics, health {observer.url}/healthz")
                totals = loop.run()
                counts = None if self.gate is None else self.gate.counts()
                return {
                    **totals.to_json(),
                    **gate_summary(counts, failed=None, skipped=totals.skipped_windows),
                    "ledger": str(self.config.ledger),
                    "overhead": loop.overhead.to_json(),
                }
            queue = self.queue
            if queue is None:
                raise RuntimeError("a SchedulerRun holds a loop or a queue")
            self._serve_fronts(stack, say, queue.notify_arrival)
            turns = queue.run()
            counts = None if self.gate is None else self.gate.counts()
        skipped = sum(t.skipped_windows for ts in turns.values() for t in ts)
        return {
            "jobs": queue.summary(),
            **gate_summary(counts, failed=None, skipped=skipped),
            "ledgers": {
                job.name: str(path) for job, path in zip(queue.jobs, queue.ledgers, strict=True)
            },
        }

    def _serve_fronts(
        self,
        stack: ExitStack,
        say: Callable[[str], None],
        notify_arrival: Callable[..., None],
        gap_open: Callable[[], bool] | None = None,
    ) -> None:
        """Start the gate and the arrival server (if asked), telling ``notify_arrival``
        (of held arrivals, and of all while ``gap_open()``: see ``held_arrivals``)."""
        from .front import held_arrivals

        if self.gate is not None:
            self.gate.on_arrival = held_arrivals(notify_arrival, gap_open)
            stack.enter_context(self.gate)
            say(f"gate {self.gate.url} -> {self.config.url}")
        if self.config.notify is not None:
            from ..gate import NotifyServer

            host, port = self.config.notify
            notify = stack.enter_context(NotifyServer(notify_arrival, host, port))
            say(f"arrivals to POST {notify.url}")


def _silent(line: str) -> None:
    """An ``announce`` that tells no one."""


def build_run(config: RunConfig, *, progress: Callable[[str], None] | None = None) -> SchedulerRun:
    """The scheduler as ``learnsched run`` configures it, ready to :meth:`SchedulerRun.run`.

    Nothing is served or trained yet; for a queue built from ``trainers``, each trainer
    is started once here to read its ``J`` and timings.

    Parameters
    ----------
    config
        The run's configuration.
    progress
        Called with one line describing the state after each event of the loop.

    Raises
    ------
    ValueError, TypeError
        A configuration ``learnsched run`` refuses (the message names its flag), or a
        calendar, history or queue file that cannot be read.
    """
    from .actuation import ServingEngine
    from .lookahead import DEFAULT_LOOKAHEAD, Lookahead
    from .windows import read_calendar

    _check_job_source(config.trainers, config.queue)
    if not config.ledger.parent.is_dir():
        raise ValueError(f"--ledger {config.ledger}: folder {config.ledger.parent} does not exist")
    start_unix = time.time()
    calendar = read_calendar(config.calendar, start_unix, ahead=True)
    causal = config.forecast == "causal"
    if causal and config.history is None:
        raise ValueError("--forecast causal is fitted on past requests: give --history TRACE.csv")
    history = (
        []
        if causal or config.history is None
        else read_calendar(config.history, start_unix).windows
    )
    if config.drain_s <= 0:
        raise ValueError(f"--drain-s must be positive, got {config.drain_s!r}")
    if config.max_held < 0:
        raise ValueError(f"--max-held must be at least 0, got {config.max_held!r}")
    gate = _front(config)
    engine = ServingEngine(
        serving_endpoint(config.url, config.engine, config.api_key, config.ca_file),
        level=config.sleep_level, timeout_s=config.timeout_s, door=gate, drain_s=config.drain_s,
    )  # fmt: skip
    try:  # the flags' names, not the fields'
        lookahead = Lookahead(
            windows=config.lookahead_windows, cover=config.lookahead_cover,
            max_windows=max(config.lookahead_windows, DEFAULT_LOOKAHEAD.max_windows),
        )  # fmt: skip
    except (ValueError, TypeError) as err:
        raise ValueError(f"--lookahead/--lookahead-cover: {err}") from None
    last = calendar.windows[-1].end_s if calendar.windows else 0.0
    horizon_s = config.horizon_s if config.horizon_s is not None else last + 3600.0
    if config.queue is not None or len(config.trainers) > 1:
        queue = _build_queue(config, engine, calendar, lookahead, horizon_s, progress)
        return SchedulerRun(config, engine, gate, queue=queue)
    return SchedulerRun(
        config,
        engine,
        gate,
        loop=_build_loop(config, engine, calendar, lookahead, horizon_s, history, progress),
    )


def _front(config: RunConfig) -> Gate | RemoteGate | None:
    """The gate the run serves (``--gate``), or the long-lived one it attaches to
    (``--attach``: checked here, reached only when the run starts), or none."""
    if config.attach is None:
        if config.gate is None:
            return None
        from ..gate import Gate

        # Closed until the loop has returned the engine a killed run left parked and
        # taken its reference: no request reaches an engine not yet confirmed serving.
        return Gate(config.url, config.engine, host=config.gate[0], port=config.gate[1],
                    max_held=config.max_held, closed=True, ca_file=config.ca_file,
                    limits=config.gate_limits)  # fmt: skip
    from .._url import http_url
    from ..gate import RemoteGate

    if config.gate is not None:
        raise ValueError("--attach and --gate are two gates: give one")
    if config.max_held != DEFAULT_MAX_HELD:
        raise ValueError(
            "--max-held is the attached gate's own: give it to `learnsched gate --max-held`"
        )
    if config.gate_limits != GateLimits():
        raise ValueError(
            "the gate's bounds (--max-body-mib ... --max-connections) are the attached "
            "gate's own: give them to `learnsched gate`"
        )
    http_url("--attach", config.attach, schemes=("http",))
    return RemoteGate(config.attach, config.engine, config.url, timeout_s=config.timeout_s)


def _loop_options(config: RunConfig) -> LoopOptions:
    from .healing import Backoff
    from .loop import LoopOptions

    return LoopOptions(
        until_s=config.until_s,
        return_backoff=Backoff(tries=config.return_tries, first_s=config.return_backoff_s),
        clear_quarantine=config.clear_quarantine,
    )


def _build_loop(
    config: RunConfig,
    engine: ServingEngine,
    calendar: KnownCalendar,
    lookahead: Lookahead,
    horizon_s: float,
    history: list[Window],
    progress: Callable[[str], None] | None,
) -> ControlLoop:
    """One trainer's control loop, its decider made once the trainer's timings are known."""
    from ..scenario import HandoffCosts
    from .loop import ControlLoop
    from .trainer import TrainerProcess

    def decider(work_quanta: int, costs: TrainerCosts) -> Decider:
        handoff = HandoffCosts(
            recovery_s=config.recovery_s,
            residency_rate=config.residency_rate,
            **config.checkpoint_s(costs),
        )
        quantum_s = config.quantum_margin * costs.quantum_s
        g, h = config.benefit_rate, horizon_s
        if config.forecast is None:
            from .deciders import ModelDecider

            return ModelDecider(work_quanta, quantum_s, handoff, g, h, config.policy, lookahead)
        if config.forecast == "causal":
            from ..calendar import load_trace
            from .deciders import CausalForecastDecider

            assert config.history is not None  # build_run refuses causal without one
            return CausalForecastDecider(
                work_quanta, quantum_s, handoff, g, h,
                history=load_trace(config.history), policy=config.policy, samples=config.samples,
            )  # fmt: skip
        from .deciders import ForecastDecider

        return ForecastDecider(
            work_quanta, quantum_s, handoff, g, h,
            forecaster=config.forecast, samples=config.samples, history=history,
            truth=calendar.windows, policy=config.policy,
        )  # fmt: skip

    return ControlLoop(
        engine,
        TrainerProcess(config.trainers[0], config.state_dir, dict(config.trainer_options)),
        calendar,
        decider,
        config.ledger,
        recovery_s=config.recovery_s,
        options=_loop_options(config),
        progress=progress,
    )


def _build_queue(
    config: RunConfig,
    engine: ServingEngine,
    calendar: KnownCalendar,
    lookahead: Lookahead,
    horizon_s: float,
    progress: Callable[[str], None] | None,
) -> TrainerQueue:
    """Several jobs: the portfolio decides whom each window serves."""
    from .queue import TrainerQueue

    if config.metrics_port is not None:  # LoopObserver reads one loop's totals
        raise ValueError("--metrics-port serves a run with one trainer, not a --queue")
    return TrainerQueue(
        engine, _queue_jobs(config, horizon_s), calendar, config.ledger, config.state_dir,
        recovery_s=config.recovery_s, residency_rate=config.residency_rate,
        quantum_margin=config.quantum_margin, policy=config.policy, lookahead=lookahead,
        loop_options=_loop_options(config), progress=progress,
    )  # fmt: skip


def _queue_jobs(config: RunConfig, horizon_s: float) -> list[QueuedJob]:
    """The queue file's jobs, or one per trainer (each started once to read its ``J``
    and timings, the save and load ``--costs``'s where given; named job-0, job-1, ...;
    every one with ``benefit_rate``)."""
    from .queue import QueuedJob, read_queue
    from .trainer import TrainerProcess

    if config.queue is not None:
        return read_queue(config.queue)
    jobs = []
    options = dict(config.trainer_options)
    for i, spec in enumerate(config.trainers):
        name = f"job-{i}"
        probe = TrainerProcess(spec, config.state_dir / name, options)
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
                config.benefit_rate,
                horizon_s,
                **config.checkpoint_s(costs),
            )
        )
    return jobs
