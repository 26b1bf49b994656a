"""The reference LoRA trainer's durability: a checkpoint holds exactly its quanta."""

from __future__ import annotations

from pathlib import Path

import pytest

for _module in ("torch", "peft", "safetensors", "transformers"):
    pytest.importorskip(_module, reason="the reference LoRA trainer needs the gpu extra")

from learnsched.control.lora_trainer import CHECKPOINT_FILE, LoraTrainer


def adapter_tensors(path: Path) -> dict[str, object]:
    from safetensors.torch import load_file

    return {k: v for k, v in load_file(str(path)).items() if not k.startswith("optimizer.")}


def test_discarded_work_never_reaches_the_fresh_adapter(tmp_path: Path) -> None:
    """Work done from the fresh adapter and discarded must not survive in it: a
    checkpoint of 3 quanta after a discarded 3 must equal a clean run's 3."""
    import torch

    options = {"work_quanta": 20, "steps_per_quantum": 1}
    for name in ("dirty", "clean"):
        (tmp_path / name).mkdir()
    dirty = LoraTrainer(tmp_path / "dirty", **options)
    initial = {k: v.clone() for k, v in dirty.initial.items()}
    dirty.resume()
    dirty.advance(3)
    dirty.discard()  # nothing durable yet: the next resume starts from the fresh adapter
    assert all(torch.equal(initial[k], v) for k, v in dirty.initial.items())
    assert dirty.resume() == 0
    dirty.advance(3)
    dirty.checkpoint()
    clean = LoraTrainer(tmp_path / "clean", **options)
    clean.resume()
    clean.advance(3)
    clean.checkpoint()
    got = adapter_tensors(tmp_path / "dirty" / CHECKPOINT_FILE)
    want = adapter_tensors(tmp_path / "clean" / CHECKPOINT_FILE)
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in want)  # type: ignore[arg-type]


def test_an_interrupted_quantum_is_undone(tmp_path: Path) -> None:
    """Interrupted after one of its three steps, a quantum leaves the state of the last
    whole quantum: 1 quantum, an interrupted one, then 1 more checkpoints exactly what
    an uninterrupted 2 do (adapter and AdamW moments)."""
    import torch
    from safetensors.torch import load_file

    options = {"work_quanta": 20, "steps_per_quantum": 3}
    for name in ("cut", "whole"):
        (tmp_path / name).mkdir()
    cut = LoraTrainer(tmp_path / "cut", **options)
    cut.resume()
    cut.advance(1)
    asks = iter([False, True])  # one step runs, then the interrupt arrives
    cut.interrupted = lambda: next(asks)  # type: ignore[method-assign]
    advanced = cut.advance(1)
    assert (advanced.progress, advanced.interrupted, cut.step) == (1, True, 3)
    cut.interrupted = lambda: False  # type: ignore[method-assign]
    cut.advance(1)
    cut.checkpoint()
    whole = LoraTrainer(tmp_path / "whole", **options)
    whole.resume()
    whole.advance(2)
    whole.checkpoint()
    got = load_file(str(tmp_path / "cut" / CHECKPOINT_FILE))
    want = load_file(str(tmp_path / "whole" / CHECKPOINT_FILE))
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_a_one_quantum_job_calibrates_and_publishes(tmp_path: Path) -> None:
    """Calibration times at most the job's quanta: a job of one quantum can be built."""
    trainer = LoraTrainer(tmp_path, work_quanta=1, steps_per_quantum=1)
    assert trainer.costs().quantum_s > 0
    trainer.resume()
    assert trainer.advance(1).progress == 1
    assert (Path(trainer.publish()) / "adapter_model.safetensors").exists()
