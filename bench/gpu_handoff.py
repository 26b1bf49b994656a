"""GPU check of the handoff probes: one short run, one table (well under 5 minutes).

    python bench/gpu_handoff.py [--gpu 0] [--gib 4] [--runs 20] [--json]

``--gpu`` is torch's index (``cuda:N``, after ``CUDA_VISIBLE_DEVICES``); NVML reads the
same GPU, found by its UUID (NVML's own indices ignore ``CUDA_VISIBLE_DEVICES``).

1. LoRA save/load for a rank-8 adapter with Llama-3.2-3B shapes: saved from the GPU
   (the device-to-host copy included), loaded onto it, and a separate host-to-device
   copy of the same tensors timed by CUDA events.
2. Release confirmation: a child process frees a multi-GiB allocation (first through
   ``torch.cuda.empty_cache()``, then by exiting); NVML sees each release.
3. The cost of the NVML calls themselves.
4. CUDA-event versus wall-clock timing of the same matrix multiply.

Without a GPU (no NVML, or torch without CUDA) it says so and exits with status 0.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from learnsched._table import format_rows
from learnsched.handoff import (
    BASE_SHAPES,
    NvmlDevice,
    ReleaseResult,
    benchmark_lora,
    synthesise_adapter,
    time_device,
    time_host,
    wait_for_release,
)
from learnsched.handoff.nvml import device_for_torch, driver_version
from learnsched.handoff.profile import GIB
from learnsched.serving import NvmlUnavailable
from learnsched.serving.errors import HandoffProbeError

# Holds N GiB on cuda:I; frees the cache on its first stdin line, exits on the second.
CHILD = """
import sys, torch
block = torch.empty(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device=sys.argv[2])
block.fill_(1)
torch.cuda.synchronize()
print("held", flush=True)
sys.stdin.readline()
del block
torch.cuda.empty_cache()
print("freed", flush=True)
sys.stdin.readline()
"""


def lora(device: NvmlDevice, cuda: str, runs: int) -> list[tuple[str, str]]:
    """Item 1: the adapter's save/load series."""
    tensors = synthesise_adapter(BASE_SHAPES["llama-3.2-3b"], rank=8)
    result = benchmark_lora(tensors, device=cuda, runs=runs, nvml_device=device)
    rows = [("LoRA r=8 llama-3.2-3b", f"{result.adapter_bytes / 1e6:.2f} MB, {runs} runs")]
    series = [
        ("  save (buffered)", result.save),
        ("  save (durable)", result.save_durable),
        ("  load to GPU", result.load),
    ]
    if result.h2d_copy is not None:
        series.append(("  H2D copy alone (events, separate)", result.h2d_copy))
    for name, t in series:
        rows.append(
            (name, f"first {t.first_ms:.3f} / median {t.median_ms:.3f} / p95 {t.p95_ms:.3f} ms")
        )
    start, end = result.load.clocks_start, result.load.clocks_end
    if start is not None and end is not None:
        rows.append(
            (
                "  SM clock start/end",
                f"{start.sm_mhz} / {end.sm_mhz} MHz, events {end.event_reasons}",
            )
        )
    return rows


