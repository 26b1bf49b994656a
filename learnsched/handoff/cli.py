"""``learnsched probe nvml | lora | memory | waits | recovery | all``.

Each handler takes the parsed ``args``, prints a table (or JSON with ``--json``) and
returns the exit status: 0, 3 when NVML is needed and unavailable (one line saying
why), 1 when a measurement fails. Bad input raises ``ValueError``/``OSError`` for the
top-level dispatcher (status 2). ``--out FILE`` writes the measured costs as a cost
profile, keeping quantities an existing FILE holds that this run did not measure.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .._checks import integer, nonnegative, positive
from .._progress import Progress
from ._util import torch_module
from .errors import HandoffProbeError, NvmlUnavailable
from .host_memory import process_tree, read_host_memory
from .ledger import HandoffLedger
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
from .nvml import NvmlDevice, device_for_torch, driver_version, open_device
from .profile import (
    CPU,
    GIB,
    CostProfile,
    Measurement,
    load_cost_profile,
    now_iso,
    package_versions,
)
from .recovery import (
    ENGINES,
    VLLM_SLEEP_LEVELS,
    RecoveryRun,
    ServingEndpoint,
    check_poll,
    launch_engine,
    measure_warm_recovery,
)
from .waits import measure_ack_delay

__all__ = ["register"]

EXIT_FAILED = 1
EXIT_NO_NVML = 3
Rows = list[tuple[str, str]]
Handler = Callable[[argparse.Namespace], int]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``probe`` sub-command and its own sub-commands to ``commands``."""
    probe = commands.add_parser(
        "probe", help="measure handoff costs on this machine (LoRA, memory, recovery)"
    )
    sub = probe.add_subparsers(dest="probe_command", required=True, metavar="PROBE_COMMAND")

    nvml = sub.add_parser("nvml", help="GPU memory, processes, clocks via NVML")
    _add_common(nvml, out=False)
    nvml.set_defaults(func=_guarded(run_nvml))

    lora = sub.add_parser("lora", help="LoRA adapter save/load microbenchmark")
    _add_lora(lora)
    _add_common(lora, out=True)
    lora.set_defaults(func=_guarded(run_lora))

    memory = sub.add_parser("memory", help="host PSS of a process tree (and GPU memory)")
    memory.add_argument("--pid", type=int, required=True, help="process to read")
    memory.add_argument("--no-children", action="store_true", help="this process only")
    _add_common(memory, out=False)
    memory.set_defaults(func=_guarded(run_memory))

    waits = sub.add_parser("waits", help="command acknowledgment delay: coarse vs pollable")
    _add_waits(waits)
    _add_common(waits, out=False, gpu=False)
    waits.set_defaults(func=_guarded(run_waits))

    recovery = sub.add_parser("recovery", help="cold start and warm resume of vLLM/SGLang")
    _add_recovery(recovery, required=True)
    _add_common(recovery, out=True)
    recovery.set_defaults(func=_guarded(run_recovery))

    every = sub.add_parser("all", help="every probe this machine can run")
    _add_lora(every)
    _add_waits(every)
    _add_recovery(every, required=False)
    _add_common(every, out=True)
    every.set_defaults(func=_guarded(run_all))


def _add_common(parser: argparse.ArgumentParser, *, out: bool, gpu: bool = True) -> None:
    if gpu:
        parser.add_argument(
            "--gpu",
            default="0",
            metavar="INDEX|UUID",
            help="NVML device to read (default 0; the LoRA probe reads the GPU torch loads onto)",
        )
    parser.add_argument("--json", action="store_true", help="print JSON")
    if out:
        parser.add_argument("--out", metavar="FILE", help="write (or update) a cost profile")


def _add_lora(parser: argparse.ArgumentParser) -> None:
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


def _add_waits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--step-ms", type=float, default=100.0, help="coarse wait per step, ms (default 100)"
    )
    parser.add_argument(
        "--slice-ms", type=float, default=10.0, help="pollable slice, ms (default 10)"
    )
    parser.add_argument("--commands", type=int, default=40, help="commands per mode (default 40)")


