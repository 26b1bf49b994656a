"""Issue 14's reproductions: every malformed input a named error, bounded plans, finite
values, Eq. 6 at large absolute times, temp files cleaned up, profile updates locked."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched import _capacity, _core
from learnsched._atomic import atomic_write, atomic_write_text, remove_stale_temps
from learnsched.capacity import RateProfile, Trace, check_feasibility, lend
from learnsched.cli import main

from conftest import dead_pid


def small() -> ls.Scenario:
    return ls.Scenario(
        windows=((0.0, 80.0), (100.0, 180.0)),
        work_quanta=6,
        quantum_s=5.0,
        benefit_rate=0.25,
        horizon_s=1000.0,
        costs=ls.HandoffCosts(recovery_s=10.0, save_s=0.1, load_s=0.1),
    )


# --- CLI: nesting depth, one line, exit 2 -------------------------------------------


def test_solve_on_deeply_nested_json_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 1000 + "]" * 1000)
    assert main(["solve", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "RecursionError" not in err
    assert len(err.strip().splitlines()) == 1
    assert "nesting depth 1000 exceeds the limit of 32" in err


def test_solve_refuses_moderate_nesting_and_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 40 + "]" * 40)
    assert main(["solve", str(path)]) == 2
    assert "nesting depth 40" in capsys.readouterr().err
    data = small().to_json()
    path.write_text(json.dumps(data).replace('"horizon_s": 1000.0', '"horizon_s": NaN'))
    assert main(["solve", str(path)]) == 2
    assert "NaN is not standard JSON" in capsys.readouterr().err


# --- solve_batch arguments -------------------------------------------------------------


@pytest.mark.parametrize(
    ("second", "kind"), [(None, "NoneType"), ("json", "dict"), ("core", "Scenario")]
)
def test_solve_batch_names_the_bad_scenario(second: str | None, kind: str) -> None:
    s = small()
    other: object = {None: None, "json": s.to_json(), "core": s.to_core()}[second]
    with pytest.raises(TypeError, match=rf"scenarios\[1\] must be a Scenario, got {kind}"):
        ls.solve_batch([s, other])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"policies": None}, TypeError, "policies must be a policy name or an iterable"),
        ({"policies": ["dp", 3]}, ValueError, r"policies\[1\]: policy must be one of"),
        ({"threads": 2**31}, ValueError, "threads must be <= 1024, got 2147483648"),
        ({"threads": 40_000}, ValueError, "threads must be <= 1024, got 40000"),
        ({"threads": True}, TypeError, "threads must be an integer"),
        ({"threads": 2.0}, TypeError, "threads must be an integer"),
    ],
)
def test_solve_batch_names_bad_arguments(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ls.solve_batch([small()], **kwargs)


def test_solve_batch_scenarios_must_be_a_sequence() -> None:
    with pytest.raises(TypeError, match=r"scenarios must be a sequence of Scenario"):
        ls.solve_batch(small())  # type: ignore[arg-type]


def test_threads_cap_holds_in_the_core_and_results_match() -> None:
    assert ls.batch.MAX_THREADS == _core.finite.MAX_THREADS == 1024
    with pytest.raises(ValueError, match=r"threads must be in \[1, 1024\], got 1025"):
        _core.finite.solve_batch([small().to_core()], [_core.finite.Policy.DP], 1025)
    scenarios = [small()] * 8
    serial = ls.solve_batch(scenarios, threads=1).value
    np.testing.assert_array_equal(serial, ls.solve_batch(scenarios, threads=1024).value)


# --- traces, profiles, lending: huge integers ---------------------------------------


def test_huge_integers_in_arrays_are_named() -> None:
    with pytest.raises(ValueError, match=r"arrival\[0\] must be finite"):
        Trace([10**400], [1.0], [1.0])
    with pytest.raises(ValueError, match=r"rates\[1\] must be finite"):
        RateProfile([0.0, 1.0], [1.0, 10**400])
    capacity = RateProfile.constant(1.0)
    with pytest.raises(ValueError, match=r"share must be finite"):
        lend(capacity, 10**400)
    with pytest.raises(ValueError, match=r"shares\[0\] must be finite"):
        lend(capacity, [10**400])
    with pytest.raises(ValueError, match=r"arrival\[0\] = 1152921504606846977 is not exact"):
        Trace(np.array([2**60 + 1]), [1.0], [2.0**61])


def test_arrays_convert_only_when_lossless() -> None:
    trace = Trace(np.arange(3, dtype=np.int32), np.ones(3, dtype=np.float32), [5, 5, 5])
    assert trace.arrival.dtype == np.float64
    assert list(trace.arrival) == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match=r"work\[1\] must be a number, got True"):
        Trace([0.0, 1.0], [1.0, True], [2.0, 2.0])
    with pytest.raises(TypeError, match=r"work must hold real numbers, got an array of dtype bool"):
        Trace([0.0], np.array([True]), [1.0])
    with pytest.raises(TypeError, match=r"dtype timedelta64"):
        Trace(np.array([1], dtype="m8[s]"), [1.0], [2.0])
    with pytest.raises(TypeError, match=r"dtype complex128"):
        Trace([1j], [1.0], [2.0])
    with pytest.raises(TypeError, match=r"arrival must be a sequence of numbers, got bytes"):
        Trace(b"\x00" * 8, [1.0], [2.0])


# --- the private kernels ---------------------------------------------------------------


def kernel_args() -> list[Any]:
    arrival = np.array([0.0, 1.0])
    return [
        arrival,
        np.ones(2),
        arrival + 2.0,
        np.zeros(1),
        np.ones(1),
        np.zeros(1),
        0.0,
        np.empty(2),
    ]


def test_kernels_convert_lossless_inputs() -> None:
    args = kernel_args()
    assert _capacity.feasibility_scan(*args) == -1
    expected = args[7].copy()
    args[0] = [0, 1]  # a list of ints
    args[1] = np.ones(4)[::2]  # strided
    args[2] = np.array([2.0, 3.0], dtype=np.float32)
    args[6] = np.float32(0.0)
    assert _capacity.feasibility_scan(*args) == -1
    np.testing.assert_array_equal(args[7], expected)


@pytest.mark.parametrize(
    ("index", "value", "error", "message"),
    [
        (0, b"\x00" * 16, TypeError, "arrival must be a sequence of numbers, got bytes"),
        (1, np.array([True, False]), TypeError, "work must hold real numbers"),
        (2, np.ones((2, 1)), ValueError, r"deadline must be one-dimensional, got shape \(2, 1\)"),
        (3, None, TypeError, "starts must be a sequence of numbers, got NoneType"),
        (4, np.array([2**62]), ValueError, r"rates\[0\] = 4611686018427387904 is not exact"),
        (5, ["x"], TypeError, "cum must hold real numbers"),
        (6, "0", TypeError, "tolerance must be a number, got '0'"),
        (6, True, TypeError, "tolerance must be a number, got True"),
        (6, 10**400, ValueError, "tolerance must be finite"),
        (7, np.empty(2, dtype=np.float32), TypeError, "slack must be a writable, 1-D"),
        (7, np.empty(4)[::2], TypeError, "slack must be a writable, 1-D"),
        (7, [0.0, 0.0], TypeError, "slack must be a writable, 1-D"),
    ],
)
def test_kernel_errors_name_the_argument(
    index: int, value: object, error: type[Exception], message: str
) -> None:
    args = kernel_args()
    args[index] = value
    with pytest.raises(error, match=message):
        _capacity.feasibility_scan(*args)


def test_read_only_output_and_other_kernels_are_named() -> None:
    args = kernel_args()
    args[7].flags.writeable = False
    with pytest.raises(TypeError, match=r"slack must be a writable"):
        _capacity.feasibility_scan(*args)
    with pytest.raises(TypeError, match=r"out must be a writable, 1-D, C-contiguous intp"):
        _capacity.tail_counts(np.ones(2), np.ones(2), np.empty(2))
    with pytest.raises(TypeError, match=r"best must be a number, got None"):
        _capacity.scan_window(*kernel_args()[:6], 0.0, None, np.empty(2))
    trace = ls.capacity.burst_trace()
    replay = [
        trace.arrival,
        trace.work,
        trace.work,
        np.zeros(1),
        np.ones(1),
        np.zeros(1),
        0.0,
        1.0,
        1.0,
        0.5,
        0.1,
        0.5,
        0.0,
        1.0,
        10.0,
        1.0,
        2**40,
        0.0,
        0.0,
        np.full(len(trace), np.inf),
        np.empty(40),
    ]
    with pytest.raises(ValueError, match=r"admission_kind must be 0, 1 or 2, got 1099511627776"):
        _capacity.replay(*replay)
    replay[16] = 0.0
    with pytest.raises(TypeError, match=r"admission_kind must be an integer, got 0.0"):
        _capacity.replay(*replay)


# --- numpy scalar kinds in scenarios -----------------------------------------------


def test_timedelta64_is_not_an_integer_or_a_number() -> None:
    with pytest.raises(TypeError, match=r"work_quanta must be an integer, got"):
        ls.Scenario(**{**_fields(small()), "work_quanta": np.timedelta64(6, "s")})
    with pytest.raises(TypeError, match=r"recovery_s must be a number"):
        ls.HandoffCosts(recovery_s=np.timedelta64(10, "s"))
    with pytest.raises(TypeError, match=r"initial.progress must be an integer"):
        ls.InitialState(progress=np.timedelta64(0, "s"))


def _fields(s: ls.Scenario) -> dict[str, Any]:
    return {
        "windows": s.windows,
        "work_quanta": s.work_quanta,
        "quantum_s": s.quantum_s,
        "benefit_rate": s.benefit_rate,
        "horizon_s": s.horizon_s,
        "costs": s.costs,
        "initial": s.initial,
    }


def test_scenario_keeps_python_types() -> None:
    s = ls.Scenario(
        windows=np.array([[0.0, 80.0]], dtype=np.float32),
        work_quanta=np.int16(6),
        quantum_s=np.int64(5),
        benefit_rate=np.float32(0.25),
        horizon_s=np.uint32(1000),
        costs=ls.HandoffCosts(recovery_s=np.int8(10), residency_rate=np.float16(0.5)),
        initial=ls.InitialState(np.int32(0), np.int64(0), np.bool_(False)),
    )
    assert type(s.work_quanta) is int
    assert all(type(v) is float for v in (s.quantum_s, s.benefit_rate, s.horizon_s))
    assert all(type(t) is float for w in s.windows for t in w)
    assert type(s.costs.recovery_s) is float
    assert type(s.costs.residency_rate) is float
    assert type(s.initial.progress) is int
    assert type(s.initial.active) is bool
    assert json.loads(json.dumps(s.to_json())) == s.to_json()


def test_overflow_blames_residency_rate_when_it_is_the_cause() -> None:
    costs = ls.HandoffCosts(recovery_s=10.0, residency_rate=1e307)
    with pytest.raises(ValueError, match=r"residency_rate 1e\+307 x the longest segment"):
        small().with_costs(costs)
    with pytest.raises(ValueError, match=r"work_quanta x quantum_s plus the handoff costs"):
        ls.Scenario(**{**_fields(small()), "quantum_s": 1e307, "windows": ((0.0, 1e307),)})


# --- Model.decide and the value calls ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0, 0, 0, None), TypeError, "active must be true or false, got None"),
        ((0, 0, 0, 2), TypeError, "active must be true or false, got 2"),
        ((True, True, True), TypeError, "window must be an integer, got True"),
        ((0, 0.0, 0), TypeError, "progress must be an integer, got 0.0"),
        ((0, 0, 2**40), ValueError, "durable must be <= 2147483647, got 1099511627776"),
        ((0, 10**5000, 0), ValueError, "progress must be <= 2147483647, got an integer of"),
        (("0", 0, 0), TypeError, "window must be an integer, got '0'"),
    ],
)
def test_decide_and_values_name_bad_state_fields(
    args: tuple[object, ...], error: type[Exception], message: str
) -> None:
    model = ls.Model(small())
    with pytest.raises(error, match=message):
        model.decide(*args)  # type: ignore[arg-type]
    for value in (model.optimal_value, model.reference_value, model.window_plan_value):
        with pytest.raises(error, match=message):
            value(*args)  # type: ignore[arg-type]


def test_decide_accepts_numpy_integers_and_bools() -> None:
    model = ls.Model(small())
    expected = model.decide(0, 0, 0, False)
    assert model.decide(np.int64(0), np.int32(0), np.uint8(0), np.bool_(False)) == expected
    assert model.optimal_value(np.int64(0), 0, 0) == model.optimal_value(0, 0, 0)


def test_core_bindings_take_only_true_or_false_as_flags() -> None:
    with pytest.raises(TypeError):
        _core.finite.State(0, 0, 0, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.finite.State(0, 0, 0, 2)  # type: ignore[arg-type]
    model = _core.finite.Model(small().to_core())
    with pytest.raises(TypeError):
        model.decide(0, 0, 0, 1, _core.finite.Policy.DP)  # type: ignore[arg-type]


# --- one association for time sums -------------------------------------------------


def test_publish_is_never_after_ready() -> None:
    # (0.1 + 0.2) + 0.3 = 0.6000000000000001 > 0.1 + (0.2 + 0.3) = 0.6: the old sums.
    s = ls.Scenario(
        windows=((0.1, 10.0),),
        work_quanta=2,
        quantum_s=0.3,
        benefit_rate=1.0,
        horizon_s=100.0,
        costs=ls.HandoffCosts(recovery_s=0.0, load_s=0.2),
        initial=ls.InitialState(progress=1, durable=1),
    )
    step = ls.solve(s, "window").steps[0]
    assert step.action == "publish"
    assert step.publish_s is not None
    assert step.ready_s is not None
    assert step.publish_s <= step.ready_s
    assert step.publish_s == 0.1 + (0.2 + 0.3)


# --- plan-level magnitude bounds and standard JSON ----------------------------------


def huge(windows: int, scale: float, residency_rate: float = 0.5) -> ls.Scenario:
    return ls.Scenario(
        windows=tuple((2 * k * scale, (2 * k + 1) * scale) for k in range(windows)),
        work_quanta=10,
        quantum_s=scale / 10,
        benefit_rate=1.0,
        horizon_s=2 * windows * scale,
        costs=ls.HandoffCosts(recovery_s=0.0, residency_rate=residency_rate),
    )


def test_plans_near_1e307_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match=r"windows\[1\] is too far from time 0"):
        huge(8, 1e307)
    # Every window and segment is representable, but 64 segment costs are not.
    with pytest.raises(ValueError, match=r"windows x the longest segment's cost overflows"):
        huge(64, 1e300, residency_rate=1e6)
    with pytest.raises(ValueError, match=r"benefit_rate x .* overflows"):
        ls.Scenario(**{**_fields(huge(1, 1e306)), "horizon_s": 1e308})


def test_accepted_magnitudes_give_finite_plans_and_standard_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = huge(8, 1e300)
    model = ls.Model(s)
    for plan in model.solve_all().values():
        assert math.isfinite(plan.value)
        assert math.isfinite(plan.cost.total)
    assert math.isfinite(model.optimal_value(0, 0, 0))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(s.to_json()))
    assert main(["solve", str(path), "--json"]) == 0

    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    json.loads(capsys.readouterr().out, parse_constant=refuse)


# --- Eq. 6 at large absolute times ----------------------------------------------------


@pytest.mark.parametrize("origin", [0.0, 1.7e9, 1e12, 1e16, 1e18])
def test_feasibility_does_not_depend_on_the_time_origin(origin: float) -> None:
    capacity = RateProfile.constant(1.0)
    due_now = Trace([origin], [1.0], [origin])  # d == a with work: always late
    assert not check_feasibility(due_now, capacity).feasible
    if origin <= 1e12:  # sub-second gaps are representable at these times
        fits = Trace([origin, origin + 0.5], [1.0, 1.0], [origin + 1.0, origin + 2.0])
        assert check_feasibility(fits, capacity).feasible
        late = Trace([origin, origin + 0.5], [1.0, 1.0], [origin + 1.0, origin + 1.75])
        check = check_feasibility(late, capacity)
        assert check.first_violation == 1
        assert check.slack[1] == pytest.approx(-0.25, abs=1e-6)


def test_feasibility_across_rate_segments_at_epoch_times() -> None:
    epoch = 1.7e9
    capacity = RateProfile([epoch, epoch + 10.0], [1.0, 2.0])
    trace = Trace([epoch + 8.0, epoch + 9.0], [2.0, 3.0], [epoch + 10.0, epoch + 11.0])
    check = check_feasibility(trace, capacity)
    # Service on [epoch+8, epoch+11] is 2 + 2*1 = 4 < 5: the second is late by 1.
    assert check.slack[1] == pytest.approx(-1.0, abs=1e-6)
    assert check.slack[0] == pytest.approx(0.0, abs=1e-6)


# --- bounded plans ---------------------------------------------------------------------


def test_plan_length_is_bounded() -> None:
    """K = 2^23, J = 1 is refused up front (it took 115 s and 10 GiB to solve)."""
    assert _core.finite.MAX_WINDOWS == 2**17
    many = np.broadcast_to([0.0, 1.0], (2**23, 2))  # a view: no 2^23 windows in memory
    with pytest.raises(ValueError, match="windows must hold at most 131072 windows, got 8388608"):
        ls.Scenario(**{**_fields(small()), "windows": many, "work_quanta": 1})
    windows = [(2.0 * k, 2.0 * k + 1.0) for k in range(2**17 + 1)]
    costs = _core.finite.HandoffCosts(0.1, 0.0, 0.0, 0.0)
    core = _core.finite.Scenario(windows, 1, 0.5, 1.0, 1e8, costs, _core.finite.State(0, 0, 0, False))
    with pytest.raises(ValueError, match="windows must hold at most 131072 windows, got 131073"):
        _core.finite.Model(core)


# --- atomic writes: temp files, kill -9, exit -------------------------------------------


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_temp_names_carry_the_pid_and_stale_ones_go(tmp_path: Path) -> None:
    stale = tmp_path / f".result.csv.learnsched-{dead_pid()}-0123abcd0123abcd.tmp"
    stale.write_bytes(b"partial")
    live = tmp_path / f".result.csv.learnsched-{os.getpid()}-0123abcd0123abcd.tmp"
    live.write_bytes(b"being written")
    other = tmp_path / ".notes.tmp"  # not our pattern: never touched
    other.write_bytes(b"x")
    seen: list[str] = []
    atomic_write(tmp_path / "out.txt", lambda f: seen.extend(temps(tmp_path)))
    assert any(f".out.txt.learnsched-{os.getpid()}-" in name for name in seen)
    assert not stale.exists()
    assert live.exists()
    assert other.exists()
    assert remove_stale_temps(tmp_path) == 0
    live.unlink()


def test_kill_9_leftovers_are_removed_by_the_next_write(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import time
        from learnsched._atomic import atomic_write
        def slow(f):
            f.write(b"x" * 4096)
            print("writing", flush=True)
            time.sleep(60)
        atomic_write({str(tmp_path / "trace.csv")!r}, slow)
        """
    )
    for _ in range(3):  # each writer removes the temp its killed predecessor left
        with subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path
        ) as child:
            assert child.stdout is not None
            assert child.stdout.readline() == "writing\n"
            child.send_signal(signal.SIGKILL)
        assert len(temps(tmp_path)) == 1
    atomic_write_text(tmp_path / "trace.csv", "arrival,work,deadline\n")
    assert temps(tmp_path) == []