def _send(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None
    child.stdin.write(line)
    child.stdin.flush()


def _latency(result: ReleaseResult) -> str:
    return f"{result.latency_s * 1e3:.1f} ms +- {result.resolution_s * 1e3:.1f} ms"


def _freed_to_driver(
    device: NvmlDevice, child: subprocess.Popen[str], gib: float
) -> tuple[str, str]:
    """The child's ``empty_cache()``, seen as device ``free`` rising."""
    assert child.stdout is not None
    baseline = device.memory().free
    since = time.perf_counter_ns()
    _send(child, "free\n")
    freed = wait_for_release(
        device,
        free_rise_bytes=int(gib * GIB * 0.9),  # slack for other processes' allocations
        baseline_free_bytes=baseline,
        since_ns=since,
        timeout_s=60,
        poll_s=0.01,
    )
    child.stdout.readline()
    return f"release {gib:g} GiB (empty_cache)", f"{_latency(freed)} ({freed.polls} polls)"


def _left_on_exit(
    device: NvmlDevice, child: subprocess.Popen[str], visible: bool
) -> tuple[str, str]:
    """The child's exit, seen as its process leaving the device's list."""
    listed = device.processes()  # the child keeps its context after empty_cache
    visible = visible and any(p.pid == child.pid for p in listed)
    since = time.perf_counter_ns()
    _send(child, "exit\n")
    if not visible:
        return (
            "process leaves the GPU",
            "not measured: PID not visible to NVML (another PID namespace)",
        )
    gone = wait_for_release(
        device, pid=child.pid, baseline_processes=listed, since_ns=since, timeout_s=60, poll_s=0.01
    )
    return "process leaves the GPU", _latency(gone)


def release(device: NvmlDevice, cuda: str, gib: float) -> list[tuple[str, str]]:
    """Item 2: a child frees ``gib`` GiB, first to the driver, then by exiting."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(gib), cuda],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=tempfile.gettempdir(),  # never the source tree: it would shadow installed packages
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        if child.stdout.readline().strip() != "held":
            raise HandoffProbeError("the allocating child did not start")
        visible = any(p.pid == child.pid for p in device.processes())
        freed = _freed_to_driver(device, child, gib)
        return [freed, _left_on_exit(device, child, visible)]
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        child.stdout.close()


def nvml_costs(device: NvmlDevice) -> list[tuple[str, str]]:
    """Item 3: how long each NVML read takes (they run inside every poll)."""
    rows = []
    for name, call in (
        ("memory (v2)", device.memory),
        ("processes (v3)", device.processes),
        ("clocks+reasons+pstate", device.clocks),
        ("utilisation", device.utilisation),
    ):
        t = time_host(call, 201)
        rows.append(
            (f"NVML {name}", f"median {t.median_ms * 1e3:.1f} us, p95 {t.p95_ms * 1e3:.1f} us")
        )
    return rows


def event_vs_wall(cuda: str) -> list[tuple[str, str]]:
    """Item 4: the same GPU work timed by CUDA events and by the host clock."""
    import torch

    a = torch.randn(8192, 8192, device=cuda, dtype=torch.bfloat16)
    events = time_device(lambda: a @ a, 21, cuda_device=cuda)

    def synced() -> None:
        a @ a
        torch.cuda.synchronize(cuda)

    wall = time_host(synced, 21)
    overhead = wall.median_ms - events.median_ms
    return [
        ("matmul 8192^2 bf16 events", f"median {events.median_ms:.3f} ms"),
        (
            "matmul 8192^2 bf16 wall",
            f"median {wall.median_ms:.3f} ms (+{overhead:.3f} launch/sync)",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0, help="torch's CUDA index (default 0)")
    parser.add_argument("--gib", type=float, default=4.0, help="child allocation, GiB")
    parser.add_argument("--runs", type=int, default=20, help="LoRA runs per operation")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    cuda = f"cuda:{args.gpu}"
    try:
        import torch

        if not torch.cuda.is_available():
            raise HandoffProbeError("torch sees no CUDA GPU (a CPU-only build?)")
        if not 0 <= args.gpu < torch.cuda.device_count():
            raise HandoffProbeError(f"--gpu {args.gpu}: torch sees {torch.cuda.device_count()}")
        # The GPU torch times, found in NVML by UUID (never by NVML's index).
        uuid = str(torch.cuda.get_device_properties(args.gpu).uuid)
        device = device_for_torch(args.gpu, uuid)
    except (NvmlUnavailable, HandoffProbeError, ImportError, ValueError) as err:
        print(f"gpu_handoff: skipped, no usable GPU: {err}")
        return 0
    started = time.monotonic()
    rows: list[tuple[str, str]] = [
        ("device", f"{device.name} {device.uuid}, driver {driver_version()}"),
        ("torch", f"{torch.__version__}, CUDA {torch.version.cuda}"),
    ]
    rows += lora(device, cuda, args.runs)
    rows += release(device, cuda, args.gib)
    rows += nvml_costs(device)
    rows += event_vs_wall(cuda)
    rows.append(("total", f"{time.monotonic() - started:.1f} s"))
    if args.json:
        report: dict[str, Any] = dict(rows)
        print(json.dumps(report, indent=2))
    else:
        print(format_rows(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
