"""The reference trainer: a real LoRA adapter (peft) on a tiny randomly initialised model.

The base model is a Llama-architecture decoder with :data:`~learnsched.handoff.BASE_SHAPES`
``"tiny"`` shapes, initialised from a seed (so it never needs saving); a rank-``r``
LoRA adapter on its attention projections is trained with AdamW to continue a fixed
arithmetic token sequence, so the loss falls as it learns. Quanta, checkpoints,
interrupts and publishing are :class:`~.adapter_trainer.AdapterTrainer`'s.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from .._checks import integer, positive
from ..handoff.lora import ATTENTION, BASE_SHAPES
from .adapter_trainer import (
    CHECKPOINT_FILE,
    PUBLISHED_FOLDER,
    AdapterTrainer,
    gpu_module,
    read_checkpoint_quanta,
)

__all__ = ["CHECKPOINT_FILE", "PUBLISHED_FOLDER", "LoraTrainer", "read_checkpoint_quanta"]

_VOCAB = 64


class LoraTrainer(AdapterTrainer):
    """Train a LoRA adapter on a tiny random Llama, in quanta of optimiser steps.

    Parameters
    ----------
    state_dir
        Where the checkpoint and the published adapter live.
    work_quanta
        ``J``: quanta until the adapter is finished.
    steps_per_quantum
        Optimiser steps per quantum.
    device
        ``"cpu"`` or a CUDA device.
    rank
        LoRA rank.
    seed
        Seeds the base model, the adapter's initialisation and every batch.
    batch, seq_len
        Sequences per step and their length, tokens.
    lr
        AdamW learning rate.
    threads
        torch intra-op threads (keep it small beside a serving engine).
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        work_quanta: int = 40,
        steps_per_quantum: int = 2,
        device: str = "cpu",
        rank: int = 8,
        seed: int = 0,
        batch: int = 4,
        seq_len: int = 16,
        lr: float = 1e-2,
        threads: int = 1,
    ) -> None:
        super().__init__(
            state_dir, work_quanta=work_quanta, steps_per_quantum=steps_per_quantum,
            seed=seed, device=device, threads=threads,
        )  # fmt: skip
        self.rank = integer("rank", rank, low=1)
        self.batch = integer("batch", batch, low=1)
        self.seq_len = integer("seq_len", seq_len, low=2)
        self._start(self._build(), positive("lr", lr))

    def _build(self) -> Any:
        transformers = gpu_module("transformers")
        peft = gpu_module("peft")
        shape = BASE_SHAPES["tiny"]
        config = transformers.LlamaConfig(
            vocab_size=_VOCAB,
            hidden_size=shape.hidden_size,
            intermediate_size=shape.intermediate_size,
            num_hidden_layers=shape.layers,
            num_attention_heads=shape.heads,
            num_key_value_heads=shape.kv_heads,
            max_position_embeddings=2 * self.seq_len,
        )
        self.torch.manual_seed(self.seed)
        base = transformers.LlamaForCausalLM(config)
        lora = peft.LoraConfig(
            r=self.rank, lora_alpha=2 * self.rank, lora_dropout=0.0, target_modules=list(ATTENTION)
        )
        with warnings.catch_warnings():
            # peft asks transformers a deprecated question; the answer is the same.
            warnings.simplefilter("ignore", FutureWarning)
            return peft.get_peft_model(base, lora)

    def _batch(self, step: int) -> dict[str, Any]:
        """Step ``step``'s sequences: ``x_{t+1} = (3 x_t + 1) mod V`` from random starts."""
        torch = self.torch
        start = torch.randint(0, _VOCAB, (self.batch, 1), generator=self._generator(step))
        rows = [start]
        for _ in range(self.seq_len - 1):
            rows.append((3 * rows[-1] + 1) % _VOCAB)
        tokens = torch.cat(rows, dim=1).to(self.device)
        return {"input_ids": tokens, "labels": tokens}