def test_open_writes_are_removed_at_exit(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import threading, time
        from learnsched._atomic import atomic_write
        started = threading.Event()
        def slow(f):
            started.set()
            time.sleep(60)
        threading.Thread(target=atomic_write, args=({str(tmp_path / "a.bin")!r}, slow),
                         daemon=True).start()
        started.wait()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60, cwd=tmp_path)
    assert temps(tmp_path) == []


# --- profile updates under a lock, from two real processes -----------------------------


def test_two_processes_updating_one_profile_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    names = sorted(ls.handoff.profile.QUANTITIES)
    units = ls.handoff.profile.QUANTITIES
    script = textwrap.dedent(
        """
        import sys
        from learnsched.handoff.profile import CostProfile, Measurement, update_cost_profile
        path, names, units = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
        for rounds in range(4):
            for name, unit in zip(names, units):
                m = Measurement(mean=1.0 + rounds, unit=unit)
                update_cost_profile(path, CostProfile(measurements={name: m}))
        """
    )
    halves = [names[0::2], names[1::2]]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), ",".join(h), ",".join(units[n] for n in h)],
            cwd=tmp_path,
        )
        for h in halves
    ]
    assert [child.wait(timeout=300) for child in children] == [0, 0]
    profile = ls.handoff.load_cost_profile(path)
    assert sorted(profile.measurements) == names
    assert all(m.mean == 4.0 for m in profile.measurements.values())
