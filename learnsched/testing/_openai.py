"""The simulated engine's OpenAI-compatible requests and answers, and vLLM's error bodies.

What a generation request asks for, checked as the engine of the dialect checks it
(vLLM 0.32: ``max_tokens`` in ``[1, max_model_len]``, a prompt no longer than
``max_model_len``, a ``prompt`` or ``messages``), and the JSON of its answer and of its
stream's events (one ``id`` and ``created`` per request; a chat stream opens with the
assistant's role). vLLM's errors carry ``message``, ``type``, ``param`` and ``code``.

The simulated tokenizer reads one token per whitespace-separated word (its id a digest of
the word): a real tokenizer splits words, so lengths near ``max_model_len`` differ.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from ._config import EngineConfig
from ._state import EngineError, NoRoute

__all__ = [
    "Ask",
    "answer",
    "check_model",
    "chunk",
    "error_body",
    "model_card",
    "parse",
    "prompt_of",
    "role_chunk",
    "token_ids",
    "usage_chunk",
]

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
GENERATE = "/generate"  # SGLang's native route
# The answer's max tokens when a request names none (OpenAI's completions default).
DEFAULT_MAX_TOKENS = 16
# vLLM's error type for a status its handlers raise without naming one.
ERROR_TYPES = {
    400: "BadRequestError",
    404: "NotFoundError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}
# vLLM's ModelPermission defaults: the one permission /v1/models lists.
PERMISSION = {
    "object": "model_permission", "allow_create_engine": False, "allow_sampling": True,
    "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
    "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False,
}  # fmt: skip


@dataclass(frozen=True)
class Ask:
    """One generation request, checked.

    Parameters
    ----------
    path
        The route it is served as: ``/v1/completions``, ``/v1/chat/completions`` or
        SGLang's ``/generate``.
    prompt
        The prompt's text (a chat's message contents, one per line).
    prompt_tokens
        The prompt's length, simulated tokens.
    count
        Tokens to generate.
    temperature
        Sampling temperature (0: greedy, the text repeats).
    stream
        Answer as server-sent events.
    usage
        The stream ends with the usage-only event.
    ident, created
        The answer's ``id`` and ``created`` (Unix seconds), the same in every event.
    """

    path: str
    prompt: str
    prompt_tokens: int
    count: int
    temperature: float
    stream: bool
    usage: bool
    ident: str
    created: int


def token_ids(text: str) -> list[int]:
    """The simulated tokenizer: one id (of 65,536) per whitespace-separated word."""
    return [int.from_bytes(hashlib.sha256(w.encode()).digest()[:2], "big") for w in text.split()]


def prompt_of(body: dict[str, Any], path: str) -> str:
    """The prompt text of a completion, chat, tokenize or SGLang generate request (the
    messages' contents, one per line, when it has ``messages``)."""
    if path == CHAT or "messages" in body:
        messages = body.get("messages") or []
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    prompt = body.get("text" if path == GENERATE else "prompt", "")
    return str(prompt[0] if isinstance(prompt, list) and prompt else prompt)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _vllm_count(body: dict[str, Any], path: str, prompt_tokens: int, limit: int) -> int:
    """``max_tokens`` as vLLM checks it (``max_completion_tokens`` first on chat)."""
    name = "max_tokens"
    if path == CHAT and "max_completion_tokens" in body:
        name = "max_completion_tokens"
    value = body.get(name)
    if value is None:
        return max(1, min(DEFAULT_MAX_TOKENS, limit - prompt_tokens))
    if not _is_count(value):
        raise EngineError(
            400,
            f"1 validation error:\n  {{'type': 'int_parsing', 'loc': 'body.{name}', "
            f"'msg': 'Input should be a valid integer', 'input': {value!r}}}",
            kind="Bad Request",
            param=f"body.{name}",
        )
    if value < 1:
        raise EngineError(400, f"{name} must be at least 1, got {value}.", param=name)
    if value > limit:
        raise EngineError(
            400,
            f"{name}={value} cannot be greater than max_model_len={limit}. "
            "Please request fewer output tokens.",
            param=name,
        )
    return max(1, min(int(value), limit - prompt_tokens))  # vLLM's get_max_tokens clamps


def _sglang_count(body: dict[str, Any], path: str, limit: int) -> int:
    if path == GENERATE:
        value = (body.get("sampling_params") or {}).get("max_new_tokens", DEFAULT_MAX_TOKENS)
    else:
        value = body.get("max_completion_tokens", body.get("max_tokens", DEFAULT_MAX_TOKENS))
    if not _is_count(value) or not 1 <= value <= limit:
        raise EngineError(400, f"max tokens must be an integer in [1, {limit}], got {value!r}")
    return int(value)


def _vllm_prompt(body: dict[str, Any], path: str, prompt: str, limit: int) -> int:
    """The prompt's tokens; the 400s vLLM answers for a missing or too long prompt."""
    if path == CHAT and not isinstance(body.get("messages"), list):
        raise EngineError(
            400,
            "1 validation error:\n  {'type': 'missing', 'loc': 'body.messages', "
            "'msg': 'Field required'}",
            kind="Bad Request",
            param="body.messages",
        )
    if path != CHAT and not prompt:
        raise EngineError(
            400,
            "Either prompt or prompt_embeds must be provided and non-empty.",
            param="prompt",
        )
    length = len(token_ids(prompt))
    if length > limit:
        raise EngineError(
            400,
            f"This model's maximum context length is {limit} tokens. However, your prompt "
            f"contains {length} input tokens, which exceeds this limit even without any "
            "output tokens. Please reduce the length of the input prompt.",
            param="input_tokens",
        )
    return length


def check_model(body: dict[str, Any], config: EngineConfig) -> None:
    """A request naming another model is a 404 (no name: the served one)."""
    named = body.get("model")
    if named is not None and named != config.model:
        raise EngineError(404, f"The model `{named}` does not exist.", param="model")


def parse(body: dict[str, Any], path: str, config: EngineConfig) -> Ask:
    """The request ``body`` sent to ``path``, checked as the dialect's engine checks it.

    Raises
    ------
    EngineError
        The status and error the engine answers a bad request with.
    """
    prompt = prompt_of(body, path)
    if path != GENERATE:
        check_model(body, config)
    if config.vllm:
        prompt_tokens = _vllm_prompt(body, path, prompt, config.max_model_len)
        count = _vllm_count(body, path, prompt_tokens, config.max_model_len)
    else:
        prompt_tokens = len(token_ids(prompt))
        count = _sglang_count(body, path, config.max_model_len)
    params = (body.get("sampling_params") or {}) if path == GENERATE else body
    temperature = params.get("temperature", 1.0)
    options = body.get("stream_options") or {}
    usage = path != GENERATE and (
        config.force_include_usage
        or (isinstance(options, dict) and bool(options.get("include_usage")))
    )
    prefix = "chatcmpl" if path == CHAT else "cmpl"
    return Ask(
        path=path,
        prompt=prompt,
        prompt_tokens=prompt_tokens,
        count=count,
        temperature=float(temperature) if isinstance(temperature, (int, float)) else 1.0,
        stream=bool(body.get("stream")),
        usage=usage,
        ident=f"{prefix}-{uuid.uuid4().hex[:16]}",
        created=int(time.time()),
    )


def _head(ask: Ask, kind: str, model: str) -> dict[str, Any]:
    return {"id": ask.ident, "object": kind, "created": ask.created, "model": model}


def _usage(ask: Ask, done: int) -> dict[str, int]:
    return {
        "prompt_tokens": ask.prompt_tokens,
        "total_tokens": ask.prompt_tokens + done,
        "completion_tokens": done,
    }


def answer(ask: Ask, text: str, done: int, model: str) -> dict[str, Any]:
    """The whole answer: ``done`` tokens of ``text`` (fewer than asked: aborted)."""
    reason = "length" if done == ask.count else "abort"
    if ask.path == GENERATE:
        meta = {"finish_reason": {"type": reason, "length": done}, "completion_tokens": done}
        return {"text": text, "meta_info": meta}
    choice: dict[str, Any] = {"index": 0}
    if ask.path == CHAT:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    choice.update(logprobs=None, finish_reason=reason, stop_reason=None)
    kind = "chat.completion" if ask.path == CHAT else "text_completion"
    return {**_head(ask, kind, model), "choices": [choice], "usage": _usage(ask, done)}


def role_chunk(ask: Ask, model: str) -> dict[str, Any] | None:
    """A chat stream's first event: the assistant's role, no text (``None``: not chat)."""
    if ask.path != CHAT:
        return None
    choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
              "finish_reason": None}  # fmt: skip
    return {**_head(ask, "chat.completion.chunk", model), "choices": [choice]}


