"""A decider with ``next_move`` is asked at every quantum boundary of a window, and the
loop obeys it: while idle wait or lend (the causal policy lends once the gap's age makes it
worth it), between quanta save, checkpoint_return, discard_return, abandon or work, on
the strict simulated engine."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from learnsched.calendar.causal import (
    CAUSAL_MOVES,
    CAUSAL_PLANS,
    CausalDecider,
    CausalTrace,
    run_causal,
)
from learnsched.capacity import Trace
from learnsched.control.deciders import MOVES, CausalForecastDecider, ModelDecider, MoveDecider
from learnsched.control.journal import replay
from learnsched.control.loop import ControlLoop, _last_boundary
from learnsched.control.trainer import TrainerCosts
from learnsched.control.windows import Window
from learnsched.scenario import HandoffCosts
from learnsched.serving import HandoffRecord, read_ledger
from learnsched.testing import EngineProcess

from control_support import make_loop
from engine_support import Client, strict_config


class ScriptedMoves(ModelDecider):
    """Scripted moves: ``idle`` while the window is idle (``work`` once spent), ``moves``
    between quanta (``work`` once spent); every call is kept, and ``on_idle(k)`` is
    called at the k-th idle question."""

    def __init__(
        self, moves: list[str], *args: Any, idle: tuple[str, ...] = ("work",),
        on_idle: Callable[[int], None] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(*args)
        self.moves = list(moves)
        self.idle = list(idle)
        self.on_idle = on_idle
        self.asked: list[tuple[float, float, int, int, bool]] = []
        self.asked_idle: list[tuple[float, float, int, int, bool]] = []

    def next_move(
        self, now_s: float, gap_start_s: float, progress: int, durable: int, lent: bool
    ) -> tuple[str, int, str]:
        point = (now_s, gap_start_s, progress, durable, lent)
        if not lent:
            self.asked_idle.append(point)
            if self.on_idle is not None:
                self.on_idle(len(self.asked_idle))
            return "advance", 1, self.idle.pop(0) if self.idle else "work"
        self.asked.append(point)
        return "advance", 1, self.moves.pop(0) if self.moves else "work"


QUANTUM_S = 0.2  # the idle tests' quantum: the boundaries are this far apart


def run_moves(
    folder: Path,
    moves: list[str],
    *,
    idle: tuple[str, ...] = ("work",),
    window: tuple[float, float] = (0.2, 2.2),
    until_s: float = 2.4,
    quantum_s: float | None = None,
    on_idle: Callable[[ControlLoop, int], None] | None = None,
    before_close: Callable[[], None] | None = None,
    kind: str = "vllm",
) -> tuple[ControlLoop, ScriptedMoves, list[HandoffRecord], dict[str, Any]]:
    """One window (then one an hour on) with the scripted moves, on the strict simulated
    ``kind`` engine; the loop, the decider, the ledger and the engine's ``/sim/state`` at
    the end (after ``before_close``)."""
    made: list[ScriptedMoves] = []
    loops: list[ControlLoop] = []

    def decider(work_quanta: int, costs: TrainerCosts) -> ScriptedMoves:
        handoff = HandoffCosts(recovery_s=0.2, save_s=costs.save_s, load_s=costs.load_s)
        hook = None if on_idle is None else (lambda k: on_idle(loops[0], k))
        made.append(ScriptedMoves(moves, work_quanta, 1.5 * costs.quantum_s, handoff, 1.0,
                                  10_000.0, idle=idle, on_idle=hook))  # fmt: skip
        return made[0]

    options: dict[str, Any] = {"work_quanta": 20_000}
    if quantum_s is not None:
        options["quantum_s"] = quantum_s
    with EngineProcess(strict_config(kind), lifetime_s=60.0) as sim:
        loop = make_loop(sim.url, kind, [window, (3600.0, 7200.0)], folder,
                         trainer_options=options, horizon_s=10_000.0,
                         until_s=until_s)  # fmt: skip
        loops.append(loop)
        loop.make_decider = decider
        loop.run()
        if before_close is not None:
            before_close()
        assert sim.alive(), sim.stderr_text()
        state = Client(sim.url).state()
    return loop, made[0], read_ledger(folder / "ledger.jsonl"), state


def kinds(records: list[HandoffRecord]) -> list[str]:
    """The lent window's records from its first quantum on, work runs folded."""
    out: list[str] = []
    started = False
    for record in records:
        started = started or record.kind == "work"
        kept = record.kind in ("work", "checkpoint", "discard", "decision", "return")
        if started and kept and not (record.kind == "work" and out and out[-1] == "work"):
            out.append(record.kind)
    return out


