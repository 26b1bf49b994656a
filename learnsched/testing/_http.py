"""The simulated engine's HTTP routes, in vLLM's or SGLang's dialect.

Both dialects: ``GET /health``, ``GET /v1/models``, ``GET /metrics`` (Prometheus text),
``POST /v1/completions`` and ``POST /v1/chat/completions`` (OpenAI-compatible, with
``"stream": true`` as server-sent events ending in ``data: [DONE]``), and the
simulator's own ``GET /sim/state`` (memory held, tags asleep, load: what NVML and
``/proc`` would show a test). vLLM adds ``POST /sleep?level=N``, ``POST /wake_up?tags=..``,
``GET /is_sleeping``, ``GET /server_info`` and ``POST /collective_rpc``
(``reload_weights``); SGLang adds
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

from ._state import HEALTH_TIMEOUT_S, EngineDied, EngineError, EngineState, Request

__all__ = ["make_handler", "token", "tokens"]

WORDS = (
    "the", "model", "answers", "with", "a", "short", "and", "plain", "sentence", "about",
    "paris", "france", "capital", "river", "city", "light", "north", "stone", "bridge", "old",
    "new", "time", "of", "in", "on", "is", "was", "very", "quiet", "green", "blue", "road",
)  # fmt: skip
DEFAULT_MAX_TOKENS = 16
MAX_TOKENS = 4096


def token(model_print: str, prompt: str, index: int, nonce: str = "") -> str:
    """Token ``index`` this model generates for ``prompt`` (``nonce``: sampling, or the
    batch a batch-variant engine decoded it in)."""
    digest = hashlib.sha256(f"{model_print}|{nonce}|{prompt}|{index}".encode()).digest()
    return " " + WORDS[digest[0] % len(WORDS)]


def tokens(model_print: str, prompt: str, count: int, nonce: str = "") -> Iterator[str]:
    """The ``count`` tokens this model generates for ``prompt`` alone (``nonce``: sampling)."""
    for index in range(count):
        yield token(model_print, prompt, index, nonce)


def _prompt_of(body: dict[str, Any], path: str) -> str:
    """The prompt text of a completion, chat or SGLang generate request."""
    if path == "/v1/chat/completions":
        messages = body.get("messages") or []
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    prompt = body.get("prompt" if path == "/v1/completions" else "text", "")
    return str(prompt[0] if isinstance(prompt, list) and prompt else prompt)


def _count_of(body: dict[str, Any], path: str) -> int:
    """Tokens asked for; ``EngineError`` 400 for a bad count."""
    if path == "/generate":
        params = body.get("sampling_params") or {}
        value = params.get("max_new_tokens", DEFAULT_MAX_TOKENS)
    else:
        value = body.get("max_completion_tokens", body.get("max_tokens", DEFAULT_MAX_TOKENS))
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise EngineError(400, f"max tokens must be an integer in [1, {MAX_TOKENS}], got {value!r}")
    return value


def _temperature_of(body: dict[str, Any], path: str) -> float:
    params = (body.get("sampling_params") or {}) if path == "/generate" else body
    value = params.get("temperature", 1.0)
    return float(value) if isinstance(value, (int, float)) else 1.0


def make_handler(state: EngineState) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``state``."""
    config = state.config
    vllm = config.vllm

    class Handler(BaseHTTPRequestHandler):
        server_version = f"learnsched-sim-{config.dialect}"

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
            # SGLang's _create_error_response and vLLM's ErrorResponse both nest it.
            self._json(err.status, {"error": {"message": str(err), "code": err.status}})

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            if not length:
                return {}
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError as err:
                raise EngineError(400, f"body is not JSON: {err}") from err
            if not isinstance(body, dict):
                raise EngineError(400, "body must be a JSON object")
            return body

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
            self._serve(lambda: self._post(parts.path, parse_qs(parts.query), self._body()))

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
                owner = config.dialect
                self._json(200, {"object": "list", "data": [
                    {"id": config.model, "object": "model", "owned_by": owner},
                ]})  # fmt: skip
            elif path == "/metrics" and (vllm or config.metrics):
                self._send(200, self._metrics().encode(), "text/plain; version=0.0.4")
            elif path == "/sim/state":
                self._json(200, state.snapshot())
            elif vllm and path == "/is_sleeping":
                self._json(200, {"is_sleeping": state.is_sleeping()})
            elif vllm and path == "/server_info":  # dev mode; ?config_format=json
                self._json(200, self._vllm_info(query))
            elif not vllm and path in ("/get_server_info", "/server_info"):
                if path == "/get_server_info":  # deprecated: SGLang warns on every call
                    with state.lock:
                        state.deprecated_calls += 1
                self._json(200, self._server_info())
            else:
                raise EngineError(404, f"no route GET {path}")

        def _post(self, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> None:
            self._authorised(path)
            if path in ("/v1/completions", "/v1/chat/completions") or (
                path == "/generate" and not vllm
            ):
                self._generate(path, body)
            elif vllm and path == "/sleep":
                levels = ("0", "1", "2") if config.sleep_modes else ("1", "2")
                level = query.get("level", ["1"])[0]
                if level not in levels:
                    raise EngineError(
                        400, f"level must be one of {', '.join(levels)}, got {level!r}"
                    )
                mode = query.get("mode", ["abort"])[0]
                state.release(int(level), [], mode)  # vLLM's /sleep reads no tags
                self._send(200, b"", "text/plain")
            elif vllm and path == "/wake_up":
                state.resume(query.get("tags", []))
                self._send(200, b"", "text/plain")
            elif vllm and path == "/collective_rpc":
                if body.get("method") != "reload_weights":
                    raise EngineError(400, f"unsupported method {body.get('method')!r}")
                state.reload_weights()
                self._json(200, {"results": [None]})
            elif not vllm and path == "/release_memory_occupation":
                state.release(1, list(body.get("tags") or []))
                self._json(200, None)  # SGLang answers null
            elif not vllm and path == "/resume_memory_occupation":
                state.resume(list(body.get("tags") or []))
                self._json(200, None)
            elif not vllm and path == "/pause_generation":
                state.pause(str(body.get("mode", "abort")))
                self._json(200, {"message": "Generation paused successfully."})
            elif not vllm and path == "/continue_generation":
                state.unpause()
                self._json(200, {"message": "Generation continued successfully."})
            elif not vllm and path == "/update_weights_from_disk":
                state.reload_weights()
                self._json(200, {"success": True, "message": "Succeeded to update model weights."})
            else:
                raise EngineError(404, f"no route POST {path}")

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

        def _metrics(self) -> str:
            if not config.metrics:  # vLLM --disable-log-stats: no engine gauges
                return "# no engine stats (--disable-log-stats)\n"
            label = f'{{model_name="{config.model}"}}'
            if vllm:
                names = ("vllm:num_requests_running", "vllm:num_requests_waiting")
            else:
                names = ("sglang:num_running_reqs", "sglang:num_queue_reqs")
            lines = []
            for name, value in zip(names, state.load(), strict=True):
                lines += [f"# TYPE {name} gauge", f"{name}{label} {float(value)}"]
            return "\n".join(lines) + "\n"

        # --- generation --------------------------------------------------------------
        def _generate(self, path: str, body: dict[str, Any]) -> None:
            if not state.ready():
                raise EngineError(503, "the engine is still starting")
            if config.generate_status != 200:
                raise EngineError(config.generate_status, "generation refused")
            if path != "/generate" and body.get("model", config.model) != config.model:
                raise EngineError(404, f"The model `{body.get('model')}` does not exist.")
            count = _count_of(body, path)
            temperature = _temperature_of(body, path)
            prompt = _prompt_of(body, path)
            nonce = "" if temperature == 0 else uuid.uuid4().hex  # only greedy repeats
            options = body.get("stream_options") or {}
            usage = path != "/generate" and (
                config.force_include_usage
                or (isinstance(options, dict) and bool(options.get("include_usage")))
            )
            # The request leaves the running count before its last bytes go out, as an
            # engine finishes a request before its server flushes the answer: a client
            # that read the whole answer never sees its own request still running.
            finish: tuple[str, int] | None = None
            text, done = "", 0
            with state.request() as request:
                model_print = state.current_print()
                if body.get("stream"):
                    finish = self._stream(path, request, model_print, prompt, count, nonce)
                else:
                    text, done = self._decode(request, model_print, prompt, count, nonce)
            if body.get("stream"):
                if usage and finish is not None:
                    self._event(self._usage_event(path, prompt, finish[1]))
                self._event(b"[DONE]")
            else:
                self._json(200, self._answer(path, text, done, count))

        def _decode(
            self, request: Request, model_print: str, prompt: str, count: int, nonce: str
        ) -> tuple[str, int]:
            """The whole answer (non-streaming): its text and tokens (short if aborted)."""
            text = ""
            for index in range(count):
                batch = request.step()
                if request.aborted:
                    return text, index
                time.sleep(config.token_s)
                text += self._token(model_print, prompt, index, nonce, batch)
            return text, count

        def _token(self, model_print: str, prompt: str, index: int, nonce: str, batch: int) -> str:
            """One token; a batch-variant engine's numerics change it beside other requests."""
            if config.batch_variant and batch > 1:
                nonce += f"|batch{batch}"
            return token(model_print, prompt, index, nonce)

        def _answer(self, path: str, text: str, done: int, count: int) -> dict[str, Any]:
            reason = "length" if done == count else "abort"
            if path == "/generate":
                meta = {"finish_reason": {"type": reason, "length": done},
                        "completion_tokens": done}  # fmt: skip
                return {"text": text, "meta_info": meta}
            choice: dict[str, Any] = {"index": 0, "finish_reason": reason}
            if path == "/v1/chat/completions":
                choice["message"] = {"role": "assistant", "content": text}
            else:
                choice["text"] = text
            kind = "chat.completion" if path == "/v1/chat/completions" else "text_completion"
            return {
                "id": f"cmpl-{uuid.uuid4().hex[:12]}",
                "object": kind,
                "created": int(time.time()),
                "model": config.model,
                "choices": [choice],
                "usage": {"completion_tokens": done},
            }

        def _usage_event(self, path: str, prompt: str, done: int) -> dict[str, Any]:
            """vLLM's usage-only last event (``--enable-force-include-usage``)."""
            kind = "chat.completion.chunk" if path == "/v1/chat/completions" else "text_completion"
            prompt_tokens = len(prompt.split())
            return {"id": f"cmpl-{uuid.uuid4().hex[:12]}", "object": kind,
                    "created": int(time.time()), "model": config.model, "choices": [],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": done,
                              "total_tokens": prompt_tokens + done}}  # fmt: skip

        def _stream(
            self,
            path: str,
            request: Request,
            model_print: str,
            prompt: str,
            count: int,
            nonce: str,
        ) -> tuple[str, int] | None:
            """Every token's event; the finish reason and tokens sent (``None``: broken).

            The caller ends the stream (usage event, ``[DONE]``).
            """
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if config.stream != "ok":
                broken = b'{"error": {"message": "out of memory"}}'
                self._event(broken if config.stream == "error" else b"{oops")
                return None
            text = ""
            for index in range(count):
                batch = request.step()
                if request.aborted:  # the stream still ends normally, then [DONE]
                    self._event(self._chunk(path, "", text, "abort"))
                    return "abort", index
                time.sleep(config.token_s)
                word = self._token(model_print, prompt, index, nonce, batch)
                text += word
                self._event(self._chunk(path, word, text, "length" if index == count - 1 else None))
            return "length", count

        def _chunk(self, path: str, word: str, text: str, reason: str | None) -> dict[str, Any]:
            if path == "/generate":  # cumulative text
                finish = None if reason is None else {"type": reason}
                return {"text": text, "meta_info": {"finish_reason": finish}}
            if path == "/v1/chat/completions":
                choice = {"index": 0, "delta": {"content": word}, "finish_reason": reason}
                return {"object": "chat.completion.chunk", "model": config.model,
                        "choices": [choice]}  # fmt: skip
            return {"object": "text_completion", "model": config.model,
                    "choices": [{"index": 0, "text": word, "finish_reason": reason}]}  # fmt: skip

    return Handler
