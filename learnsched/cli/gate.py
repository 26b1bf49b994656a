"""``learnsched gate``: the gate alone, in front of a vLLM or SGLang server."""

from __future__ import annotations

import argparse
import ipaddress
import signal
import sys
import threading
from contextlib import ExitStack
from types import FrameType
from typing import TYPE_CHECKING

from ..gate import DEFAULT_LEASE_S, DEFAULT_MAX_HELD
from ..gate.limits import GateLimits, add_limit_flags
from .output import EXIT_OK, emit_json, print_values

if TYPE_CHECKING:
    from ..gate import Gate

__all__ = ["DEFAULT_GATE_PORT", "address", "register", "url_argument"]

LOOPBACK = "127.0.0.1"
DEFAULT_GATE_PORT = 8100


def address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:PORT`` for IPv6) as ``(host, port)``; loopback without a
    host. ``ValueError`` names the text (argparse reports it as bad input)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = LOOPBACK
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {text!r}") from None
    if not 0 <= number <= 65535 or not host:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT with PORT in 0-65535, got {text!r}")
    return host, number


def url_argument(text: str) -> str:
    """An ``http(s)://HOST:PORT`` flag value, checked before anything starts: the gate
    would otherwise serve with an upstream it can never reach (a port of 99999)."""
    from .._url import http_url

    try:
        http_url("URL", text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``gate``."""
    from ..serving.engines import ENGINES

    gate = commands.add_parser(
        "gate",
        help="an OpenAI-compatible proxy in front of an engine that counts its requests",
        description=(
            "Forward every request to the engine unchanged (streams included) and count "
            "arrivals, requests in flight, completions and failures. With --control a "
            "scheduler attaches to it (`learnsched run --attach`) and closes its door "
            "before each park; the gate outlives every run, so clients keep one address "
            "whatever ends the run (docs/serving.md). Alone it never holds a request. "
            "Needs the serve extra (aiohttp)."
        ),
    )
    add = gate.add_argument
    add("--engine", choices=ENGINES, required=True, help="the serving engine")
    add("--url", required=True, type=url_argument, help="the engine's http://HOST:PORT")
    add(
        "--listen", type=address, default=(LOOPBACK, DEFAULT_GATE_PORT), metavar="[HOST:]PORT",
        help=f"where clients connect (default {LOOPBACK}:{DEFAULT_GATE_PORT}; loopback "
        "unless HOST is given)",
    )  # fmt: skip
    add(
        "--notify", metavar="URL",
        help="POST each arrival to this URL (a `learnsched run --notify` endpoint, "
        "http://HOST:PORT/arrival), so the scheduler there returns early",
    )  # fmt: skip
    add(
        "--control", type=address, metavar="[HOST:]PORT",
        help="serve the door's control API here for `learnsched run --attach` (a listener "
        "of its own, never the client port; loopback unless HOST is given)",
    )  # fmt: skip
    add(
        "--lease-s", type=float, default=DEFAULT_LEASE_S, metavar="S",
        help="with --control: a door a scheduler closed opens by itself S seconds after "
        "its last renewal (it vanished and no run took the door over: the held requests "
        "go on to the engine, which holds them until a run returns it; default "
        "%(default)s)",
    )  # fmt: skip
    add(
        "--max-held", type=int, default=DEFAULT_MAX_HELD,
        help="with --control: requests held at the closed door at most (later ones are "
        "answered 503 with Retry-After; default %(default)s)",
    )  # fmt: skip
    add(
        "--ca-file", metavar="PEM",
        help="certificate authorities for an https:// engine URL (a private CA)",
    )  # fmt: skip
    add_limit_flags(gate, "")
    add("--json", action="store_true", help="print the counts as JSON when stopped")
    gate.set_defaults(func=run_gate)


def _check_control(args: argparse.Namespace) -> None:
    """The control listener is never the client port, and the lease is finite."""
    from .._checks import positive

    positive("--lease-s", args.lease_s)
    if args.max_held < 0:
        raise ValueError(f"--max-held must be at least 0, got {args.max_held!r}")
    if args.control is not None and args.control[1] != 0 and args.control[1] == args.listen[1]:
        raise ValueError(
            f"--control {args.control[1]} is the client port (--listen): clients must never "
            "reach the door's control"
        )


def run_gate(args: argparse.Namespace) -> int:
    """``learnsched gate``: serve until SIGTERM or SIGINT, then print the counts."""
    from ..gate import Gate
    from ..gate.notify import ArrivalForwarder

    _check_control(args)
    host, port = args.listen
    forwarder = None if args.notify is None else ArrivalForwarder(args.notify).start()
    gate = Gate(
        args.url,
        args.engine,
        host=host,
        port=port,
        max_held=args.max_held,
        on_arrival=None if forwarder is None else forwarder.arrived,
        ca_file=args.ca_file,
        limits=GateLimits.from_args(args),
    )
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    with gate, ExitStack() as stack:
        print(f"{args.command_prog}: forwarding {gate.url} -> {args.url}", file=sys.stderr)
        if not is_loopback(host):
            print(f"{args.command_prog}: note: {host} is not loopback: whoever reaches the "
                  "gate reaches the engine", file=sys.stderr)  # fmt: skip
        if args.control is not None:
            _serve_control(args, gate, stack)
        while not stop.wait(1.0):
            pass
    counts = gate.counts()  # after the stop: the answers under way have finished
    if forwarder is not None:
        forwarder.stop()
    if args.json:
        emit_json(counts.to_json())
    else:
        print_values(counts.to_json())
    return EXIT_OK


def _serve_control(args: argparse.Namespace, gate: Gate, stack: ExitStack) -> None:
    """Serve the door's control listener (stopped before the gate, by ``stack``)."""
    from ..gate import ControlServer

    def report(line: str) -> None:
        print(f"{args.command_prog}: {line}", file=sys.stderr, flush=True)

    host, port = args.control
    control = stack.enter_context(
        ControlServer(gate, host, port, lease_s=args.lease_s, report=report)
    )
    report(f"door control {control.url} (lease {args.lease_s:g} s)")
    if not is_loopback(host):
        report(f"note: {host} is not loopback: whoever reaches the control can hold every "
               "request")  # fmt: skip
