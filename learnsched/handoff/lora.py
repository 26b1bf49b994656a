"""LoRA adapter checkpoints: save and load microbenchmark (``t_ck``, ``t_ld``).

An adapter is a dict of tensors named as PEFT names them
(``base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight``), taken from a
user's PEFT model or synthesised with a base model's shapes, written with safetensors
and loaded back onto the device. The paper's App. D.2 costs are 68.075 ms to save and
47.748 ms to load about 13.24 MB on an A100.

The load reads from the page cache right after a save: dropping caches needs root, and
a handoff resumes from a file written moments before (the paper's Section 4.5).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._atomic import atomic_write
from .._checks import integer
from ..serving.errors import HandoffProbeError, NvmlUnavailable, missing_extra
from ._util import CPU, torch_module
from .filesystem import Filesystem, filesystem_of
from .nvml import NvmlDevice, device_for_torch
from .timing import Timing, time_device, time_host

__all__ = [
    "ADAPTER_PRESETS",
    "BASE_SHAPES",
    "AdapterPreset",
    "BaseShape",
    "LoraBenchmark",
    "adapter_from_peft",
    "apply_adapter",
    "benchmark_lora",
    "check_device",
    "default_device",
    "load_adapter",
    "read_adapter",
    "save_adapter",
    "synthesise_adapter",
    "target_gpu",
]

ADAPTER_FILE = "adapter_model.safetensors"  # PEFT's file name
DTYPES = ("float32", "bfloat16", "float16")
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class BaseShape:
    """The shapes of a decoder-only base model that LoRA attaches to.

    Parameters
    ----------
    name
        A label.
    layers
        Decoder layers.
    hidden_size
        Model width.
    heads, kv_heads
        Attention and key/value heads (grouped-query attention when fewer kv heads).
    intermediate_size
        MLP width.
    head_dim
        Width of one head (``hidden_size // heads`` when 0).
    """

    name: str
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    intermediate_size: int
    head_dim: int = 0

    def __post_init__(self) -> None:
        for name in ("layers", "hidden_size", "heads", "kv_heads", "intermediate_size"):
            integer(name, getattr(self, name), low=1)
        integer("head_dim", self.head_dim, low=0)
        if self.head_dim == 0:
            if self.hidden_size % self.heads:
                raise ValueError(
                    f"hidden_size {self.hidden_size} is not a multiple of heads {self.heads}; "
                    "give head_dim"
                )
            object.__setattr__(self, "head_dim", self.hidden_size // self.heads)

    def module_shape(self, module: str) -> tuple[int, int]:
        """``(in_features, out_features)`` of a target module, e.g. ``"q_proj"``."""
        kv = self.kv_heads * self.head_dim
        shapes = {
            "q_proj": (self.hidden_size, self.heads * self.head_dim),
            "k_proj": (self.hidden_size, kv),
            "v_proj": (self.hidden_size, kv),
            "o_proj": (self.heads * self.head_dim, self.hidden_size),
            "gate_proj": (self.hidden_size, self.intermediate_size),
            "up_proj": (self.hidden_size, self.intermediate_size),
            "down_proj": (self.intermediate_size, self.hidden_size),
        }
        if module not in shapes:
            raise ValueError(f"target module must be one of {', '.join(shapes)}, got {module!r}")
        return shapes[module]


# Published config.json values (Hugging Face model cards); "tiny" is for CPU tests.
BASE_SHAPES = {
    "granite-3b-code": BaseShape("granite-3b-code", 32, 2560, 32, 32, 10240),
    "llama-3.2-3b": BaseShape("llama-3.2-3b", 28, 3072, 24, 8, 8192, 128),
    "llama-3.1-8b": BaseShape("llama-3.1-8b", 32, 4096, 32, 8, 14336, 128),
    "tiny": BaseShape("tiny", 2, 64, 4, 2, 128),
}


@dataclass(frozen=True)
class AdapterPreset:
    """A whole adapter: base shapes, rank, target modules and dtype.

    Parameters
    ----------
    name
        A label (``--shape NAME``).
    shape
        The base model's shapes.
    rank
        LoRA rank.
    targets
        Target modules per layer.
    dtype
        Tensor dtype.
    """

    name: str
    shape: BaseShape
    rank: int
    targets: tuple[str, ...]
    dtype: str

    def synthesise(self, seed: int = 0) -> dict[str, Any]:
        """The preset's adapter (:func:`synthesise_adapter`)."""
        return synthesise_adapter(self.shape, self.rank, self.targets, self.dtype, seed)


# The paper's adapter (Sections 5 and 6.1, App. D.2): rank-8 LoRA on Granite 3B, "about
# 13.24 MB of state". The paper names neither the target modules nor the dtype; Granite
# 3B Code's MLP gate and up projections in bfloat16 give 32 x 2 x 8 x (2560 + 10240)
# parameters = 13.11 MB, within 1 % (its attention projections give 10.49 MB in bf16 and
# 20.97 MB in fp32, Llama-3.2-3B's 18.35 MB). The targets and dtype are that assumption.
ADAPTER_PRESETS = {
    "paper": AdapterPreset(
        "paper", BASE_SHAPES["granite-3b-code"], 8, ("gate_proj", "up_proj"), "bfloat16"
    ),
}


def _safetensors() -> Any:
    try:
        import safetensors.torch
    except ImportError as err:
        raise missing_extra("safetensors", err) from err
    return safetensors.torch


def _peft() -> Any:
    try:
        import peft
    except ImportError as err:
        raise missing_extra("peft", err) from err
    return peft


def default_device() -> str:
    """``"cuda"`` when torch sees a GPU, else ``"cpu"``."""
    return "cuda" if torch_module().cuda.is_available() else "cpu"


def check_device(device: str) -> str:
    """``device`` if it names a load target, ``cpu``, ``cuda`` or ``cuda:N``; else ``ValueError``."""
    value: object = device  # checked at run time: it comes from the command line
    if not isinstance(value, str) or re.fullmatch(r"cpu|cuda(:\d+)?", value) is None:
        raise ValueError(f"device must be cpu, cuda or cuda:N, got {device!r}")
    return device


def _load_target(device: str) -> Any:
    """The ``torch.device`` for ``device``, checked against the GPUs torch sees.

    Raises
    ------
    ValueError
        Not ``cpu``, ``cuda`` or ``cuda:N``, or ``N`` beyond the GPUs torch sees.
    HandoffProbeError
        A CUDA device where torch sees no CUDA GPU.
    """
    torch = torch_module()
    target = torch.device(check_device(device))
    if target.type != "cuda":
        return target
    if not torch.cuda.is_available():
        raise HandoffProbeError(f"device {device!r}: torch sees no CUDA GPU")
    index = target.index if target.index is not None else torch.cuda.current_device()
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        raise ValueError(
            f"device {device!r}: torch sees {count} CUDA GPU(s), cuda:0..cuda:{count - 1} "
            "(after CUDA_VISIBLE_DEVICES)"
        )
    return target


def target_gpu(device: str) -> tuple[NvmlDevice | None, str]:
    """The GPU torch loads onto for ``device``: its NVML device and its name.

    Parameters
    ----------
    device
        A torch device string: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Returns
    -------
    tuple
        The NVML device (matched by UUID, not index; ``None`` on CPU, without CUDA, or
        where NVML is unavailable) and the device's name (``"cpu"`` off the GPU).

    Raises
    ------
    ValueError
        Not ``cpu``, ``cuda`` or ``cuda:N``, or ``N`` beyond the GPUs torch sees.
    """
    torch = torch_module()
    if torch.device(check_device(device)).type != "cuda" or not torch.cuda.is_available():
        return None, CPU
    target = _load_target(device)
    index = target.index if target.index is not None else torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    try:
        return device_for_torch(index, str(properties.uuid)), str(properties.name)
    except NvmlUnavailable:
        return None, str(properties.name)


def synthesise_adapter(
    shape: BaseShape,
    rank: int,
    targets: Sequence[str] = ATTENTION,
    dtype: str = "float32",
    seed: int = 0,
) -> dict[str, Any]:
    """A rank-``rank`` adapter with ``shape``'s tensor shapes, filled with random values.

    Random (not PEFT's zero ``lora_B``) so that a bit-exact reload check means something.

    Parameters
    ----------
    shape
        The base model.
    rank
        LoRA rank ``r`` (>= 1).
    targets
        Target modules per layer.
    dtype
        ``"float32"``, ``"bfloat16"`` or ``"float16"``.
    seed
        Random seed.
    """
    integer("rank", rank, low=1)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if not targets:
        raise ValueError("targets must name at least one module")
    torch = torch_module()
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in range(shape.layers):
        for module in targets:
            fan_in, fan_out = shape.module_shape(module)
            part = "self_attn" if module in ATTENTION else "mlp"
            prefix = f"base_model.model.model.layers.{layer}.{part}.{module}"
            for name, size in (("lora_A", (rank, fan_in)), ("lora_B", (fan_out, rank))):
                values = torch.randn(size, generator=generator, dtype=torch.float32)
                tensors[f"{prefix}.{name}.weight"] = values.to(getattr(torch, dtype))
    return tensors


def adapter_from_peft(model: Any, adapter_name: str = "default") -> dict[str, Any]:
    """The adapter tensors of a PEFT model, on the host (what PEFT would save)."""
    state = _peft().get_peft_model_state_dict(model, adapter_name=adapter_name)
    return {name: tensor.detach().to("cpu").contiguous() for name, tensor in state.items()}


def apply_adapter(model: Any, tensors: Mapping[str, Any], adapter_name: str = "default") -> None:
    """Load adapter tensors into a PEFT model; every key must match."""
    result = _peft().set_peft_model_state_dict(model, dict(tensors), adapter_name=adapter_name)
    unexpected = list(getattr(result, "unexpected_keys", []))
    if unexpected:
        raise ValueError(f"adapter has tensors the model lacks: {', '.join(unexpected[:3])}")


def save_adapter(
    tensors: Mapping[str, Any], folder: str | os.PathLike[str], *, durable: bool
) -> Path:
    """Write ``folder/adapter_model.safetensors`` atomically; returns its path.

    The file is written beside its final name and renamed over it, so a reader (or a
    resume after a kill) sees the old or the new adapter, never a part.

    Parameters
    ----------
    tensors
        Adapter tensors on any device: device tensors are copied to the host here, and
        that copy is part of the save's cost.
    folder
        An existing folder.
    durable
        Also fsync the file before the rename and the folder after it
        (:func:`learnsched._atomic.atomic_write`), so the adapter survives a crash;
        ``False`` measures the buffered save only (written and renamed, not fsynced).
    """
    target = Path(folder) / ADAPTER_FILE
    data: bytes = _safetensors().save(dict(tensors))
    atomic_write(target, lambda file: file.write(data), durable=durable)
    return target


def load_adapter(path: str | os.PathLike[str], device: str = "cpu") -> dict[str, Any]:
    """Load an adapter file onto ``device``, waiting until the copies have finished."""
    torch = torch_module()
    target = torch.device(device)
    tensors: dict[str, Any] = _safetensors().load_file(Path(path), device=str(target))
    if target.type == "cuda":
        torch.cuda.synchronize(target)
    return tensors


def read_adapter(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Adapter tensors from a ``.safetensors`` file or a saved PEFT adapter folder."""
    source = Path(path)
    if source.is_dir():
        source = source / ADAPTER_FILE
    if not source.is_file():
        raise FileNotFoundError(f"adapter {path}: no such file ({source})")
    return load_adapter(source, "cpu")


def _same(original: Mapping[str, Any], loaded: Mapping[str, Any]) -> None:
    torch = torch_module()
    if set(original) != set(loaded):
        missing = sorted(set(original) ^ set(loaded))
        raise HandoffProbeError(f"reloaded adapter differs in tensor names: {missing[:3]}")
    for name, tensor in original.items():
        back = loaded[name].to("cpu")
        if back.dtype != tensor.dtype or not torch.equal(back, tensor.to("cpu")):
            raise HandoffProbeError(f"reloaded adapter tensor {name} is not bit-identical")


@dataclass(frozen=True)
class LoraBenchmark:
    """Save and load costs of one adapter.

    Parameters
    ----------
    adapter_bytes
        Size of the adapter file, bytes.
    tensor_bytes
        Bytes of tensor data in it.
    tensors
        Number of tensors.
    device
        Where it was loaded (``"cpu"``, ``"cuda:0"``).
    save, save_durable
        Buffered and durable (file and folder fsynced) saves of the tensors as they sit
        on ``device``, host clock: a GPU adapter's device-to-host copy is included.
    load
        Load from the file onto the device, host clock (includes the synchronisation).
    h2d_copy
        A separate host-to-device copy of the same bytes, from one page-locked (pinned)
        host buffer in one transfer, timed with CUDA events (``None`` on CPU): what the
        transfer alone costs on this link. It is not measured inside ``load``, whose
        reader interleaves file reads and copies.
    filesystem
        The filesystem the checkpoints were written to: on tmpfs
        (``Filesystem.volatile``) a durable save costs nothing and survives no reboot.
    """

    adapter_bytes: int
    tensor_bytes: int
    tensors: int
    device: str
    save: Timing
    save_durable: Timing
    load: Timing
    h2d_copy: Timing | None
    filesystem: Filesystem

    def summary(self) -> dict[str, float | int | str | None]:
        """Flat numbers, milliseconds: warm medians plus the first runs."""
        return {
            "adapter_bytes": self.adapter_bytes,
            "tensor_bytes": self.tensor_bytes,
            "tensors": self.tensors,
            "device": self.device,
            "runs": len(self.save.warm_ms) + 1,
            "save_ms": self.save.median_ms,
            "save_p95_ms": self.save.p95_ms,
            "save_durable_ms": self.save_durable.median_ms,
            "save_durable_p95_ms": self.save_durable.p95_ms,
            "load_ms": self.load.median_ms,
            "load_p95_ms": self.load.p95_ms,
            "h2d_copy_ms": None if self.h2d_copy is None else self.h2d_copy.median_ms,
            "first_save_ms": self.save.first_ms,
            "first_save_durable_ms": self.save_durable.first_ms,
            "first_load_ms": self.load.first_ms,
            "filesystem": self.filesystem.fs_type,
            "filesystem_mount": self.filesystem.mount_point,
            "filesystem_volatile": self.filesystem.volatile,
        }

    def durability_warning(self) -> str | None:
        """Why the durable save does not measure a durable save here, or ``None``."""
        if not self.filesystem.volatile:
            return None
        return (
            f"checkpoints were written to {self.filesystem.mount_point}, a "
            f"{self.filesystem.fs_type}: a durable save there costs nothing and survives no "
            "reboot; give a folder on the disk the trainer checkpoints to"
        )


@contextmanager
def _folder(folder: str | os.PathLike[str] | None) -> Iterator[Path]:
    if folder is not None:
        path = Path(folder)
        if not path.is_dir():
            raise NotADirectoryError(f"folder {folder}: not an existing directory")
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="learnsched-lora-") as tmp:
        yield Path(tmp)


def benchmark_lora(
    tensors: Mapping[str, Any],
    *,
    device: str = "cpu",
    runs: int = 20,
    folder: str | os.PathLike[str] | None = None,
    nvml_device: NvmlDevice | None = None,
) -> LoraBenchmark:
    """Time saving ``tensors`` (buffered and durable) and loading them onto ``device``.

    The final reload is checked bit for bit against ``tensors`` (outside the timing).

    Parameters
    ----------
    tensors
        Adapter tensors (see :func:`synthesise_adapter`, :func:`adapter_from_peft`).
    device
        Load target: ``"cpu"`` or a CUDA device.
    runs
        Runs per operation (>= 2; the first is reported apart).
    folder
        Where to write (default: a temporary folder, removed afterwards). Use the
        file system your checkpoints live on.
    nvml_device
        Read this GPU's clocks at the start and end of each series.
    """
    torch = torch_module()
    target = _load_target(device)
    if not tensors:
        raise ValueError("tensors must hold at least one adapter tensor")
    host = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    # A checkpoint is taken from the device the adapter trains on: save from there.
    on_device = {name: t.to(target) for name, t in host.items()}
    if target.type == "cuda":
        torch.cuda.synchronize(target)
    with _folder(folder) as where:
        save = _time_save(on_device, where, False, runs, nvml_device)
        durable = _time_save(on_device, where, True, runs, nvml_device)
        path = where / ADAPTER_FILE
        loaded: dict[str, Any] = {}

        def load() -> None:
            loaded.clear()
            loaded.update(load_adapter(path, str(target)))

        load_timing = time_host(load, runs, label="load", device=nvml_device)
        _same(host, loaded)
        adapter_bytes = path.stat().st_size
        filesystem = filesystem_of(where)
    copy = None
    if target.type == "cuda":
        # The link's cost: every tensor's bytes in one page-locked buffer, sent in one
        # transfer (per-tensor copies from pageable memory time the staging copies
        # and per-call overheads instead, not the link).
        pinned = _pinned_bytes(torch, host)
        landing = torch.empty_like(pinned, device=target)
        copy = time_device(
            lambda: landing.copy_(pinned, non_blocking=True),
            runs,
            cuda_device=target,
            label="host-to-device copy",
            device=nvml_device,
        )
        if not torch.equal(landing.cpu(), pinned):
            raise HandoffProbeError("the host-to-device copy did not land bit for bit")
    return LoraBenchmark(
        adapter_bytes=adapter_bytes,
        tensor_bytes=sum(t.numel() * t.element_size() for t in host.values()),
        tensors=len(host),
        device=str(target),
        save=save,
        save_durable=durable,
        load=load_timing,
        h2d_copy=copy,
        filesystem=filesystem,
    )


def _pinned_bytes(torch: Any, host: Mapping[str, Any], pin: bool = True) -> Any:
    """Every tensor's bytes, one after another, in one page-locked host buffer
    (``pin=False``: pageable, where no CUDA can pin)."""
    total = sum(t.numel() * t.element_size() for t in host.values())
    pinned = torch.empty(total, dtype=torch.uint8, pin_memory=pin)
    offset = 0
    for tensor in host.values():
        raw = tensor.reshape(-1).view(torch.uint8)
        pinned[offset : offset + raw.numel()].copy_(raw)
        offset += raw.numel()
    return pinned


def _time_save(
    tensors: Mapping[str, Any],
    where: Path,
    durable: bool,
    runs: int,
    nvml_device: NvmlDevice | None,
) -> Timing:
    label = "durable save" if durable else "save"
    return time_host(
        lambda: save_adapter(tensors, where, durable=durable), runs, label=label, device=nvml_device
    )
