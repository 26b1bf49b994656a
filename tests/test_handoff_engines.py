"""The engines' HTTP dialects (:class:`~learnsched.handoff.ServingEndpoint`) on the simulator."""

from __future__ import annotations

import pytest

from learnsched.handoff import HandoffProbeError, ServingEndpoint

from engine_support import engine


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_health_answers_while_parked_but_requests_fail(dialect: str) -> None:
    with engine(dialect) as sim:
        endpoint = ServingEndpoint(sim.url, dialect)
        endpoint.generate(2, timeout_s=5)
        endpoint.release(level=1, tags=["weights", "kv_cache"], timeout_s=5)
        assert endpoint.healthy(timeout_s=5)
        with pytest.raises(Exception, match="503"):
            endpoint.generate(2, timeout_s=5)
        endpoint.resume(tags=["weights", "kv_cache"], timeout_s=5)
        answer = endpoint.generate(3, timeout_s=5)
        assert answer.first_ns <= answer.done_ns
        assert len(answer.text.split()) == 3


@pytest.mark.parametrize(
    ("stream", "message"),
    [("error", "the stream carried an error: .*out of memory"), ("garbage", "is not JSON")],
)
def test_broken_streams_are_named(stream: str, message: str) -> None:
    with (
        engine("sglang", stream=stream) as sim,
        pytest.raises(HandoffProbeError, match=message),
    ):
        ServingEndpoint(sim.url, "sglang").generate(2, timeout_s=5)
