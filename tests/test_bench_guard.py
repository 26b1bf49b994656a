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
    slow = guard.measure(_case(guard, "eight times the floor", 16_000, 2.0), rounds=3)
    fine = guard.measure(_case(guard, "the floor itself", 2000, 2.0), rounds=3)
    assert slow.ratio > 4.0
    assert fine.ratio < 2.0
    assert guard.report([slow, fine], tolerance=1.0) == 1
    out = capsys.readouterr().out
    assert f"SLOWER eight times the floor: {slow.ratio:.2f}x its floor" in out
    assert "SLOWER the floor itself" not in out
    # --tolerance scales every ceiling: 8x passes under a ceiling of 2 x 5.
    assert guard.report([slow, fine], tolerance=5.0) == 0


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
