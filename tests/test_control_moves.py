"""A decider with ``next_move`` is asked between quanta, and the loop obeys it (the causal
policy's per-quantum re-decision: save, checkpoint_return, discard_return, abandon,
work), on the strict simulated engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from learnsched.control.loop import MOVES, ControlLoop, ModelDecider, MoveDecider
from learnsched.control.trainer import TrainerCosts
from learnsched.handoff import HandoffRecord, read_ledger
from learnsched.scenario import HandoffCosts
from learnsched.testing import EngineProcess

from control_support import make_loop
from engine_support import strict_config


class ScriptedMoves(ModelDecider):
    """The model's window decisions, then scripted moves between quanta (``work`` once
    the script is spent); every call is kept."""

    def __init__(self, moves: list[str], *args: Any) -> None:
        super().__init__(*args)
        self.moves = list(moves)
        self.asked: list[tuple[float, float, int, int, bool]] = []

    def next_move(
        self, now_s: float, gap_start_s: float, progress: int, durable: int, lent: bool
    ) -> tuple[str, int, str]:
        self.asked.append((now_s, gap_start_s, progress, durable, lent))
        move = self.moves.pop(0) if self.moves else "work"
        return "advance", 1, move


def run_moves(
    folder: Path, moves: list[str]
) -> tuple[ControlLoop, ScriptedMoves, list[HandoffRecord]]:
    """One 2 s window (then one an hour on) with the scripted moves."""
    made: list[ScriptedMoves] = []

    def decider(work_quanta: int, costs: TrainerCosts) -> ScriptedMoves:
        handoff = HandoffCosts(recovery_s=0.2, save_s=costs.save_s, load_s=costs.load_s)
        made.append(ScriptedMoves(moves, work_quanta, 1.5 * costs.quantum_s, handoff, 1.0,
                                  10_000.0))  # fmt: skip
        return made[0]

    with EngineProcess(strict_config("vllm"), lifetime_s=60.0) as sim:
        loop = make_loop(sim.url, "vllm", [(0.2, 2.2), (3600.0, 7200.0)], folder,
                         trainer_options={"work_quanta": 20_000}, horizon_s=10_000.0,
                         until_s=2.4)  # fmt: skip
        loop.make_decider = decider
        loop.run()
        assert sim.alive(), sim.stderr_text()
    return loop, made[0], read_ledger(folder / "ledger.jsonl")


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
    import numpy as np

    from learnsched.capacity import Trace
    from learnsched.control.forecast import CausalForecastDecider

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
    loop, decider, records = run_moves(tmp_path, ["work", "save", "work", "checkpoint_return"])
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
    loop, _, records = run_moves(tmp_path, ["work", "work", move])
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
