"""The one summary of ``bench/device_check.sh``: a table of steps and their key figures.

    python bench/device_summary.py OUT_DIR TOTAL_SECONDS

Reads ``OUT_DIR/steps.tsv`` and each step's ``NAME.out`` (the probes' ``--json``
output), writes ``OUT_DIR/summary.json`` and ``OUT_DIR/summary.md`` (a Markdown table
fit for the README) and prints the table. Exit status 1 if a step failed.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any


def _json(path: Path) -> Any:
    """The JSON a step printed, or ``None`` (not run, failed, or not JSON)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _mean(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.fmean(known):.3f} s" if known else "n/a"


def _nvml(report: dict[str, Any]) -> str:
    memory = report["memory"]
    return (
        f"{report['name']} {report['uuid']}, driver {report['driver']}, "
        f"{memory['total'] / 2**30:.1f} GiB total, {memory['free'] / 2**30:.1f} GiB free"
    )


def _lora(report: dict[str, Any]) -> str:
    text = (
        f"{report['adapter_bytes'] / 1e6:.2f} MB: save {report['save_ms']:.3f} ms, "
        f"durable {report['save_durable_ms']:.3f} ms, load {report['load_ms']:.3f} ms"
    )
    if report.get("filesystem"):
        text += f" (checkpoints on {report['filesystem']})"
    return text


def _recovery(runs: list[dict[str, Any]]) -> str:
    warm = [r for r in runs if r["kind"] == "warm"]
    cold = [r for r in runs if r["kind"] == "cold"]
    return (
        f"cold ready {_mean([r['ready_s'] for r in cold])}; warm: release "
        f"{_mean([r['release_s'] for r in warm])}, resume {_mean([r['resume_s'] for r in warm])}, "
        f"ready {_mean([r['ready_s'] for r in warm])} ({len(warm)} runs; "
        f"{', '.join(sorted({str(r['release']) for r in warm}))})"
    )


def _figures(name: str, out: Path) -> str:
    """The key figures of one step's output."""
    data = _json(out / f"{name}.out")
    try:
        if name == "nvml" and data is not None:
            return _nvml(data)
        if name.startswith("lora") and data is not None:
            return _lora(data)
        if name == "gpu-handoff" and data is not None:
            return "; ".join(f"{k}: {v}" for k, v in data.items() if k not in ("device", "torch"))
        if name.startswith("sim-") and isinstance(data, list):
            return _recovery(data)
    except (KeyError, TypeError, ValueError) as err:
        return f"unreadable output ({err!r})"
    text = (out / f"{name}.out").read_text() if (out / f"{name}.out").exists() else ""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _why(name: str, out: Path) -> str:
    """The last line a failed step wrote to its log."""
    log = out / f"{name}.log"
    lines = [line for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    return lines[-1] if lines else "no output"


def main(argv: list[str]) -> int:
    out, total = Path(argv[0]), float(argv[1])
    rows = []
    for line in (out / "steps.tsv").read_text().splitlines()[1:]:
        name, status, seconds = line.split("\t")
        ok = status == "0"
        skipped = status.startswith("skipped") and "out of time" not in status
        figures = _figures(name, out) if ok else (status if skipped else _why(name, out))
        state = "ok" if ok else ("skipped" if skipped else f"FAILED ({status})")
        if not ok and not skipped and not status.isdigit():
            figures = status
        rows.append({"step": name, "status": state, "seconds": int(seconds), "result": figures})
    failed = [r["step"] for r in rows if r["status"].startswith("FAILED")]
    summary = {"total_s": total, "failed": failed, "steps": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    table = ["| step | status | s | result |", "|---|---|---|---|"]
    table += [f"| {r['step']} | {r['status']} | {r['seconds']} | {r['result']} |" for r in rows]
    table.append(f"\nTotal {total:.0f} s; profile: {out / 'profile.json'}")
    (out / "summary.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