def test_the_causal_decider_and_the_small_one_are_move_deciders() -> None:
    handoff = HandoffCosts(recovery_s=0.2)
    assert isinstance(ScriptedMoves([], 10, 1.0, handoff, 1.0, 100.0), MoveDecider)
    assert not isinstance(ModelDecider(10, 1.0, handoff, 1.0, 100.0), MoveDecider)
    gaps = np.cumsum(np.random.default_rng(0).exponential(120.0, 60))
    history = Trace(gaps, np.full(60, 2.0), gaps + 30.0)
    causal = CausalForecastDecider(12, 5.0, handoff, 0.25, 3600.0, history=history, samples=4)
    assert isinstance(causal, MoveDecider)
    _, _, move = causal.next_move(30.0, 10.0, 2, 1, True)
    assert move in MOVES


def test_save_then_checkpoint_return(tmp_path: Path) -> None:
    loop, decider, records, _ = run_moves(tmp_path, ["work", "save", "work", "checkpoint_return"])
    # Asked between quanta only: after the 1st, 2nd, 3rd and 4th quantum.
    assert [p for _, _, p, _, _ in decider.asked] == [1, 2, 3, 4]
    assert all(lent for *_, lent in decider.asked)
    assert {gap for _, gap, *_ in decider.asked} == {0.2}  # the gap began as planned
    checkpoints = [r.durable_progress for r in records if r.kind == "checkpoint"]
    assert checkpoints == [2, 4]  # the save, then the save before the return
    assert [r.detail["progress"] for r in records if r.kind == "work"] == [1, 2, 3, 4]
    moves = [r.detail["move"] for r in records if r.detail.get("phase") == "quantum"]
    assert moves == ["save", "checkpoint_return"]  # "work" is not journalled
    (ret,) = [r for r in records if r.kind == "return"]
    assert ret.detail["early"] is False  # the policy chose it: not forced by load
    assert loop.totals.durable_quanta == 4
    assert loop.totals.unsaved_lost == 0


@pytest.mark.parametrize("move", ["discard_return", "abandon", "wait"])
def test_a_return_without_a_save(move: str, tmp_path: Path) -> None:
    loop, _, records, _ = run_moves(tmp_path, ["work", "work", move])
    # The window's own closing checkpoint does not follow: the move chose to drop it.
    assert [r.kind for r in records if r.kind == "checkpoint"] == []
    (discard,) = [r for r in records if r.kind == "discard"]
    assert discard.unsaved_lost == 3
    assert kinds(records) == ["work", "decision", "discard", "return"]
    assert loop.totals.unsaved_lost == 3
    assert loop.totals.durable_quanta == 0


def test_an_unknown_move_is_refused_and_the_engine_returned(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"move.*'leap'"):
        run_moves(tmp_path, ["leap"])
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert [r.kind for r in records].count("return") == 1


def idle_questions(records: list[HandoffRecord]) -> list[HandoffRecord]:
    """The questions asked while the window was idle (the first is the window's)."""
    return [
        r for r in records
        if r.kind == "decision" and r.detail["policy"] == "move"
        and r.detail["phase"] in ("window", "idle")
    ]  # fmt: skip


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_wait_wait_work_lends_at_the_third_boundary(kind: str, tmp_path: Path) -> None:
    loop, decider, records, state = run_moves(
        tmp_path, [], idle=("wait", "wait", "work"), window=(0.3, 1.5), until_s=1.7,
        quantum_s=QUANTUM_S, kind=kind,
    )  # fmt: skip
    boundaries = [0.3, 0.3 + QUANTUM_S, 0.3 + QUANTUM_S + QUANTUM_S]
    assert decider.asked_idle == [(t, 0.3, 0, 0, False) for t in boundaries]
    questions = idle_questions(records)
    assert [(q.detail["phase"], q.detail["move"], q.detail["now_s"]) for q in questions] == [
        ("window", "wait", boundaries[0]), ("idle", "wait", boundaries[1]),
        ("idle", "work", boundaries[2]),
    ]  # fmt: skip
    # Served until the third boundary, then parked and lent as at a window's start.
    (park,) = [r for r in records if r.kind == "park"]
    assert park.detail["t_s"] >= boundaries[2]
    assert park.detail["window"][0] >= boundaries[2]
    assert all(r.detail["t_s"] < boundaries[2] for r in questions[:2])
    assert [r.kind for r in records].index("park") > records.index(questions[-1])
    assert loop.totals.windows == 1
    assert loop.totals.handoffs == 1
    assert loop.totals.quanta_done > 0
    assert loop.totals.durable_quanta == loop.totals.quanta_done  # saved before the deadline
    assert (state["parks"], state["resumes"]) == (1, 1)
    assert replay(records, loop.run_id) == loop.totals


