"""bench/guard.py, the CI benchmark guard: a path slower than its ceiling fails, naming the
case and its ratio; one within passes. Fast: synthetic cases of a few milliseconds, no
learnsched benchmark is run here (CI's bench step runs the real cases)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

GUARD = Path(__file__).resolve().parent.parent / "bench" / "guard.py"


@pytest.fixture(scope="module")
def guard() -> ModuleType:
    spec = importlib.util.spec_from_file_location("learnsched_bench_guard", GUARD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defined
    saved = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved  # the guard adds bench/ and tests/ for its own cases
        del sys.modules[spec.name]
    return module


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def _case(guard: ModuleType, name: str, path_n: int, ceiling: float) -> object:
    def prepare() -> object:
        return guard.Pair(lambda: _spin(path_n), lambda: _spin(2000), 20)

    return guard.Case(name, "2000 additions", ceiling, prepare)


def test_a_path_slower_than_its_ceiling_fails_with_its_name_and_ratio(
    guard: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    # Fixed measurements: the verdict is the guard's arithmetic, not this machine's load.
    slow = guard.Measured("eight times the floor", "2000 additions", 8e-4, 1e-4, 2.0)
    fine = guard.Measured("the floor itself", "2000 additions", 1.2e-4, 1e-4, 2.0)
    edge = guard.Measured("at its ceiling", "2000 additions", 2e-4, 1e-4, 2.0)
    assert guard.report([slow, fine, edge], tolerance=1.0) == 1
    out = capsys.readouterr().out
    assert "SLOWER eight times the floor: 8.00x its floor (ceiling 2.00x)" in out
    assert "SLOWER the floor itself" not in out
    assert "SLOWER at its ceiling" not in out  # a ratio equal to its ceiling passes
    assert "guard: 3 cases, 1 slower than their ceilings" in out
    # --tolerance scales every ceiling: 8x passes under a ceiling of 2 x 5.
    assert guard.report([slow, fine, edge], tolerance=5.0) == 0
    assert "SLOWER" not in capsys.readouterr().out


def test_measure_times_the_path_and_its_floor_per_call(guard: ModuleType) -> None:
    # Only orderings no load can flip: eight times the work is slower than the same work.
    slow = guard.measure(_case(guard, "eight times the floor", 16_000, 2.0), rounds=3)
    fine = guard.measure(_case(guard, "the floor itself", 2000, 2.0), rounds=3)
    assert (slow.name, slow.floor, slow.ceiling) == ("eight times the floor", "2000 additions", 2.0)
    assert min(slow.path_s, slow.floor_s, fine.path_s, fine.floor_s) > 0.0
    assert slow.path_s > fine.path_s
    assert slow.ratio > fine.ratio


def test_every_case_has_a_ceiling_above_one_and_a_named_floor(guard: ModuleType) -> None:
    names = [case.name for case in guard.CASES]
    assert len(set(names)) == len(names)
    for case in guard.CASES:
        assert case.ceiling > 1.0
        assert case.floor


def test_an_unknown_case_is_refused_with_the_known_names(
    guard: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        guard.main(["no such case"])
    assert exit_.value.code == 2
    assert "unknown case(s) ['no such case']" in capsys.readouterr().err
