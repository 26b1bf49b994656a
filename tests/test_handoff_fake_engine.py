"""A stand-in serving engine speaking vLLM's or SGLang's routes, and its own checks.

Run as a script it serves on 127.0.0.1 and prints ``PORT <n>`` once listening:

    python tests/test_handoff_fake_engine.py --engine vllm --port 0 --resume-delay 0.2

It models what the recovery probe must not be fooled by: ``/health`` answers 200 while
parked (as vLLM's does), requests fail while parked, the release and resume calls take
configurable time, and a parked engine holds ``--hold-mib`` more host memory (vLLM's
level-1 sleep keeps the weights in host memory). ``--device-mib`` stands in for device
memory (host memory here, watched through :class:`HostBackedDevice`): held while awake,
freed ``--free-delay`` seconds *after* the release was acknowledged. It can also answer
generation with an error status or a broken stream, and refuse to resume.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest

if TYPE_CHECKING:  # run as a server, this script imports nothing from learnsched
    from typing_extensions import Self  # typing.Self needs Python 3.11; mypy ships it

    from learnsched.handoff import DeviceMemory, GpuProcess

SCRIPT = Path(__file__).resolve()
MIB = 2**20
GIB = 2**30


def _touched(mib: int) -> bytearray:
    """``mib`` MiB with every page written, so it really costs resident memory."""
    return bytearray(b"\x01" * (mib * MIB))


class EngineState:
    """What the fake engine is doing; shared by the request threads."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ready_at = time.monotonic() + args.ready_delay
        self.parked = False
        self.held = bytearray()
        self.device = _touched(args.device_mib)
        self.tags: list[list[str]] = []
        self.parks = 0  # a late timer from an earlier park must not free this one's memory
        self.lock = threading.Lock()

    def park(self, tags: list[str]) -> None:
        time.sleep(self.args.release_delay)
        with self.lock:
            self.parked = True
            self.tags.append(tags)
            self.held = _touched(self.args.hold_mib)
            self.parks += 1
            park = self.parks
        # Acknowledged now; the "device" memory goes only later (a pause is not a release).
        timer = threading.Timer(self.args.free_delay, self._free_device, (park,))
        timer.daemon = True
        timer.start()

    def _free_device(self, park: int) -> None:
        with self.lock:
            if self.parked and self.parks == park:
                self.device = bytearray()

    def resume(self) -> bool:
        time.sleep(self.args.resume_delay)
        if self.args.resume_status != 200:
            return False  # refused: stays parked
        with self.lock:
            self.parked = False
            self.held = bytearray()
            if not self.device:
                self.device = _touched(self.args.device_mib)
        return True