def test_waiting_out_the_window_never_touches_the_engine(tmp_path: Path) -> None:
    loop, decider, records, state = run_moves(
        tmp_path, [], idle=("wait",) * 100, window=(0.3, 1.4), until_s=1.6,
        quantum_s=QUANTUM_S,
    )  # fmt: skip
    # Asked while a quantum and the return still fit: at 0.3, 0.5, 0.7 and 0.9.
    assert len(decider.asked_idle) == 4
    assert [q.detail["move"] for q in idle_questions(records)] == ["wait"] * 4
    kinds = {r.kind for r in records}
    assert not kinds & {"park", "parked", "park-step", "skip", "work", "return"}
    assert (state["parks"], state["resumes"], state["paused"]) == (0, 0, None)
    assert (loop.totals.windows, loop.totals.decisions, loop.totals.handoffs) == (1, 4, 0)
    assert replay(records, loop.run_id) == loop.totals


@settings(max_examples=300, deadline=None)
@given(
    gap=st.floats(0.0, 1e5), step=st.floats(1e-3, 60.0), asked=st.integers(0, 10_000),
    late=st.floats(0.0, 1e4),
)  # fmt: skip
@example(gap=0.0, step=0.0010000000000000002, asked=3, late=0.001)  # now rounds up a step
def test_the_next_boundary_is_the_next_or_the_last_passed(
    gap: float, step: float, asked: int, late: float
) -> None:
    next_s = gap + asked * step
    now = next_s + late
    boundary = _last_boundary(gap, next_s, step, now)
    slack = 1e-9 * max(1.0, now)  # float rounding of the grid
    # Whether a whole quantum more passed is asked of the floats the loop has: now can
    # round to next_s + step when late is short of step by an ulp (gap 0, step 0.001 +
    # 1 ulp, asked 3, late 0.001).
    if now < next_s + step:
        assert boundary == next_s
    else:  # a whole quantum more passed: the last boundary before now
        assert next_s <= boundary <= now + slack
        assert now - boundary <= step + slack


def test_a_question_slower_than_a_quantum_skips_the_boundaries_it_outlasted(
    tmp_path: Path,
) -> None:
    def slow(loop: ControlLoop, k: int) -> None:
        if k == 1:  # the window's first answer takes 2.5 quanta
            time.sleep(2.5 * QUANTUM_S)

    _, _, records, _ = run_moves(
        tmp_path, [], idle=("wait",) * 100, window=(0.3, 1.5), until_s=1.7,
        quantum_s=QUANTUM_S, on_idle=slow,
    )  # fmt: skip
    asked = [q.detail["now_s"] for q in idle_questions(records)]
    assert asked[0] == 0.3
    assert asked[1] >= 0.3 + 2 * QUANTUM_S - 1e-9  # not 0.5, a boundary already gone
    for t in asked:  # on the grid, in order
        assert (t - 0.3) / QUANTUM_S == pytest.approx(round((t - 0.3) / QUANTUM_S), abs=1e-6)
    assert asked == sorted(set(asked))


@pytest.mark.parametrize("signal", ["notify", "request"])
def test_an_arrival_mid_wait_ends_the_window_unlent(signal: str, tmp_path: Path) -> None:
    """Told by a front end (the gate's early-return signal), or seen on ``/metrics``."""
    senders: list[threading.Thread] = []

    def arrive(loop: ControlLoop, k: int) -> None:
        if k != 2:
            return
        if signal == "notify":
            loop.watcher.notify_arrival()
        else:  # a request of about 0.4 s: /metrics shows it running
            client = Client(loop.engine.url)
            senders.append(threading.Thread(target=client.complete, kwargs={"tokens": 400}))
            senders[-1].start()

    def join() -> None:  # the request ends before the engine does
        for sender in senders:
            sender.join(timeout=30.0)

    loop, decider, records, state = run_moves(
        tmp_path, [], idle=("wait",) * 100, window=(0.3, 2.3), until_s=2.5,
        quantum_s=QUANTUM_S, on_idle=arrive, before_close=join,
    )  # fmt: skip
    asked = len(decider.asked_idle)
    assert asked == 2 if signal == "notify" else 2 <= asked <= 4
    (arrival,) = [r for r in records if r.detail.get("reason") == "arrival"]
    assert (arrival.kind, arrival.detail["phase"], arrival.detail["policy"]) == (
        "decision", "idle", "load",
    )  # fmt: skip
    assert arrival.detail["t_s"] < 0.3 + asked * QUANTUM_S  # before the next boundary
    assert not {r.kind for r in records} & {"park", "skip", "work", "return"}
    assert (state["parks"], state["resumes"]) == (0, 0)
    assert loop.totals.handoffs == 0


