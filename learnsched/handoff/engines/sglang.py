"""SGLang's memory saver (server started with ``--enable-memory-saver``):
``POST /release_memory_occupation`` and ``POST /resume_memory_occupation`` with body
``{"tags": [...]}``; generation through ``POST /generate``.

What SGLang's own sources say, and this dialect follows:

- The release asserts ``is_fully_idle()`` ("should be called only when server is
  idle"): park only an idle engine (:func:`~..preflight.wait_until_idle`).
- Without ``--enable-memory-saver`` the memory-saver adapter is a no-op: the release is
  accepted and frees nothing. Without ``--enable-weights-cpu-backup`` released weights
  come back without their content. ``GET /get_server_info`` returns the server args,
  so both are checked before parking (:meth:`SGLang.check_config`).
- ``get_server_info``'s ``internal_states[0].memory_usage`` gives each pool in GiB
  (``weight``, ``kvcache``): what a tagged release must free.
- ``/health`` runs a one-token generation and waits at least 1 s for it; readiness
  after a resume is the first real request instead.
- ``/generate`` stream events carry the whole text so far, not a delta.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ServerConfigError
from .base import MEMORY_TAGS, PROMPT, Engine, Server, server_json

__all__ = ["SGLang"]

GIB = 2**30
INFO_PATHS = ("/get_server_info", "/server_info")
# memory_usage keys of each tag's pool.
POOLS = {"weights": "weight", "kv_cache": "kvcache"}


class SGLang(Engine):
    """SGLang's HTTP dialect (no route reports whether it is parked)."""

    name = "sglang"
    load_metrics = ("sglang:num_running_reqs", "sglang:num_queue_reqs")

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
        """The pools of ``tags`` from ``internal_states[0].memory_usage`` (GiB, 2 decimals)."""
        info = server_json(server, INFO_PATHS, timeout_s)
        states = info.get("internal_states") if isinstance(info, dict) else None
        state = states[0] if isinstance(states, list) and states else None
        usage = state.get("memory_usage") if isinstance(state, dict) else None
        if not isinstance(usage, dict):
            return None
        sizes = [usage.get(POOLS[tag]) for tag in (tags or MEMORY_TAGS)]
        if not all(isinstance(size, (int, float)) for size in sizes):
            return None
        return int(sum(float(size) for size in sizes if size is not None) * GIB)

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
