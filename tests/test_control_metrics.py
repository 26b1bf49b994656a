"""The load signal read from an engine's Prometheus text (vLLM and SGLang gauges)."""

from __future__ import annotations

import pytest

from learnsched.control.metrics import LOAD_GAUGES, Load, parse_load

VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4.0
vllm:num_requests_waiting_by_reason{reason="capacity"} 9.0
vllm:prompt_tokens_total{model_name="m"} 1234.0
"""

SGLANG = """\
sglang:num_running_reqs{model_name="m",tp_rank="0"} 0.0
sglang:num_queue_reqs{model_name="m",tp_rank="0"} 3
sglang:token_usage{model_name="m"} 0.28
"""


def test_vllm_sums_over_label_sets_and_ignores_other_metrics() -> None:
    assert parse_load(VLLM, "vllm") == Load(running=3.0, waiting=4.0)


def test_sglang_gauges() -> None:
    load = parse_load(SGLANG, "sglang")
    assert load == Load(running=0.0, waiting=3.0)
    assert load.busy


def test_idle_engine_is_not_busy() -> None:
    text = "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n"
    assert not parse_load(text, "vllm").busy


def test_gauge_names_are_the_engines() -> None:
    assert LOAD_GAUGES["vllm"] == ("vllm:num_requests_running", "vllm:num_requests_waiting")
    assert LOAD_GAUGES["sglang"] == ("sglang:num_running_reqs", "sglang:num_queue_reqs")


def test_missing_gauges_name_the_sglang_flag() -> None:
    with pytest.raises(ValueError, match="--enable-metrics"):
        parse_load("sglang:token_usage 0.1\n", "sglang")
    with pytest.raises(ValueError, match="vllm:num_requests_running"):
        parse_load(SGLANG, "vllm")


@pytest.mark.parametrize("value", ["abc", "NaN", "+Inf"])
def test_bad_values_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match=r"vllm:num_requests_running|non-numeric"):
        parse_load(f"vllm:num_requests_running {value}\n", "vllm")


def test_unknown_engine() -> None:
    with pytest.raises(ValueError, match="engine"):
        parse_load(VLLM, "tgi")
