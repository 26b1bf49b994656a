"""Route patterns (learnsched.serving.engines.routes) and each dialect's lists of the routes
that run the model and the routes a front door forwards."""

from __future__ import annotations

import pytest

from learnsched.serving.engines import REGISTRY, engine
from learnsched.serving.engines.routes import route_matches


@pytest.mark.parametrize(
    ("route", "path", "matches"),
    [
        ("/v1/models", "/v1/models", True),
        ("/v1/models", "/v1/models/x", False),
        ("/v1/models", "/v1/model", False),
        ("/v1/responses/{response_id}", "/v1/responses/resp-1", True),
        ("/v1/responses/{response_id}", "/v1/responses/a/b", False),
        ("/v1/responses/{response_id}", "/v1/responses/", False),
        ("/v1/responses/{response_id}/cancel", "/v1/responses/resp-1/cancel", True),
        ("/v1/models/{model:path}", "/v1/models/org/name", True),
        ("/v1/models/{model:path}", "/v1/models/", False),
        ("/a.b", "/axb", False),  # literal text, not a regular expression
    ],
)
def test_a_route_pattern_matches_as_the_engines_router_does(
    route: str, path: str, matches: bool
) -> None:
    assert route_matches([route], path) is matches


@pytest.mark.parametrize("route", ["v1/models", "/v1/{id", "/v1/id}", "/v1/{a b}"])
def test_a_malformed_route_pattern_is_refused(route: str) -> None:
    with pytest.raises(ValueError, match="route must be a path"):
        route_matches([route], "/v1/models")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_route_that_runs_the_model_is_forwarded(name: str) -> None:
    dialect = engine(name)
    assert dialect.generation_routes
    assert dialect.generation_routes <= dialect.forwarded_routes
    for route in dialect.forwarded_routes:  # each pattern is well formed
        route_matches([route], "/")


# The routes each dialect parks, pauses, aborts, reloads or describes the engine with.
CONTROL = {
    "vllm": [
        "/sleep", "/wake_up", "/is_sleeping", "/pause", "/resume", "/is_paused",
        "/abort_requests", "/inference/v1/abort_requests", "/collective_rpc", "/server_info",
        "/reset_prefix_cache", "/update_weights", "/scale_elastic_ep", "/start_profile",
        "/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/docs", "/openapi.json", "/",
    ],
    "sglang": [
        "/release_memory_occupation", "/resume_memory_occupation", "/pause_generation",
        "/continue_generation", "/update_weights_from_disk", "/abort_request", "/flush_cache",
        "/server_info", "/get_server_info", "/load_lora_adapter", "/start_profile",
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONTROL))
def test_no_control_route_is_forwarded(name: str) -> None:
    dialect = engine(name)
    assert [path for path in CONTROL[name] if dialect.forwards(path)] == []


@pytest.mark.parametrize(
    ("name", "method", "path", "runs"),
    [
        ("vllm", "POST", "/v1/completions", True),
        ("vllm", "POST", "/invocations", True),
        ("vllm", "POST", "/inference/v1/generate", True),
        ("vllm", "POST", "/v1/completions/render", False),
        ("vllm", "POST", "/v1/messages/count_tokens", False),
        ("vllm", "POST", "/tokenize", False),
        ("vllm", "GET", "/v1/models", False),
        ("vllm", "GET", "/v1/responses/resp-1", False),
        ("vllm", "OPTIONS", "/v1/completions", False),  # a CORS preflight
        ("sglang", "POST", "/generate", True),
        ("sglang", "GET", "/health_generate", True),
        ("sglang", "POST", "/v1/tokenize", False),
    ],
)
def test_which_requests_run_the_model(name: str, method: str, path: str, runs: bool) -> None:
    dialect = engine(name)
    assert dialect.generates(method, path) is runs
    assert dialect.forwards(path)
