"""``learnsched probe lora``: the LoRA adapter save/load microbenchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..._checks import integer
from ...handoff.lora import (
    ATTENTION,
    BASE_SHAPES,
    DTYPES,
    LoraBenchmark,
    benchmark_lora,
    default_device,
    read_adapter,
    synthesise_adapter,
    target_gpu,
)
from ...handoff.nvml import NvmlDevice
from ...handoff.profile import CostProfile
from ..output import Rows, emit_json, print_rows
from .common import add_common, ms, write_profile

__all__ = ["add_lora_arguments", "check_lora", "lora_benchmark", "lora_rows", "register"]


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


def lora_benchmark(args: argparse.Namespace) -> tuple[LoraBenchmark, NvmlDevice | None, str]:
    """The benchmark, the NVML device of the GPU it ran on, and that device's name."""
    check_lora(args)
    if args.adapter is not None:
        tensors = read_adapter(args.adapter)
    else:
        tensors = synthesise_adapter(BASE_SHAPES[args.shape], args.rank, _targets(args), args.dtype)
    device = default_device() if args.device is None else str(args.device)
    nvml, name = target_gpu(device)
    result = benchmark_lora(
        tensors, device=device, runs=args.runs, folder=args.folder, nvml_device=nvml
    )
    return result, nvml, name


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
        emit_json(result.summary())
    else:
        print_rows(lora_rows(result))
    write_profile(args, CostProfile.from_lora(result, nvml, name))
    return 0
