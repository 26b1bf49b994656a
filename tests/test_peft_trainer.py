"""The user's own LoRA job (PeftTrainer) on a tiny local Llama and a JSONL file.

The model is the tiny random Llama with a locally trained tokenizer that the real-engine
tests serve (:func:`vllm_support.make_tiny_model`), made once per module. Skipped without
the gpu extra.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

for _module in ("torch", "peft", "safetensors", "transformers", "tokenizers"):
    pytest.importorskip(_module, reason="the PEFT trainer needs the gpu extra")

from learnsched.control.adapter_trainer import CHECKPOINT_FILE
from learnsched.control.peft_trainer import PeftTrainer, work_quanta_of
from learnsched.handoff.lora import ADAPTER_FILE
from learnsched.serving.ledger import read_ledger
from learnsched.testing import EngineConfig, EngineProcess

from control_support import unix_calendar
from vllm_support import make_tiny_model

SPEC = "learnsched.control:PeftTrainer"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(sys.executable, tmp_path_factory.mktemp("model"))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sums written out: a pattern a tiny model learns within a few dozen steps."""
    path = tmp_path_factory.mktemp("data") / "sums.jsonl"
    lines = [json.dumps({"text": f"{a} plus {b} is {a + b}"}) for a in range(8) for b in range(8)]
    path.write_text("\n".join(lines) + "\n")
    return path


def options(model_dir: Path, data_file: Path, **more: Any) -> dict[str, Any]:
    base = {
        "model": str(model_dir), "data": str(data_file), "work_quanta": 8, "steps_per_quantum": 3,
        "batch_size": 8, "max_length": 32, "learning_rate": 1e-2, "device": "cpu",
    }  # fmt: skip
    return {**base, **more}


def checkpoint_of(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return dict(load_file(str(folder / CHECKPOINT_FILE)))


def same_tensors(got: dict[str, Any], want: dict[str, Any]) -> bool:
    import torch

    return got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)


def test_the_loss_falls_over_quanta(tmp_path: Path, model: Path, data: Path) -> None:
    trainer = PeftTrainer(tmp_path, **options(model, data, work_quanta=12))
    assert trainer.costs().quantum_s > 0
    trainer.resume()
    losses = [trainer.advance(1).loss for _ in range(trainer.work_quanta)]
    assert all(loss is not None for loss in losses)
    assert losses[-1] < 0.8 * losses[0]  # type: ignore[operator]


def test_a_resumed_run_equals_an_uninterrupted_one(tmp_path: Path, model: Path, data: Path) -> None:
    """Two quanta, a checkpoint, a new trainer on the same folder and two more quanta save
    exactly what four uninterrupted quanta do (adapter and AdamW moments), dropout on."""
    job = options(model, data, dropout=0.1)
    for name in ("cut", "whole"):
        (tmp_path / name).mkdir()
    first = PeftTrainer(tmp_path / "cut", **job)
    first.resume()
    first.advance(2)
    first.checkpoint()
    again = PeftTrainer(tmp_path / "cut", **job)
    assert again.resume() == 2
    again.advance(2)
    again.checkpoint()
    whole = PeftTrainer(tmp_path / "whole", **job)
    whole.resume()
    whole.advance(4)
    whole.checkpoint()
    assert same_tensors(checkpoint_of(tmp_path / "cut"), checkpoint_of(tmp_path / "whole"))


def test_an_interrupted_quantum_is_undone(tmp_path: Path, model: Path, data: Path) -> None:
    """Interrupted after one of its three steps, a quantum leaves the state of the last
    whole quantum: a checkpoint after one more equals an uninterrupted run's two."""
    for name in ("cut", "whole"):
        (tmp_path / name).mkdir()
    cut = PeftTrainer(tmp_path / "cut", **options(model, data))
    cut.resume()
    cut.advance(1)
    asks = iter([False, True])  # one step runs, then the interrupt arrives
    cut.interrupted = lambda: next(asks)  # type: ignore[method-assign]
    advanced = cut.advance(1)
    assert (advanced.progress, advanced.interrupted, cut.step) == (1, True, 3)
    cut.interrupted = lambda: False  # type: ignore[method-assign]
    cut.advance(1)
    cut.checkpoint()
    whole = PeftTrainer(tmp_path / "whole", **options(model, data))
    whole.resume()
    whole.advance(2)
    whole.checkpoint()
    assert same_tensors(checkpoint_of(tmp_path / "cut"), checkpoint_of(tmp_path / "whole"))


