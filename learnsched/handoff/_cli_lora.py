"""``learnsched probe lora``: the LoRA adapter save/load microbenchmark."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .._checks import integer
from ._cli_tables import Rows, device_info, ms, print_rows, write_profile
from ._util import torch_module
from .errors import NvmlUnavailable
from .lora import (
    ATTENTION,
    BASE_SHAPES,
    DTYPES,
    LoraBenchmark,
    benchmark_lora,
    default_device,
    read_adapter,
    synthesise_adapter,
)
from .nvml import NvmlDevice, device_for_torch
from .profile import CPU, CostProfile, Measurement, now_iso, package_versions

__all__ = [
    "add_lora_arguments",
    "check_lora",
    "lora_benchmark",
    "lora_profile",
    "lora_rows",
    "run_lora",
]


def add_lora_arguments(parser: argparse.ArgumentParser) -> None:
    """The LoRA probe's options (also on ``probe all``)."""
    parser.add_argument(
        "--device", default=None, help="load target: cpu, cuda, cuda:N (default: cuda if seen)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--shape",
        choices=sorted(BASE_SHAPES),
        default="llama-3.2-3b",
        help="synthesise an adapter for this base model (default llama-3.2-3b)",
    )
    source.add_argument("--adapter", metavar="PATH", help="a saved PEFT adapter (dir or file)")
    parser.add_argument("--rank", type=int, default=8, help="LoRA rank (default 8)")
    parser.add_argument(
        "--targets",
        default=",".join(ATTENTION),
        help="comma-separated target modules (default q_proj,k_proj,v_proj,o_proj)",
    )
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="adapter dtype")
    parser.add_argument("--runs", type=int, default=20, help="runs per operation (default 20)")
    parser.add_argument("--folder", help="write checkpoints here (default: a temporary folder)")


def check_lora(args: argparse.Namespace) -> None:
    """Bad LoRA input as ``ValueError``/``OSError``, before anything is measured."""
    integer("--runs", args.runs, low=2)
    if args.folder is not None and not Path(args.folder).is_dir():
        raise NotADirectoryError(f"--folder {args.folder}: not an existing directory")
    if args.adapter is not None:
        if not Path(args.adapter).exists():
            raise FileNotFoundError(f"--adapter {args.adapter}: no such file or folder")
        return
    integer("rank", args.rank, low=1)
    targets = _targets(args)
    if not targets:
        raise ValueError("--targets must name at least one module")
    for module in targets:
        BASE_SHAPES[args.shape].module_shape(module)


def _targets(args: argparse.Namespace) -> list[str]:
    return [t.strip() for t in args.targets.split(",") if t.strip()]


def _torch_gpu(device: str) -> tuple[NvmlDevice | None, str]:
    """The NVML device torch loads onto (matched by UUID, not index) and its name."""
    torch = torch_module()
    target = torch.device(device)
    index = target.index if target.index is not None else torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    try:
        return device_for_torch(index, str(properties.uuid)), str(properties.name)
    except NvmlUnavailable:
        return None, str(properties.name)


def lora_benchmark(args: argparse.Namespace) -> tuple[LoraBenchmark, NvmlDevice | None, str]:
    """The benchmark, the NVML device of the GPU it ran on, and that device's name."""
    check_lora(args)
    if args.adapter is not None:
        tensors = read_adapter(args.adapter)
    else:
        tensors = synthesise_adapter(BASE_SHAPES[args.shape], args.rank, _targets(args), args.dtype)
    device = default_device() if args.device is None else str(args.device)
    nvml, name = None, CPU
    if device.startswith("cuda") and torch_module().cuda.is_available():
        nvml, name = _torch_gpu(device)
    result = benchmark_lora(
        tensors, device=device, runs=args.runs, folder=args.folder, nvml_device=nvml
    )
    return result, nvml, name


def lora_profile(result: LoraBenchmark, nvml: NvmlDevice | None, name: str) -> CostProfile:
    """The checkpoint costs ``result`` measured on device ``name``, as a cost profile."""

    def seconds(timing: Any) -> Measurement:
        warm = tuple(t / 1e3 for t in timing.warm_ms)
        return Measurement.of(warm, "s", timing.first_ms / 1e3, device=name)

    return CostProfile(
        measurements={
            "checkpoint_save_s": seconds(result.save_durable),
            "checkpoint_save_buffered_s": seconds(result.save),
            "checkpoint_load_s": seconds(result.load),
            "adapter_bytes": Measurement.of((float(result.adapter_bytes),), "B", device=name),
        },
        device=device_info(nvml),
        packages=package_versions(),
        created=now_iso(),
        source=f"learnsched probe lora (load onto {result.device})",
    )


def lora_rows(result: LoraBenchmark) -> Rows:
    """The table rows of one benchmark."""
    rows: Rows = [
        ("adapter", f"{result.adapter_bytes} bytes in {result.tensors} tensors, {result.device}")
    ]
    timings = [("save", result.save), ("save durable", result.save_durable), ("load", result.load)]
    if result.h2d_copy is not None:
        timings.append(("H2D copy alone", result.h2d_copy))
    for name, t in timings:
        summary = f"first {ms(t.first_ms)}, median {ms(t.median_ms)}, p95 {ms(t.p95_ms)}"
        rows.append((name, f"{summary} ({len(t.warm_ms)} warm runs, {t.clock} clock)"))
    return rows


def run_lora(args: argparse.Namespace) -> int:
    """Run the LoRA save/load microbenchmark."""
    result, nvml, name = lora_benchmark(args)
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        print_rows(lora_rows(result))
    write_profile(args, lora_profile(result, nvml, name))
    return 0
