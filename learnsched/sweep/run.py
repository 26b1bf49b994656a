"""Run a sweep: size the chunks, solve the missing ones on a backend, write the result."""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from .._atomic import locked
from .._checks import integer
from .._extras import require
from .._progress import Progress
from .points import Point, base_ids, points
from .rows import Rows, solve_rows
from .spec import SweepSpec, load_spec, parse_spec
from .store import CHUNK_SUFFIX, PROBE_PREFIX, Chunk, ChunkStore, write_chunk
from .summary import PointSummary, summarize_points

__all__ = ["BACKENDS", "SweepResult", "choose_chunk_rows", "sweep"]

BACKENDS = ("local", "ray")
# A task's fixed cost (its dispatch and the fixed part of writing its chunk) may be at
# most this share of its solve time.
MAX_OVERHEAD_SHARE = 0.1
# Chunk sizing probes: repeats of the one-row task, the time a larger probe must reach,
# its largest size, and the share of the sweep's rows it may take at most (probe rows
# are solved again in their chunks).
PROBE_REPEATS = 3
PROBE_S = 0.05
MAX_PROBE_ROWS = 4096
MAX_PROBE_SHARE = 1 / 32
# Chunks per worker when the sweep is small enough to split finer than the overhead
# bound needs: keeps every worker busy to the end and a kill costs little.
CHUNKS_PER_WORKER = 4
MAX_TASK_S = 60.0
WRITE_SAMPLES = 3


class Backend(Protocol):
    """What :func:`sweep` needs of a backend (threads here, or Ray tasks)."""

    workers: int

    def time_task(self, spec: SweepSpec, start: int, stop: int) -> float: ...

    def close(self) -> None: ...

    def run(
        self, spec: SweepSpec, chunks: Sequence[Chunk], done: Callable[[Chunk, Rows], None]
    ) -> None: ...


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep.

    Attributes
    ----------
    spec
        The sweep.
    out
        The result file.
    points
        Every point, in order.
    rows
        Every row (as in ``out``).
    summaries
        Per-point aggregates.
    chunk_rows
        Rows per chunk (fixed when the sweep started; a resumed run keeps it).
    chunks, solved, skipped
        Chunks in all, solved by this run, and found finished by an earlier one.
    seconds
        Wall time of this run, seconds.
    """

    spec: SweepSpec
    out: Path
    points: tuple[Point, ...]
    rows: Rows
    summaries: tuple[PointSummary, ...]
    chunk_rows: int
    chunks: int
    solved: int
    skipped: int
    seconds: float

    @property
    def invalid(self) -> int:
        """Combinations kept in the output as invalid."""
        return sum(s.invalid for s in self.summaries)


def _write_s(store: ChunkStore, rows: Rows) -> float:
    """Fixed seconds of writing a chunk file beside the real ones: the quickest of a few
    one-row writes, after one that loads the writer."""
    fd, name = tempfile.mkstemp(dir=store.parts, prefix=PROBE_PREFIX, suffix=CHUNK_SUFFIX)
    os.close(fd)
    samples = []
    try:
        for _ in range(WRITE_SAMPLES + 1):
            started = time.perf_counter()
            write_chunk(name, rows)
            samples.append(time.perf_counter() - started)
    finally:
        Path(name).unlink(missing_ok=True)
    return min(samples[1:])


def choose_chunk_rows(row_s: float, overhead_s: float, total_rows: int, workers: int) -> int:
    """Rows per chunk so that a task's fixed cost stays under 10% of its solve time.

    Parameters
    ----------
    row_s
        Measured solve time of one row (all policies), seconds.
    overhead_s
        Measured fixed cost of one task, seconds.
    total_rows
        Rows in the sweep.
    workers
        Tasks that run at once.

    Returns
    -------
    int
        At least ``overhead_s / (0.1 * row_s)`` rows; within that bound, small enough for
        ``CHUNKS_PER_WORKER`` chunks per worker and at most ``MAX_TASK_S`` per chunk.
    """
    row_s = max(row_s, 1e-9)
    floor = math.ceil(overhead_s / (MAX_OVERHEAD_SHARE * row_s))
    balanced = math.ceil(total_rows / (CHUNKS_PER_WORKER * workers))
    size = max(floor, min(balanced, math.ceil(MAX_TASK_S / row_s)))
    return max(1, min(size, total_rows))


def _task_cost(spec: SweepSpec, backend: Backend, total_rows: int) -> tuple[float, float]:
    """(fixed, per-row) seconds of a task on ``backend``, from timing real tasks.

    A one-row task (warmed once, quickest of a few) gives the fixed cost plus one row; a
    task four times larger each round until it takes ``PROBE_S`` (or holds
    ``MAX_PROBE_ROWS`` rows, or ``MAX_PROBE_SHARE`` of the sweep), the quicker of two
    runs, gives the per-row slope, transfer of its rows included.
    """
    backend.time_task(spec, 0, 1)  # starts workers and fills their caches
    one = min(backend.time_task(spec, 0, 1) for _ in range(PROBE_REPEATS))
    largest = max(1, min(MAX_PROBE_ROWS, int(total_rows * MAX_PROBE_SHARE)))
    rows, elapsed = 1, one
    while elapsed - one < PROBE_S and rows < largest:
        rows = min(rows * 4, largest)
        elapsed = backend.time_task(spec, 0, rows)
    if rows == 1:
        return 0.0, one
    elapsed = min(elapsed, backend.time_task(spec, 0, rows))  # once more: a busy machine
    row_s = max(elapsed - one, 0.0) / (rows - 1)
    return max(one - row_s, 0.0), row_s


def _measured_chunk_rows(
    spec: SweepSpec, store: ChunkStore, backend: Backend, total_rows: int
) -> int:
    fixed_s, row_s = _task_cost(spec, backend, total_rows)
    overhead_s = fixed_s + _write_s(store, solve_rows(spec, 0, 1))
    return choose_chunk_rows(row_s, overhead_s, total_rows, backend.workers)


def _check_backend(name: str, address: str | None) -> None:
    """Refuse an unknown backend, or one whose extra is missing, before anything is
    written (a started Ray costs seconds: it is started only if there is work)."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    if name == "local" and address is not None:
        raise ValueError(f"--address {address} needs --backend ray")
    if name == "ray":
        require("ray", "ray")


