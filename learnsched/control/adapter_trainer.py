"""What every LoRA trainer shares: quanta of optimiser steps, atomic checkpoints, publishing.

:class:`AdapterTrainer` is the :class:`~learnsched.control.Trainer` of a peft LoRA adapter
trained with AdamW; a subclass supplies the model (:meth:`AdapterTrainer._start`) and the
batch of each step (:meth:`AdapterTrainer._batch`), everything else lives here. One
quantum is ``steps_per_quantum`` optimiser steps; the batch and the dropout of step ``n``
are drawn from ``(seed, n)``, so a resumed run follows the same trajectory as an
uninterrupted one. An interrupt (:meth:`~learnsched.control.Trainer.interrupted`,
checked before every step) restores the adapter, the optimiser and the step count kept
at the quantum's start, so the state is that of the last whole quantum and a checkpoint
saves exactly it.

A checkpoint is one safetensors file holding the adapter, the optimiser's moments and
(in its metadata) the quanta and step it stands for, written beside its final name,
fsynced and renamed over it (:func:`learnsched._atomic.atomic_write`): a kill at any
point leaves the previous checkpoint or the new one, never a part. Publishing writes
PEFT's adapter folder (``adapter_model.safetensors``, ``adapter_config.json``), which
``peft.PeftModel.from_pretrained`` and vLLM's ``--lora-modules`` load. torch, peft and
safetensors are imported only in the trainer's process (``pip install 'learnsched[gpu]'``).
"""

from __future__ import annotations

import abc
import copy
import json
import math
import time
from pathlib import Path
from typing import Any, ClassVar

from .._atomic import atomic_write, atomic_write_text
from .._checks import integer
from .._extras import require
from ..handoff.lora import adapter_from_peft, apply_adapter, save_adapter
from .trainer import Advanced, Trainer, TrainerCosts

__all__ = ["CHECKPOINT_FILE", "PUBLISHED_FOLDER", "AdapterTrainer", "read_checkpoint_quanta"]

CHECKPOINT_FILE = "checkpoint.safetensors"
PUBLISHED_FOLDER = "published"
_OPTIMIZER = "optimizer."
_CALIBRATION_QUANTA = 2
_SEED_STRIDE = 1_000_003  # seeds of consecutive steps and of different seeds never meet


def gpu_module(name: str) -> Any:
    """``name`` imported, or :class:`~learnsched._extras.MissingExtra` naming the gpu extra."""
    return require(name, "gpu")


def read_checkpoint_quanta(state_dir: str | Path) -> int:
    """The quanta a folder's durable checkpoint stands for (0 without one)."""
    path = Path(state_dir) / CHECKPOINT_FILE
    if not path.exists():
        return 0
    safetensors = gpu_module("safetensors")
    with safetensors.safe_open(str(path), framework="pt") as file:
        return int(file.metadata()["quanta"])