def _add_recovery(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--engine", choices=ENGINES, required=required, help="serving engine")
    parser.add_argument("--url", required=required, help="engine base URL, http://HOST:PORT")
    parser.add_argument("--launch", metavar="COMMAND", help="launch command: also time cold starts")
    parser.add_argument("--cold-runs", type=int, default=1, help="launches to time (default 1)")
    parser.add_argument("--warm-runs", type=int, default=3, help="park/resume cycles (default 3)")
    parser.add_argument(
        "--level", type=int, choices=VLLM_SLEEP_LEVELS, default=1, help="vLLM sleep level (1 or 2)"
    )
    parser.add_argument("--tags", nargs="*", default=[], help="memory tags to release/resume")
    parser.add_argument(
        "--pid", type=int, help="engine PID for host PSS and its GPU processes (default: launched)"
    )
    parser.add_argument(
        "--release-gib",
        type=float,
        help="device memory a park must free to count as released, GiB "
        "(default: half of what NVML lists for the engine's processes)",
    )
    parser.add_argument("--parked-s", type=float, default=1.0, help="time parked, seconds")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="bound per phase, seconds")
    parser.add_argument("--poll-ms", type=float, default=20.0, help="poll interval, ms (10-50)")
    parser.add_argument("--ledger", metavar="FILE", help="append one record per recovery")
    parser.add_argument("--engine-log", metavar="FILE", help="append the engine's output here")


def _guarded(handler: Handler) -> Handler:
    """Turn a failed measurement into one line and a status (bad input stays ValueError)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except NvmlUnavailable as err:
            print(f"learnsched probe {args.probe_command}: {err}", file=sys.stderr)
            return EXIT_NO_NVML
        except HandoffProbeError as err:
            print(f"learnsched probe {args.probe_command}: error: {err}", file=sys.stderr)
            return EXIT_FAILED

    return run


def _print(rows: Rows) -> None:
    width = max((len(k) for k, _ in rows), default=0)
    for key, value in rows:
        print(f"{key:<{width}}  {value}" if value else key)


def _ms(value: float) -> str:
    return f"{value:.3f} ms"


def _gib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / GIB:.3f} GiB"


def _optional_device(args: argparse.Namespace) -> tuple[NvmlDevice | None, str | None]:
    """The NVML device, or ``None`` and why not."""
    try:
        return open_device(args.gpu), None
    except NvmlUnavailable as err:
        return None, str(err)


def _device_info(device: NvmlDevice | None) -> dict[str, str | None] | None:
    if device is None:
        return None
    return {"name": device.name, "uuid": device.uuid, "driver": driver_version()}


def _write_profile(args: argparse.Namespace, profile: CostProfile) -> None:
    if getattr(args, "out", None) is None:
        return
    out = Path(args.out)
    if out.exists():
        profile = load_cost_profile(out).merged(profile)
    profile.write(out)
    print(f"cost profile: {out}", file=sys.stderr)


# nvml -----------------------------------------------------------------------------------


def _nvml_report(device: NvmlDevice) -> dict[str, Any]:
    clocks = device.clocks()
    util = device.utilisation()
    return {
        "index": device.index,
        "uuid": device.uuid,
        "name": device.name,
        "driver": driver_version(),
        "memory": asdict(device.memory()),
        "processes": [asdict(p) for p in device.processes()],
        "utilisation_percent": None if util is None else {"gpu": util[0], "memory": util[1]},
        "clocks": asdict(clocks),
    }


def run_nvml(args: argparse.Namespace) -> int:
    """Print one GPU's NVML readings."""
    report = _nvml_report(open_device(args.gpu))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    memory, clocks = report["memory"], report["clocks"]
    util = report["utilisation_percent"]
    reasons = clocks["event_reasons"]
    rows: Rows = [
        ("device", f"{report['index']}  {report['name']}  {report['uuid']}"),
        ("driver", report["driver"]),
        ("memory total", _gib(memory["total"])),
        ("memory reserved", _gib(memory["reserved"])),
        ("memory used", _gib(memory["used"])),
        ("memory free", _gib(memory["free"])),
        ("utilisation", "n/a" if util is None else f"{util['gpu']}% gpu, {util['memory']}% mem"),
        ("clocks", f"SM {clocks['sm_mhz']} MHz, memory {clocks['memory_mhz']} MHz"),
        ("clock events", "n/a" if reasons is None else (", ".join(reasons) or "none")),
        ("pstate", "n/a" if clocks["pstate"] is None else f"P{clocks['pstate']}"),
    ]
    rows += [(f"process {p['pid']}", _gib(p["used_bytes"])) for p in report["processes"]]
    _print(rows)
    return 0


