"""Before a park: can this server release as asked, and is it idle?

Both are read from the engine itself, so a wrong start-up flag is named before the
engine is touched rather than after a timeout:

- The start-up flags, where the engine reports them (each dialect's ``check_config``:
  SGLang's ``GET /get_server_info`` server args ``enable_memory_saver`` and
  ``enable_weights_cpu_backup``; vLLM's dev-mode ``GET /server_info?config_format=json``
  ``model_config.enable_sleep_mode``).
- The engine's Prometheus ``/metrics`` counts running and waiting requests (vLLM
  ``vllm:num_requests_running``/``_waiting``, SGLang ``sglang:num_running_reqs``/
  ``num_queue_reqs``): SGLang's release asserts the scheduler is idle, and vLLM's sleep
  waits for what runs. :func:`wait_until_idle` waits a bounded time for idleness; the
  park itself refuses a busy engine (:func:`~.engines.park`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .._checks import nonnegative, positive
from .endpoint import ServingEndpoint
from .engines import Load, metric_sum
from .errors import EngineBusy, ServerConfigError

__all__ = [
    "EngineBusy",
    "Load",
    "ServerConfigError",
    "check_server_config",
    "metric_sum",
    "read_load",
    "wait_until_idle",
]


def read_load(endpoint: ServingEndpoint, timeout_s: float) -> Load | None:
    """The engine's running and waiting requests now (``None``: it exposes no metrics).

    SGLang serves ``/metrics`` only with ``--enable-metrics``.
    """
    return endpoint.dialect.load(endpoint, timeout_s)


def wait_until_idle(
    endpoint: ServingEndpoint, wait_s: float, poll_s: float, timeout_s: float = 5.0
) -> Load | None:
    """Wait up to ``wait_s`` for the engine to be idle; its load then.

    Returns ``None`` when the engine exposes no load metrics (idleness unknown).

    Raises
    ------
    EngineBusy
        Still running or queueing requests after ``wait_s`` seconds.
    """
    nonnegative("wait_s", wait_s)
    positive("poll_s", poll_s)
    end = time.monotonic() + wait_s
    while True:
        load = read_load(endpoint, timeout_s)
        if load is None or load.idle:
            return load
        if time.monotonic() >= end:
            raise EngineBusy(
                f"{endpoint.url} is not idle ({load.running} running, {load.waiting} waiting) "
                f"after {wait_s:g} s: a release now would kill SGLang (it asserts idleness) "
                "or wait for them (vLLM); park when the load has drained"
            )
        time.sleep(poll_s)


def check_server_config(
    endpoint: ServingEndpoint, *, tags: Sequence[str] = (), reload: bool = False, timeout_s: float
) -> list[str]:
    """Refuse a park the server's configuration cannot honour; notes on what went unchecked.

    Parameters
    ----------
    endpoint
        The engine.
    tags
        The memory tags the park releases (empty: all).
    reload
        A reload step restores the weights after the resume (SGLang: a server without
        the weights' CPU backup is then acceptable).
    timeout_s
        Bound on each request, seconds.

    Raises
    ------
    ServerConfigError
        The server runs without a flag the park needs (the message names it).
    """
    return endpoint.dialect.check_config(endpoint, tags=tags, reload=reload, timeout_s=timeout_s)