def make_handler(state: EngineState) -> type[BaseHTTPRequestHandler]:
    vllm = state.args.engine == "vllm"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            return

        def _json(self, status: int, obj: object) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, object]:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length)) if length else {}

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/health":
                ready = time.monotonic() >= state.ready_at
                self._json(200 if ready else 503, {})
            elif path == "/v1/models" and vllm:
                self._json(200, {"object": "list", "data": [{"id": "fake-model"}]})
            elif path == "/is_sleeping" and vllm:
                self._json(200, {"is_sleeping": state.parked})
            else:
                self._json(404, {"error": path})

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            body = self._body()
            if vllm and parts.path == "/sleep":
                int(parse_qs(parts.query).get("level", ["1"])[0])
                state.park(parse_qs(parts.query).get("tags", []))
                self._json(200, {})
            elif vllm and parts.path == "/wake_up":
                self._resume()
            elif not vllm and parts.path == "/release_memory_occupation":
                state.park(list(body.get("tags", [])))  # type: ignore[call-overload]
                self._json(200, {})
            elif not vllm and parts.path == "/resume_memory_occupation":
                self._resume()
            elif parts.path == ("/v1/completions" if vllm else "/generate"):
                self._generate(body)
            else:
                self._json(404, {"error": parts.path})

        def _resume(self) -> None:
            if state.resume():
                self._json(200, {})
            else:
                self._json(state.args.resume_status, {"error": "resume refused"})

        def _generate(self, body: dict[str, object]) -> None:
            if state.parked or time.monotonic() < state.ready_at:
                self._json(503, {"error": "not serving"})
                return
            if state.args.generate_status != 200:
                self._json(state.args.generate_status, {"error": "refused"})
                return
            if vllm and body.get("model") != "fake-model":
                self._json(404, {"error": f"model {body.get('model')!r}"})
                return
            params = body if vllm else body["sampling_params"]
            count = int(params["max_tokens" if vllm else "max_new_tokens"])  # type: ignore[index]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if state.args.stream != "ok":
                self._broken_stream(state.args.stream)
                return
            text = ""
            for index in range(count):
                time.sleep(state.args.token_delay)
                token = f" t{index}"
                text += token
                event = {"choices": [{"text": token}]} if vllm else {"text": text}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

        def _broken_stream(self, kind: str) -> None:
            event = b'{"error": {"message": "out of memory"}}' if kind == "error" else b"{oops"
            self.wfile.write(b"data: " + event + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler


def serve(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=("vllm", "sglang"), required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument("--ready-delay", type=float, default=0.0)
    parser.add_argument("--release-delay", type=float, default=0.0)
    parser.add_argument("--resume-delay", type=float, default=0.0)
    parser.add_argument("--token-delay", type=float, default=0.001)
    parser.add_argument("--hold-mib", type=int, default=0)
    parser.add_argument("--device-mib", type=int, default=0)
    parser.add_argument("--free-delay", type=float, default=0.0)
    parser.add_argument("--resume-status", type=int, default=200)
    parser.add_argument("--generate-status", type=int, default=200)
    parser.add_argument("--stream", choices=("ok", "error", "garbage"), default="ok")
    parser.add_argument("--lifetime", type=float, default=60.0, help="exit after, seconds")
    args = parser.parse_args(argv)
    time.sleep(args.startup_delay)
    state = EngineState(args)
    with ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(state)) as server:
        print(f"PORT {server.server_address[1]}", flush=True)
        # Bounded: a test that forgets the server does not leave it running for ever.
        threading.Timer(args.lifetime, server.shutdown).start()
        server.serve_forever(poll_interval=0.05)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HostBackedDevice:
    """An NVML stand-in that sees the fake engine's ``--device-mib`` memory.

    It lists the engine's process with its PSS as "device" bytes (``listed=False``
    models a container, where NVML shows PIDs of another namespace), and reports
    ``free`` as a fixed total minus that PSS.
    """

    def __init__(self, pid: int, listed: bool = True) -> None:
        self.pid = pid
        self.listed = listed

    def _pss(self) -> int:
        from learnsched.handoff import read_host_memory

        return read_host_memory(self.pid, children=False).pss

    def memory(self) -> DeviceMemory:
        from learnsched.handoff import DeviceMemory

        used = self._pss()
        return DeviceMemory(total=64 * GIB, reserved=0, used=used, free=64 * GIB - used, version=2)

    def processes(self) -> list[GpuProcess]:
        from learnsched.handoff import GpuProcess

        return [GpuProcess(self.pid, self._pss())] if self.listed else []


class FakeEngine:
    """A fake engine process for a test; use as a context manager."""

    def __init__(self, engine: str, *options: str) -> None:
        # Run from outside the source tree: a flat layout's unbuilt package would shadow
        # the installed one (this script imports learnsched only inside its tests).
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPT), "--engine", engine, *options],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tempfile.gettempdir(),
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.pid = self.process.pid

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_health_answers_while_parked_but_requests_fail(engine: str) -> None:
    from learnsched.handoff import ServingEndpoint

    with FakeEngine(engine) as fake:
        endpoint = ServingEndpoint(fake.url, engine)
        endpoint.generate(2, timeout_s=5)
        endpoint.release(level=1, tags=["weights"], timeout_s=5)
        assert endpoint.healthy(timeout_s=5)
        with pytest.raises(Exception, match="503"):
            endpoint.generate(2, timeout_s=5)
        endpoint.resume(tags=["weights"], timeout_s=5)
        first, done = endpoint.generate(3, timeout_s=5)
        assert first <= done


@pytest.mark.parametrize(
    ("stream", "message"),
    [("error", "the stream carried an error: .*out of memory"), ("garbage", "is not JSON")],
)
def test_broken_streams_are_named(stream: str, message: str) -> None:
    from learnsched.handoff import HandoffProbeError, ServingEndpoint

    with (
        FakeEngine("sglang", "--stream", stream) as fake,
        pytest.raises(HandoffProbeError, match=message),
    ):
        ServingEndpoint(fake.url, "sglang").generate(2, timeout_s=5)


if __name__ == "__main__":
    serve(sys.argv[1:])
