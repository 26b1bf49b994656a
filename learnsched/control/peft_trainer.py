"""The user's own LoRA job: a peft adapter on a causal language model, from a JSONL file.

``learnsched run --trainer learnsched.control:PeftTrainer --trainer-options JSON`` trains
a LoRA adapter on ``model`` (a local folder or a Hugging Face hub id, loaded with
transformers' ``AutoModelForCausalLM`` and ``AutoTokenizer``) over the texts of ``data``,
one JSON object per line (``{"text": "..."}``). Each text is tokenized once, at start, as
the model's tokenizer does (its special tokens included) and cut at ``max_length``
tokens. Step ``n``'s batch is the next ``batch_size`` texts of a shuffled pass over the
data, the shuffle of each pass drawn from ``(seed, pass)``: a resumed run sees the same
batches as an uninterrupted one. Quanta, checkpoints, interrupts and the published PEFT
folder are :class:`~.adapter_trainer.AdapterTrainer`'s.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._checks import fraction, integer, positive
from ..handoff.lora import check_device, default_device
from .adapter_trainer import AdapterTrainer, gpu_module

__all__ = ["PeftTrainer", "read_texts", "work_quanta_of"]

_IGNORED = -100  # the label transformers' loss skips: a pad position


def read_texts(path: Path, field: str) -> list[str]:
    """The ``field`` strings of a JSONL file, one object per non-blank line.

    Raises
    ------
    ValueError
        The file is missing, empty, or a line is not a JSON object with a string ``field``
        (the message names the line).
    """
    if not path.is_file():
        raise ValueError(f"data {str(path)!r}: no such file")
    texts = []
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"data {str(path)!r} line {number}: not JSON ({err})") from None
            text = record.get(field) if isinstance(record, dict) else None
            if not isinstance(text, str):
                raise ValueError(  # noqa: TRY004 (a bad file, not a bad argument)
                    f"data {str(path)!r} line {number}: not an object with a string "
                    f"{field!r} (text_field)"
                )
            texts.append(text)
    if not texts:
        raise ValueError(f"data {str(path)!r}: no records")
    return texts


def work_quanta_of(work_quanta: int | None, steps: int | None, steps_per_quantum: int) -> int:
    """``J`` from exactly one of ``work_quanta`` and ``steps`` (a whole number of quanta)."""
    if (work_quanta is None) == (steps is None):
        given = "neither" if work_quanta is None else "both"
        raise ValueError(f"give one of work_quanta and steps (the job's length), got {given}")
    if work_quanta is not None:
        return integer("work_quanta", work_quanta, low=1)
    total = integer("steps", steps, low=1)
    if total % steps_per_quantum:
        raise ValueError(
            f"steps must be a multiple of steps_per_quantum {steps_per_quantum}, got {total}"
        )
    return total // steps_per_quantum


def _device(device: str) -> str:
    """``device``, ``"auto"`` resolved: a GPU when torch sees one, else the CPU."""
    if device == "auto":
        return default_device()
    try:
        return check_device(device)
    except ValueError:
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}") from None


def _modules(value: object) -> list[str] | None:
    """The module names LoRA adapts (None: peft's defaults for the architecture)."""
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(name, str) and name for name in value)
    ):
        raise ValueError(f"target_modules must be a non-empty list of module names, got {value!r}")
    return list(value)


