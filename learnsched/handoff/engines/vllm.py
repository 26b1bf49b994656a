"""vLLM's sleep mode (server started with ``--enable-sleep-mode`` and
``VLLM_SERVER_DEV_MODE=1``): ``POST /sleep?level=N``, ``POST /wake_up``,
``GET /is_sleeping``; generation through ``POST /v1/completions``.

vLLM's ``/health`` answers 200 while the engine sleeps: only a completed generation
request shows capacity is ready.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from .base import PROMPT, Engine, Server

__all__ = ["VLLM_SLEEP_LEVELS", "Vllm"]

VLLM_SLEEP_LEVELS = (1, 2)


class Vllm(Engine):
    """vLLM's HTTP dialect."""

    name = "vllm"
    reports_parked = True

    def park(self, server: Server, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """``POST /sleep?level=N`` (vLLM frees every tag at once)."""
        server.call("POST", f"/sleep?{urlencode({'level': level})}", None, timeout_s)

    def resume(self, server: Server, *, tags: Sequence[str], timeout_s: float) -> None:
        """``POST /wake_up`` (``?tags=...`` for a partial wake-up)."""
        query = f"?{urlencode([('tags', t) for t in tags])}" if tags else ""
        server.call("POST", f"/wake_up{query}", None, timeout_s)

    def is_parked(self, server: Server, timeout_s: float) -> bool:
        """``GET /is_sleeping``."""
        return bool(json.loads(server.call("GET", "/is_sleeping", None, timeout_s))["is_sleeping"])

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
        """An OpenAI completions chunk: ``choices[0].text``."""
        return str(event["choices"][0]["text"] or "")
