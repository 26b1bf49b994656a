"""A stand-in serving engine speaking vLLM's or SGLang's routes, and its own checks.

Run as a script it serves on 127.0.0.1 and prints ``PORT <n>`` once listening:

    python tests/test_handoff_fake_engine.py --engine vllm --port 0 --resume-delay 0.2

It models what the recovery probe must not be fooled by: ``/health`` answers 200 while
parked (as vLLM's does), requests fail while parked, the release and resume calls take
configurable time, and a parked engine holds ``--hold-mib`` more host memory (vLLM's
level-1 sleep keeps the weights in host memory).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from typing_extensions import Self

SCRIPT = Path(__file__).resolve()
MIB = 2**20


class EngineState:
    """What the fake engine is doing; shared by the request threads."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ready_at = time.monotonic() + args.ready_delay
        self.parked = False
        self.held = bytearray()
        self.tags: list[list[str]] = []
        self.lock = threading.Lock()

    def park(self, tags: list[str]) -> None:
        time.sleep(self.args.release_delay)
        with self.lock:
            self.parked = True
            self.tags.append(tags)
            # Touch every page so the parked state really costs host memory.
            self.held = bytearray(b"\x01" * (self.args.hold_mib * MIB))

    def resume(self) -> None:
        time.sleep(self.args.resume_delay)
        with self.lock:
            self.parked = False
            self.held = bytearray()


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
                state.resume()
                self._json(200, {})
            elif not vllm and parts.path == "/release_memory_occupation":
                state.park(list(body.get("tags", [])))  # type: ignore[call-overload]
                self._json(200, {})
            elif not vllm and parts.path == "/resume_memory_occupation":
                state.resume()
                self._json(200, {})
            elif parts.path == ("/v1/completions" if vllm else "/generate"):
                self._generate(body)
            else:
                self._json(404, {"error": parts.path})

        def _generate(self, body: dict[str, object]) -> None:
            if state.parked or time.monotonic() < state.ready_at:
                self._json(503, {"error": "not serving"})
                return
            if vllm and body.get("model") != "fake-model":
                self._json(404, {"error": f"model {body.get('model')!r}"})
                return
            params = body if vllm else body["sampling_params"]
            count = int(params["max_tokens" if vllm else "max_new_tokens"])  # type: ignore[index]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            text = ""
            for index in range(count):
                time.sleep(state.args.token_delay)
                token = f" t{index}"
                text += token
                event = {"choices": [{"text": token}]} if vllm else {"text": text}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
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


class FakeEngine:
    """A fake engine process for a test; use as a context manager."""

    def __init__(self, engine: str, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SCRIPT), "--engine", engine, *options],
            stdout=subprocess.PIPE,
            text=True,
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


if __name__ == "__main__":
    serve(sys.argv[1:])
