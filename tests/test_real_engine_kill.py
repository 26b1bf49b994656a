"""A real vLLM killed under the gate: a stream it was writing breaks off at the client
(an error, never a hang or a truncated answer passed off as whole), the gate counts it
failed, and every later request gets the gate's own 502 naming the engine."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

pytestmark = pytest.mark.real_engine


def test_engine_killed_mid_stream(own_vllm: Any) -> None:
    openai = pytest.importorskip("openai")
    pytest.importorskip("aiohttp", reason="the gate needs the serve extra")
    from learnsched.gate import Gate

    server = own_vllm("dev")
    with Gate(server.url, "vllm") as gate:
        client = openai.OpenAI(base_url=gate.url + "/v1", api_key="none", max_retries=0)
        stream = client.completions.create(
            model=server.model_name, prompt="hello", max_tokens=400, temperature=0,
            stream=True, extra_body={"ignore_eos": True, "min_tokens": 400},
        )  # fmt: skip
        pieces: list[str] = []

        def read() -> None:
            for chunk in stream:
                pieces.append(chunk.choices[0].text if chunk.choices else "")
                if len(pieces) == 1:
                    # At the first token, dead before the next is read: a kill on a thread
                    # of its own could come after a loaded machine had streamed them all.
                    server.kill()

        started = time.monotonic()
        with pytest.raises(openai.APIError):
            read()
        assert time.monotonic() - started < 30.0  # broken off, not left hanging
        assert 0 < len(pieces) < 400
        deadline = time.monotonic() + 10.0
        while gate.load().running and time.monotonic() < deadline:
            time.sleep(0.05)
        counts = gate.counts()
        assert (counts.failed, counts.completed, counts.in_flight) == (1, 0, 0)
        request = urllib.request.Request(
            gate.url + "/v1/completions", method="POST",
            data=json.dumps({"model": server.model_name, "prompt": "x"}).encode(),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 502
        assert server.url in json.load(refused.value)["error"]["message"]
