"""A parameter sweep on Ray: the paper's grid at five cold-recovery times.

``learnsched.sweep.sweep`` solves every base scenario at every point of a grid of
parameters and writes one row per (point, scenario). With ``backend="ray"`` each chunk of
rows is a Ray task, on a local Ray started for the run or on a cluster (``address=``):
the rows are identical, bit for bit, to the threads' (``backend="local"``). The output
is resumable: a rerun with the same SPEC solves only the chunks a killed run left.

Needs the ``ray`` extra (``pip install "learnsched[ray]"``: ray and pyarrow); without it
the script says so and exits 0 after running the same sweep on threads.

Run: ``python examples/sweep_on_ray.py [OUT_DIR]`` (a few seconds on threads; Ray's
start adds 10-30 s).
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from learnsched.sweep import PointSummary, sweep

SPEC = {
    "base": "paper_grid",
    "vary": {"cold_recovery_s": [0, 20, 40, 69.988, 120]},
    "policies": ["costed_window", "rollout"],
}


def report(title: str, summaries: Sequence[PointSummary]) -> None:
    print(title)
    print(f"{'cold recovery s':>16} {'invalid':>8} {'costed_window':>14} {'rollout':>9}  w/t/l")
    for s in summaries:
        ((_, cold_s),) = s.params
        means = s.mean_value
        print(
            f"{cold_s:>16g} {s.invalid:>8} {means['costed_window']:>14.3f} "
            f"{means['rollout']:>9.3f}  {s.wins}/{s.ties}/{s.losses}"
        )


def main(folder: Path) -> None:
    local = sweep(SPEC, folder / "cold-local.csv", backend="local", workers=2, progress=False)
    report(f"threads: {len(local.rows)} rows in {local.seconds:.2f} s", local.summaries)
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("pyarrow") is None:
        print('skipped the Ray run: needs ray and pyarrow (pip install "learnsched[ray]")')
        return
    on_ray = sweep(SPEC, folder / "cold-ray.parquet", backend="ray", workers=2, progress=False)
    report(f"Ray: {len(on_ray.rows)} rows in {on_ray.seconds:.2f} s", on_ray.summaries)
    if on_ray.summaries != local.summaries:
        raise SystemExit("Ray and threads disagree")
    print("Ray's rows summarise exactly as the threads'")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
