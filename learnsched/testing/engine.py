"""A simulated serving engine speaking vLLM's or SGLang's HTTP dialect, on loopback.

Run it::

    python -m learnsched.testing.engine --dialect vllm --port 8000 --weights-mib 256

It prints ``PORT <n>`` once listening (``--port 0`` picks a free one), serves until
stopped (or ``--lifetime S``), and behaves as the engines do where a handoff probe or a
scheduler could be fooled (:mod:`._state` cites the sources): ``/health`` answers while
parked, vLLM's ``is_sleeping`` stays true until every tag is woken (and while paused),
vLLM queues requests while asleep and its ``/sleep`` aborts, drains or freezes
in-flight ones, SGLang refuses a release while busy and a resume of a tag never
released, a server without the memory saver accepts a release and frees nothing, and a
resume without the weights' backup answers with different text. Its weights and KV
cache are real memory (host pages, or CUDA memory with ``--device cuda``) freed while
parked. Stdlib only (torch for CUDA). ``tests/test_engine_conformance.py`` runs the same
requests against it and a real vLLM.

``--strict`` fails as the real engine of its dialect does instead of answering 400 or
503 (:data:`~._config.STRICT`; one flag per behaviour too, see ``--help``): SGLang's
server process exits on a generation while memory is released without
``/pause_generation``, on a release while busy and on a resume of a tag never released;
SGLang's ``/metrics`` freezes while parked; greedy text depends on the batch; SGLang's
``/health`` takes 1 s; vLLM streams end with the usage-only event.

From Python: :class:`SimulatedEngine` runs one in this process (a thread);
:class:`EngineProcess` runs one as a child process, whose memory is its own.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ._config import DIALECT_DEFAULTS, DIALECTS, STRICT, EngineConfig
from ._http import make_handler
from ._state import EngineState

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

__all__ = [
    "EngineConfig",
    "EngineProcess",
    "SimulatedEngine",
    "engine_command",
    "free_port",
    "main",
]

LOOPBACK = "127.0.0.1"
# Command-line flags of the boolean fields that are on by default.
OFF_FLAGS = {
    "weights_backup": "--no-weights-backup",
    "memory_saver": "--no-memory-saver",
    "refuse_busy": "--allow-busy-release",
    "metrics": "--no-metrics",
}
# Command-line flags of the boolean fields that are off by default (the strict ones).
ON_FLAGS = {
    "die_on_released_generation": "--die-on-released-generation",
    "die_on_busy_release": "--die-on-busy-release",
    "die_on_unreleased_resume": "--die-on-unreleased-resume",
    "frozen_metrics": "--frozen-metrics",
    "batch_variant": "--batch-variant",
    "force_include_usage": "--force-include-usage",
}
# Fields whose flag differs from the field name.
FLAG_NAMES = {
    "slow_health_s": "--slow-health",
    "ready_delay_s": "--ready-delay",
    "release_s": "--release-delay",
    "resume_s": "--resume-delay",
    "free_delay_s": "--free-delay",
    "token_s": "--token-s",
    "gauge_lag_s": "--gauge-lag",
}
# Boolean fields whose default is the dialect's (:data:`~._config.DIALECT_DEFAULTS`): each
# flag has its ``--no-`` form.
DIALECT_FLAGS = {name: "--" + name.replace("_", "-") for name in DIALECT_DEFAULTS}
# String fields that are unset (``None``) by default, and their flags.
OPTIONAL_FLAGS = {
    "api_key": "--api-key",
    "ssl_certfile": "--ssl-certfile",
    "ssl_keyfile": "--ssl-keyfile",
}


def check_loopback(host: str) -> str:
    """``host`` if it is a loopback address (or ``localhost``), else ``ValueError``."""
    if host == "localhost":
        return LOOPBACK
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(f"host must be a loopback address (127.0.0.1, ::1), got {host!r}")
    return host


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck stream never blocks shutdown

    def __init__(self, host: str, port: int, state: EngineState) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), make_handler(state))
        config = state.config
        if config.ssl_certfile is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile)
            self.socket = context.wrap_socket(self.socket, server_side=True)


class SimulatedEngine:
    """A simulated engine serving from a thread of this process; a context manager.

    Parameters
    ----------
    config
        The behaviour (:class:`EngineConfig`).
    host
        A loopback address.
    port
        TCP port (0: a free one).
    """

    def __init__(self, config: EngineConfig, host: str = LOOPBACK, port: int = 0) -> None:
        self.state = EngineState(config, on_death=self._died)
        self.server = _Server(check_loopback(host), port, self.state)
        self.state.started = time.monotonic()  # --ready-delay counts from listening
        self.port = int(self.server.server_address[1])
        shown = f"[{host}]" if ":" in host else host
        self.url = f"{config.scheme}://{shown}:{self.port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> Self:
        """Serve in the background; returns ``self``."""
        self.thread.start()
        return self

    @property
    def death(self) -> str | None:
        """Why the engine died (``None``: alive); a dead engine no longer listens."""
        return self.state.death

    def _died(self, reason: str) -> None:
        """As the server process would: stop listening (from another thread: the
        caller is one of the server's own request threads)."""
        threading.Thread(target=self._close, daemon=True).start()

    def _close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self.thread.is_alive():
            self.server.shutdown()
            self.thread.join()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def config_argv(config: EngineConfig) -> list[str]:
    """The command-line flags that reproduce ``config``."""
    argv = ["--dialect", config.dialect]
    default = EngineConfig(config.dialect)
    for field in fields(EngineConfig):
        value = getattr(config, field.name)
        if field.name == "dialect" or value == getattr(default, field.name):
            continue
        if field.name in OFF_FLAGS:
            argv.append(OFF_FLAGS[field.name])
        elif field.name in OPTIONAL_FLAGS:
            argv += [OPTIONAL_FLAGS[field.name], str(value)]
        elif field.name in ON_FLAGS:
            argv.append(ON_FLAGS[field.name])
        elif field.name in DIALECT_FLAGS:
            flag = DIALECT_FLAGS[field.name]
            argv.append(flag if value else "--no-" + flag[2:])
        else:
            flag = FLAG_NAMES.get(field.name, "--" + field.name.replace("_", "-"))
            argv += [flag, str(value)]
    return argv


def engine_command(
    config: EngineConfig, port: int = 0, host: str = LOOPBACK, lifetime_s: float | None = None
) -> list[str]:
    """The command that starts this engine as a process (e.g. for a cold-start probe)."""
    command = [sys.executable, "-m", "learnsched.testing.engine", *config_argv(config)]
    command += ["--host", check_loopback(host), "--port", str(port)]
    if lifetime_s is not None:
        command += ["--lifetime", str(lifetime_s)]
    return command


class EngineProcess:
    """A simulated engine in a child process; a context manager (stopped on exit).

    Parameters
    ----------
    config
        The behaviour.
    port
        TCP port on 127.0.0.1 (0: a free one, read back from the child).
    lifetime_s
        The child exits after this long even if never stopped (a safety net), seconds.
    env
        Extra environment for the child (e.g. ``CUDA_VISIBLE_DEVICES``).
    cwd
        Working directory (default: the temporary directory, outside any source tree,
        so a flat checkout's unbuilt package cannot shadow the installed one).
    start_timeout_s
        Bound on the wait for ``PORT <n>``, seconds.
    """

    def __init__(
        self,
        config: EngineConfig,
        *,
        port: int = 0,
        lifetime_s: float | None = 600.0,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        start_timeout_s: float = 60.0,
    ) -> None:
        self.config = config
        self.command = engine_command(config, port, lifetime_s=lifetime_s)
        # Why it died, if it does; closed by stop() (the process outlives this call).
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self._final_stderr = ""
        self.process = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            cwd=str(cwd) if cwd is not None else tempfile.gettempdir(),
            env={**os.environ, **(env or {})},
        )
        self.port = self._read_port(start_timeout_s)
        self.url = f"{config.scheme}://{LOOPBACK}:{self.port}"
        self.pid = self.process.pid

    def _read_port(self, timeout_s: float) -> int:
        """The port the child printed; the child is stopped if it printed none in time."""
        stdout = self.process.stdout
        assert stdout is not None  # opened with PIPE
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not line or not line[0].startswith("PORT "):
            self.stop(keep_stderr=True)
            got = repr(line[0]) if line else f"nothing within {timeout_s:g} s"
            why = self.stderr_text().strip()[-500:]
            self._stderr.close()
            raise RuntimeError(
                f"simulated engine did not start ({' '.join(self.command)}): "
                f"printed {got}, exit status {self.process.returncode}"
                + (f": {why}" if why else "")
            )
        return int(line[0].split()[1])

    def alive(self) -> bool:
        """Whether the child still runs (a strict engine exits where the real one dies)."""
        return self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The child's exit status (``None`` while it runs)."""
        return self.process.poll()

    def stderr_text(self) -> str:
        """What the child wrote to stderr so far (a dead strict engine says why)."""
        if self._stderr.closed:
            return self._final_stderr
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()

    def stop(self, timeout_s: float = 10.0, *, keep_stderr: bool = False) -> None:
        """Terminate the child and wait for it (killed after ``timeout_s``); its stderr
        stays readable with ``keep_stderr``."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if not keep_stderr and not self._stderr.closed:
            self._final_stderr = self.stderr_text()
            self._stderr.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m learnsched.testing.engine",
        description="A simulated vLLM or SGLang server on loopback, holding real memory.",
        epilog=(
            'SGLang\'s /pause_generation {"mode": abort|retract|in_place} and '
            "/continue_generation always exist: paused arrivals wait, invisible to "
            "/metrics, until the engine continues. GET /sim/state shows what NVML and "
            "/proc would (memory held, tags asleep, load, held and aborted requests)."
        ),
    )
    add = parser.add_argument
    add("--dialect", choices=DIALECTS, required=True, help="HTTP dialect and park semantics")
    add("--host", default=LOOPBACK, help="a loopback address (default %(default)s)")
    add("--port", type=int, default=0, help="TCP port (0: a free one; printed as PORT <n>)")
    add("--model", default="sim-model", help="served model name")
    add("--seed", type=int, default=0, help="draws the weights, hence the text")
    add("--weights-mib", type=float, default=8.0, help="memory for the weights, MiB")
    add("--kv-mib", type=float, default=8.0, help="memory for the KV cache, MiB")
    add("--resident-mib", type=float, default=2.0, help="memory kept while parked, MiB")
    add("--device", default="cpu", help="cpu, cuda or cuda:N (needs torch)")
    add("--token-s", type=float, default=0.002, help="decode time per token, s")
    add("--max-running", type=int, default=8, help="requests decoded at once")
    add("--max-model-len", type=int, default=4096,
        help="context length, tokens (one per word): longer prompts are refused")  # fmt: skip
    add("--no-weights-backup", action="store_true", help="resume loses the weights")
    add("--no-memory-saver", action="store_true", help="release accepted, nothing freed")
    add("--allow-busy-release", action="store_true", help="release even while requests run")
    add("--no-metrics", action="store_true",
        help="no load gauges (SGLang without --enable-metrics: /metrics is 404; vLLM "
             "--disable-log-stats)")  # fmt: skip
    add("--slow-health", type=float, default=None, metavar="S",
        help="/health answers after S s (default 0; 1 with --strict on SGLang)")  # fmt: skip
    add("--ready-delay", type=float, default=0.0, help="503 for this long after start, s")
    add("--release-delay", type=float, default=0.0, help="release call takes this long, s")
    add("--resume-delay", type=float, default=0.0, help="resume call takes this long, s")
    add("--free-delay", type=float, default=0.0, help="memory freed this long after ack, s")
    add("--gauge-lag", type=float, default=0.0, metavar="S",
        help="/metrics shows the load as it was S s ago (default 0: exact)")  # fmt: skip
    add("--resume-status", type=int, default=200, help="answer resumes with this status")
    add("--resume-failures", type=int, default=0,
        help="only the first N resumes get --resume-status (0: all)")  # fmt: skip
    add("--generate-status", type=int, default=200, help="answer generation with this")
    add("--stream", choices=("ok", "error", "garbage"), default="ok", help="break the stream")
    add("--startup-delay", type=float, default=0.0, help="wait before listening, s")
    add("--lifetime", type=float, default=None, help="exit after this long, s")
    add("--api-key", help="require Authorization: Bearer KEY (the engines' --api-key)")
    add("--ssl-certfile", metavar="PEM", help="serve https with this certificate")
    add("--ssl-keyfile", metavar="PEM", help="and this private key")
    strict = parser.add_argument_group(
        "real failure modes",
        "--strict turns on every one of these the dialect has (SGLang: the three --die-on "
        "flags, --frozen-metrics, --batch-variant, --slow-health 1; vLLM: "
        "--queue-while-asleep, --sleep-modes (both on by default), --batch-variant, "
        "--force-include-usage); each can also be given alone.",
    )
    add = strict.add_argument
    add("--strict", action="store_true", help="fail as the real engine of --dialect does")
    add("--die-on-released-generation", action="store_true",
        help="SGLang: a generation (or /health) reaching the scheduler while memory is "
             "released without /pause_generation kills the server (illegal address)")  # fmt: skip
    add("--die-on-busy-release", action="store_true",
        help="SGLang: /release_memory_occupation on a busy engine fails the scheduler's "
             "idleness assertion and kills the server")  # fmt: skip
    add("--die-on-unreleased-resume", action="store_true",
        help="SGLang: /resume_memory_occupation of a tag never released raises KeyError "
             "in the scheduler and kills the server")  # fmt: skip
    add("--queue-while-asleep", action=argparse.BooleanOptionalAction,
        help="vLLM (default on): requests sent while asleep are queued, unseen by the "
             "gauges, until wake-up; --no-queue-while-asleep answers them 503")  # fmt: skip
    add("--sleep-modes", action=argparse.BooleanOptionalAction,
        help="vLLM (default on): /sleep?mode=abort (default) aborts in-flight requests "
             "(finish_reason abort, then [DONE]), mode=wait drains, mode=keep freezes; "
             "level 0 pauses; --no-sleep-modes refuses a busy sleep and level 0")  # fmt: skip
    add(
        "--frozen-metrics",
        action="store_true",
        help="SGLang: /metrics gauges keep their values while released or paused",
    )
    add(
        "--batch-variant",
        action="store_true",
        help="greedy text depends on the batch a request decodes in (alone: stable)",
    )
    add("--batch-invariant", action="store_true",
        help="the engines' batch-invariance switch (VLLM_BATCH_INVARIANT=1, SGLang "
             "--enable-deterministic-inference): overrides --batch-variant and --strict")  # fmt: skip
    add("--force-include-usage", action="store_true",
        help="OpenAI streams end with the usage-only event {\"choices\": [], \"usage\": ...} "
             "(vLLM --enable-force-include-usage)")  # fmt: skip
    return parser


def config_from_args(args: argparse.Namespace) -> EngineConfig:
    """The :class:`EngineConfig` a parsed command line asks for."""
    chosen: dict[str, object] = {
        name: True for name, flag in ON_FLAGS.items() if getattr(args, _dest(flag))
    }
    for name in DIALECT_FLAGS:
        if getattr(args, name) is not None:
            chosen[name] = getattr(args, name)
    if args.strict:
        chosen = {**STRICT[args.dialect], **chosen}
    if args.slow_health is not None:
        chosen["slow_health_s"] = args.slow_health
    if args.batch_invariant:
        chosen["batch_variant"] = False
    return EngineConfig(
        dialect=args.dialect,
        model=args.model,
        seed=args.seed,
        weights_mib=args.weights_mib,
        kv_mib=args.kv_mib,
        resident_mib=args.resident_mib,
        device=args.device,
        token_s=args.token_s,
        max_model_len=args.max_model_len,
        max_running=args.max_running,
        weights_backup=not args.no_weights_backup,
        memory_saver=not args.no_memory_saver,
        refuse_busy=not args.allow_busy_release,
        metrics=not args.no_metrics,
        ready_delay_s=args.ready_delay,
        release_s=args.release_delay,
        resume_s=args.resume_delay,
        free_delay_s=args.free_delay,
        gauge_lag_s=args.gauge_lag,
        resume_status=args.resume_status,
        resume_failures=args.resume_failures,
        generate_status=args.generate_status,
        stream=args.stream,
        api_key=args.api_key,
        ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile,
        **chosen,  # type: ignore[arg-type]
    )


def _dest(flag: str) -> str:
    """argparse's attribute name for ``--a-flag``."""
    return flag[2:].replace("-", "_")


def _die(reason: str) -> None:
    """The server process dies as the real one does: at once, every thread with it."""
    print(f"learnsched.testing.engine: the server died: {reason}", file=sys.stderr, flush=True)
    os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until terminated (or ``--lifetime``); exit 2 with one line on bad input."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
        host = check_loopback(args.host)
        if args.lifetime is not None and args.lifetime <= 0:
            raise ValueError(f"--lifetime must be > 0, got {args.lifetime!r}")
        if args.startup_delay < 0:
            raise ValueError(f"--startup-delay must be >= 0, got {args.startup_delay!r}")
        threading.Event().wait(args.startup_delay)  # a slow launch: nothing listens yet
        engine = SimulatedEngine(config, host, args.port)
        engine.state.on_death = _die
    except (ValueError, TypeError, OSError, ImportError) as err:
        print(f"learnsched.testing.engine: {err}", file=sys.stderr)
        return 2
    print(f"PORT {engine.port}", flush=True)
    if args.lifetime is not None:  # bounded: a forgotten engine does not run for ever
        timer = threading.Timer(args.lifetime, engine.server.shutdown)
        timer.daemon = True
        timer.start()
    try:
        engine.server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        engine.server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