# lora -----------------------------------------------------------------------------------


def _check_lora(args: argparse.Namespace) -> None:
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


def _lora_benchmark(args: argparse.Namespace) -> tuple[LoraBenchmark, NvmlDevice | None, str]:
    """The benchmark, the NVML device of the GPU it ran on, and that device's name."""
    _check_lora(args)
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


def _lora_profile(result: LoraBenchmark, nvml: NvmlDevice | None, name: str) -> CostProfile:
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
        device=_device_info(nvml),
        packages=package_versions(),
        created=now_iso(),
        source=f"learnsched probe lora (load onto {result.device})",
    )


def _lora_rows(result: LoraBenchmark) -> Rows:
    rows: Rows = [
        ("adapter", f"{result.adapter_bytes} bytes in {result.tensors} tensors, {result.device}")
    ]
    timings = [("save", result.save), ("save durable", result.save_durable), ("load", result.load)]
    if result.h2d_copy is not None:
        timings.append(("H2D copy alone", result.h2d_copy))
    for name, t in timings:
        summary = f"first {_ms(t.first_ms)}, median {_ms(t.median_ms)}, p95 {_ms(t.p95_ms)}"
        rows.append((name, f"{summary} ({len(t.warm_ms)} warm runs, {t.clock} clock)"))
    return rows


def run_lora(args: argparse.Namespace) -> int:
    """Run the LoRA save/load microbenchmark."""
    result, nvml, name = _lora_benchmark(args)
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        _print(_lora_rows(result))
    _write_profile(args, _lora_profile(result, nvml, name))
    return 0


# memory ---------------------------------------------------------------------------------


def _check_pid(pid: int) -> None:
    """``ValueError`` for a bad PID, ``ProcessLookupError`` for one that does not exist."""
    process_tree(integer("pid", pid, low=1))