class AdapterTrainer(Trainer):
    """A LoRA adapter trained with AdamW in quanta of ``steps_per_quantum`` steps.

    A subclass validates its own options, calls this constructor, then
    :meth:`_start` with its peft model; it implements :meth:`_batch`.

    Parameters
    ----------
    state_dir
        Where the checkpoint and the published adapter live.
    work_quanta
        ``J``: quanta until the adapter is finished.
    steps_per_quantum
        Optimiser steps per quantum.
    seed
        Seeds every batch and every step's dropout.
    device
        A torch device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    threads
        torch intra-op threads (keep it small beside a serving engine).
    """

    preload: ClassVar[tuple[str, ...]] = ("torch", "transformers", "peft", "safetensors.torch")

    def __init__(
        self,
        state_dir: Path,
        *,
        work_quanta: int,
        steps_per_quantum: int,
        seed: int,
        device: str,
        threads: int,
    ) -> None:
        super().__init__(state_dir)
        self._work_quanta = integer("work_quanta", work_quanta, low=1)
        self.steps_per_quantum = integer("steps_per_quantum", steps_per_quantum, low=1)
        self.seed = integer("seed", seed, low=None)
        self.torch = gpu_module("torch")
        self.torch.set_num_threads(integer("threads", threads, low=1))
        self.device = self.torch.device(device)
        self.model: Any = None
        self.lr = math.nan
        self.initial: dict[str, Any] = {}
        self.optimizer: Any = None
        self.progress = 0
        self.durable = 0
        self.step = 0
        self.loaded = False
        self._costs: TrainerCosts | None = None

    def _start(self, model: Any, lr: float) -> None:
        """Take the peft ``model`` (its adapter fresh) and AdamW's rate ``lr``; calibrate."""
        self.model = model
        self.model.train()
        self.lr = lr
        # A copy: on the host adapter_from_peft's tensors are the live parameters
        # themselves, and the fresh adapter must not train along with them.
        self.initial = {name: t.clone() for name, t in adapter_from_peft(self.model).items()}
        self._costs = self._calibrate()

    @abc.abstractmethod
    def _batch(self, step: int) -> dict[str, Any]:
        """The model's inputs for optimiser step ``step`` (``labels`` included), on the
        device; a function of ``(seed, step)`` only."""

    def _generator(self, index: int) -> Any:
        """A torch generator seeded from ``(seed, index)``."""
        return self.torch.Generator().manual_seed(self.seed * _SEED_STRIDE + index)

    # --- steps and their undoing -------------------------------------------------------------
    def _trainable(self) -> list[Any]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def _new_optimizer(self) -> Any:
        return self.torch.optim.AdamW(self._trainable(), lr=self.lr)

    def _train_step(self) -> float:
        """One AdamW step on step ``self.step``'s batch; its loss."""
        # The step's dropout masks come from (seed, step) too, so a resumed run repeats them.
        self.torch.manual_seed(self.seed * _SEED_STRIDE + self.step)
        out = self.model(**self._batch(self.step))
        out.loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return float(out.loss.detach())

    def _snapshot(self) -> tuple[int, list[Any], dict[str, Any]]:
        """The state at a quantum's start (device copies: a LoRA adapter is small)."""
        params = [p.detach().clone() for p in self._trainable()]
        return self.step, params, copy.deepcopy(self.optimizer.state_dict())

    def _restore(self, saved: tuple[int, list[Any], dict[str, Any]]) -> None:
        """Undo a partial quantum: back to :meth:`_snapshot`'s state."""
        step, params, state = saved
        with self.torch.no_grad():
            for param, value in zip(self._trainable(), params, strict=True):
                param.copy_(value)
        self.optimizer.load_state_dict(state)
        self.optimizer.zero_grad(set_to_none=True)
        self.step = step

    # --- checkpoint files ------------------------------------------------------------------
    def _tensors(self) -> dict[str, Any]:
        tensors = adapter_from_peft(self.model)
        for i, param in enumerate(self._trainable()):
            for key, value in self.optimizer.state.get(param, {}).items():
                tensors[f"{_OPTIMIZER}{i}.{key}"] = value.detach().to("cpu").contiguous()
        return tensors

    def _write(self, path: Path) -> None:
        safetensors = gpu_module("safetensors.torch")
        metadata = {"quanta": str(self.progress), "step": str(self.step)}
        data: bytes = safetensors.save(self._tensors(), metadata=metadata)
        atomic_write(path, lambda file: file.write(data), durable=True)

    def _read(self, path: Path) -> tuple[int, int]:
        safetensors = gpu_module("safetensors")
        with safetensors.safe_open(str(path), framework="pt", device="cpu") as file:
            metadata = file.metadata()
            tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118
        adapter = {k: v for k, v in tensors.items() if not k.startswith(_OPTIMIZER)}
        apply_adapter(self.model, adapter)
        self.model.to(self.device)
        self.optimizer = self._new_optimizer()
        params = self._trainable()
        for name, value in tensors.items():
            if not name.startswith(_OPTIMIZER):
                continue
            index, key = name[len(_OPTIMIZER) :].split(".", 1)
            param = params[int(index)]
            state = self.optimizer.state[param]
            # AdamW keeps its step count on the host, its moments beside the parameters.
            state[key] = value if key == "step" else value.to(self.device)
        return int(metadata["quanta"]), int(metadata["step"])

    def _calibrate(self) -> TrainerCosts:
        """Time quanta, a durable save and a load onto the device (after a discard) on
        scratch state, then start clean."""
        scratch = self.state_dir / f".calibration-{CHECKPOINT_FILE}"
        quanta = min(_CALIBRATION_QUANTA, self._work_quanta)
        self._fresh()
        start = time.perf_counter()
        self.advance(quanta)
        quantum_s = (time.perf_counter() - start) / quanta
        start = time.perf_counter()
        self._write(scratch)
        save_s = time.perf_counter() - start
        self.discard()
        start = time.perf_counter()
        self._read(scratch)
        load_s = time.perf_counter() - start
        scratch.unlink()
        self.discard()
        return TrainerCosts(quantum_s=quantum_s, save_s=save_s, load_s=load_s)

    def _fresh(self) -> None:
        apply_adapter(self.model, self.initial)
        self.model.to(self.device)
        self.optimizer = self._new_optimizer()
        self.progress = self.durable = self.step = 0
        self.loaded = True

    # --- the protocol -----------------------------------------------------------------------
    @property
    def work_quanta(self) -> int:
        """``J``."""
        return self._work_quanta

    def costs(self) -> TrainerCosts:
        """Measured at construction: one quantum, a durable save, a load (seconds)."""
        if self._costs is None:
            raise RuntimeError("costs before _start: the trainer has no model yet")
        return self._costs

    def resume(self) -> int:
        """Load the durable checkpoint (or the fresh adapter) onto the device."""
        path = self.state_dir / CHECKPOINT_FILE
        if path.exists():
            self.progress, self.step = self._read(path)
            self.durable = self.progress
            self.loaded = True
        else:
            self._fresh()
        return self.durable

    def advance(self, quanta: int) -> Advanced:
        """Run ``quanta`` quanta of ``steps_per_quantum`` AdamW steps each; an interrupt
        undoes the quantum in progress and returns at once (``interrupted``)."""
        integer("quanta", quanta, low=1)
        if not self.loaded:
            raise RuntimeError("advance before resume: the adapter is not on the device")
        if self.progress + quanta > self._work_quanta:
            raise ValueError(
                f"quanta {quanta} would pass the job's {self._work_quanta} "
                f"(progress {self.progress})"
            )
        loss = math.nan
        for _ in range(quanta):
            saved = self._snapshot()
            for _ in range(self.steps_per_quantum):
                if self.interrupted():
                    self._restore(saved)
                    return Advanced(progress=self.progress, loss=None, interrupted=True)
                loss = self._train_step()
            self.progress += 1
        return Advanced(progress=self.progress, loss=loss)

    def checkpoint(self) -> int:
        """Write the checkpoint atomically and durably; the durable quanta."""
        if not self.loaded:
            raise RuntimeError("checkpoint before resume: nothing on the device to save")
        self._write(self.state_dir / CHECKPOINT_FILE)
        self.durable = self.progress
        return self.durable

    def discard(self) -> int:
        """Forget the in-memory adapter and optimiser (freeing a GPU's memory)."""
        self.optimizer = None
        self.loaded = False
        self.progress = self.durable
        if self.device.type == "cuda":
            self.model.to("cpu")
            self.torch.cuda.empty_cache()
        return self.durable

    def publish(self) -> str:
        """Write PEFT's adapter folder under ``state_dir/published``; its path."""
        if self.progress < self._work_quanta:
            raise RuntimeError(
                f"publish before the job is done ({self.progress}/{self._work_quanta} quanta)"
            )
        folder = self.state_dir / PUBLISHED_FOLDER
        folder.mkdir(exist_ok=True)
        save_adapter(adapter_from_peft(self.model), folder, durable=True)
        config = self.model.peft_config["default"].to_dict()
        atomic_write_text(folder / "adapter_config.json", json.dumps(config, default=sorted))
        return str(folder)