def test_a_request_at_the_gate_ends_the_wait_even_between_load_polls(tmp_path: Path) -> None:
    """A request too short for any load poll to see (the polls are 5 s apart here) ends
    the idle window: the gate tells every arrival while the loop waits in one."""
    pytest.importorskip("aiohttp", reason="needs aiohttp (learnsched[serve])")
    from learnsched.control.front import held_arrivals
    from learnsched.gate import Gate

    answers: list[str] = []
    with (
        EngineProcess(strict_config("vllm"), lifetime_s=60.0) as sim,
        Gate(sim.url, "vllm") as gate,
    ):
        made: list[ScriptedMoves] = []

        def arrive(k: int) -> None:
            if k == 2:  # a 4-token request, over well within one poll
                answers.append(Client(gate.url).complete(tokens=4))

        def decider(work_quanta: int, costs: TrainerCosts) -> ScriptedMoves:
            handoff = HandoffCosts(recovery_s=0.2, save_s=costs.save_s, load_s=costs.load_s)
            made.append(ScriptedMoves([], work_quanta, costs.quantum_s, handoff, 1.0, 10_000.0,
                                      idle=("wait",) * 100, on_idle=arrive))  # fmt: skip
            return made[0]

        loop = make_loop(sim.url, "vllm", [(0.3, 2.3), (3600.0, 7200.0)], tmp_path,
                         trainer_options={"work_quanta": 20_000, "quantum_s": QUANTUM_S},
                         until_s=2.5, door=gate)  # fmt: skip
        loop.make_decider = decider
        loop.watcher.poll_s = 5.0
        gate.on_arrival = held_arrivals(loop.watcher.notify_arrival, lambda: loop.gap_open)
        loop.run()
        assert sim.alive(), sim.stderr_text()
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert len(answers) == 1
    assert len(made[0].asked_idle) == 2  # ended before the third boundary
    (arrival,) = [r for r in records if r.detail.get("reason") == "arrival"]
    assert (arrival.detail["phase"], arrival.detail["policy"]) == ("idle", "load")
    assert not {r.kind for r in records} & {"park", "skip", "work", "return"}
    assert not loop.gap_open


# A history whose short gaps (0.55 s) are 4 in 5: a young gap most likely ends soon, one
# older than 0.55 s is a long one (60 s). Lending pays only once the gap is that old.
SHORT_S, LONG_S = 0.6, 60.0


def gappy_history(n: int = 400) -> Trace:
    gaps = np.where(np.random.default_rng(0).random(n) < 0.2, LONG_S, SHORT_S)
    arrival = np.cumsum(gaps)
    return Trace(arrival, np.full(n, 0.05), arrival + 0.1)


class RecordedCausal(CausalForecastDecider):
    """The decider of ``run --forecast causal`` (planning with the job's own quantum),
    keeping every question and answer of :meth:`next_move`."""

    def __init__(self, history: Trace, work_quanta: int, costs: TrainerCosts) -> None:
        handoff = HandoffCosts(recovery_s=0.2, save_s=costs.save_s, load_s=costs.load_s)
        super().__init__(work_quanta, costs.quantum_s, handoff, 0.01, 3600.0, history=history,
                         samples=16, seed=1)  # fmt: skip
        self.answered: list[tuple[tuple[float, float, int, int, bool], tuple[str, int, str]]] = []

    def next_move(
        self, now_s: float, gap_start_s: float, progress: int, durable: int, lent: bool
    ) -> tuple[str, int, str]:
        answer = super().next_move(now_s, gap_start_s, progress, durable, lent)
        self.answered.append(((now_s, gap_start_s, progress, durable, lent), answer))
        return answer


