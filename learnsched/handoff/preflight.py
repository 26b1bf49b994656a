"""Before a park: can this server release as asked, and is it idle?

Both are read from the engine itself, so a wrong start-up flag is named before the
engine is touched rather than after a timeout:

- SGLang's ``GET /get_server_info`` returns its server arguments: without
  ``enable_memory_saver`` the memory-saver adapter is a no-op (the release is accepted
  and frees nothing); without ``enable_weights_cpu_backup`` released weights come back
  without their content (the model answers garbage).
- vLLM's dev-mode ``GET /server_info?config_format=json`` holds ``model_config``'s
  ``enable_sleep_mode`` (without it there is no memory pool to unmap).
- The engine's Prometheus ``/metrics`` counts running and waiting requests (vLLM
  ``vllm:num_requests_running``/``_waiting``, SGLang ``sglang:num_running_reqs``/
  ``num_queue_reqs``): SGLang's release asserts the scheduler is idle, vLLM's sleep
  aborts what runs. :func:`wait_until_idle` waits a bounded time for idleness.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._checks import nonnegative, positive
from .endpoint import HttpStatusError, ServingEndpoint
from .errors import HandoffProbeError

__all__ = [
    "LOAD_METRICS",
    "EngineBusy",
    "Load",
    "ServerConfigError",
    "check_server_config",
    "metric_sum",
    "read_load",
    "wait_until_idle",
]

LOAD_METRICS = {
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "sglang": ("sglang:num_running_reqs", "sglang:num_queue_reqs"),
}


class ServerConfigError(HandoffProbeError):
    """The server was started without a flag the park needs; the message names it."""


class EngineBusy(HandoffProbeError):
    """The engine still ran or queued requests when the park was due."""


@dataclass(frozen=True)
class Load:
    """Requests an engine reports, from its ``/metrics``.

    Parameters
    ----------
    running
        Requests being decoded.
    waiting
        Requests queued.
    """

    running: int
    waiting: int

    @property
    def idle(self) -> bool:
        """Nothing running or waiting."""
        return self.running == 0 and self.waiting == 0


def metric_sum(text: str, name: str) -> float | None:
    """The sum of every sample of gauge ``name`` in Prometheus text (``None``: absent)."""
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        metric = head.split("{", 1)[0].strip()
        if metric != name:
            continue  # a longer name sharing the prefix
        try:
            total += float(value)
        except ValueError:
            continue
        seen = True
    return total if seen else None


def read_load(endpoint: ServingEndpoint, timeout_s: float) -> Load | None:
    """The engine's running and waiting requests now (``None``: it exposes no metrics).

    SGLang serves ``/metrics`` only with ``--enable-metrics``.
    """
    status, data = endpoint.request("GET", "/metrics", None, timeout_s)
    if status != 200:
        return None
    text = data.decode(errors="replace")
    running, waiting = (metric_sum(text, name) for name in LOAD_METRICS[endpoint.engine])
    if running is None or waiting is None:
        return None
    return Load(int(running), int(waiting))


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
                f"after {wait_s:g} s: a release now would fail (SGLang asserts idleness) or "
                "abort requests (vLLM); park when the load has drained"
            )
        time.sleep(poll_s)


def _info(endpoint: ServingEndpoint, paths: Sequence[str], timeout_s: float) -> Any:
    """The first of ``paths`` that answers 200, as JSON (``None``: none does)."""
    for path in paths:
        try:
            return json.loads(endpoint.call("GET", path, None, timeout_s))
        except HttpStatusError as err:
            if err.status != 404:
                raise
        except ValueError:
            return None
    return None


def _sglang_config(
    endpoint: ServingEndpoint, tags: Sequence[str], reload: bool, timeout_s: float
) -> list[str]:
    info = _info(endpoint, ("/get_server_info", "/server_info"), timeout_s)
    if not isinstance(info, dict):
        return ["server configuration not checked: no /get_server_info"]
    notes = []
    saver = info.get("enable_memory_saver")
    if saver is False:
        raise ServerConfigError(
            f"SGLang at {endpoint.url} runs without --enable-memory-saver: a release would be "
            "accepted and free nothing; restart it with --enable-memory-saver"
        )
    if saver is None:
        notes.append("memory saver not checked: get_server_info has no enable_memory_saver")
    releases_weights = not tags or "weights" in tags
    backup = info.get("enable_weights_cpu_backup")
    if releases_weights and backup is False and not reload:
        raise ServerConfigError(
            f"SGLang at {endpoint.url} runs without --enable-weights-cpu-backup: released "
            "weights come back without their content; restart it with "
            "--enable-weights-cpu-backup, release only kv_cache (--tags kv_cache), or give "
            "a reload step"
        )
    if releases_weights and backup is None:
        notes.append("weights backup not checked: no enable_weights_cpu_backup reported")
    return notes


def _vllm_config(endpoint: ServingEndpoint, timeout_s: float) -> list[str]:
    status = endpoint.request("GET", "/is_sleeping", None, timeout_s)[0]
    if status == 404:
        raise ServerConfigError(
            f"vLLM at {endpoint.url} has no /is_sleeping: start it with VLLM_SERVER_DEV_MODE=1 "
            "and --enable-sleep-mode"
        )
    info = _info(endpoint, ("/server_info?config_format=json",), timeout_s)
    config = info.get("vllm_config") if isinstance(info, dict) else None
    model = config.get("model_config") if isinstance(config, dict) else None
    sleep_mode = model.get("enable_sleep_mode") if isinstance(model, dict) else None
    if sleep_mode is False:
        raise ServerConfigError(
            f"vLLM at {endpoint.url} runs without --enable-sleep-mode: /sleep would free "
            "nothing; restart it with --enable-sleep-mode"
        )
    if sleep_mode is None:
        return ["sleep mode not checked: /server_info has no model_config.enable_sleep_mode"]
    return []


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
    if endpoint.engine == "sglang":
        return _sglang_config(endpoint, tags, reload, timeout_s)
    return _vllm_config(endpoint, timeout_s)