def chunk(ask: Ask, word: str, text: str, reason: str | None, model: str) -> dict[str, Any]:
    """One stream event: ``word`` (SGLang ``/generate``: the whole ``text`` so far)."""
    if ask.path == GENERATE:
        finish = None if reason is None else {"type": reason}
        return {"text": text, "meta_info": {"finish_reason": finish}}
    if ask.path == CHAT:
        choice = {"index": 0, "delta": {"content": word}, "logprobs": None,
                  "finish_reason": reason}  # fmt: skip
        return {**_head(ask, "chat.completion.chunk", model), "choices": [choice]}
    choice = {"index": 0, "text": word, "logprobs": None, "finish_reason": reason,
              "stop_reason": None}  # fmt: skip
    return {**_head(ask, "text_completion", model), "choices": [choice]}


def usage_chunk(ask: Ask, done: int, model: str) -> dict[str, Any]:
    """vLLM's usage-only last event (``--enable-force-include-usage``)."""
    kind = "chat.completion.chunk" if ask.path == CHAT else "text_completion"
    return {**_head(ask, kind, model), "choices": [], "usage": _usage(ask, done)}


def model_card(config: EngineConfig) -> dict[str, Any]:
    """The served model in ``/v1/models`` (vLLM's ModelCard; SGLang's: id and owner)."""
    card: dict[str, Any] = {"id": config.model, "object": "model"}
    if not config.vllm:
        return {**card, "owned_by": config.dialect}
    created = int(time.time())
    permission = {"id": f"modelperm-{uuid.uuid4().hex[:16]}", "created": created, **PERMISSION}
    return {**card, "created": created, "owned_by": "vllm", "root": config.model,
            "parent": None, "max_model_len": config.max_model_len,
            "permission": [permission]}  # fmt: skip


def error_body(err: EngineError, vllm: bool) -> object:
    """The JSON an engine answers ``err`` with: both nest it under ``error``; vLLM adds
    ``type`` and ``param``, answers ``{"error": "Unauthorized"}`` to a missing key and
    ``{"detail": "Not Found"}`` for a route it does not have."""
    if not vllm:
        return {"error": {"message": str(err), "code": err.status}}
    if err.status == 401:
        return {"error": "Unauthorized"}
    if isinstance(err, NoRoute):
        return {"detail": HTTPStatus(err.status).phrase}
    kind = err.kind or ERROR_TYPES.get(err.status, HTTPStatus(err.status).phrase)
    return {"error": {"message": str(err), "type": kind, "param": err.param, "code": err.status}}
