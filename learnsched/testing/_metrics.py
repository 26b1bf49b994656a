"""The simulated engine's ``/metrics``: the Prometheus gauges a scheduler reads.

vLLM (0.32, ``v1/metrics/loggers.py``) labels each gauge with ``engine`` and
``model_name``: ``vllm:num_requests_running``, ``vllm:num_requests_waiting``,
``vllm:num_requests_waiting_by_reason`` (``reason`` ``capacity`` or ``deferred``) and
``vllm:engine_sleep_state`` (``sleep_state`` ``awake``, ``weights_offloaded`` or
``discard_all``, each 0 or 1). SGLang (``--enable-metrics``) labels
``sglang:num_running_reqs`` and ``sglang:num_queue_reqs`` with ``model_name``. The
engines' other series (latency histograms, token counters, process and Python
collectors) are not simulated.
"""

from __future__ import annotations

from ._state import EngineState

__all__ = ["metrics_text"]

# Each vLLM gauge: its HELP text, as vLLM writes it.
VLLM_HELP = {
    "vllm:num_requests_running": "Number of requests in model execution batches.",
    "vllm:num_requests_waiting": "Number of requests waiting to be processed.",
    "vllm:num_requests_waiting_by_reason": (
        "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
        "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, "
        "KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting."
    ),
    "vllm:engine_sleep_state": (
        "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
        "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
        "level 2."
    ),
}
# The sleep_state label of each sleep level's gauge set to 1 (level 0: none).
SLEEP_STATES = {"weights_offloaded": 1, "discard_all": 2}


def _label(value: str) -> str:
    """A Prometheus label value, escaped."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _vllm(state: EngineState) -> list[str]:
    running, waiting = state.load()
    level = state.sleep_gauge
    base = f'engine="0",model_name={_label(state.config.model)}'
    samples = {
        "vllm:num_requests_running": [(base, running)],
        "vllm:num_requests_waiting": [(base, waiting)],
        # The simulated scheduler defers nothing: every waiting request waits for a slot.
        "vllm:num_requests_waiting_by_reason": [
            (f'{base},reason="capacity"', waiting),
            (f'{base},reason="deferred"', 0),
        ],
        "vllm:engine_sleep_state": [
            (f'{base},sleep_state="awake"', int(level is None)),
            *((f'{base},sleep_state="{name}"', int(level == value))
              for name, value in SLEEP_STATES.items()),
        ],
    }  # fmt: skip
    lines = []
    for name, series in samples.items():
        lines += [f"# HELP {name} {VLLM_HELP[name]}", f"# TYPE {name} gauge"]
        lines += [f"{name}{{{labels}}} {float(value)}" for labels, value in series]
    return lines


def _sglang(state: EngineState) -> list[str]:
    label = f"{{model_name={_label(state.config.model)}}}"
    lines = []
    for name, value in zip(
        ("sglang:num_running_reqs", "sglang:num_queue_reqs"), state.load(), strict=True
    ):
        lines += [f"# TYPE {name} gauge", f"{name}{label} {float(value)}"]
    return lines


def metrics_text(state: EngineState) -> str:
    """``/metrics``' Prometheus text now (vLLM ``--disable-log-stats``: no engine gauges)."""
    if not state.config.metrics:
        return "# no engine stats (--disable-log-stats)\n"
    return "\n".join(_vllm(state) if state.config.vllm else _sglang(state)) + "\n"
