"""Measure your own handoff costs and feed them to the solver.

Three steps, each the same command you would run next to a real engine:

1. ``learnsched probe recovery``: cold start and warm resume of a serving engine. Here
   the engine is the simulated one (``python -m learnsched.testing.engine``), which
   serves SGLang's routes on loopback and holds real memory; point ``--url`` and
   ``--launch`` at your SGLang or vLLM server instead.
2. ``learnsched probe lora --device cpu``: LoRA checkpoint save and load (the paper's
   adapter shape, here on the CPU; ``--device cuda`` on a GPU). It needs the ``gpu``
   extra (torch, safetensors, peft); without it the probe exits 3 naming what to
   install, and the paper's figures stand in for these two costs.
3. Python: read the profile, fill what was not measured from the paper's, and plan.

Run: ``python examples/measure_handoff_costs.py [OUT_DIR]`` (a few seconds; no GPU or
network needed).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import learnsched as ls
from learnsched import handoff
from learnsched.testing import free_port


def probe(*argv: str) -> int:
    """Run ``learnsched probe ARGV`` (its output is shown as it runs); its exit status."""
    sys.stdout.flush()
    command = [sys.executable, "-m", "learnsched", "probe", *argv]
    return subprocess.run(command, check=False).returncode


def main(out_dir: Path) -> None:
    profile_path = out_dir / "profile.json"
    port = free_port()
    engine = [
        sys.executable, "-m", "learnsched.testing.engine", "--dialect", "sglang",
        "--port", str(port), "--weights-mib", "16", "--kv-mib", "16",
    ]  # fmt: skip
    status = probe(
        "recovery",
        "--engine=sglang",
        f"--url=http://127.0.0.1:{port}",
        f"--launch={shlex.join(engine)}",
        "--warm-runs=2",
        "--parked-s=0.05",
        f"--ledger={out_dir / 'handoffs.jsonl'}",
        f"--out={profile_path}",
    )
    if status != 0:
        raise SystemExit(f"the recovery probe failed (exit {status})")
    status = probe("lora", "--device=cpu", "--runs=3", f"--out={profile_path}")
    if status == 3:
        print("(no gpu extra: the paper's checkpoint save/load costs stand in)")
    elif status != 0:
        raise SystemExit(f"the LoRA probe failed (exit {status})")

    measured = handoff.load_cost_profile(profile_path)
    profile = measured.filled_from(handoff.PAPER_PROFILE)  # what was not measured
    # No NVML watches the simulated engine, so no park here was seen freeing memory: the
    # warm figures are flagged unconfirmed, and planning with them must be asked for.
    print(f"unconfirmed: {', '.join(profile.unconfirmed())}")
    costs = {
        recovery: profile.handoff_costs(recovery, accept_unconfirmed=True)
        for recovery in ("warm", "cold")
    }
    for recovery, cost in costs.items():
        print(f"{recovery}: {cost}")
    grid = ls.paper_grid(costs=costs)  # the paper's 1920 scenarios, with these costs
    summary = ls.summarize(grid, ls.solve_batch(grid.batch))
    print(
        f"paper grid with these costs: rollout {summary.mean_value['rollout']:.3f} s-eq. "
        f"mean, {summary.wins} wins / {summary.ties} ties / {summary.losses} losses "
        "against costed_window"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as folder:
            main(Path(folder))
