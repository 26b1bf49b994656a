"""Warm recovery: park a serving engine, confirm the release, resume it, time its return.

The release call's answer is not the release: where a device can be watched, the freed
memory is confirmed before the parked state is read, and the memory seen back after the
resume. Capacity is ready only when a real generation request completes
(:mod:`learnsched.serving.readiness`), and only if it is the same model: a greedy
answer recorded before the park must come back word for word, else the recovery is
recorded as failed ("weights not restored": an SGLang server without its weights' CPU
backup, a vLLM level-2 sleep without a reload). Before the engine is touched the park
is checked against the engine's semantics and start-up flags, and the engine must be
idle (:mod:`learnsched.serving.preflight`). Cold starts are in :mod:`.cold_start`, the
engines' HTTP dialects in :mod:`learnsched.serving.engines`. Every stamp is
``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .._checks import integer, nonnegative, positive
from ..scenario import Recovery
from ..serving.endpoint import ServingEndpoint
from ..serving.engines import MEMORY_TAGS, VLLM_SLEEP_LEVELS, Parked, park, resume, same_model
from ..serving.errors import HandoffProbeError, RecoveryFailed
from ..serving.polling import poll_until
from ..serving.preflight import check_server_config, wait_until_idle
from ..serving.readiness import DEFAULT_POLL_S, Deadline, check_poll, wait_first_request
from .phases import UNCONFIRMED, Phases, RecoveryRun
from .release import MemoryReader, wait_for_release

__all__ = ["DEFAULT_RELEASE_TIMEOUT_S", "measure_warm_recovery"]

# A park counts as released once this share of the engine's awake device bytes is free:
# sleeping engines keep their CUDA context and some buffers (the paper: 3.74 GiB of ~70).
RELEASE_SHARE = 0.5
# A tagged release must free this share of what the engine says those tags hold, less
# half the resolution of its figures per pool (SGLang rounds each to 0.001 GiB).
TAGGED_SHARE = 0.9
# A release that takes longer than this is not going to happen: the paper's releases
# take seconds; a server that frees nothing would otherwise hold the probe for minutes.
DEFAULT_RELEASE_TIMEOUT_S = 30.0


class _WarmPhases(Phases):
    """:class:`~.phases.Phases` that also confirm a park's release and the memory's return."""

    def __init__(self, pid: int | None, device: MemoryReader | None) -> None:
        super().__init__(pid, device)
        self.expected_bytes: int | None = None

    def confirm_release(
        self,
        stamps: dict[str, int],
        release_bytes: int | None,
        tagged: bool,
        timeout_s: float,
        poll_s: float,
    ) -> str:
        """Wait until the device shows the park's memory freed; stamp ``release_confirmed``.

        ``release_bytes`` is what the park must free (a tagged park: what its tags hold;
        ``None``: half of the engine's awake bytes, for a whole release only). Returns
        the condition seen, or ``"unconfirmed: <why>"`` where the device cannot show it
        (never a made-up stamp).

        Raises
        ------
        TimeoutError
            Nothing like that much was freed within ``timeout_s`` (the message says what
            to check).
        """
        if self.reader is None:
            return UNCONFIRMED + "no device to watch (NVML unavailable or not given)"
        awake = self.engine_device.get("awake")
        expected = release_bytes
        if expected is None and tagged:
            return UNCONFIRMED + (
                "a tagged release frees only its tags' memory and the engine "
                "does not report how much they hold; give release_bytes"
            )
        if expected is None and awake is not None:
            expected = max(1, int(awake * RELEASE_SHARE))
        if expected is None:
            return UNCONFIRMED + (
                "the device does not list the engine's processes with their "
                "memory (another PID namespace, or no PID given); give release_bytes"
            )
        self.expected_bytes = expected
        engine_pids = self.engine_pids()
        watched = [p.pid for p in self.listed["awake"] if p.pid in engine_pids]
        try:
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
        except TimeoutError as err:
            raise TimeoutError(
                f"{err}: the release was acknowledged but {expected / 2**30:.3f} GiB were not "
                f"seen freed within the release timeout ({timeout_s:g} s); is the engine "
                "started with its memory saver (SGLang --enable-memory-saver, vLLM "
                "--enable-sleep-mode), and is the watched GPU the engine's?"
            ) from err
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
    endpoint: ServingEndpoint,
    level: int,
    tags: Sequence[str],
    reload: bool,
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
    endpoint.dialect.check_park(level=level, tags=tags, reload=reload)
    integer("max_tokens", max_tokens, low=1)
    nonnegative("parked_s", parked_s)
    check_poll(poll_s)
    if pid is not None:
        integer("pid", pid, low=1)
    if release_bytes is not None:
        integer("release_bytes", release_bytes, low=1)


def _resume_after_failure(
    endpoint: ServingEndpoint,
    parked: Parked,
    reload: bool,
    timeout_s: float,
    poll_s: float,
    err: BaseException,
) -> None:
    """Best effort: do not leave the user's engine parked because a measurement failed."""
    try:
        resume(endpoint, parked, reload=reload, timeout_s=timeout_s, poll_s=poll_s)
    except (HandoffProbeError, OSError) as resume_err:
        raise HandoffProbeError(
            f"{err}; resuming {endpoint.url} afterwards failed too, so the engine may still "
            f"be parked: {resume_err}"
        ) from err


def _released_bytes(
    endpoint: ServingEndpoint, tags: Sequence[str], release_bytes: int | None, timeout_s: float
) -> tuple[int | None, bool]:
    """What the park must free, and whether it releases only some tags."""
    released = endpoint.dialect.released_tags(tags)
    tagged = set(released) != set(MEMORY_TAGS)
    if release_bytes is not None or not tagged:
        return release_bytes, tagged
    held = endpoint.dialect.released_bytes(endpoint, released, timeout_s)
    if held is None:
        return None, tagged
    allowance = endpoint.dialect.pool_resolution_bytes // 2 * len(released)
    return max(1, int((held - allowance) * TAGGED_SHARE)), tagged


def measure_warm_recovery(
    endpoint: ServingEndpoint,
    *,
    level: int = 1,
    tags: Sequence[str] = (),
    reload: bool = False,
    pid: int | None = None,
    device: MemoryReader | None = None,
    release_bytes: int | None = None,
    parked_s: float = 1.0,
    max_tokens: int = 8,
    timeout_s: float = 120.0,
    release_timeout_s: float = DEFAULT_RELEASE_TIMEOUT_S,
    idle_wait_s: float = 5.0,
    poll_s: float = DEFAULT_POLL_S,
) -> RecoveryRun:
    """Park a serving engine, confirm the release, resume it and time its return.

    Before the engine is touched: the park is checked against the engine's semantics
    (vLLM level 2 needs ``reload``) and its start-up flags where it reports them
    (:func:`~learnsched.serving.preflight.check_server_config`), a greedy answer is
    recorded, and the engine must be idle (waited for up to ``idle_wait_s``). The
    release call's answer is not the release: with a device to watch, the device memory
    is polled until what the park frees is seen freed (stamp ``release_confirmed``; a
    tagged park is held to what its tags hold), and only then is the parked memory read.
    The resume is timed to its acknowledgment with the memory back (``resume_s``) and to
    the first completed request (``ready_s``), sent without a ``/health`` wait. That
    request must repeat the greedy answer. The park and resume are the engine layer's
    (:func:`~learnsched.serving.engines.park`: idleness checked again inside it, SGLang
    paused around the release; :func:`~learnsched.serving.engines.resume`: only what was
    released). If anything fails after the release and before the resume was sent, the
    engine is resumed before the error is raised.

    Parameters
    ----------
    endpoint
        A running engine that serves now.
    level
        vLLM sleep level (1: weights to host memory; 2: discarded, needs ``reload``).
        Unused by SGLang.
    tags
        Memory kinds (``weights``, ``kv_cache``). SGLang releases and resumes just
        these; vLLM's sleep always takes both, and its resume wakes these first, in
        order, then the rest (it stays asleep until every tag is awake). Empty: all.
    reload
        Load the weights again during the resume (vLLM ``reload_weights`` after the
        weights wake; SGLang ``update_weights_from_disk``).
    pid
        The engine's process: its tree's PSS is read at each phase, and its processes
        on the device are watched.
    device
        The GPU to watch (an :class:`~learnsched.handoff.NvmlDevice`, or anything with
        ``memory()`` and ``processes()``); ``None`` records that the release could not
        be confirmed.
    release_bytes
        Device bytes a park must free to count as released (default: half of what the
        device lists for the engine's processes while awake; a tagged park: what the
        engine reports its tags hold).
    parked_s
        Time to stay parked before resuming, seconds.
    max_tokens
        Tokens in the reference and readiness requests.
    timeout_s
        Bound on each resume-side phase, seconds.
    release_timeout_s
        Bound on each release-side phase (the call, the engine's own report, the
        device seen freed), seconds.
    idle_wait_s
        How long to wait for running and queued requests to drain, seconds.
    poll_s
        Poll interval, seconds (10-50 ms).

    Raises
    ------
    ServerConfigError
        The server runs without a flag the park needs (nothing was touched).
    EngineBusy
        The engine did not become idle (nothing was parked).
    RecoveryFailed
        The engine came back answering differently: ``err.run`` is the recorded run,
        with ``failure`` set.
    """
    _check_warm_arguments(
        endpoint, level, tags, reload, max_tokens, parked_s, poll_s, pid, release_bytes
    )
    positive("release_timeout_s", release_timeout_s)
    stamps: dict[str, int] = {}
    phases = _WarmPhases(pid, device)
    ready = Deadline(timeout_s, f"{endpoint.url} before release")
    phases.notes += check_server_config(endpoint, tags=tags, reload=reload, timeout_s=ready.left())
    if wait_until_idle(endpoint, idle_wait_s, poll_s) is None:
        phases.notes.append("idleness not checked: the engine exposes no load gauges")
    # The reference answer: serving now, or an error naming the URL.
    reference = endpoint.generate(max_tokens, ready.left()).text
    wait_until_idle(endpoint, idle_wait_s, poll_s)  # nothing arrived since
    expected, tagged = _released_bytes(endpoint, tags, release_bytes, ready.left())
    phases.mark("awake")
    # The park checks idleness itself, pauses SGLang and undoes a release that failed.
    parked = park(
        endpoint, level=level, tags=tags, timeout_s=release_timeout_s, poll_s=poll_s,
        idle_wait_s=idle_wait_s, stamps=stamps,
    )  # fmt: skip
    try:
        release = phases.confirm_release(stamps, expected, tagged, release_timeout_s, poll_s)
        phases.mark("parked")
        time.sleep(parked_s)
        resume(endpoint, parked, reload=reload, timeout_s=timeout_s, poll_s=poll_s, stamps=stamps)
    except BaseException as err:
        if "resume_sent" not in stamps:
            _resume_after_failure(endpoint, parked, reload, timeout_s, poll_s, err)
        raise
    phases.confirm_memory_back(stamps, timeout_s, poll_s)
    after = Deadline(timeout_s, f"{endpoint.url} after resume")
    answer = wait_first_request(endpoint, stamps, after, poll_s, max_tokens, health=False)
    phases.mark("resumed")
    failure = same_model(reference, answer.text)
    run = phases.run(Recovery.WARM, endpoint.engine, stamps, release, failure)
    if failure is not None:
        raise RecoveryFailed(f"{endpoint.url}: {failure}", run)
    return run
