"""Warm recovery: park a serving engine, confirm the release, resume it, time its return.

The release call's answer is not the release: where a device can be watched, the freed
memory is confirmed before the parked state is read, and the memory seen back after the
resume. Capacity is ready only when a real generation request completes
(:mod:`.readiness`). Cold starts are in :mod:`.cold_start`, the engines' HTTP dialects
in :mod:`.engines`. Every stamp is ``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .._checks import integer, nonnegative
from .endpoint import ServingEndpoint
from .engines import VLLM_SLEEP_LEVELS
from .errors import HandoffProbeError
from .phases import Phases, RecoveryRun
from .readiness import DEFAULT_POLL_S, Deadline, check_poll, wait_first_request
from .release import MemoryReader, wait_for_release
from .waits import poll_until

__all__ = ["measure_warm_recovery"]

# A park counts as released once this share of the engine's awake device bytes is free:
# sleeping engines keep their CUDA context and some buffers (the paper: 3.74 GiB of ~70).
RELEASE_SHARE = 0.5


class _WarmPhases(Phases):
    """:class:`~.phases.Phases` that also confirm a park's release and the memory's return."""

    def __init__(self, pid: int | None, device: MemoryReader | None) -> None:
        super().__init__(pid, device)
        self.expected_bytes: int | None = None

    def confirm_release(
        self, stamps: dict[str, int], release_bytes: int | None, timeout_s: float, poll_s: float
    ) -> str:
        """Wait until the device shows the park's memory freed; stamp ``release_confirmed``.

        Returns the condition seen, or ``"unconfirmed: <why>"`` where the device cannot
        show it (never a made-up stamp).
        """
        if self.reader is None:
            return "unconfirmed: no device to watch (NVML unavailable or not given)"
        awake = self.engine_device.get("awake")
        expected = release_bytes
        if expected is None and awake is not None:
            expected = max(1, int(awake * RELEASE_SHARE))
        if expected is None:
            return (
                "unconfirmed: the device does not list the engine's processes with their "
                "memory (another PID namespace, or no PID given); give release_bytes"
            )
        self.expected_bytes = expected
        engine_pids = self.engine_pids()
        watched = [p.pid for p in self.listed["awake"] if p.pid in engine_pids]
        result = wait_for_release(
            self.reader,
            pid=watched or None,
            floor_bytes=max(awake - expected, 0) if watched and awake is not None else None,
            free_rise_bytes=expected,
            baseline_free_bytes=self.device["awake"].free,
            baseline_processes=self.listed["awake"],
            since_ns=stamps["release_sent"],
            timeout_s=timeout_s,
            poll_s=poll_s,
        )
        stamps["release_confirmed"] = result.seen_ns
        return result.condition

    def confirm_memory_back(self, stamps: dict[str, int], timeout_s: float, poll_s: float) -> None:
        """After a confirmed release: wait until the memory is re-occupied (``memory_back``)."""
        expected, reader = self.expected_bytes, self.reader
        if expected is None or reader is None or "release_confirmed" not in stamps:
            return
        parked_free = self.device["parked"].free
        parked_engine = self.engine_device.get("parked")
        engine_pids = self.engine_pids()

        def back() -> bool | None:
            if parked_free - reader.memory().free >= expected:
                return True
            if parked_engine is None:
                return None
            mine = [p.used_bytes or 0 for p in reader.processes() if p.pid in engine_pids]
            return True if sum(mine) - parked_engine >= expected else None

        stamps["memory_back"] = poll_until(
            back, what="device memory back after resume", timeout_s=timeout_s, poll_s=poll_s
        ).t_ns


def _check_warm_arguments(
    level: int,
    max_tokens: int,
    parked_s: float,
    poll_s: float,
    pid: int | None,
    release_bytes: int | None,
) -> None:
    """Bad input as ``ValueError``/``TypeError``, before the engine is touched."""
    integer("level", level, low=1)
    if level not in VLLM_SLEEP_LEVELS:
        raise ValueError(f"level must be 1 or 2 (vLLM sleep levels), got {level!r}")
    integer("max_tokens", max_tokens, low=1)
    nonnegative("parked_s", parked_s)
    check_poll(poll_s)
    if pid is not None:
        integer("pid", pid, low=1)
    if release_bytes is not None:
        integer("release_bytes", release_bytes, low=1)


def _reported(endpoint: ServingEndpoint, sleeping: bool, timeout_s: float, poll_s: float) -> int:
    """Poll the engine's own view until it reports ``sleeping``; the stamp it did."""
    return poll_until(
        lambda: True if endpoint.is_sleeping(timeout_s) == sleeping else None,
        what=f"{endpoint.engine} at {endpoint.url} reporting {'parked' if sleeping else 'awake'}",
        timeout_s=timeout_s,
        poll_s=poll_s,
    ).t_ns


