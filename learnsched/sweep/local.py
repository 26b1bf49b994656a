"""The local backend: chunks on a pool of threads, each through the core's batch solver.

A chunk's Python part (building the core scenarios) holds the GIL and its solve
releases it, so with several threads one chunk's solve overlaps another's build.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from .._checks import integer
from .rows import Rows, solve_rows
from .spec import SweepSpec
from .store import Chunk

__all__ = ["LocalBackend"]


class LocalBackend:
    """Run chunks on ``workers`` threads of this process.

    Parameters
    ----------
    workers
        Threads (default: one per CPU).
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = integer(
            "workers", workers if workers is not None else os.cpu_count() or 1, low=1
        )
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="sweep")

    def close(self) -> None:
        """Stop the threads (unstarted chunks are dropped)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def time_task(self, spec: SweepSpec, start: int, stop: int) -> float:
        """Seconds from handing rows ``start .. stop - 1`` to a thread to having them back."""
        started = time.perf_counter()
        self._pool.submit(solve_rows, spec, start, stop).result()
        return time.perf_counter() - started

    def run(
        self, spec: SweepSpec, chunks: Sequence[Chunk], done: Callable[[Chunk, Rows], None]
    ) -> None:
        """Solve every chunk; ``done`` is called in this thread as each one finishes."""
        futures = {self._pool.submit(solve_rows, spec, c.start, c.stop): c for c in chunks}
        for future in as_completed(futures):
            done(futures[future], future.result())
