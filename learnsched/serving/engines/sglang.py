"""SGLang's memory saver (server started with ``--enable-memory-saver``):
``POST /release_memory_occupation`` and ``POST /resume_memory_occupation`` with body
``{"tags": [...]}``; generation through ``POST /generate``.

What SGLang's own sources say, and this dialect follows:

- The release asserts ``is_fully_idle()`` in the scheduler process ("should be called
  only when server is idle"); on a busy engine the assertion kills the server. A
  generation that reaches the scheduler while the memory is released runs on unmapped
  memory. The documented flow is pause, change, continue: ``POST /pause_generation``
  (``http_server.py``; ``PauseGenerationReqInput.mode`` is ``"abort"`` by default,
  which aborts what runs, so this dialect always sends ``"in_place"``) makes the
  tokenizer manager hold every new generation (``generate_request`` waits on
  ``is_pause_cond``) until ``POST /continue_generation``. :func:`.actions.park`
  checks idleness, pauses, checks again, and only then releases.
- Without ``--enable-memory-saver`` the memory-saver adapter is a no-op: the release is
  accepted and frees nothing. Without ``--enable-weights-cpu-backup`` released weights
  come back without their content. ``GET /get_server_info`` returns the server args,
  so both are checked before parking (:meth:`SGLang.check_config`).
- ``server_info``'s ``internal_states[0].memory_usage`` gives each pool in GiB to 3
  decimals (``weight``, ``kvcache``): what a tagged release must free, read as given.
- ``/health`` runs a one-token generation and waits at least 1 s for it; readiness
  after a resume is the first real request instead.
- ``/generate`` stream events carry the whole text so far, not a delta.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import HandoffProbeError, ServerConfigError
from .base import MEMORY_TAGS, PROMPT, Engine, Server, server_json

__all__ = ["SGLang"]

GIB = 2**30
# /server_info first: /get_server_info is deprecated and warns on every call.
INFO_PATHS = ("/server_info", "/get_server_info")
# Pause without aborting: requests that run stay in place (none do: the park checks).
PAUSE = {"mode": "in_place"}
# memory_usage keys of each tag's pool.
POOLS = {"weights": "weight", "kv_cache": "kvcache"}


class SGLang(Engine):
    """SGLang's HTTP dialect (no route reports whether it is parked)."""

    name = "sglang"
    pauses = True
    pool_resolution_bytes = GIB // 1000  # memory_usage pools in GiB to 3 decimals
    load_metrics = ("sglang:num_running_reqs", "sglang:num_queue_reqs")
    # The routes whose requests run the model (SGLang's entrypoints/http_server.py):
    # native, OpenAI, Anthropic, SageMaker, Vertex and Ollama (the last two at their
    # default paths). /health and /health_generate run a one-token generation (on
    # released memory too).
    generation_routes = frozenset(
        {
            "/generate", "/generate_from_file", "/encode", "/classify",
            "/health", "/health_generate",
            "/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages",
            "/v1/embeddings", "/v1/classify", "/v1/score", "/v1/rerank",
            "/v1/audio/transcriptions", "/invocations", "/vertex_generate",
            "/api/chat", "/api/generate",
        }
    )  # fmt: skip
    # And what clients read without running the model. Never a control route (memory,
    # pause, weights, LoRA, cache, profiling, sessions, aborts) or /server_info, which
    # holds the server's arguments, API keys included.
    forwarded_routes = generation_routes | frozenset(
        {
            "/v1/models", "/v1/models/{model:path}", "/ping", "/metrics",
            "/model_info", "/get_model_info", "/v1/loads", "/get_load",
            "/tokenize", "/detokenize", "/v1/tokenize", "/v1/detokenize",
            "/v1/messages/count_tokens", "/parse_function_call", "/separate_reasoning",
            "/v1/responses/{response_id}", "/v1/responses/{response_id}/cancel",
            "/api/tags", "/api/show",
        }
    )  # fmt: skip

    def check_config(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> list[str]:
        """``enable_memory_saver``, and ``enable_weights_cpu_backup`` when releasing weights."""
        info = server_json(server, INFO_PATHS, timeout_s)
        if not isinstance(info, dict):
            return ["server configuration not checked: no /get_server_info"]
        notes = []
        saver = info.get("enable_memory_saver")
        if saver is False:
            raise ServerConfigError(
                f"SGLang at {server.url} runs without --enable-memory-saver: a release would "
                "be accepted and free nothing; restart it with --enable-memory-saver"
            )
        if saver is None:
            notes.append("memory saver not checked: get_server_info has no enable_memory_saver")
        releases_weights = not tags or "weights" in tags
        backup = info.get("enable_weights_cpu_backup")
        if releases_weights and backup is False and not reload:
            raise ServerConfigError(
                f"SGLang at {server.url} runs without --enable-weights-cpu-backup: released "
                "weights come back without their content; restart it with "
                "--enable-weights-cpu-backup, release only the KV cache (--tags kv_cache), "
                "or give a reload step (--reload)"
            )
        if releases_weights and backup is None:
            notes.append("weights backup not checked: no enable_weights_cpu_backup reported")
        return notes

    def released_bytes(self, server: Server, tags: Sequence[str], timeout_s: float) -> int | None:
        """The pools of ``tags`` from ``internal_states[0].memory_usage`` (GiB to 3
        decimals: :attr:`pool_resolution_bytes`), bytes."""
        info = server_json(server, INFO_PATHS, timeout_s)
        states = info.get("internal_states") if isinstance(info, dict) else None
        state = states[0] if isinstance(states, list) and states else None
        usage = state.get("memory_usage") if isinstance(state, dict) else None
        if not isinstance(usage, dict):
            return None
        sizes = [usage.get(POOLS[tag]) for tag in (tags or MEMORY_TAGS)]
        if not all(isinstance(size, (int, float)) for size in sizes):
            return None
        return int(math.fsum(float(size) for size in sizes if size is not None) * GIB)

    def pause(self, server: Server, timeout_s: float) -> bool:
        """``POST /pause_generation {"mode": "in_place"}``: new generations wait in the
        tokenizer manager, nothing is aborted (the route's default mode aborts)."""
        status, data = server.request("POST", "/pause_generation", PAUSE, timeout_s)
        if status == 404:
            raise ServerConfigError(
                f"SGLang at {server.url} has no /pause_generation: releasing its memory "
                "without pausing lets a request run on released memory; use an SGLang "
                "with /pause_generation and /continue_generation (0.5 or later)"
            )
        if status != 200:
            text = data[:200].decode(errors="replace")
            raise HandoffProbeError(f"POST {server.url}/pause_generation answered {status}: {text}")
        return True

    def unpause(self, server: Server, timeout_s: float) -> None:
        """``POST /continue_generation``: the held generations go on."""
        server.call("POST", "/continue_generation", {}, timeout_s)

    def park(self, server: Server, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """``POST /release_memory_occupation`` (``level`` is vLLM's: unused)."""
        server.call("POST", "/release_memory_occupation", _tags(tags), timeout_s)

    def resume(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> None:
        """``POST /resume_memory_occupation``, then the reload when asked."""
        server.call("POST", "/resume_memory_occupation", _tags(tags), timeout_s)
        if reload:
            self.reload(server, timeout_s)

    def reload(self, server: Server, timeout_s: float) -> None:
        """``POST /update_weights_from_disk`` with the served ``model_path``."""
        info = server_json(server, INFO_PATHS, timeout_s)
        path = info.get("model_path") if isinstance(info, dict) else None
        body = {"model_path": path if isinstance(path, str) else server.served_model(timeout_s)}
        server.call("POST", "/update_weights_from_disk", body, timeout_s)

    def generation(
        self, server: Server, max_tokens: int, timeout_s: float
    ) -> tuple[str, dict[str, Any]]:
        """``POST /generate``."""
        return "/generate", {
            "text": PROMPT,
            "sampling_params": {"max_new_tokens": max_tokens, "temperature": 0, "ignore_eos": True},
            "stream": True,
        }

    def event_text(self, event: dict[str, Any]) -> str:
        """A ``/generate`` stream event: ``text``."""
        return str(event["text"] or "")

    def accumulate(self, text: str, piece: str) -> str:
        """``/generate`` events hold the whole text so far."""
        return piece


def _tags(tags: Sequence[str]) -> dict[str, list[str]]:
    """The release/resume body: the tags asked for, or none for every tag."""
    return {"tags": list(tags)} if tags else {}