def _park(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    level: int,
    tags: Sequence[str],
    timeout_s: float,
    poll_s: float,
) -> None:
    """Send the release; stamp it, its acknowledgment and the engine's own view if it has one."""
    stamps["release_sent"] = time.perf_counter_ns()
    endpoint.release(level=level, tags=tags, timeout_s=timeout_s)
    stamps["release_ack"] = time.perf_counter_ns()
    if endpoint.dialect.reports_parked:
        stamps["asleep_reported"] = _reported(endpoint, True, timeout_s, poll_s)


def _unpark(
    endpoint: ServingEndpoint,
    stamps: dict[str, int],
    tags: Sequence[str],
    timeout_s: float,
    poll_s: float,
) -> None:
    """Send the resume; stamp it, its acknowledgment and the engine's own view if it has one."""
    stamps["resume_sent"] = time.perf_counter_ns()
    endpoint.resume(tags=tags, timeout_s=timeout_s)
    stamps["resume_ack"] = time.perf_counter_ns()
    if endpoint.dialect.reports_parked:
        stamps["awake_reported"] = _reported(endpoint, False, timeout_s, poll_s)


def _resume_after_failure(
    endpoint: ServingEndpoint, tags: Sequence[str], timeout_s: float, err: BaseException
) -> None:
    """Best effort: do not leave the user's engine parked because a measurement failed."""
    try:
        endpoint.resume(tags=tags, timeout_s=timeout_s)
    except (HandoffProbeError, OSError) as resume_err:
        raise HandoffProbeError(
            f"{err}; resuming {endpoint.url} afterwards failed too, so the engine may still "
            f"be parked: {resume_err}"
        ) from err


def measure_warm_recovery(
    endpoint: ServingEndpoint,
    *,
    level: int = 1,
    tags: Sequence[str] = (),
    pid: int | None = None,
    device: MemoryReader | None = None,
    release_bytes: int | None = None,
    parked_s: float = 1.0,
    max_tokens: int = 8,
    timeout_s: float = 120.0,
    poll_s: float = DEFAULT_POLL_S,
) -> RecoveryRun:
    """Park a serving engine, confirm the release, resume it and time its return.

    The release call's answer is not the release: with a device to watch, the device
    memory is polled (:func:`~learnsched.handoff.wait_for_release`) until it has been
    freed (stamp ``release_confirmed``), and only then is the parked memory read. The
    resume is timed to its acknowledgment with the memory back (``resume_s``) and to the
    first completed request (``ready_s``). If anything fails after the release was sent
    and before the resume was, the engine is resumed before the error is raised.

    Parameters
    ----------
    endpoint
        A running engine that serves now.
    level
        vLLM sleep level (1: weights to host memory; 2: discarded). Unused by SGLang.
    tags
        Memory kinds to release and resume (vLLM ``wake_up`` tags, SGLang ``tags``,
        e.g. ``weights``, ``kv_cache``); empty means all.
    pid
        The engine's process: its tree's PSS is read at each phase, and its processes
        on the device are watched.
    device
        The GPU to watch (an :class:`~learnsched.handoff.NvmlDevice`, or anything with
        ``memory()`` and ``processes()``); ``None`` records that the release could not
        be confirmed.
    release_bytes
        Device bytes a park must free to count as released (default: half of what the
        device lists for the engine's processes while awake).
    parked_s
        Time to stay parked before resuming, seconds.
    max_tokens
        Tokens in the readiness request.
    timeout_s
        Bound on each phase, seconds.
    poll_s
        Poll interval, seconds (10-50 ms).
    """
    _check_warm_arguments(level, max_tokens, parked_s, poll_s, pid, release_bytes)
    stamps: dict[str, int] = {}
    phases = _WarmPhases(pid, device)
    ready = Deadline(timeout_s, f"{endpoint.url} before release")
    endpoint.generate(max_tokens, ready.left())  # serving now, or an error naming the URL
    phases.mark("awake")
    try:
        _park(endpoint, stamps, level, tags, timeout_s, poll_s)
        release = phases.confirm_release(stamps, release_bytes, timeout_s, poll_s)
        phases.mark("parked")
        time.sleep(parked_s)
        _unpark(endpoint, stamps, tags, timeout_s, poll_s)
    except BaseException as err:
        if "release_sent" in stamps and "resume_sent" not in stamps:
            _resume_after_failure(endpoint, tags, timeout_s, err)
        raise
    phases.confirm_memory_back(stamps, timeout_s, poll_s)
    wait_first_request(
        endpoint, stamps, Deadline(timeout_s, f"{endpoint.url} after resume"), poll_s, max_tokens
    )
    phases.mark("resumed")
    return phases.run("warm", endpoint.engine, stamps, release)
