"""The scheduler's timeline: load, lent windows, work, checkpoints and returns.

Drawn from one run's ledger records (times on the loop's clock) and the load samples
its watcher kept. matplotlib is the ``plot`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .._figures import pyplot, save_figure
from ..serving.ledger import read_ledger
from .journal import run_of

__all__ = ["plot_timeline"]


def plot_timeline(
    path: str | os.PathLike[str],
    *,
    ledger: str | os.PathLike[str],
    run: int,
    windows: Sequence[tuple[float, float]],
    load: Sequence[tuple[float, float, float]],
    arrivals: Sequence[float] = (),
    misses: Sequence[float] = (),
) -> None:
    """Draw one run's timeline into ``path`` (format from the suffix), atomically.

    Parameters
    ----------
    path
        The figure file.
    ledger, run
        The ledger and the run to draw.
    windows
        The calendar's windows ``(start, deadline)``, seconds on the loop's clock.
    load
        ``(t, running, waiting)`` samples of the engine's load.
    arrivals, misses
        Arrival times of the replayed requests, and of those that missed their SLO.
    """
    records = [r for r in read_ledger(Path(ledger)) if run_of(r) == run]
    plt = pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(11, 5.5), height_ratios=(1, 1.3))
    if load:
        t, running, waiting = zip(*load, strict=True)
        top.step(t, [r + w for r, w in zip(running, waiting, strict=True)], where="post",
                 color="tab:blue", lw=0.8, label="requests in engine")  # fmt: skip
    if arrivals:
        top.plot(arrivals, [0.0] * len(arrivals), "|", color="tab:gray", ms=6, label="arrivals")
    if misses:
        top.plot(misses, [0.0] * len(misses), "x", color="tab:red", label="SLO misses")
    top.set_ylabel("load (requests)")
    top.legend(loc="upper right", fontsize=8)
    for start, end in windows:
        for axis in (top, bottom):
            axis.axvspan(start, end, color="tab:green", alpha=0.12, lw=0)
    progress_t: list[float] = []
    progress_q: list[int] = []
    durable_t: list[float] = []
    durable_q: list[int] = []
    for record in records:
        # A run starts before its clock's zero (the trainer's start-up): draw it at 0.
        t_s = 0.0 if record.kind == "run-start" else float(record.detail.get("t_s", 0.0))
        if record.kind == "work":
            progress_t.append(t_s)
            progress_q.append(int(record.detail["progress"]))
        elif record.kind in ("checkpoint", "publish", "run-start"):
            durable_t.append(t_s)
            durable_q.append(int(record.durable_progress or 0))
        elif record.kind == "park":
            bottom.axvline(t_s, color="tab:purple", lw=0.6, alpha=0.6)
        elif record.kind == "return":
            late = bool(record.detail.get("late"))
            color = "tab:red" if late else ("tab:orange" if record.detail.get("early") else "k")
            bottom.axvline(t_s, color=color, lw=0.9, ls="--")
    bottom.plot(progress_t, progress_q, ".", ms=3, color="tab:blue", label="work (quanta done)")
    bottom.step(durable_t, durable_q, where="post", color="tab:green", label="durable")
    bottom.plot(durable_t, durable_q, "o", ms=4, color="tab:green")
    bottom.plot([], [], color="tab:purple", lw=0.6, label="park")
    bottom.plot([], [], color="k", ls="--", lw=0.9, label="return")
    bottom.plot([], [], color="tab:orange", ls="--", lw=0.9, label="early return")
    bottom.plot([], [], color="tab:red", ls="--", lw=0.9, label="late return")
    bottom.set_xlabel("time on the loop's clock (s); green: lent windows")
    bottom.set_ylabel("progress (quanta)")
    bottom.legend(loc="upper left", fontsize=8, ncol=3)
    fig.suptitle("learnsched: serving load, lent windows and the LoRA job's progress")
    save_figure(fig, path)
