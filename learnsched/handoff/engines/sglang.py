"""SGLang's memory saver (server started with ``--enable-memory-saver``):
``POST /release_memory_occupation`` and ``POST /resume_memory_occupation`` with body
``{"tags": [...]}``; generation through ``POST /generate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import PROMPT, Engine, Server

__all__ = ["SGLang"]


class SGLang(Engine):
    """SGLang's HTTP dialect (no route reports whether it is parked)."""

    name = "sglang"

    def park(self, server: Server, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        """``POST /release_memory_occupation`` (``level`` is vLLM's: unused)."""
        server.call("POST", "/release_memory_occupation", _tags(tags), timeout_s)

    def resume(self, server: Server, *, tags: Sequence[str], timeout_s: float) -> None:
        """``POST /resume_memory_occupation``."""
        server.call("POST", "/resume_memory_occupation", _tags(tags), timeout_s)

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


def _tags(tags: Sequence[str]) -> dict[str, list[str]]:
    """The release/resume body: the tags asked for, or none for every tag."""
    return {"tags": list(tags)} if tags else {}
