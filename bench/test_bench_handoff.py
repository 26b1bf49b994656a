"""Benchmarks: ledger appends, PSS reads, LoRA save/load on CPU, NVML-free waits.

Run with ``pytest bench/test_bench_handoff.py`` (outside the default test run).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from learnsched.handoff import (
    BASE_SHAPES,
    load_adapter,
    read_host_memory,
    save_adapter,
    synthesise_adapter,
)
from learnsched.serving import HandoffLedger, HandoffRecord, read_ledger


@pytest.mark.benchmark(group="ledger")
def test_ledger_append(benchmark: Callable[..., Any], tmp_path: Path) -> None:
    ledger = HandoffLedger(tmp_path / "ledger.jsonl")
    record = HandoffRecord(kind="warm-recovery", stamps_ns={"a": 1, "b": 2}, readiness_s=0.5)
    benchmark(ledger.append, record)
    records = read_ledger(ledger.path)
    assert records
    assert all(r == record for r in records)


@pytest.mark.benchmark(group="pss")
@pytest.mark.parametrize("children", [False, True])
def test_pss_read(benchmark: Callable[..., Any], children: bool) -> None:
    memory = benchmark(read_host_memory, os.getpid(), children=children)
    assert memory.pss > 0
    assert memory.pids[0] == os.getpid()


def lora_torch() -> Any:
    """torch, after skipping unless the LoRA probe's extras (torch, safetensors) are installed."""
    pytest.importorskip("safetensors", reason="the LoRA probe needs safetensors (learnsched[gpu])")
    return pytest.importorskip("torch", reason="the LoRA probe needs torch (learnsched[gpu])")


@pytest.mark.benchmark(group="lora-save")
@pytest.mark.parametrize("rank", [4, 8, 16])
@pytest.mark.parametrize("durable", [False, True])
def test_lora_save(benchmark: Callable[..., Any], tmp_path: Path, rank: int, durable: bool) -> None:
    lora_torch()
    tensors = synthesise_adapter(BASE_SHAPES["llama-3.2-3b"], rank)
    path = benchmark(save_adapter, tensors, tmp_path, durable=durable)
    assert path.stat().st_size > sum(t.numel() * 4 for t in tensors.values())


@pytest.mark.benchmark(group="lora-load")
@pytest.mark.parametrize("rank", [4, 8, 16])
def test_lora_load(benchmark: Callable[..., Any], tmp_path: Path, rank: int) -> None:
    torch = lora_torch()
    tensors = synthesise_adapter(BASE_SHAPES["llama-3.2-3b"], rank)
    path = save_adapter(tensors, tmp_path, durable=True)
    loaded = benchmark(load_adapter, path, "cpu")
    assert all(torch.equal(loaded[name], tensor) for name, tensor in tensors.items())
