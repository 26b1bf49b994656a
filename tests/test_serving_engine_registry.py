"""The engine registry: a new serving engine is one Engine subclass and one registry line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from learnsched.serving.endpoint import ServingEndpoint
from learnsched.serving.engines import ENGINES, REGISTRY, Engine, Server, engine


class Recorder(Engine):
    """An engine that records what it is asked, through the real endpoint."""

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def park(self, server: Server, *, level: int, tags: Sequence[str], timeout_s: float) -> None:
        self.calls.append(("park", (server.url, level, tuple(tags))))

    def resume(
        self, server: Server, *, tags: Sequence[str], reload: bool, timeout_s: float
    ) -> None:
        self.calls.append(("resume", (server.url, tuple(tags))))

    def generation(
        self, server: Server, max_tokens: int, timeout_s: float
    ) -> tuple[str, dict[str, Any]]:
        return "/generate", {"max_tokens": max_tokens}

    def event_text(self, event: dict[str, Any]) -> str:
        return str(event["token"])


def test_registry_holds_every_dialect() -> None:
    assert ENGINES == ("vllm", "sglang")
    assert all(REGISTRY[name].name == name for name in ENGINES)
    assert REGISTRY["vllm"].reports_parked
    assert not REGISTRY["sglang"].reports_parked


def test_unknown_engine_is_named() -> None:
    with pytest.raises(ValueError, match="engine must be one of vllm, sglang, got 'tgi'"):
        engine("tgi")
    with pytest.raises(ValueError, match="engine must be one of"):
        ServingEndpoint("http://127.0.0.1:8000", "tgi")


def test_a_registered_engine_drives_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()
    monkeypatch.setitem(REGISTRY, "recorder", recorder)
    endpoint = ServingEndpoint("http://127.0.0.1:8000", "recorder")
    endpoint.release(level=2, tags=["kv_cache"], timeout_s=1)
    endpoint.resume(tags=[], timeout_s=1)
    assert recorder.calls == [
        ("park", ("http://127.0.0.1:8000", 2, ("kv_cache",))),
        ("resume", ("http://127.0.0.1:8000", ())),
    ]
    assert endpoint._event_text(b'{"token": "Paris"}', "test") == "Paris"
    with pytest.raises(Exception, match="no route that reports whether it is parked"):
        endpoint.is_sleeping(timeout_s=1)
