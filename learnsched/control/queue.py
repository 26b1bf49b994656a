"""A queue of trainers next to one serving engine: the portfolio decides whom each window
serves (``learnsched run --queue FILE``, or ``--trainer`` once per job).

Each job is a trainer (``MODULE:CLASS`` and its options) with its benefit and the work
and costs the scheduler plans it with. One job at a time runs in the control loop
(:class:`learnsched.control.ControlLoop`: its own ledger and state folder, the same
engine, gate and clock), which parks the engine, runs the quanta, checkpoints and returns
capacity exactly as for a single job, restarts and quarantines included. What changes is
the decision: at every window the loop asks the portfolio (every unpublished job, from
its durable progress, on the windows ahead) for its rollout decision (docs/portfolio.md).
If the window goes to the running job, the loop takes that job's action; to serving, it
waits; to another job, the loop stops there and that job's loop starts in what is left of
the window (its trainer starts and resumes from its checkpoint: the start-up is not in
the model's load cost). The queue ends when no job is left that the portfolio would work
on, or the calendar ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._checks import integer, nonnegative, positive
from .._json import exact_keys, read_json
from .._moved import moved_attribute
from ..benefit import BenefitRate, benefit_rate
from ..job import Job
from ..portfolio import Portfolio, PortfolioCandidate, PortfolioModel, PortfolioPolicy
from ..scenario import InitialState

__all__ = ["QUEUE_KEYS", "QueuedJob", "TrainerQueue", "read_queue"]

QUEUE_KEYS = (
    "name",
    "trainer",
    "trainer_options",
    "work_quanta",
    "quantum_s",
    "save_s",
    "load_s",
    "benefit_rate",
    "horizon_s",
)


@dataclass(frozen=True)
class QueuedJob:
    """One trainer of the queue and what the portfolio plans it with.

    Parameters
    ----------
    name
        Unique; names its ledger (``LEDGER-NAME.jsonl``) and state folder (``STATE/NAME``).
    trainer
        ``MODULE:CLASS`` of a :class:`learnsched.control.Trainer`.
    options
        Its constructor's keyword arguments.
    work_quanta, quantum_s, save_s, load_s
        ``J`` and the trainer's timings the portfolio plans with (seconds; the loop still
        measures its own).
    benefit_rate
        ``g`` after publishing, s-eq./s (or a schedule), on the loop's clock.
    horizon_s
        ``H`` on the loop's clock, seconds.

    Attributes
    ----------
    job
        The job of these fields, from no progress.
    """

    name: str
    trainer: str
    options: Mapping[str, Any]
    work_quanta: int
    quantum_s: float
    benefit_rate: BenefitRate
    horizon_s: float
    save_s: float = 0.0
    load_s: float = 0.0
    job: Job = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name: object = self.name  # read from JSON: anything
        if not isinstance(name, str) or not name or os.sep in name:
            raise ValueError(f"name must be a non-empty string without {os.sep!r}, got {name!r}")
        trainer: object = self.trainer
        if not isinstance(trainer, str) or ":" not in trainer:
            raise ValueError(f"trainer must be MODULE:CLASS, got {trainer!r}")
        options: object = self.options
        if not isinstance(options, Mapping):
            raise TypeError(f"trainer_options must be a JSON object, got {options!r}")
        integer("work_quanta", self.work_quanta, low=1)
        positive("quantum_s", self.quantum_s)
        object.__setattr__(self, "benefit_rate", benefit_rate(self.benefit_rate))
        for name in ("save_s", "load_s"):
            nonnegative(name, getattr(self, name))
        object.__setattr__(self, "job", Job.of_fields(self))


def read_queue(path: str | os.PathLike[str]) -> list[QueuedJob]:
    """The jobs of a queue file: ``{"jobs": [{KEY: ...}, ...]}`` with exactly the keys of
    :data:`QUEUE_KEYS` per job (``ValueError`` naming the job and field otherwise)."""
    data = exact_keys("queue", read_json(path), ("jobs",))
    jobs = data["jobs"]
    if not isinstance(jobs, list) or not jobs:
        raise ValueError(f"{path}: jobs must be a non-empty list of job objects")
    out = []
    for i, job in enumerate(jobs):
        try:
            d = exact_keys("job", job, QUEUE_KEYS)
            out.append(
                QueuedJob(
                    d["name"],
                    d["trainer"],
                    d["trainer_options"],
                    d["work_quanta"],
                    d["quantum_s"],
                    d["benefit_rate"],
                    d["horizon_s"],
                    d["save_s"],
                    d["load_s"],
                )
            )
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}: jobs[{i}]: {err}") from None
    names = [j.name for j in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: job names must be unique, got {names}")
    return out


@dataclass
class _JobState:
    durable: int = 0
    published: bool = False
    turns: list[Any] = field(default_factory=list)  # each turn's Totals


class TrainerQueue:
    """Runs the jobs' control loops one at a time, the portfolio choosing whom each window
    serves.

    Parameters
    ----------
    engine
        The serving engine (a :class:`learnsched.control.ServingEngine`), shared.
    jobs
        The queue, in arrival order.
    calendar
        The windows (a :class:`learnsched.control.windows.CalendarSource`) on the queue's
        clock.
    ledger
        ``L``: job ``NAME``'s ledger is ``L``'s folder / ``L.stem-NAME.jsonl``.
    state_dir
        Job ``NAME``'s trainer folder is ``state_dir / NAME``.
    recovery_s, residency_rate
        The return path the portfolio plans with (seconds, s-eq./s).
    quantum_margin
        Plan each quantum as this many times the job's ``quantum_s``.
    policy
        The portfolio's policy (rollout by default).
    loop_options
        Each job's loop options (``until_s`` bounds the whole queue).
    lookahead
        Windows a decision plans over (:class:`learnsched.control.lookahead.Lookahead`).
    progress
        Called with each loop's status lines.
    """

    def __init__(
        self,
        engine: Any,
        jobs: Sequence[QueuedJob],
        calendar: Any,
        ledger: str | os.PathLike[str],
        state_dir: str | os.PathLike[str],
        *,
        recovery_s: float,
        residency_rate: float = 0.0,
        quantum_margin: float = 1.5,
        policy: str | PortfolioPolicy = PortfolioPolicy.ROLLOUT,
        loop_options: Any = None,
        lookahead: Any = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        from ..serving.ledger import read_ledger
        from .journal import last_durable
        from .lookahead import DEFAULT_LOOKAHEAD
        from .loop import LoopOptions

        if not jobs:
            raise ValueError("jobs must hold at least one job")
        self.engine = engine
        self.jobs = list(jobs)
        self.calendar = calendar
        base = Path(ledger)
        self.ledgers = [
            base.with_name(f"{base.stem}-{j.name}{base.suffix or '.jsonl'}") for j in jobs
        ]
        self.state_dirs = [Path(state_dir) / j.name for j in jobs]
        self.recovery_s = nonnegative("recovery_s", recovery_s)
        self.residency_rate = nonnegative("residency_rate", residency_rate)
        self.quantum_margin = positive("quantum_margin", quantum_margin)
        self.policy = PortfolioPolicy.parse(policy)
        self.loop_options = loop_options if loop_options is not None else LoopOptions()
        self.lookahead = lookahead if lookahead is not None else DEFAULT_LOOKAHEAD
        self.report = progress
        self.states = []
        for path in self.ledgers:  # a queue run again resumes every job where it stopped
            records = read_ledger(path) if path.exists() else []
            published = any(r.kind == "publish" for r in records)
            self.states.append(_JobState(last_durable(records), published))
        self.clock_start = time.monotonic()
        self._loop: Any = None
        self._next: int | None = None
        self.handover_end = -1.0  # the window last handed over (its end), queue clock
        self._stopped = threading.Event()

    # --- the portfolio ----------------------------------------------------------------
    def portfolio(
        self,
        windows: Sequence[Any],
        running: int | None = None,
        state: tuple[int, int, bool] = (0, 0, False),
    ) -> tuple[Portfolio, list[int]] | None:
        """The portfolio of the unpublished jobs on ``windows`` (the current first), the
        running job at ``state = (progress, durable, active)``; and its jobs' indices."""
        open_jobs = [i for i, s in enumerate(self.states) if not s.published]
        if not open_jobs or not windows:
            return None
        candidates = []
        for i in open_jobs:
            job, s = self.jobs[i], self.states[i]
            p, d, active = state if i == running else (s.durable, s.durable, False)
            planned = replace(
                job.job,
                quantum_s=self.quantum_margin * job.quantum_s,
                initial=InitialState(p, d, active),
            )
            candidates.append(PortfolioCandidate.from_job(job.name, planned))
        pairs = [(w.start_s, w.end_s) for w in windows[: self.lookahead.max_windows]]
        left_s = sum((c.work_quanta - c.initial.durable) * c.quantum_s for c in candidates)
        handoff_s = max(c.load_s + c.save_s for c in candidates) + self.recovery_s
        pairs = pairs[: max(1, self.lookahead.cut(pairs, left_s, handoff_s))]
        portfolio = Portfolio(
            gpus=(tuple(pairs),),
            recovery_s=self.recovery_s,
            residency_rate=self.residency_rate,
            candidates=tuple(candidates),
        )
        return portfolio, open_jobs

    def decide(
        self, windows: list[Any], running: int, progress: int, durable: int, active: bool
    ) -> tuple[int | None, Any]:
        """The job the current window goes to (``None``: serving) and its action."""
        built = self.portfolio(windows, running, (progress, durable, active))
        if built is None:
            return None, None
        portfolio, indices = built
        model = PortfolioModel(portfolio, [self.policy])
        choice = model.decide(model.initial_state(), self.policy)
        if choice.candidate < 0:
            return None, choice.action
        return indices[choice.candidate], choice.action

    def first(self) -> int | None:
        """The job the portfolio's plan from now works on first (``None``: none)."""
        built = self.portfolio(self.calendar.upcoming(self.now()))
        if built is None:
            return None
        portfolio, indices = built
        plan = PortfolioModel(portfolio, [self.policy]).solve(self.policy)
        names = [c.name for c in portfolio.candidates]
        for step in plan.steps:
            if step.candidate is not None:
                return indices[names.index(step.candidate)]
        return None

    # --- running ----------------------------------------------------------------------
    def now(self) -> float:
        """The queue's clock: seconds since it was made (every job's loop shares it)."""
        return time.monotonic() - self.clock_start

    def hand_over(self, job: int, window_end_s: float) -> None:
        """End the running job's loop here; ``job`` runs next, in the window ending at
        ``window_end_s`` (queue clock)."""
        self._next = job
        self.handover_end = window_end_s
        if self._loop is not None:
            self._loop.stop()

    def handed_to(self) -> int | None:
        """The job the running loop handed the GPU to (``None``: none)."""
        return self._next

    def stop(self) -> None:
        """Stop the queue (the running loop returns the engine first)."""
        self._stopped.set()
        if self._loop is not None:
            self._loop.stop()

    def notify_arrival(self, *args: Any, **kwargs: Any) -> None:
        """An arrival, for the running job's load watcher (a gate's or router's)."""
        loop = self._loop
        if loop is not None:
            loop.watcher.notify_arrival(*args, **kwargs)

    def _loop_for(self, index: int) -> Any:
        from .deciders import QueueDecider
        from .loop import ControlLoop
        from .trainer import TrainerProcess

        job = self.jobs[index]
        return ControlLoop(
            self.engine,
            TrainerProcess(job.trainer, self.state_dirs[index], dict(job.options)),
            self.calendar,
            lambda _quanta, _costs: QueueDecider(self, index),
            self.ledgers[index],
            recovery_s=self.recovery_s,
            options=self.loop_options,
            clock_start=self.clock_start,
            progress=self.report,
        )

    def run(self) -> dict[str, list[Any]]:
        """Run the queue; each job's totals per turn (:class:`learnsched.control.Totals`)."""
        current = self.first()
        while current is not None and not self._stopped.is_set():
            self._next = None
            self._loop = self._loop_for(current)
            try:
                totals = self._loop.run()
            finally:
                loop, self._loop = self._loop, None
            state = self.states[current]
            state.durable = loop.durable
            state.published = state.published or totals.published
            state.turns.append(totals)
            if self._stopped.is_set():
                break
            named = self.handed_to()
            if named is not None:  # the portfolio named the next job
                current = named
            elif totals.published:
                current = self.first()
            else:  # the calendar (or until_s) ended
                break
        return {j.name: s.turns for j, s in zip(self.jobs, self.states, strict=True)}

    def summary(self) -> dict[str, Any]:
        """Per job: published, durable quanta, turns, handoffs and late returns."""
        out: dict[str, Any] = {}
        for job, s in zip(self.jobs, self.states, strict=True):
            out[job.name] = {
                "published": s.published,
                "durable_quanta": s.durable,
                "turns": len(s.turns),
                "handoffs": sum(t.handoffs for t in s.turns),
                "late_returns": sum(t.late_returns for t in s.turns),
                "early_returns": sum(t.early_returns for t in s.turns),
            }
        return out


def __getattr__(name: str) -> object:
    """The deciders that moved to :mod:`learnsched.control.deciders`, for one release."""
    return moved_attribute(__name__, name)
