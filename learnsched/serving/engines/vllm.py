"""vLLM's sleep mode (server started with ``--enable-sleep-mode`` and
``VLLM_SERVER_DEV_MODE=1``): ``POST /sleep?level=N``, ``POST /wake_up?tags=..``,
``GET /is_sleeping``; generation through ``POST /v1/completions``.

What vLLM's own sources say (``vllm/entrypoints/serve/sleep/api_router.py``, the
executor's ``sleep``/``wake_up``), and this dialect follows:

- ``/sleep`` reads ``level`` and ``mode``: it always puts both ``weights`` and
  ``kv_cache`` to sleep. ``mode`` defaults to ``abort`` (in-flight requests are aborted:
  their streams end with ``finish_reason: "abort"``); this dialect always sends
  ``mode=wait``, which lets in-flight requests finish first. Requests that arrive while
  asleep are accepted and queued until the wake-up (no 503), and the ``/metrics``
  gauges do not count them. ``/wake_up?tags=T`` wakes those tags, and ``/is_sleeping`` stays true until
  every sleeping tag is woken, so a resume here always wakes every tag: the ones asked
  for first, in order, then the rest (a partial wake would leave the engine asleep).
- Level 2 discards the weights: until ``collective_rpc("reload_weights")`` (dev-mode
  ``POST /collective_rpc``) the model answers from garbage. The docs' recipe is wake
  ``weights``, reload, wake ``kv_cache``; without a reload step level 2 is refused.
- ``/health`` answers 200 while asleep: only a completed generation shows readiness;
  it answers 503 once the engine core died, which makes it the liveness check.
- ``/is_sleeping`` is also true while generation is merely paused (``POST /pause``: the
  RL weight-sync entry point, nothing released), and ``/is_paused`` is true while asleep:
  only the ``vllm:engine_sleep_state`` gauge tells a park from a pause (:meth:`Vllm.park_state`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from ..errors import ServerConfigError
from .base import MEMORY_TAGS, PROMPT, Engine, Server, server_json

__all__ = ["SLEEP_STATE_GAUGE", "VLLM_SLEEP_LEVELS", "Vllm", "awake_gauge"]

VLLM_SLEEP_LEVELS = (1, 2)
# Drain in-flight requests before sleeping, never abort them.
SLEEP_MODE = "wait"
# vLLM's gauge of its sleep state (one sample per engine and state), and the state that
# says awake: 1, or 0 after a /sleep (AsyncLLM.sleep records it; a full wake-up sets 1).
SLEEP_STATE_GAUGE = "vllm:engine_sleep_state"
_AWAKE_LABEL = 'sleep_state="awake"'


def awake_gauge(metrics: str) -> bool | None:
    """Whether every engine's ``vllm:engine_sleep_state{sleep_state="awake"}`` is 1 in
    Prometheus ``metrics`` text (``None``: the gauge is absent)."""
    values = []
    for line in metrics.splitlines():
        if line.startswith(SLEEP_STATE_GAUGE + "{") and _AWAKE_LABEL in line:
            try:
                values.append(float(line.rpartition(" ")[2]))
            except ValueError:
                continue  # a sample this reader cannot parse says nothing
    return min(values) >= 1.0 if values else None


class Vllm(Engine):
    """vLLM's HTTP dialect."""

    name = "vllm"
    reports_parked = True
    load_metrics = ("vllm:num_requests_running", "vllm:num_requests_waiting")
    # The routes whose requests run the model, as vLLM 0.32 declares them (the routers
    # under vllm/entrypoints/): OpenAI, Anthropic, Cohere, SageMaker, the structured-
    # decision and token-in/token-out routes, pooling, scoring and speech.
    generation_routes = frozenset(
        {
            "/v1/completions", "/v1/chat/completions", "/v1/chat/completions/batch",
            "/v1/responses", "/v1/messages", "/cohere/v2/chat", "/invocations",
            "/v1/systemone", "/generative_scoring", "/inference/v1/generate",
            "/v1/embeddings", "/v2/embed", "/pooling", "/classify", "/score", "/v1/score",
            "/rerank", "/v1/rerank", "/v2/rerank",
            "/v1/audio/transcriptions", "/v1/audio/translations",
        }
    )  # fmt: skip
    # And what clients read without running the model: models, health, version, load and
    # metrics (a scraper pointed at the served address), the tokenizer, prompt rendering,
    # their own stored responses. Never a dev-mode route (/sleep, /pause, /abort_requests,
    # /collective_rpc, /server_info ...), LoRA loading, profiling, scaling, the engine's API
    # description (/docs, /openapi.json) or its KV-event endpoints.
    forwarded_routes = generation_routes | frozenset(
        {
            "/v1/models", "/health", "/ping", "/version", "/load", "/metrics",
            "/tokenize", "/detokenize", "/tokenizer_info", "/v1/messages/count_tokens",
            "/v1/completions/render", "/v1/chat/completions/render", "/v1/messages/render",
            "/v1/responses/render", "/cohere/v2/chat/render",
            "/v1/completions/derender", "/v1/chat/completions/derender",
            "/v1/responses/{response_id}", "/v1/responses/{response_id}/cancel",
        }
    )  # fmt: skip

    def check_park(self, *, level: int, tags: Sequence[str], reload: bool) -> None:
        """Tags must be known; level 2 needs a reload step."""
        super().check_park(level=level, tags=tags, reload=reload)
        if level == 2 and not reload:
            raise ValueError(
                "vLLM sleep level 2 discards the weights, so a resume would answer from "
                "garbage: give a reload step (--reload: POST /collective_rpc reload_weights) "
                "or use level 1"
            )

    def check_config(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> list[str]:
        """Dev mode (``/is_sleeping`` exists) and ``model_config.enable_sleep_mode``."""
        if server.request("GET", "/is_sleeping", None, timeout_s)[0] == 404:
            raise ServerConfigError(
                f"vLLM at {server.url} has no /is_sleeping: start it with "
                "VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode"
            )
        info = server_json(server, ("/server_info?config_format=json",), timeout_s)
        config = info.get("vllm_config") if isinstance(info, dict) else None
        model = config.get("model_config") if isinstance(config, dict) else None
        sleep_mode = model.get("enable_sleep_mode") if isinstance(model, dict) else None
        if sleep_mode is False:
            raise ServerConfigError(
                f"vLLM at {server.url} runs without --enable-sleep-mode: /sleep would free "
                "nothing; restart it with --enable-sleep-mode"
            )
        if sleep_mode is None:
            return ["sleep mode not checked: /server_info has no model_config.enable_sleep_mode"]
        return []

    def released_tags(self, tags: Sequence[str]) -> tuple[str, ...]:
        """Every tag: ``/sleep`` takes no tags."""
        return MEMORY_TAGS

    def park(self, server: Server, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """``POST /sleep?level=N&mode=wait``: in-flight requests finish first (the route's
        default ``mode=abort`` would abort them); vLLM reads no tags there and frees every
        tag at once."""
        query = urlencode({"level": level, "mode": SLEEP_MODE})
        server.call("POST", f"/sleep?{query}", None, timeout_s)

    def resume(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> None:
        """``POST /wake_up?tags=T`` for each asked tag in order, then every other sleeping
        tag; ``reload_weights`` right after the weights wake when ``reload``."""
        if not tags and not reload:
            server.call("POST", "/wake_up", None, timeout_s)
            return
        order = list(dict.fromkeys([*tags, *MEMORY_TAGS]))
        for tag in order:
            server.call("POST", f"/wake_up?{urlencode({'tags': tag})}", None, timeout_s)
            if tag == "weights" and reload:
                self.reload(server, timeout_s)

    def reload(self, server: Server, timeout_s: float) -> None:
        """Dev-mode ``POST /collective_rpc`` with ``reload_weights`` (the worker method)."""
        server.call("POST", "/collective_rpc", {"method": "reload_weights"}, timeout_s)

    def is_parked(self, server: Server, timeout_s: float) -> bool:
        """Asleep by :meth:`park_state`, or saying so without the gauge that tells a pause
        (``unconfirmed``); a mere pause is not a park."""
        return self.park_state(server, timeout_s) in ("parked", "unconfirmed")

    def park_state(self, server: Server, timeout_s: float) -> str:
        """``GET /is_sleeping``, and where it says true the sleep-state gauge.

        vLLM's ``is_sleeping`` is "the scheduler paused or the executor asleep", so it is
        also true while generation is merely paused (``POST /pause``, the RL weight-sync
        entry point: nothing released), and ``/is_paused`` is true while asleep too.
        Only ``vllm:engine_sleep_state{sleep_state="awake"}`` on ``/metrics`` (0 from a
        ``/sleep`` until a full wake-up; a pause leaves it 1) tells them apart: without
        it (``--disable-log-stats``) the answer is ``unconfirmed``.
        """
        if not json.loads(server.call("GET", "/is_sleeping", None, timeout_s))["is_sleeping"]:
            return "serving"
        status, data = server.request("GET", "/metrics", None, timeout_s)
        awake = awake_gauge(data.decode(errors="replace")) if status == 200 else None
        if awake is None:
            return "unconfirmed"
        return "paused" if awake else "parked"

    def alive(self, server: Server, timeout_s: float) -> bool:
        """``GET /health``: 200 while the engine core lives, asleep or not; 503 once it
        died (``EngineDeadError``)."""
        return server.request("GET", "/health", None, timeout_s)[0] == 200

    def generation(
        self, server: Server, max_tokens: int, timeout_s: float
    ) -> tuple[str, dict[str, Any]]:
        """``POST /v1/completions`` for the served model."""
        return "/v1/completions", {
            "model": server.served_model(timeout_s),
            "prompt": PROMPT,
            "max_tokens": max_tokens,
            "temperature": 0,
            "ignore_eos": True,  # a full-length answer: the request is comparable
            "stream": True,
        }

    def event_text(self, event: dict[str, Any]) -> str:
        """An OpenAI completions chunk: ``choices[0].text``; the usage-only last event
        (``"choices": []``, ``--enable-force-include-usage`` or ``include_usage``) has none."""
        choices = event["choices"]
        return str(choices[0]["text"] or "") if choices else ""