def _text(option: str, value: object, what: str) -> str:
    """``value``, a non-empty string (``what`` says what it names, for the message)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{option} must be {what}, got {value!r}")
    return value


class PeftTrainer(AdapterTrainer):
    """Train a LoRA adapter on the user's causal language model over a JSONL file.

    Every option is JSON (``--trainer-options``).

    Parameters
    ----------
    state_dir
        Where the checkpoint and the published adapter live.
    model
        A local folder or a hub id of a causal language model (with its tokenizer).
    data
        A JSONL file: one object per line, its text under ``text_field``.
    text_field
        The key of each record's text.
    work_quanta, steps
        The job's length, exactly one of them: quanta (``J``), or optimiser steps (a
        multiple of ``steps_per_quantum``).
    steps_per_quantum
        Optimiser steps per quantum (a quantum is the unit the scheduler lends time in).
    batch_size
        Texts per optimiser step.
    max_length
        Tokens kept of each text (the rest is cut).
    learning_rate
        AdamW's learning rate.
    r, alpha, dropout
        LoRA's rank, scaling ``alpha`` (the update is scaled by ``alpha / r``) and the
        dropout on its input.
    target_modules
        The module names LoRA adapts (``["q_proj", "v_proj"]``); ``None``: peft's
        defaults for the model's architecture.
    seed
        Seeds the adapter's initialisation, the shuffles and every step's dropout.
    device
        ``"auto"`` (a GPU when torch sees one), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    threads
        torch intra-op threads on the host (keep it small beside a serving engine).
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        model: str,
        data: str,
        text_field: str = "text",
        work_quanta: int | None = None,
        steps: int | None = None,
        steps_per_quantum: int = 10,
        batch_size: int = 4,
        max_length: int = 512,
        learning_rate: float = 2e-4,
        r: int = 8,
        alpha: float = 16.0,
        dropout: float = 0.0,
        target_modules: Sequence[str] | None = None,
        seed: int = 0,
        device: str = "auto",
        threads: int = 1,
    ) -> None:
        per_quantum = integer("steps_per_quantum", steps_per_quantum, low=1)
        super().__init__(
            state_dir, work_quanta=work_quanta_of(work_quanta, steps, per_quantum),
            steps_per_quantum=per_quantum, seed=seed, device=_device(device), threads=threads,
        )  # fmt: skip
        model = _text("model", model, "a folder or a hub id")
        data = _text("data", data, "the path of a JSONL file")
        text_field = _text("text_field", text_field, "a record's key")
        self.batch_size = integer("batch_size", batch_size, low=1)
        self.max_length = integer("max_length", max_length, low=2)
        lr = positive("learning_rate", learning_rate)
        lora = self._lora_config(
            integer("r", r, low=1), positive("alpha", alpha), fraction("dropout", dropout),
            _modules(target_modules),
        )  # fmt: skip
        base, tokenizer = self._load(model)
        self.texts = self._tokenize(tokenizer, read_texts(Path(data), text_field))
        pad = tokenizer.pad_token_id
        self.pad_id = int(tokenizer.eos_token_id or 0) if pad is None else int(pad)
        self._order: tuple[int, Any] = (-1, None)
        self._start(self._adapt(base, lora), lr)

    # --- the model ----------------------------------------------------------------------------
    def _lora_config(self, r: int, alpha: float, dropout: float, modules: list[str] | None) -> Any:
        if dropout >= 1.0:
            raise ValueError(f"dropout must be < 1, got {dropout!r}")
        peft = gpu_module("peft")
        return peft.LoraConfig(
            r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=modules,
            task_type="CAUSAL_LM",
        )  # fmt: skip

    def _load(self, model: str) -> tuple[Any, Any]:
        """The base model (on the host) and its tokenizer."""
        transformers = gpu_module("transformers")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(model)
            base = transformers.AutoModelForCausalLM.from_pretrained(model)
        except (OSError, ValueError) as err:
            raise ValueError(f"model {model!r}: cannot load it ({err})") from err
        return base, tokenizer

    def _adapt(self, base: Any, lora: Any) -> Any:
        """``base`` with a fresh LoRA adapter, initialised from the seed."""
        peft = gpu_module("peft")
        self.torch.manual_seed(self.seed)
        try:
            with warnings.catch_warnings():
                # peft asks transformers a deprecated question; the answer is the same.
                warnings.simplefilter("ignore", FutureWarning)
                return peft.get_peft_model(base, lora)
        except ValueError as err:
            raise ValueError(f"target_modules {lora.target_modules!r}: {err}") from err

    def _tokenize(self, tokenizer: Any, texts: list[str]) -> list[Any]:
        """Each text's tokens, at most ``max_length``; a text of under 2 tokens is refused
        (it has nothing to predict)."""
        encoded = tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        for index, ids in enumerate(encoded):
            if len(ids) < 2:
                raise ValueError(f"data record {index + 1}: {len(ids)} token(s), need 2")
        return [self.torch.tensor(ids, dtype=self.torch.long) for ids in encoded]

    # --- the batches --------------------------------------------------------------------------
    def _record(self, position: int) -> Any:
        """The text at ``position`` of the endless run of shuffled passes."""
        count = len(self.texts)
        epoch, index = divmod(position, count)
        if self._order[0] != epoch:
            self._order = (epoch, self.torch.randperm(count, generator=self._generator(epoch)))
        return self.texts[int(self._order[1][index])]

    def _batch(self, step: int) -> dict[str, Any]:
        """Step ``step``'s texts, padded on the right (pads masked and not predicted)."""
        torch = self.torch
        rows = [self._record(step * self.batch_size + i) for i in range(self.batch_size)]
        width = max(len(row) for row in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        labels = ids.masked_fill(mask == 0, _IGNORED)
        return {
            "input_ids": ids.to(self.device),
            "attention_mask": mask.to(self.device),
            "labels": labels.to(self.device),
        }
