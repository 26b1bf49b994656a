"""The engines' HTTP dialects (:class:`~learnsched.serving.ServingEndpoint`) on the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from learnsched.serving import HandoffProbeError, ServingEndpoint

from engine_support import engine, self_signed


@pytest.mark.parametrize(("dialect", "refusal"), [("vllm", "stalled"), ("sglang", "503")])
def test_health_answers_while_parked_but_requests_are_not(dialect: str, refusal: str) -> None:
    """vLLM queues a request while asleep (it stalls until the wake-up); the forgiving
    SGLang refuses it."""
    with engine(dialect) as sim:
        endpoint = ServingEndpoint(sim.url, dialect)
        endpoint.generate(2, timeout_s=5)
        endpoint.release(level=1, tags=["weights", "kv_cache"], timeout_s=5)
        assert endpoint.healthy(timeout_s=5)
        with pytest.raises(Exception, match=refusal):
            endpoint.generate(2, timeout_s=0.5)
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


@pytest.mark.parametrize("dialect", ["vllm", "sglang"])
def test_https_and_api_key(tmp_path: Path, dialect: str) -> None:
    """https:// and an API key reach an engine started with --ssl-* and --api-key
    (before: only http:// was accepted and no key was sent)."""
    from learnsched.serving.endpoint import HttpStatusError, ServingEndpoint
    from learnsched.testing import EngineConfig, SimulatedEngine

    cert, key = self_signed(tmp_path)
    config = EngineConfig(
        dialect, token_s=0.0, api_key="sesame", ssl_certfile=str(cert), ssl_keyfile=str(key)
    )
    with SimulatedEngine(config) as engine:
        assert engine.url.startswith("https://")
        served = ServingEndpoint(engine.url, dialect, api_key="sesame", ca_file=cert)
        assert served.generate(4, 10.0).text
        served.release(level=1, tags=(), timeout_s=10.0)
        served.resume(tags=(), timeout_s=10.0)
        assert "sesame" not in repr(served)
        with pytest.raises(HttpStatusError, match="401"):
            ServingEndpoint(engine.url, dialect, ca_file=cert).generate(4, 10.0)
        with pytest.raises(ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            ServingEndpoint(engine.url, dialect, api_key="sesame").generate(4, 10.0)
    with pytest.raises(ValueError, match="ca_file is for an https:// server"):
        ServingEndpoint("http://127.0.0.1:1", dialect, ca_file=cert)


def test_usage_only_final_event_and_aborted_streams() -> None:
    """vLLM's usage-only last event (``"choices": []``) made every request fail; an
    aborted stream (``/sleep``'s default mode) must not count as a completed one."""
    import threading

    from learnsched.serving.endpoint import ServingEndpoint, StreamError
    from learnsched.testing import EngineConfig, SimulatedEngine

    with SimulatedEngine(EngineConfig("vllm", token_s=0.0, force_include_usage=True)) as engine:
        served = ServingEndpoint(engine.url, "vllm")
        assert len(served.generate(4, 10.0).text.split()) == 4
    strict = EngineConfig.strict("vllm", token_s=0.01)
    with SimulatedEngine(strict) as engine:
        served = ServingEndpoint(engine.url, "vllm")
        errors: list[BaseException] = []

        def stream() -> None:
            try:
                served.generate(300, 20.0)
            except StreamError as err:
                errors.append(err)

        worker = threading.Thread(target=stream)
        worker.start()
        while engine.state.running == 0:
            threading.Event().wait(0.005)
        served.call("POST", "/sleep?level=1", None, 10.0)  # vLLM's default mode=abort
        worker.join(20.0)
    assert len(errors) == 1
    assert "aborted the request" in str(errors[0])


def test_sglang_server_info_before_the_deprecated_route_at_full_precision() -> None:
    """The probes asked the deprecated /get_server_info (it warns on every call) and
    allowed half of 0.01 GiB per tagged release; SGLang reports each pool to 0.001 GiB."""
    from learnsched.handoff.recovery import TAGGED_SHARE, _released_bytes
    from learnsched.serving.endpoint import ServingEndpoint
    from learnsched.testing import EngineConfig, SimulatedEngine

    with SimulatedEngine(EngineConfig("sglang", kv_mib=8.0, weights_mib=100.0)) as engine:
        served = ServingEndpoint(engine.url, "sglang")
        assert served.dialect.released_bytes(served, ("kv_cache",), 5.0) == int(0.008 * 2**30)
        must_free, tagged = _released_bytes(served, ("kv_cache",), None, 5.0)
        assert tagged
        # A release of the 8 MiB pool must free 6.9 MiB of it (before: 2.8 MiB passed).
        assert must_free == int((int(0.008 * 2**30) - 2**30 // 1000 // 2) * TAGGED_SHARE)
        assert must_free > 6.9 * 2**20
        served.dialect.check_config(served, tags=(), reload=False, timeout_s=5.0)
        assert engine.state.deprecated_calls == 0


def test_pinned_h2d_source_holds_every_tensor_once_in_order() -> None:
    torch = pytest.importorskip("torch", reason="needs torch (learnsched[gpu])")
    from learnsched.handoff.lora import _pinned_bytes

    host = {"a": torch.arange(6, dtype=torch.float32), "b": torch.ones(3, dtype=torch.bfloat16)}
    flat = _pinned_bytes(torch, host, pin=torch.cuda.is_available())
    assert flat.numel() == 6 * 4 + 3 * 2
    assert torch.equal(flat[:24].view(torch.float32), host["a"])
    assert torch.equal(flat[24:].view(torch.bfloat16), host["b"])
