"""The whole scheduler next to a real vLLM: the shipped Azure trace replayed through the
gate while the loop lends the engine to a trainer, parking and resuming it for real.

What must hold: no request fails, no park meets a busy engine, the loop hands the engine
over and back several times, and every held request's added latency is bounded; the
numbers are printed (``-s``) for the docs.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from learnsched.serving import read_ledger

from control_support import COUNTING

pytestmark = pytest.mark.real_engine


def test_trace_replay_through_the_gate_with_the_loop_and_a_trainer(
    vllm_sleep: Any, tmp_path: Path
) -> None:
    from learnsched.control.demo import DemoOptions, run_demo

    options = DemoOptions(
        seconds=30.0, speedup=10.0, state_dir=tmp_path / "state", url=vllm_sleep.url,
        trainer=COUNTING, work_quanta=1500,
    )  # fmt: skip
    summary, _ = run_demo(options)
    print(json.dumps({k: summary[k] for k in sorted(summary) if k != "ledger"}))
    assert summary["requests"] > 50
    assert summary["failed_requests"] == 0
    assert summary["parks_on_busy_engine"] == 0
    assert summary["handoffs"] >= 2
    assert summary["added_latency_p99_s"] < 2.0
    records = read_ledger(Path(summary["ledger"]))
    parks = [r for r in records if r.kind == "park"]
    returns = [r for r in records if r.kind == "return"]
    # A park record is closed by its return, or by a skip (the window was not lent).
    assert len(returns) == summary["handoffs"]
    assert len(parks) == len(returns) + summary["skipped_windows"]
    # The engine is left serving: awake, and a completion answers.
    with urllib.request.urlopen(vllm_sleep.url + "/is_sleeping", timeout=10) as answer:
        assert json.load(answer) == {"is_sleeping": False}