def _backend(name: str, address: str | None, workers: int | None) -> Backend:
    if name == "local":
        from .local import LocalBackend

        return LocalBackend(workers)
    from .ray_backend import RayBackend

    return RayBackend(address, workers)


def _say_waiting(lock_file: Path) -> None:
    print(f"sweep: waiting for the sweep that holds {lock_file}", file=sys.stderr, flush=True)


def _as_spec(spec: SweepSpec | Mapping[str, object] | str | os.PathLike[str]) -> SweepSpec:
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, Mapping):
        return parse_spec(spec)
    return load_spec(spec)


def sweep(
    spec: SweepSpec | Mapping[str, object] | str | os.PathLike[str],
    out: str | os.PathLike[str],
    backend: str = "local",
    address: str | None = None,
    workers: int | None = None,
    chunk_rows: int | None = None,
    progress: bool = True,
) -> SweepResult:
    """Solve every base scenario at every point of ``spec``, resumably, into ``out``.

    Parameters
    ----------
    spec
        A :class:`SweepSpec`, a SPEC object, or the path of a SPEC JSON file.
    out
        Result file, ``.csv`` or ``.parquet``; chunks are kept in ``out + ".parts"``
        until it is written, and a rerun with the same SPEC solves only missing chunks.
    backend
        ``"local"`` (threads) or ``"ray"`` (Ray tasks).
    address
        Ray cluster address (``backend="ray"`` only); None starts a local Ray.
    workers
        Threads, or CPUs of a local Ray (default: every CPU).
    chunk_rows
        Rows per chunk for a new sweep (default: measured so that a task's fixed cost
        stays under 10% of its solve time); a resumed sweep keeps its own.
    progress
        Draw a progress bar on stderr (points done, scenarios/s, ETA) when it is a
        terminal.

    Two sweeps on one ``out`` (two processes) run one after the other under a lock on
    ``.OUT.lock`` beside it: the second says on stderr that it waits, then finds the
    first one's result (the same SPEC: nothing is solved again) or refuses (another).

    Raises
    ------
    ValueError
        A bad SPEC, backend, suffix or chunk size, or ``out`` holding another sweep.
    ImportError
        ``backend="ray"`` without Ray, or Parquet output without pyarrow.
    """
    started = time.perf_counter()
    spec = _as_spec(spec)
    if chunk_rows is not None:
        integer("chunk_rows", chunk_rows, low=1)
    _check_backend(backend, address)
    pts = points(spec)
    n = len(base_ids(spec))
    total = n * len(pts)
    store = ChunkStore(out, spec, total)
    # One sweep at a time writes an --out (its chunks, its manifest, the result): a
    # second one waits, then resumes (finding the result) or refuses another SPEC.
    with locked(store.out, waiting=_say_waiting):
        solved = 0
        if not store.complete:
            with closing(_backend(backend, address, workers)) as runner:
                store.open(lambda: chunk_rows or _measured_chunk_rows(spec, store, runner, total))
                finished = set(store.finished())
                todo = tuple(c for c in store.chunks() if c not in finished)
                solved = _solve(spec, store, runner, todo, total, len(pts), n, progress)
        else:
            store.open(lambda: 0)
        rows = store.finish()
    return SweepResult(
        spec=spec,
        out=store.out,
        points=pts,
        rows=rows,
        summaries=summarize_points(spec, pts, rows),
        chunk_rows=store.chunk_rows,
        chunks=len(store.chunks()),
        solved=solved,
        skipped=len(store.chunks()) - solved,
        seconds=time.perf_counter() - started,
    )


def _solve(
    spec: SweepSpec,
    store: ChunkStore,
    backend: Backend,
    todo: tuple[Chunk, ...],
    total: int,
    n_points: int,
    n: int,
    progress: bool,
) -> int:
    """Solve ``todo`` on the backend, recording each chunk as it comes; returns the count."""
    per_point = np.full(n_points, n)
    for chunk in todo:
        per_point -= np.bincount(np.arange(chunk.start, chunk.stop) // n, minlength=n_points)
    delay_s = 0.5 if progress else math.inf
    before = total - sum(map(len, todo))
    with Progress(total, "sweep", delay_s, done=before, unit="scenarios") as bar:

        def done(chunk: Chunk, rows: Rows) -> None:
            store.write(chunk, rows)
            per_point[:] += np.bincount(rows.point, minlength=n_points)
            bar.advance(len(rows), f"points {int((per_point == n).sum())}/{n_points}")

        backend.run(spec, todo, done)
    return len(todo)
