"""The simulated engine's HTTP routes, in vLLM's or SGLang's dialect.

Both dialects: ``GET /health``, ``GET /v1/models``, ``GET /metrics`` (Prometheus text,
:mod:`._metrics`), ``POST /v1/completions`` and ``POST /v1/chat/completions``
(OpenAI-compatible, :mod:`._openai`, with ``"stream": true`` as server-sent events ending
in ``data: [DONE]``), and the simulator's own ``GET /sim/state`` (memory held, tags
asleep, load: what NVML and ``/proc`` would show a test). vLLM adds ``POST /invocations``
(a completion or a chat, by the body), ``GET|POST /ping``, ``POST /tokenize``,
``GET /version`` and its dev-mode routes: ``POST /sleep?level=N&mode=M``,
``POST /wake_up?tags=..``, ``GET /is_sleeping``, ``POST /pause?mode=M``, ``POST /resume``,
``GET /is_paused``, ``POST /abort_requests``, ``GET /server_info`` and
``POST /collective_rpc`` (``reload_weights``), each answering vLLM's JSON. SGLang adds
``POST /generate``, ``POST /release_memory_occupation``, ``POST
/resume_memory_occupation``, ``GET /get_server_info``, ``GET /health_generate`` and
``POST /update_weights_from_disk``.

The generated text is a pure function of the weights' fingerprint, the prompt and the
token index at temperature 0 (a different model, or lost weights, answer differently).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ._metrics import metrics_text
from ._openai import (
    CHAT,
    COMPLETIONS,
    GENERATE,
    Ask,
    answer,
    check_model,
    chunk,
    error_body,
    model_card,
    parse,
    prompt_of,
    role_chunk,
    token_ids,
    usage_chunk,
)
from ._state import HEALTH_TIMEOUT_S, EngineDied, EngineError, EngineState, NoRoute, Request

__all__ = ["make_handler", "token", "tokens"]

WORDS = (
    "the", "model", "answers", "with", "a", "short", "and", "plain", "sentence", "about",
    "paris", "france", "capital", "river", "city", "light", "north", "stone", "bridge", "old",
    "new", "time", "of", "in", "on", "is", "was", "very", "quiet", "green", "blue", "road",
)  # fmt: skip
# The vLLM release whose dialect this follows (``GET /version``).
VLLM_VERSION = "0.32.0"
MAX_SLEEP_LEVEL = 2


def token(model_print: str, prompt: str, index: int, nonce: str = "") -> str:
    """Token ``index`` this model generates for ``prompt`` (``nonce``: sampling, or the
    batch a batch-variant engine decoded it in)."""
    digest = hashlib.sha256(f"{model_print}|{nonce}|{prompt}|{index}".encode()).digest()
    return " " + WORDS[digest[0] % len(WORDS)]


def tokens(model_print: str, prompt: str, count: int, nonce: str = "") -> Iterator[str]:
    """The ``count`` tokens this model generates for ``prompt`` alone (``nonce``: sampling)."""
    for index in range(count):
        yield token(model_print, prompt, index, nonce)


def _sleep_level(text: str, lowest: int) -> int:
    """``/sleep``'s ``level`` query, an integer in ``[lowest, 2]``, or the 400 vLLM's
    query check answers (vLLM's lowest is 0; without ``sleep_modes``, 1)."""
    try:
        level = int(text)
    except ValueError:
        check = ("int_parsing", "be a valid integer")
    else:
        if lowest <= level <= MAX_SLEEP_LEVEL:
            return level
        check = (
            ("greater_than_equal", f"be greater than or equal to {lowest}")
            if level < lowest
            else ("less_than_equal", f"be less than or equal to {MAX_SLEEP_LEVEL}")
        )
    raise EngineError(
        400,
        f"1 validation error:\n  {{'type': '{check[0]}', 'loc': 'query.level', "
        f"'msg': 'Input should {check[1]}', 'input': {text!r}}}",
        kind="Bad Request",
        param="query.level",
    )


def make_handler(state: EngineState) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``state``."""
    config = state.config
    vllm = config.vllm
    # Made once: the same bytes on every call (vLLM stamps each answer anew).
    models = {"object": "list", "data": [model_card(config)]}

    class Handler(BaseHTTPRequestHandler):
        server_version = f"learnsched-sim-{config.dialect}"
        raw = b""  # a POST's body

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: tests and the control loop read stdout

        # --- plumbing ----------------------------------------------------------------
        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, obj: object) -> None:
            self._send(status, json.dumps(obj).encode(), "application/json")

        def _error(self, err: EngineError) -> None:
            self._json(err.status, error_body(err, vllm))

        def _read_body(self) -> bytes:
            """The request's body, read whatever the route (unread bytes would reset the
            connection when it closes)."""
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _body(self) -> dict[str, Any]:
            """The request's JSON object (none: ``{}``); a 400 as the engine words it."""
            if not self.raw:
                return {}
            try:
                body = json.loads(self.raw)
            except ValueError as err:
                where = getattr(err, "pos", 0)
                raise self._body_error(f"body is not JSON: {err}", where) from err
            if not isinstance(body, dict):
                raise self._body_error("body must be a JSON object", None)
            return body

        def _body_error(self, message: str, position: int | None) -> EngineError:
            if not vllm:
                return EngineError(400, message)
            loc = "body" if position is None else f"body.{position}"  # FastAPI's location
            return EngineError(
                400, f"1 validation error:\n  {{'loc': '{loc}', 'msg': {message!r}}}",
                kind="Bad Request", param=loc,
            )  # fmt: skip

        def _event(self, obj: object) -> None:
            data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
            self.wfile.write(b"data: " + data + b"\n\n")
            self.wfile.flush()

        # --- routes ------------------------------------------------------------------
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            self._serve(lambda: self._get(parts.path, parse_qs(parts.query)))

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            self.raw = self._read_body()
            self._serve(lambda: self._post(parts.path, parse_qs(parts.query)))

        def _authorised(self, path: str) -> None:
            """The engines' ``--api-key`` check (vLLM: ``/v1`` routes; SGLang: all but
            health and metrics); the simulator's own ``/sim`` routes are open."""
            key = config.api_key
            if key is None or path.startswith("/sim/"):
                return
            guarded = (
                path.startswith("/v1")
                if vllm
                else not (path.startswith("/health") or path == "/metrics")
            )
            if guarded and self.headers.get("Authorization") != f"Bearer {key}":
                raise EngineError(401, "Unauthorized")

        def _serve(self, route: Any) -> None:
            try:
                route()
            except EngineError as err:
                self._error(err)
            except EngineDied:
                # The server process died: the connection breaks, nothing is answered.
                self.close_connection = True
                with contextlib.suppress(OSError):  # the client may have gone already
                    self.connection.shutdown(socket.SHUT_RDWR)

        def _get(self, path: str, query: dict[str, list[str]]) -> None:
            self._authorised(path)
            if path == "/health" or (path == "/health_generate" and not vllm):
                self._health()
            elif path == "/v1/models":
                self._json(200, models)
            elif path == "/metrics" and (vllm or config.metrics):
                self._send(200, metrics_text(state).encode(), "text/plain; version=0.0.4")
            elif path == "/sim/state":
                self._json(200, state.snapshot())
            elif vllm:
                self._vllm_get(path, query)
            elif path in ("/get_server_info", "/server_info"):
                if path == "/get_server_info":  # deprecated: SGLang warns on every call
                    with state.lock:
                        state.deprecated_calls += 1
                self._json(200, self._server_info())
            else:
                raise NoRoute("GET", path)

        def _vllm_get(self, path: str, query: dict[str, list[str]]) -> None:
            if path == "/is_sleeping":
                self._json(200, {"is_sleeping": state.is_sleeping()})
            elif path == "/is_paused":
                self._json(200, {"is_paused": state.is_paused()})
            elif path == "/server_info":  # dev mode; ?config_format=json
                self._json(200, self._vllm_info(query))
            elif path == "/version":
                self._json(200, {"version": VLLM_VERSION})
            elif path == "/ping":
                self._health()
            else:
                raise NoRoute("GET", path)

        def _post(self, path: str, query: dict[str, list[str]]) -> None:
            self._authorised(path)
            if path in (COMPLETIONS, CHAT) or (path == GENERATE and not vllm):
                self._generate(path, self._body())
            elif vllm:
                self._vllm_post(path, query)
            else:
                self._sglang_post(path, self._body())

        def _vllm_post(self, path: str, query: dict[str, list[str]]) -> None:
            if path == "/invocations":  # SageMaker: the body says which generation
                body = self._body()
                self._generate(CHAT if "messages" in body else COMPLETIONS, body)
            elif path == "/sleep":
                level = _sleep_level(query.get("level", ["1"])[0], 0 if config.sleep_modes else 1)
                state.release(level, [], query.get("mode", ["abort"])[0])  # reads no tags
                self._json(200, {"status": "sleeping", "level": level})
            elif path == "/wake_up":
                tags = query.get("tags") or None
                awake = state.resume(tags or [])
                self._json(200, {"status": "awake" if awake else "sleeping", "tags": tags})
            elif path == "/pause":
                state.pause(query.get("mode", ["abort"])[0])
                self._json(200, {"status": "paused"})
            elif path == "/resume":
                state.unpause()
                self._json(200, {"status": "resumed"})
            elif path == "/abort_requests":
                self._abort_requests()
            elif path == "/tokenize":
                self._tokenize(self._body())
            elif path == "/ping":
                self._health()
            elif path == "/collective_rpc":
                body = self._body()
                if body.get("method") != "reload_weights":
                    raise EngineError(400, f"unsupported method {body.get('method')!r}")
                state.reload_weights()
                self._json(200, {"results": [None]})
            else:
                raise NoRoute("POST", path)

        def _sglang_post(self, path: str, body: dict[str, Any]) -> None:
            if path == "/release_memory_occupation":
                state.release(1, list(body.get("tags") or []))
                self._json(200, None)  # SGLang answers null
            elif path == "/resume_memory_occupation":
                state.resume(list(body.get("tags") or []))
                self._json(200, None)
            elif path == "/pause_generation":
                state.pause(str(body.get("mode", "abort")))
                self._json(200, {"message": "Generation paused successfully."})
            elif path == "/continue_generation":
                state.unpause()
                self._json(200, {"message": "Generation continued successfully."})
            elif path == "/update_weights_from_disk":
                state.reload_weights()
                self._json(200, {"success": True, "message": "Succeeded to update model weights."})
            else:
                raise NoRoute("POST", path)

        def _abort_requests(self) -> None:
            """vLLM ``/abort_requests``: ids given abort those (none the simulator
            tracks: it answers how many were asked); none, everything held or running."""
            try:
                body = json.loads(self.raw)
            except ValueError as err:
                raise EngineError(400, "Invalid JSON format", kind="Bad Request") from err
            if not isinstance(body, dict):
                raise EngineError(400, "Request body must be a JSON object", kind="Bad Request")
            ids = body.get("request_ids")
            count = len(ids) if ids else state.abort_all()
            self._json(200, {"status": "aborted", "aborted": count})

        def _tokenize(self, body: dict[str, Any]) -> None:
            check_model(body, config)
            ids = token_ids(prompt_of(body, "/tokenize"))
            self._json(200, {"count": len(ids), "max_model_len": config.max_model_len,
                             "tokens": ids, "token_strs": None})  # fmt: skip

        def _health(self) -> None:
            if not state.ready():
                raise EngineError(503, "starting")
            if not vllm:  # SGLang's /health is a one-token generation
                state.admit(HEALTH_TIMEOUT_S, probe=True)
            time.sleep(config.slow_health_s)
            self._send(200, b"", "text/plain")

        def _server_info(self) -> dict[str, object]:
            return {
                "model_path": config.model,
                "enable_memory_saver": config.memory_saver,
                "enable_weights_cpu_backup": config.weights_backup,
                "enable_metrics": config.metrics,
                "enable_deterministic_inference": not config.batch_variant,
                "tp_size": 1,
                "version": "sim",
                # Scheduler.get_internal_state: each pool's size in GB, 3 decimals.
                "internal_states": [
                    {
                        "memory_usage": {
                            "weight": round(config.weights_mib / 1024, 3),
                            "kvcache": round(config.kv_mib / 1024, 3),
                            "token_capacity": int(config.kv_mib * 64),
                        }
                    }
                ],
            }

        def _vllm_info(self, query: dict[str, list[str]]) -> dict[str, object]:
            model_config = {"model": config.model, "enable_sleep_mode": config.memory_saver}
            if query.get("config_format", ["text"])[0] == "json":
                return {"vllm_config": {"model_config": model_config}}
            text = ", ".join(f"{k}={v!r}" for k, v in model_config.items())
            return {"vllm_config": text}

        # --- generation --------------------------------------------------------------
        def _generate(self, path: str, body: dict[str, Any]) -> None:
            if not state.ready():
                raise EngineError(503, "the engine is still starting")
            if config.generate_status != 200:
                raise EngineError(config.generate_status, "generation refused")
            ask = parse(body, path, config)
            nonce = "" if ask.temperature == 0 else uuid.uuid4().hex  # only greedy repeats
            # The request leaves the running count before its last bytes go out, as an
            # engine finishes a request before its server flushes the answer: a client
            # that read the whole answer never sees its own request still running.
            finish: int | None = None
            text, done = "", 0
            with state.request() as request:
                # An abort while it was held: no token, and the weights need not be there.
                model_print = "" if request.aborted else state.current_print()
                if ask.stream:
                    finish = self._stream(ask, request, model_print, nonce)
                else:
                    text, done = self._decode(ask, request, model_print, nonce)
            if ask.stream:
                if ask.usage and finish is not None:
                    self._event(usage_chunk(ask, finish, config.model))
                self._event(b"[DONE]")
            else:
                self._json(200, answer(ask, text, done, config.model))

        def _decode(
            self, ask: Ask, request: Request, model_print: str, nonce: str
        ) -> tuple[str, int]:
            """The whole answer (non-streaming): its text and tokens (short if aborted)."""
            text = ""
            for index in range(ask.count):
                batch = request.step()
                if request.aborted:
                    return text, index
                time.sleep(config.token_s)
                text += self._token(model_print, ask.prompt, index, nonce, batch)
            return text, ask.count

        def _token(self, model_print: str, prompt: str, index: int, nonce: str, batch: int) -> str:
            """One token; a batch-variant engine's numerics change it beside other requests."""
            if config.batch_variant and batch > 1:
                nonce += f"|batch{batch}"
            return token(model_print, prompt, index, nonce)

        def _stream(self, ask: Ask, request: Request, model_print: str, nonce: str) -> int | None:
            """Every token's event; the tokens sent (``None``: a broken stream).

            The caller ends the stream (usage event, ``[DONE]``).
            """
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if config.stream != "ok":
                broken = b'{"error": {"message": "out of memory"}}'
                self._event(broken if config.stream == "error" else b"{oops")
                return None
            opening = role_chunk(ask, config.model)
            if opening is not None:
                self._event(opening)
            text = ""
            for index in range(ask.count):
                batch = request.step()
                if request.aborted:  # the stream still ends normally, then [DONE]
                    self._event(chunk(ask, "", text, "abort", config.model))
                    return index
                time.sleep(config.token_s)
                word = self._token(model_print, ask.prompt, index, nonce, batch)
                text += word
                reason = "length" if index == ask.count - 1 else None
                self._event(chunk(ask, word, text, reason, config.model))
            return ask.count

    return Handler
