"""Cold start: launch a serving engine, time it to its first completed request, stop it.

The engine runs in its own process group, which is stopped as a whole (SIGTERM, then
SIGKILL after a grace period): its workers can outlive the process that started them.
Every stamp is ``time.perf_counter_ns()`` of this process.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from typing import IO

from .._checks import integer, nonnegative
from ..scenario import Recovery
from ..serving.endpoint import ServingEndpoint
from ..serving.errors import HandoffProbeError
from ..serving.polling import poll_until
from ..serving.readiness import DEFAULT_POLL_S, Deadline, check_poll, wait_first_request
from .host_memory import PhaseSampler
from .phases import Phases, RecoveryRun
from .release import MemoryReader

__all__ = ["launch_engine"]


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal a process group; whether it still existed."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):  # gone (a reused id is not ours)
        return False
    return True


def _stop(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """Terminate the engine's whole process group, then kill what is left.

    The group is signalled even when its leader has exited: an engine's workers can
    outlive the process that started them (and keep their device memory).
    """
    deadline = time.perf_counter() + grace_s
    _signal_group(process.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    while time.perf_counter() < deadline and _signal_group(process.pid, 0):
        time.sleep(0.05)  # workers finishing after the leader
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


def _launch_argv(
    command: str | Sequence[str],
    endpoint: ServingEndpoint,
    max_tokens: int,
    poll_s: float,
    grace_s: float,
) -> list[str]:
    """The launch command as argv, every argument checked, and the port still free."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("command must not be empty")
    integer("max_tokens", max_tokens, low=1)
    check_poll(poll_s)
    nonnegative("grace_s", grace_s)
    if endpoint.port_open(poll_s):
        raise HandoffProbeError(f"{endpoint.url} already answers before launch: stop that server")
    return argv


def _spawn(
    argv: list[str], log: IO[bytes] | None, cwd: str | os.PathLike[str] | None
) -> subprocess.Popen[bytes]:
    """Start the engine in its own process group, its output to ``log`` (or discarded)."""
    return subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL if log is None else log,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        start_new_session=True,  # its own process group, stopped as a whole
    )


def _exit_check(process: subprocess.Popen[bytes], name: str) -> Callable[[], None]:
    """A check raising ``HandoffProbeError`` once the engine has exited."""

    def alive() -> None:
        status = process.poll()
        if status is not None:
            raise HandoffProbeError(f"{name} exited with status {status} before serving")

    return alive


def _wait_port(
    endpoint: ServingEndpoint, deadline: Deadline, poll_s: float, alive: Callable[[], None]
) -> int:
    """Poll until the engine's port accepts connections; the stamp it did."""

    def port() -> bool | None:
        alive()
        return True if endpoint.port_open(min(poll_s, deadline.left())) else None

    return poll_until(
        port, what=f"{endpoint.url} port", timeout_s=deadline.left(), poll_s=poll_s
    ).t_ns


@contextmanager
def launch_engine(
    command: str | Sequence[str],
    endpoint: ServingEndpoint,
    *,
    device: MemoryReader | None = None,
    log_path: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_tokens: int = 8,
    timeout_s: float = 600.0,
    poll_s: float = DEFAULT_POLL_S,
    grace_s: float = 30.0,
) -> Iterator[tuple[subprocess.Popen[bytes], RecoveryRun]]:
    """Start an engine and time its cold start; stop it (and its children) on exit.

    Parameters
    ----------
    command
        The launch command (a string is split like a shell would, without a shell).
    endpoint
        Where it will serve.
    device
        Read device memory at launch and when ready.
    log_path
        Append the engine's output here (default: discarded).
    cwd
        The engine's working directory (default: this process's).
    max_tokens
        Tokens in the readiness request.
    timeout_s
        Bound on the whole start, seconds.
    poll_s
        Poll interval, seconds.
    grace_s
        Time between SIGTERM and SIGKILL when stopping, seconds.

    Yields
    ------
    (process, RecoveryRun)
        The running engine and its cold start.

    Raises
    ------
    HandoffProbeError
        The engine exited before serving (the message gives its status).
    TimeoutError
        Not ready within ``timeout_s``.
    """
    argv = _launch_argv(command, endpoint, max_tokens, poll_s, grace_s)
    deadline = Deadline(timeout_s, f"{argv[0]} cold start")
    stamps: dict[str, int] = {}
    phases = Phases(None, device)
    phases.mark("launched")
    with ExitStack() as cleanup:
        log = cleanup.enter_context(open(log_path, "ab")) if log_path is not None else None
        stamps["launched"] = time.perf_counter_ns()
        process = _spawn(argv, log, cwd)
        cleanup.callback(_stop, process, grace_s)  # runs before the log is closed
        phases.host = PhaseSampler(process.pid)
        alive = _exit_check(process, argv[0])
        stamps["port_open"] = _wait_port(endpoint, deadline, poll_s, alive)
        wait_first_request(endpoint, stamps, deadline, poll_s, max_tokens, alive)
        phases.mark("ready")
        yield process, phases.run(Recovery.COLD, endpoint.engine, stamps, "")
