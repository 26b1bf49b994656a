"""Call the solver from your own scheduler loop.

Your scheduler owns the engine, the trainer and the calendar; learnsched only answers
"what now?" at the start of each idle window. This loop keeps the candidate's state
(completed and durable quanta), asks a prepared :class:`learnsched.Model` for the action,
applies it, and re-plans from the windows still ahead when the calendar changes (here: a
burst that cuts a window short), as ``learnsched run`` does.

Run: ``python examples/scheduler_loop.py`` (no extras, well under a second).
"""

from __future__ import annotations

from collections.abc import Sequence

import learnsched as ls

WORK_QUANTA = 6  # J: 6 quanta of 5 s, 30 s of construction and validation
QUANTUM_S = 5.0
BENEFIT_RATE = 0.25  # s-eq. per second after publication
HORIZON_S = 1020.0


def plan_model(windows: Sequence[tuple[float, float]], durable: int) -> ls.Model:
    """A model of the windows still ahead, starting from the durable progress."""
    scenario = ls.Scenario(
        windows=windows,
        work_quanta=WORK_QUANTA,
        quantum_s=QUANTUM_S,
        benefit_rate=BENEFIT_RATE,
        horizon_s=HORIZON_S,
        costs=ls.PAPER_COLD,
        initial=ls.InitialState(progress=durable, durable=durable),
    )
    return ls.Model(scenario, policies=["rollout"])  # only the tables rollout reads


def main() -> None:
    calendar = [(0.0, 80.0), (100.0, 180.0), (200.0, 280.0), (300.0, 540.0)]
    progress = durable = 0
    model = plan_model(calendar, durable)
    first = 0  # the model's window 0 is calendar[first]
    for k, (start, end) in enumerate(calendar):
        action = model.decide(window=k - first, progress=progress, durable=durable)
        print(f"t={start:6.1f} s  window {k} [{start:g}, {end:g}]: {action}")
        if action.kind == ls.ActionKind.PUBLISH:
            # Your trainer runs action.quanta quanta, validates, publishes; the engine is
            # back by `end`.
            print(f"published at {start + action.quanta * QUANTUM_S:g} s")
            return
        if action.kind == ls.ActionKind.ADVANCE:
            progress += action.quanta
            if action.checkpoint:
                durable = progress  # your trainer saved a checkpoint before returning
            progress = durable  # unsaved work does not survive the return
        if k == 1:
            # A burst is forecast for [400, 540]: the last window shrinks. Re-plan from the
            # windows still ahead, starting from what is durable.
            calendar[3] = (300.0, 400.0)
            first = k + 1
            model = plan_model(calendar[first:], durable)
            print("calendar changed: re-planned from window", first)
    print(f"not published; {durable} of {WORK_QUANTA} quanta durable")


if __name__ == "__main__":
    main()