def test_the_causal_decider_lends_later_in_the_window_as_the_study_does(
    tmp_path: Path,
) -> None:
    """The loop's questions and answers are the study's: the same decision function
    (CausalDecider) idle and lent, and in the idle window the same steps run_causal
    takes in a gap that begins when the queue empties at the window's start."""
    history = gappy_history()
    costs = TrainerCosts(quantum_s=QUANTUM_S, save_s=0.005, load_s=0.005)  # CountingTrainer's
    gap = 0.25 + 0.05 / 1.0  # a request arrives at 0.25 s and is served by then
    window = (gap, gap + 1.4)
    # The window-start decision (all the loop asked before): wait, so it skipped the window.
    at_start = RecordedCausal(history, 50, costs).decide([Window(*window)], 0, 0, False)
    assert at_start.kind.name == "WAIT"

    with EngineProcess(strict_config("vllm"), lifetime_s=60.0) as sim:
        loop = make_loop(sim.url, "vllm", [window, (3600.0, 7200.0)], tmp_path,
                         trainer_options={"work_quanta": 50, "quantum_s": QUANTUM_S},
                         until_s=gap + 1.6)  # fmt: skip
        made: list[RecordedCausal] = []

        def decider(work_quanta: int, trainer_costs: TrainerCosts) -> RecordedCausal:
            made.append(RecordedCausal(history, work_quanta, trainer_costs))
            return made[0]

        loop.make_decider = decider
        loop.run()
        assert sim.alive(), sim.stderr_text()
    records = read_ledger(tmp_path / "ledger.jsonl")
    questions = [q.detail for q in idle_questions(records)]
    boundaries = [gap]
    for _ in questions[1:]:
        boundaries.append(boundaries[-1] + QUANTUM_S)
    assert [q["now_s"] for q in questions] == boundaries
    assert [q["move"] for q in questions] == ["wait", "wait", "wait", "work"]
    assert boundaries[-1] - gap > SHORT_S - 0.05  # lent once the gap outlived a short one
    assert loop.totals.handoffs == 1
    assert loop.totals.quanta_done > 0

    # The same decision function: a fresh decider asked the same points, idle and lent
    # (the loan's between its quanta), answers alike.
    answered = made[0].answered
    assert [(p[0], p[4], a) for p, a in answered[: len(questions)]] == [
        (q["now_s"], False, (q["plan"], q["quanta"], q["move"])) for q in questions
    ]
    lent = [p for p, _ in answered[len(questions) :]]
    assert lent  # asked between the loan's quanta too
    assert all(p[1] == gap and p[4] for p in lent)
    assert [p[2] for p in lent] == list(range(1, len(lent) + 1))
    fresh = RecordedCausal(history, 50, costs)
    assert [(p, fresh.next_move(*p)) for p, _ in answered] == answered
    # And the study's simulation of that gap: the history on the loop's clock, then the
    # request that empties the queue at the gap's start, and the next 60 s later.
    end = float(history.arrival[-1])
    truth = CausalTrace(Trace(
        np.concatenate([history.arrival - end, [0.25, gap + LONG_S]]),
        np.concatenate([history.work, [0.05, 0.05]]),
        np.concatenate([history.deadline - end, [0.35, gap + LONG_S + 0.1]]),
    ))  # fmt: skip
    study = RecordedCausal(history, 50, costs)
    candidate = study.scenario([Window(0.0, 1.0)], 0, 0, False)
    steps = run_causal(truth, candidate, 0.25, gap + 1.0, ["rollout"], study.forecast, seed=1,
                       rules=study.rules, keep_steps=True)["rollout"].steps  # fmt: skip
    simulated = [
        (float(steps["t"][i]), float(steps["gap_start"][i]), bool(steps["lent"][i]),
         CAUSAL_PLANS[steps["plan"][i]], int(steps["quanta"][i]), CAUSAL_MOVES[steps["move"][i]])
        for i in range(len(questions))
    ]  # fmt: skip
    assert simulated == [
        (q["now_s"], q["gap_start_s"], False, q["plan"], q["quanta"], q["move"]) for q in questions
    ]
    online = CausalDecider(candidate, "rollout", study.forecast, study.rules, 1)
    assert [online.decide(t, g, 0, 0, False) for t, g, *_ in simulated] == [
        (q["plan"], q["quanta"], q["move"]) for q in questions
    ]
