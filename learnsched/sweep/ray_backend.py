"""The Ray backend: each chunk is one Ray task on a cluster or on a local Ray started for the run.

Ray is imported here only, when this backend is chosen (the ``ray`` extra). Tasks run
the same :func:`~learnsched.sweep.rows.solve_rows` as the local backend, so results are
identical bit for bit; every node needs the same learnsched installed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from types import ModuleType
from typing import Any

from .._checks import integer
from .._errors import EnvironmentFailure
from .._extras import require
from .rows import Rows, solve_rows
from .spec import SweepSpec, parse_spec
from .store import Chunk

__all__ = ["RayBackend"]

# Tasks in flight per worker: enough to keep each busy while results come back, few
# enough that finished rows do not pile up in the object store.
IN_FLIGHT_PER_WORKER = 2


@lru_cache(maxsize=4)
def _parsed(spec_json: str) -> SweepSpec:
    """The SPEC of a task, parsed once per worker process (its base holds core objects,
    which do not pickle, so tasks carry the SPEC as JSON)."""
    return parse_spec(json.loads(spec_json))


def _solve_task(spec_json: str, start: int, stop: int) -> Rows:
    return solve_rows(_parsed(spec_json), start, stop)


class RayBackend:
    """Run chunks as Ray tasks.

    Parameters
    ----------
    address
        A running cluster's address (``ray start --head`` prints it; ``"auto"`` finds a
        local one); None starts a local Ray for this run and stops it afterwards.
    workers
        CPUs of the local Ray started when ``address`` is None (default: every CPU);
        with ``address``, the cap on tasks in flight is set from the cluster's CPUs
        unless given.
    """

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.ray: ModuleType = require("ray", "ray")
        if workers is not None:
            integer("workers", workers, low=1)
        self._started = False
        if not self.ray.is_initialized():
            options: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False}
            if address is None:
                options |= {"num_cpus": workers, "include_dashboard": False}
            self._init(address, options)
            self._started = True
        cpus = int(self.ray.cluster_resources().get("CPU", 1))
        self.workers = workers if workers is not None else max(cpus, 1)
        self._solve = self.ray.remote(num_cpus=1)(_solve_task)
        self._specs: dict[str, Any] = {}

    def _init(self, address: str | None, options: dict[str, Any]) -> None:
        """``ray.init``; a Ray that does not start (a raylet that dies, e.g. under an
        address-space limit; a cluster that does not answer) is an environment failure
        (exit 4), not Ray's bare ``Exception`` (exit 70). ``ray.shutdown()`` releases what
        Ray registered; the GCS and monitors of a failed local start end with this
        process (Ray keeps no handle on them)."""
        try:
            self.ray.init(address=address, **options)
        except Exception as err:  # Ray's start-up errors have no common class
            self.ray.shutdown()
            where = f"the Ray cluster at {address}" if address else "a local Ray"
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise EnvironmentFailure(f"backend ray: could not start {where}: {first}") from err

    def close(self) -> None:
        """Stop the local Ray this backend started (a cluster it joined keeps running)."""
        if self._started:
            self.ray.shutdown()

    def _spec_ref(self, spec: SweepSpec) -> Any:
        """The SPEC as JSON in the object store, put once per SPEC and shipped by reference."""
        if spec.hash not in self._specs:
            self._specs[spec.hash] = self.ray.put(json.dumps(spec.to_json()))
        return self._specs[spec.hash]

    def time_task(self, spec: SweepSpec, start: int, stop: int) -> float:
        """Seconds from submitting rows ``start .. stop - 1`` as a task to having them back."""
        spec_ref = self._spec_ref(spec)
        started = time.perf_counter()
        self.ray.get(self._solve.remote(spec_ref, start, stop))
        return time.perf_counter() - started

    def run(
        self, spec: SweepSpec, chunks: Sequence[Chunk], done: Callable[[Chunk, Rows], None]
    ) -> None:
        """Submit every chunk as a task; ``done`` is called here as each one finishes."""
        spec_ref = self._spec_ref(spec)
        waiting = list(reversed(chunks))
        running: dict[Any, Chunk] = {}
        limit = IN_FLIGHT_PER_WORKER * self.workers
        while waiting or running:
            while waiting and len(running) < limit:
                chunk = waiting.pop()
                running[self._solve.remote(spec_ref, chunk.start, chunk.stop)] = chunk
            ready, _ = self.ray.wait(list(running), num_returns=1)
            for ref in ready:
                done(running.pop(ref), self.ray.get(ref))
