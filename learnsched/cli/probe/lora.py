"""``learnsched probe lora``: the LoRA adapter save/load microbenchmark."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..._checks import integer
from ...handoff.lora import (
    ADAPTER_PRESETS,
    ATTENTION,
    BASE_SHAPES,
    DTYPES,
    AdapterPreset,
    LoraBenchmark,
    benchmark_lora,
    check_device,
    default_device,
    read_adapter,
    target_gpu,
)
from ...handoff.nvml import NvmlDevice
from ...handoff.profile import LORA_QUANTITIES, CostProfile
from ...handoff.timing import MAX_RUNS
from ..output import Rows, emit_json, print_rows
from .common import add_common, check_out, ms, write_profile

__all__ = [
    "add_lora_arguments",
    "check_lora",
    "lora_benchmark",
    "lora_rows",
    "lora_target",
    "register",
]


def register(probes: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``probe lora``."""
    parser = probes.add_parser("lora", help="LoRA adapter save/load microbenchmark")
    add_lora_arguments(parser)
    add_common(parser, out=True)
    parser.set_defaults(func=run_lora)


def add_lora_arguments(parser: argparse.ArgumentParser) -> None:
    """The LoRA probe's options (also on ``probe all``)."""
    parser.add_argument(
        "--device", default=None, help="load target: cpu, cuda, cuda:N (default: cuda if seen)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--shape",
        choices=sorted({*BASE_SHAPES, *ADAPTER_PRESETS}),
        default="paper",
        help="synthesise an adapter: 'paper' (the paper's rank-8 ~13.1 MB adapter, the "
        "default) or a base model's shapes",
    )
    source.add_argument("--adapter", metavar="PATH", help="a saved PEFT adapter (dir or file)")
    parser.add_argument("--rank", type=int, help="LoRA rank (default 8, or the preset's)")
    parser.add_argument(
        "--targets",
        help="comma-separated target modules (default q_proj,k_proj,v_proj,o_proj, or the "
        "preset's)",
    )
    parser.add_argument(
        "--dtype", choices=DTYPES, help="adapter dtype (default float32, or the preset's)"
    )
    parser.add_argument("--runs", type=int, default=20, help="runs per operation (default 20)")
    parser.add_argument("--folder", help="write checkpoints here (default: a temporary folder)")


def check_lora(args: argparse.Namespace) -> None:
    """Bad LoRA input as ``ValueError``/``OSError``, before anything is measured."""
    integer("--runs", args.runs, low=2, high=MAX_RUNS)
    if args.device is not None:
        check_device(args.device)
    if args.folder is not None and not Path(args.folder).is_dir():
        raise NotADirectoryError(f"--folder {args.folder}: not an existing directory")
    if args.adapter is not None:
        if not Path(args.adapter).exists():
            raise FileNotFoundError(f"--adapter {args.adapter}: no such file or folder")
        return
    spec = adapter_spec(args)
    for module in spec.targets:
        spec.shape.module_shape(module)


def adapter_spec(args: argparse.Namespace) -> AdapterPreset:
    """The adapter ``--shape`` and the flags given describe (a preset's defaults filled)."""
    preset = ADAPTER_PRESETS.get(args.shape)
    shape = preset.shape if preset is not None else BASE_SHAPES[args.shape]
    targets = preset.targets if preset is not None else ATTENTION
    if args.targets is not None:
        targets = tuple(t.strip() for t in args.targets.split(",") if t.strip())
        if not targets:
            raise ValueError("--targets must name at least one module")
    rank = args.rank if args.rank is not None else preset.rank if preset is not None else 8
    integer("rank", rank, low=1)
    dtype = args.dtype or (preset.dtype if preset is not None else "float32")
    return AdapterPreset(args.shape, shape, rank, targets, dtype)


def lora_target(args: argparse.Namespace) -> tuple[str, NvmlDevice | None, str]:
    """Where the adapter loads: the torch device, its NVML device (by UUID) and its name."""
    device = default_device() if args.device is None else str(args.device)
    nvml, name = target_gpu(device)
    return device, nvml, name


def lora_benchmark(args: argparse.Namespace) -> tuple[LoraBenchmark, NvmlDevice | None, str]:
    """The benchmark, the NVML device of the GPU it ran on, and that device's name."""
    check_lora(args)
    device, nvml, name = lora_target(args)  # before the run: a bad --device stops it here
    check_out(args, dict.fromkeys(LORA_QUANTITIES, name), nvml)
    tensors = read_adapter(args.adapter) if args.adapter else adapter_spec(args).synthesise()
    result = benchmark_lora(
        tensors, device=device, runs=args.runs, folder=args.folder, nvml_device=nvml
    )
    return result, nvml, name


def lora_rows(result: LoraBenchmark) -> Rows:
    """The table rows of one benchmark."""
    fs = result.filesystem
    rows: Rows = [
        ("adapter", f"{result.adapter_bytes} bytes in {result.tensors} tensors, {result.device}"),
        ("checkpoint folder", f"{fs.fs_type} at {fs.mount_point}"),
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
    warning = result.durability_warning()
    if warning is not None:
        print(f"learnsched probe lora: warning: {warning}", file=sys.stderr)
    if args.json:
        emit_json(result.summary())
    else:
        print_rows(lora_rows(result))
    write_profile(args, CostProfile.from_lora(result, nvml, name))
    return 0