def run_memory(args: argparse.Namespace) -> int:
    """Print a process tree's PSS split (and GPU memory when NVML is available)."""
    host = read_host_memory(args.pid, children=not args.no_children)
    device, why = _optional_device(args)
    memory = None if device is None else device.memory()
    report: dict[str, Any] = {
        "host": asdict(host),
        "device": None if memory is None else asdict(memory),
        "device_unavailable": why,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    rows: Rows = [
        ("processes", " ".join(map(str, host.pids))),
        ("PSS", _gib(host.pss)),
        ("  anon", _gib(host.pss_anon)),
        ("  file", _gib(host.pss_file)),
        ("  shmem", _gib(host.pss_shmem)),
    ]
    if device is None or memory is None:
        rows.append(("GPU", f"not read: {why}"))
    else:
        occupied = f"{_gib(memory.occupied)} of {_gib(memory.total)} ({device.name})"
        rows.append(("GPU used+reserved", occupied))
    _print(rows)
    return 0


# waits ----------------------------------------------------------------------------------


def _check_waits(args: argparse.Namespace) -> None:
    positive("--step-ms", args.step_ms)
    positive("--slice-ms", args.slice_ms)
    integer("--commands", args.commands, low=1)


def _waits(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    _check_waits(args)
    step_s, slice_s = args.step_ms / 1e3, args.slice_ms / 1e3
    results = {}
    with Progress(2, "pollable waits") as progress:
        for mode, cut in (("coarse", step_s), ("pollable", slice_s)):
            delays = measure_ack_delay(step_s=step_s, slice_s=cut, commands=args.commands)
            results[mode] = {
                "slice_ms": cut * 1e3,
                "median_ms": delays.median_s * 1e3,
                "p95_ms": delays.p95_s * 1e3,
            }
            progress.advance(1)
    return results


def _waits_rows(results: dict[str, dict[str, float]]) -> Rows:
    rows: Rows = []
    for mode, r in results.items():
        median, p95 = _ms(r["median_ms"]), _ms(r["p95_ms"])
        rows.append(
            (f"ack delay {mode}", f"median {median}, p95 {p95} (slice {r['slice_ms']:g} ms)")
        )
    return rows


def run_waits(args: argparse.Namespace) -> int:
    """Compare command acknowledgment delays of coarse and pollable waits."""
    results = _waits(args)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(_waits_rows(results))
    return 0


# recovery -------------------------------------------------------------------------------


def _check_recovery(args: argparse.Namespace) -> ServingEndpoint:
    """Every recovery argument checked (``ValueError``/``OSError``); the endpoint."""
    if args.launch is None and args.cold_runs != 1:
        raise ValueError("--cold-runs needs --launch")
    if args.launch is not None and not shlex.split(args.launch):
        raise ValueError("--launch must not be empty")
    integer("--cold-runs", args.cold_runs, low=1)
    integer("--warm-runs", args.warm_runs, low=0 if args.launch else 1)
    check_poll(args.poll_ms / 1e3)
    positive("--timeout-s", args.timeout_s)
    nonnegative("--parked-s", args.parked_s)
    if args.release_gib is not None:
        positive("--release-gib", args.release_gib)
    if args.pid is not None:
        _check_pid(args.pid)
    if args.ledger is not None and not Path(args.ledger).parent.is_dir():
        raise NotADirectoryError(f"--ledger {args.ledger}: its folder does not exist")
    return ServingEndpoint(args.url, args.engine)


def _recovery_runs(args: argparse.Namespace) -> tuple[list[RecoveryRun], NvmlDevice | None]:
    endpoint = _check_recovery(args)
    device = _optional_device(args)[0]
    ledger = HandoffLedger(args.ledger) if args.ledger else None
    poll_s = args.poll_ms / 1e3
    release_bytes = None if args.release_gib is None else max(1, int(args.release_gib * GIB))
    runs: list[RecoveryRun] = []

    def record(run: RecoveryRun) -> None:
        runs.append(run)
        if ledger is not None:
            ledger.append(run.to_record())

    def warm(pid: int | None) -> None:
        with Progress(args.warm_runs, "warm recovery") as progress:
            for _ in range(args.warm_runs):
                record(
                    measure_warm_recovery(
                        endpoint,
                        level=args.level,
                        tags=args.tags,
                        pid=pid,
                        device=device,
                        release_bytes=release_bytes,
                        parked_s=args.parked_s,
                        timeout_s=args.timeout_s,
                        poll_s=poll_s,
                    )
                )
                progress.advance(1)

    if args.launch is None:
        warm(args.pid)
        return runs, device
    for index in range(args.cold_runs):
        with launch_engine(
            args.launch,
            endpoint,
            device=device,
            log_path=args.engine_log,
            timeout_s=args.timeout_s,
            poll_s=poll_s,
        ) as (process, cold):
            record(cold)
            if index == args.cold_runs - 1:
                warm(args.pid if args.pid is not None else process.pid)
    return runs, device


def _measured(
    values: Sequence[float], unit: str, device: str | None, note: str = ""
) -> Measurement | None:
    return Measurement.of(tuple(values), unit, device=device, note=note) if values else None


def _parked_device(warm: Sequence[RecoveryRun], device: str | None) -> Measurement | None:
    """Device memory held while parked, on one basis for all runs (the note says which)."""
    bases = {r.device_basis for r in warm if "parked" in r.device}
    if not bases:
        return None
    # Mixed bases (the engine listed in some runs only) fall back to the whole device.
    basis = bases.pop() if len(bases) == 1 else "device-occupied"
    values = []
    for run in warm:
        if "parked" not in run.device:
            continue
        if basis == "engine-processes":
            values.append(run.engine_device["parked"] / GIB)
        else:
            values.append(run.device["parked"].occupied / GIB)
    note = (
        "the engine's processes' own device bytes (NVML per-process)"
        if basis == "engine-processes"
        else "the whole device's used+reserved bytes (other processes included): NVML "
        "does not list the engine's processes with their memory"
    )
    return _measured(values, "GiB", device, note)


def _recovery_profile(runs: Sequence[RecoveryRun], device: NvmlDevice | None) -> CostProfile:
    warm = [r for r in runs if r.kind == "warm"]
    name = None if device is None else device.name
    candidates = {
        "cold_recovery_s": _measured([r.ready_s for r in runs if r.kind == "cold"], "s", name),
        "warm_recovery_s": _measured(
            [r.resume_s for r in warm],
            "s",
            name,
            "resume sent to acknowledged with the device memory back"
            if all("memory_back" in r.stamps_ns for r in warm)
            else "resume sent to acknowledged (device memory not watched)",
        ),
        "warm_ready_s": _measured([r.ready_s for r in warm], "s", name),
        "host_pss_awake_gib": _measured(
            [r.host["awake"].pss / GIB for r in warm if "awake" in r.host], "GiB", name
        ),
        "host_pss_parked_gib": _measured(
            [r.host["parked"].pss / GIB for r in warm if "parked" in r.host], "GiB", name
        ),
        "device_parked_gib": _parked_device(warm, name),
    }
    return CostProfile(
        measurements={k: m for k, m in candidates.items() if m is not None},
        device=_device_info(device),
        packages=package_versions(),
        created=now_iso(),
        source=f"learnsched probe recovery ({runs[0].engine})" if runs else "",
    )


def _run_json(run: RecoveryRun) -> dict[str, Any]:
    base = min(run.stamps_ns.values())
    report = {
        "kind": run.kind,
        "ready_s": run.ready_s,
        "stamps_ms": {k: (v - base) / 1e6 for k, v in run.stamps_ns.items()},
        "host_pss_gib": {k: m.pss / GIB for k, m in run.host.items()},
        "device_basis": run.device_basis,
        "device_gib": {
            phase: bytes_ / GIB
            for phase in run.device
            if (bytes_ := run.device_bytes(phase)) is not None
        },
    }
    if run.kind == "warm":
        report["resume_s"] = run.resume_s
        report["release"] = run.release
        report["release_s"] = run.release_s
    return report


def _recovery_rows(runs: Sequence[RecoveryRun]) -> Rows:
    rows: Rows = []
    for number, run in enumerate(runs, start=1):
        start = run.stamps_ns[run.start_stamp]
        stamps = ", ".join(f"{name} {(t - start) / 1e9:+.3f}" for name, t in run.stamps_ns.items())
        head = f"ready {run.ready_s:.3f} s"
        if run.kind == "warm":
            released = "" if run.release_s is None else f" after {run.release_s:.3f} s"
            head = f"resume {run.resume_s:.3f} s, {head}, release {run.release}{released}"
        rows.append((f"{run.kind} #{number}", f"{head}  ({stamps} s)"))
        for phase, memory in run.host.items():
            rows.append((f"  host PSS {phase}", _gib(memory.pss)))
        for phase in run.device:
            rows.append((f"  device {phase} ({run.device_basis})", _gib(run.device_bytes(phase))))
    return rows


def run_recovery(args: argparse.Namespace) -> int:
    """Time cold starts (with ``--launch``) and warm park/resume cycles."""
    runs, device = _recovery_runs(args)
    if args.json:
        print(json.dumps([_run_json(r) for r in runs], indent=2))
    else:
        _print(_recovery_rows(runs))
    _write_profile(args, _recovery_profile(runs, device))
    return 0


# all ------------------------------------------------------------------------------------

# What a part of `probe all` may fail with at run time (bad input is checked up front):
# a failed measurement, an unreachable server, a timeout (both OSError), a vanished PID.
PART_ERRORS = (HandoffProbeError, OSError)


class _AllReport:
    """The parts of `probe all`: rows, JSON, the merged profile and failures."""

    def __init__(self) -> None:
        self.rows: Rows = []
        self.json: dict[str, Any] = {}
        self.profile = CostProfile({})
        self.failed = False

    def fail(self, part: str, err: BaseException) -> None:
        self.rows.append((part, f"failed: {err}"))
        self.json[part] = {"error": str(err)}
        self.failed = True

    def add_profile(self, part: str, profile: CostProfile) -> None:
        try:
            self.profile = self.profile.merged(profile)
        except ValueError as err:
            self.fail(f"{part} profile", err)


def _check_all(args: argparse.Namespace) -> bool:
    """Check every part's input before any part runs; whether recovery is asked for."""
    _check_lora(args)
    _check_waits(args)
    if args.pid is not None:
        _check_pid(args.pid)
    if (args.engine is None) != (args.url is None):
        raise ValueError("recovery needs both --engine and --url")
    if args.engine is None:
        return False
    _check_recovery(args)
    return True


def _all_nvml(args: argparse.Namespace, report: _AllReport) -> None:
    device, why = _optional_device(args)
    if device is None:
        report.rows.append(("nvml", f"skipped: {why}"))
        report.json["nvml"] = None
        return
    report.json["nvml"] = _nvml_report(device)
    report.rows.append(("nvml", f"{device.name} ({device.uuid})"))


def _all_lora(args: argparse.Namespace, report: _AllReport) -> None:
    lora, nvml, name = _lora_benchmark(args)
    report.json["lora"] = lora.summary()
    report.rows += _lora_rows(lora)
    report.add_profile("lora", _lora_profile(lora, nvml, name))


def _all_waits(args: argparse.Namespace, report: _AllReport) -> None:
    waits = _waits(args)
    report.json["waits"] = waits
    report.rows += _waits_rows(waits)


def _all_memory(args: argparse.Namespace, report: _AllReport) -> None:
    if args.pid is None:
        return
    host = read_host_memory(args.pid)
    report.json["memory"] = asdict(host)
    report.rows.append((f"host PSS of {args.pid} and children", _gib(host.pss)))


def _all_recovery(args: argparse.Namespace, report: _AllReport) -> None:
    runs, device = _recovery_runs(args)
    report.json["recovery"] = [_run_json(r) for r in runs]
    report.rows += _recovery_rows(runs)
    report.add_profile("recovery", _recovery_profile(runs, device))


def run_all(args: argparse.Namespace) -> int:
    """Every probe this machine can run; parts that need a GPU or a server say so.

    All input is checked first (bad input: ``ValueError``/``OSError``, nothing runs). A
    part that then fails is reported on its own row, the others still run, the
    profile of what succeeded is written, and the exit status is 1.
    """
    recovery = _check_all(args)
    report = _AllReport()
    parts: list[tuple[str, Callable[[argparse.Namespace, _AllReport], None]]] = [
        ("nvml", _all_nvml),
        ("lora", _all_lora),
        ("waits", _all_waits),
        ("memory", _all_memory),
    ]
    if recovery:
        parts.append(("recovery", _all_recovery))
    else:
        report.rows.append(("recovery", "skipped: give --engine and --url (and --launch for cold)"))
    for part, run in parts:
        try:
            run(args, report)
        except PART_ERRORS as err:
            report.fail(part, err)
    if args.json:
        print(json.dumps(report.json, indent=2))
    else:
        _print(report.rows)
    if report.profile.measurements:
        try:
            _write_profile(args, report.profile)
        except (ValueError, OSError) as err:  # e.g. an existing --out from another device
            print(f"learnsched probe all: profile not written: {err}", file=sys.stderr)
            return EXIT_FAILED
    return EXIT_FAILED if report.failed else 0
