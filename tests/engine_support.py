"""Simulated engines for the handoff and control tests (:mod:`learnsched.testing.engine`).

``engine(dialect, ...)`` is the forgiving engine (refusals answer 400/503);
``strict_engine(dialect, ...)`` fails as the real engine does (SGLang's server exits,
vLLM queues while asleep and aborts on ``/sleep``): see ``--help`` of
``python -m learnsched.testing.engine`` for each behaviour's flag.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from learnsched.testing import EngineConfig, EngineProcess, engine_command

# A forgotten engine exits on its own; fast decoding keeps the tests short.
LIFETIME_S = 120.0
FAST = {"token_s": 0.001}


def config(dialect: str, **options: object) -> EngineConfig:
    """An engine config with the tests' defaults (fast tokens) under ``options``."""
    return EngineConfig(dialect, **{**FAST, **options})  # type: ignore[arg-type]


def strict_config(dialect: str, **options: object) -> EngineConfig:
    """:meth:`EngineConfig.strict` with the tests' defaults under ``options``."""
    return EngineConfig.strict(dialect, **{**FAST, **options})


def engine(dialect: str, **options: object) -> EngineProcess:
    """A simulated engine in a child process (use as a context manager)."""
    return EngineProcess(config(dialect, **options), lifetime_s=LIFETIME_S)


def strict_engine(dialect: str, **options: object) -> EngineProcess:
    """A strict simulated engine in a child process: ``.alive()``, ``.returncode`` and
    ``.stderr_text()`` tell whether (and why) it died."""
    return EngineProcess(strict_config(dialect, **options), lifetime_s=LIFETIME_S)


def command(dialect: str, port: int, **options: object) -> list[str]:
    """The command that launches a simulated engine on ``port`` (cold-start probes)."""
    return engine_command(config(dialect, **options), port, lifetime_s=LIFETIME_S)


def shell_command(dialect: str, port: int, **options: object) -> str:
    """:func:`command` as one shell line (``--launch``)."""
    return " ".join(command(dialect, port, **options))


PROMPT = "The capital of France is"


class Client:
    """A tiny HTTP client for one simulated engine; a dead server raises OSError."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "", parts.port or 80

    def call(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        """One exchange: status and body."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=20)
        try:
            payload = None if body is None else json.dumps(body)
            conn.request(method, path, payload, {"Content-Type": "application/json"})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def json(self, method: str, path: str, body: object = None) -> Any:
        """One exchange that must answer 200: the decoded body."""
        status, data = self.call(method, path, body)
        assert status == 200, (status, data)
        return json.loads(data) if data else None

    def stream(self, path: str, body: dict[str, Any]) -> list[Any]:
        """Every event of a streamed generation (``"[DONE]"`` as the string)."""
        status, data = self.call("POST", path, {**body, "stream": True})
        assert status == 200, (status, data)
        events: list[Any] = []
        for line in data.decode().splitlines():
            if line.startswith("data: "):
                payload = line[len("data: ") :]
                events.append(payload if payload == "[DONE]" else json.loads(payload))
        return events

    def complete(self, prompt: str = PROMPT, tokens: int = 6) -> str:
        """A greedy OpenAI completion's text."""
        body = {"model": "sim-model", "prompt": prompt, "max_tokens": tokens, "temperature": 0}
        return str(self.json("POST", "/v1/completions", body)["choices"][0]["text"])

    def generate(self, prompt: str = PROMPT, tokens: int = 6) -> str:
        """A greedy SGLang ``/generate``'s text."""
        body = {"text": prompt, "sampling_params": {"max_new_tokens": tokens, "temperature": 0}}
        return str(self.json("POST", "/generate", body)["text"])

    def state(self) -> dict[str, Any]:
        """The simulator's ``/sim/state``."""
        answer: dict[str, Any] = self.json("GET", "/sim/state")
        return answer

    def gauges(self) -> tuple[float, float]:
        """``/metrics``' running and waiting gauges, either dialect."""
        text = self.call("GET", "/metrics")[1].decode()
        pattern = r"^\S+_(?:running|waiting|running_reqs|queue_reqs)\{.*\} (\S+)$"
        values = re.findall(pattern, text, re.MULTILINE)
        return float(values[0]), float(values[1])

    def wait_for(self, test: Callable[[dict[str, Any]], bool], timeout_s: float = 5.0) -> None:
        """Poll ``/sim/state`` until ``test`` holds (asserts it does within the time)."""
        end = time.monotonic() + timeout_s
        while not test(self.state()):
            assert time.monotonic() < end, self.state()
            time.sleep(0.005)


def raw_request(
    url: str, method: str, path: str, body: object = None, timeout_s: float = 30.0
) -> tuple[int, dict[str, str], bytes]:
    """One request with ``path`` sent exactly as written (no client normalises it);
    status, headers (lower-case names) and body."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout_s)
    try:
        data = None if body is None else json.dumps(body)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl), PEM files: an https engine's,
    signed by a CA no system trusts."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a test certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@contextmanager
def on_threads(
    send: Callable[[], None], count: int, stop: threading.Event, join_s: float = 30.0
) -> Iterator[None]:
    """``send`` (a client's loop, until ``stop``) on ``count`` daemon threads while in the
    ``with`` block; at its end ``stop`` is set and each thread waited for ``join_s``."""
    threads = [threading.Thread(target=send, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join(join_s)