def test_the_published_adapter_loads_with_peft(tmp_path: Path, model: Path, data: Path) -> None:
    """PEFT loads the published folder onto the base model; its logits are the trainer's."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    trainer = PeftTrainer(tmp_path, **options(model, data, work_quanta=2))
    trainer.resume()
    trainer.advance(2)
    folder = Path(trainer.publish())
    assert sorted(p.name for p in folder.iterdir()) == ["adapter_config.json", ADAPTER_FILE]
    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model), folder)
    tokens = trainer._batch(0)["input_ids"]
    trainer.model.eval()
    loaded.eval()
    with torch.no_grad():
        want = trainer.model(input_ids=tokens).logits
        got = loaded(input_ids=tokens).logits
        bare = loaded.get_base_model()
        with loaded.disable_adapter():
            base = bare(input_ids=tokens).logits
    assert torch.equal(got, want)
    assert not torch.equal(got, base)  # the adapter changes the model: it was trained


@pytest.mark.parametrize(
    ("more", "error", "named"),
    [
        ({"work_quanta": None}, ValueError, "work_quanta and steps"),
        ({"steps": 10}, ValueError, "work_quanta and steps"),
        ({"work_quanta": None, "steps": 10}, ValueError, "steps must be a multiple"),
        ({"steps_per_quantum": 0}, ValueError, "steps_per_quantum"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"max_length": 1}, ValueError, "max_length"),
        ({"learning_rate": -1.0}, ValueError, "learning_rate"),
        ({"r": 0}, ValueError, "r must"),
        ({"alpha": 0}, ValueError, "alpha"),
        ({"dropout": 1.0}, ValueError, "dropout"),
        ({"device": "gpu"}, ValueError, "device"),
        ({"target_modules": "q_proj"}, ValueError, "target_modules"),
        ({"target_modules": ["no_such_proj"]}, ValueError, "target_modules"),
        ({"text_field": "content"}, ValueError, "text_field"),
        ({"model": "/no/such/model"}, ValueError, "model"),
        ({"data": "/no/such.jsonl"}, ValueError, "data"),
        ({"lr": 0.1}, TypeError, "lr"),
    ],
)
def test_bad_options_are_named(
    tmp_path: Path, model: Path, data: Path, more: dict[str, Any], error: type, named: str
) -> None:
    with pytest.raises(error, match=named):
        PeftTrainer(tmp_path, **options(model, data, **more))


def test_a_bad_record_names_its_line(tmp_path: Path, model: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text('{"text": "fine"}\n\n{"text": 3}\n')
    with pytest.raises(ValueError, match="line 3"):
        PeftTrainer(tmp_path, **options(model, data))


@given(quanta=st.integers(1, 10_000), per_quantum=st.integers(1, 1000))
def test_steps_are_whole_quanta(quanta: int, per_quantum: int) -> None:
    assert work_quanta_of(None, quanta * per_quantum, per_quantum) == quanta
    assert work_quanta_of(quanta, None, per_quantum) == quanta
    if per_quantum > 1:
        with pytest.raises(ValueError, match="steps must be a multiple"):
            work_quanta_of(None, quanta * per_quantum + 1, per_quantum)


def test_learnsched_run_publishes_the_users_adapter(
    tmp_path: Path, model: Path, data: Path
) -> None:
    """``learnsched run --trainer learnsched.control:PeftTrainer`` against the strict
    simulated vLLM trains the whole job in a lent window and publishes PEFT's folder."""
    ledger, state, calendar = tmp_path / "ledger.jsonl", tmp_path / "state", tmp_path / "cal.json"
    job = options(model, data, work_quanta=4, steps_per_quantum=2)
    config = EngineConfig.strict("vllm", token_s=0.001, batch_variant=False)
    with EngineProcess(config, lifetime_s=300.0) as engine:
        unix_calendar(calendar, time.time() + 1.0, 1, 240.0, 0.3)
        command = [
            sys.executable, "-m", "learnsched", "run", "--engine", "vllm", "--url", engine.url,
            "--trainer", SPEC, "--trainer-options", json.dumps(job),
            "--calendar", str(calendar), "--ledger", str(ledger), "--state-dir", str(state),
            "--recovery-s", "0.2", "--json",
        ]  # fmt: skip
        run = subprocess.run(
            command, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=240
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert engine.alive(), engine.stderr_text()
    publish = [r for r in read_ledger(ledger) if r.kind == "publish"]
    assert len(publish) == 1
    folder = Path(str(publish[0].detail["path"]))
    assert (folder / "adapter_model.safetensors").is_file()
    assert json.loads((folder / "adapter_config.json").read_text())["peft_type"] == "LORA"
