"""``learnsched run``'s configuration: ``--config FILE.toml`` (the long flag list from a
file), and the typed :class:`learnsched.control.RunConfig` that the command line, the file
and Python programs share (:func:`learnsched.control.build_run`)."""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from learnsched.cli import build_parser, main
from learnsched.control import RunConfig, build_run
from learnsched.gate.limits import GateLimits
from learnsched.serving.ledger import read_ledger
from learnsched.testing import EngineConfig, EngineProcess, SimulatedEngine

from conftest import one_line, run
from control_support import COUNTING
from engine_support import strict_config


def write_config(folder: Path, url: str, **extra: object) -> Path:
    (folder / "calendar.json").write_text(json.dumps({"windows": [[0.2, 2.0], [3.0, 60.0]]}))
    lines = [
        'engine = "vllm"', f'url = "{url}"', f'trainer = "{COUNTING}"',
        f'calendar = "{folder / "calendar.json"}"', f'ledger = "{folder / "ledger.jsonl"}"',
        f'state-dir = "{folder / "state"}"', "recovery_s = 0.2", "seconds = 1.2",
        "[trainer-options]", "work_quanta = 1000", "quantum_s = 0.02",
    ]  # fmt: skip
    top = [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    path = folder / "run.toml"
    path.write_text("\n".join(top + lines) + "\n")
    return path


def test_a_run_from_a_config_file(tmp_path: Path) -> None:
    with SimulatedEngine(EngineConfig("vllm", token_s=0.001)) as engine:
        config = write_config(tmp_path, engine.url, policy="dp")
        assert main(["run", "--config", str(config)]) == 0
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert any(r.kind == "return" for r in records)
    start = next(r for r in records if r.kind == "trainer-ready")
    assert start.detail["work_quanta"] == 1000


def test_the_command_line_wins_over_the_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9", lookahead=8)
    parser = build_parser(["run"])
    args = parser.parse_args(["run", "--config", str(config), "--lookahead", "16", "--json"])
    args = args.config_flags.resolve(args)
    assert args.lookahead == 16  # given: wins
    assert args.recovery_s == 0.2  # from the file
    assert args.timeout == 60.0  # neither: the default
    assert args.ledger == tmp_path / "ledger.jsonl"  # a Path, as the flag parses it
    assert json.loads(args.trainer_options) == {"work_quanta": 1000, "quantum_s": 0.02}
    assert args.json is True


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("engin = 'vllm'", "engin: not a flag of this command"),
        ("engine = 'tgi'", "engine must be one of vllm, sglang, got 'tgi'"),
        ("lookahead = 1.5", "lookahead must be an integer, got 1.5"),
        ("json = 1", "json must be true or false, got 1"),
        ("timeout = [1, 2]", "timeout must be a string or a number"),
        ("timeout = 'soon'", "timeout: could not convert string to float"),
        ("this is not toml", "not TOML"),
    ],
)
def test_a_bad_config_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    config = tmp_path / "run.toml"
    config.write_text(line + "\n")
    assert main(["run", "--config", str(config), "--engine", "vllm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]


def test_required_flags_may_come_from_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--engine", "vllm"]) == 2
    err = capsys.readouterr().err
    assert "--url, --calendar, --ledger, --state-dir required" in err
    assert "(on the command line or in --config)" in err
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "the serving engine (required, here or in --config)" in shown
    assert "plan each decision over the next K windows (default 64)" in shown


def test_a_repeatable_flag_from_the_file(tmp_path: Path) -> None:
    """``--trainer`` may be given once per job: in the file a string or a list."""
    config = tmp_path / "run.toml"
    config.write_text('trainer = ["a:A", "b:B"]\n')
    parser = build_parser(["run"])
    args = parser.parse_args(["run", "--config", str(config)])
    assert args.config_flags._values({"trainer": ["a:A", "b:B"]}, config)["trainer"] == [
        "a:A", "b:B"
    ]  # fmt: skip
    given = parser.parse_args(["run", "--config", str(config), "--trainer", "c:C"])
    with pytest.raises(ValueError, match="required"):
        given.config_flags.resolve(given)  # --url etc. missing, but the flag won:
    assert given.trainer == ["c:C"]


def config_from(argv: list[str]) -> RunConfig:
    """The :class:`RunConfig` of ``learnsched run ARGV``."""
    args = build_parser(["run"]).parse_args(["run", *argv])
    return RunConfig.from_args(args.config_flags.resolve(args))


def test_the_command_line_and_the_file_make_one_config(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "http://127.0.0.1:9", policy="dp", lookahead=8, timeout=5, gate="7000"
    )
    flags = [
        "--engine", "vllm", "--url", "http://127.0.0.1:9", "--trainer", COUNTING,
        "--calendar", str(tmp_path / "calendar.json"), "--ledger", str(tmp_path / "ledger.jsonl"),
        "--state-dir", str(tmp_path / "state"), "--recovery-s", "0.2", "--seconds", "1.2",
        "--trainer-options", json.dumps({"work_quanta": 1000, "quantum_s": 0.02}),
        "--policy", "dp", "--lookahead", "8", "--timeout", "5", "--gate", "7000",
    ]  # fmt: skip
    from_file = config_from(["--config", str(path)])
    assert config_from(flags) == from_file
    assert from_file == RunConfig(
        engine="vllm",
        url="http://127.0.0.1:9",
        calendar=str(tmp_path / "calendar.json"),
        ledger=tmp_path / "ledger.jsonl",
        state_dir=tmp_path / "state",
        trainers=(COUNTING,),
        trainer_options={"work_quanta": 1000, "quantum_s": 0.02},
        policy="dp",
        recovery_s=0.2,
        until_s=1.2,
        lookahead_windows=8,
        timeout_s=5.0,
        gate=("127.0.0.1", 7000),
    )


def test_from_args_refuses_as_learnsched_run_does(tmp_path: Path) -> None:
    base = ["--engine", "vllm", "--url", "http://127.0.0.1:9", "--calendar", "c.json",
            "--ledger", str(tmp_path / "l.jsonl"), "--state-dir", str(tmp_path)]  # fmt: skip
    with pytest.raises(ValueError, match="give --trainer MODULE:CLASS"):
        config_from(base)
    with pytest.raises(TypeError, match="--trainer-options must be a JSON object"):
        config_from([*base, "--trainer", COUNTING, "--trainer-options", "[1]"])


def test_build_run_runs_the_scheduler_from_python(tmp_path: Path) -> None:
    """The scheduler as ``learnsched run`` assembles it, from Python, next to a strict
    simulated engine: it lends the windows and returns the engine."""
    (tmp_path / "calendar.json").write_text(json.dumps({"windows": [[0.2, 2.0], [3.0, 60.0]]}))
    with EngineProcess(strict_config("vllm"), lifetime_s=120.0) as engine:
        config = RunConfig(
            engine="vllm",
            url=engine.url,
            calendar=tmp_path / "calendar.json",
            ledger=tmp_path / "ledger.jsonl",
            state_dir=tmp_path / "state",
            trainers=(COUNTING,),
            trainer_options={"work_quanta": 1000, "quantum_s": 0.02},
            recovery_s=0.2,
            until_s=1.2,
        )
        run = build_run(config)
        assert run.loop is not None
        assert run.queue is None
        lines: list[str] = []
        summary = run.run(lines.append)
        assert engine.alive(), engine.stderr_text()
    assert lines == []  # no gate, arrival server or metrics asked for
    assert summary["ledger"] == str(tmp_path / "ledger.jsonl")
    assert summary["handoffs"] >= 1
    records = read_ledger(tmp_path / "ledger.jsonl")
    assert [r.kind for r in records].count("park") == [r.kind for r in records].count("return")
    start = next(r for r in records if r.kind == "trainer-ready")
    assert start.detail["work_quanta"] == 1000


def test_build_run_refuses_what_learnsched_run_refuses(tmp_path: Path) -> None:
    (tmp_path / "calendar.json").write_text(json.dumps({"windows": [[0.2, 2.0]]}))
    good = RunConfig(
        engine="vllm", url="http://127.0.0.1:9", calendar=tmp_path / "calendar.json",
        ledger=tmp_path / "ledger.jsonl", state_dir=tmp_path / "state", trainers=(COUNTING,),
    )  # fmt: skip
    for change, message in [
        ({"trainers": ()}, "give --trainer MODULE:CLASS"),
        ({"ledger": tmp_path / "none" / "l.jsonl"}, "folder .* does not exist"),
        ({"forecast": "causal"}, "give --history TRACE.csv"),
        ({"drain_s": 0.0}, "--drain-s must be positive, got 0.0"),
        ({"max_held": -1}, "--max-held must be at least 0, got -1"),
        ({"lookahead_windows": 0}, "--lookahead/--lookahead-cover"),
        ({"trainers": (COUNTING, COUNTING), "metrics_port": ("127.0.0.1", 0)}, "--metrics-port"),
        ({"attach": "http://127.0.0.1:9", "gate": ("127.0.0.1", 0)}, "--attach and --gate"),
        ({"attach": "http://127.0.0.1:9", "max_held": 5}, "--max-held is the attached gate's"),
        (
            {"attach": "http://127.0.0.1:9", "gate_limits": GateLimits(max_connections=8)},
            "the gate's bounds .* are the attached gate's own",
        ),
        ({"attach": "127.0.0.1:9"}, "--attach must be http://HOST:PORT, got '127.0.0.1:9'"),
        ({"attach": "https://127.0.0.1:9"}, "--attach must be http://HOST:PORT"),
    ]:
        with pytest.raises(ValueError, match=message):
            build_run(replace(good, **change))  # type: ignore[arg-type]


# --- the reader -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (codecs.BOM_UTF8 + b'engine = "vllm"\nbogus = 1\n', "bogus: not a flag of this command"),
        (b'engine = "\xff"\n', r"line 1: not UTF-8 text \(byte 0xff at offset 10"),
        # RecursionError under the default limit; parsed (then refused by key) where a
        # test runner raised it: named either way.
        (
            b"engine = " + b"[" * 5000 + b"]" * 5000 + b"\n",
            "nested too deeply to read|engine must be",
        ),
    ],
)
def test_run_config_is_read_by_the_one_reader(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes, message: str
) -> None:
    """``run --config`` goes through the one reader: a BOM is skipped, and a bad byte or deep
    nesting is one line naming the file (tomllib alone says "not TOML" to a BOM, names no
    file, and may raise RecursionError)."""
    config = tmp_path / "c.toml"
    config.write_bytes(data)
    status, _, err = run(capsys, "run", "--config", str(config))
    assert status == 2
    line = one_line(err)
    assert line.startswith("learnsched run: error: "), line
    assert re.search(message, line), line
    assert str(config) in line


def costs_from(argv: list[str]) -> RunConfig:
    """:func:`config_from`, with ``--costs PROFILE`` resolved as ``learnsched run`` does."""
    from learnsched.cli.control import _handoff_costs

    args = build_parser(["run"]).parse_args(["run", *argv])
    return RunConfig.from_args(_handoff_costs(args.config_flags.resolve(args)))


def test_a_probes_profile_gives_the_run_its_costs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from learnsched.handoff import PAPER_PROFILE, CostProfile, Measurement

    profile = tmp_path / "profile.json"
    CostProfile(
        measurements={
            "warm_recovery_s": Measurement.of((0.25, 0.35), "s"),
            "host_pss_awake_gib": Measurement.of((4.0,), "GiB"),
            "host_pss_parked_gib": Measurement.of((6.0,), "GiB"),
            "checkpoint_save_s": Measurement.of((0.04,), "s"),
        }
    ).write(profile)
    (tmp_path / "calendar.json").write_text(json.dumps({"windows": [[0.2, 2.0]]}))
    base = [
        "--engine", "vllm", "--url", "http://127.0.0.1:9", "--trainer", COUNTING,
        "--calendar", str(tmp_path / "calendar.json"), "--ledger", str(tmp_path / "l.jsonl"),
        "--state-dir", str(tmp_path / "state"),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="no checkpoint_load_s; measure it with `learnsched"):
        costs_from([*base, "--costs", str(profile)])
    config = costs_from([*base, "--costs", str(profile), "--base", "paper"])
    assert "checkpoint_load_s from paper" in capsys.readouterr().err
    assert config.recovery_s == pytest.approx(0.3)
    assert config.residency_rate == pytest.approx(2.0 * 0.01)
    assert config.save_s == 0.04
    assert config.load_s == PAPER_PROFILE.mean("checkpoint_load_s")


def test_the_profile_and_the_flags_do_not_both_give_the_return_path(tmp_path: Path) -> None:
    from learnsched.handoff import PAPER_PROFILE

    profile = tmp_path / "paper.json"
    PAPER_PROFILE.write(profile)
    path = write_config(tmp_path, "http://127.0.0.1:9")
    # The file's recovery_s is a flag too: the profile and it cannot both give it.
    with pytest.raises(ValueError, match="gives the return path and residency: drop --recovery-s"):
        costs_from(["--config", str(path), "--costs", str(profile)])
    unset = costs_from(["--config", str(path)])  # no --costs: the flags, the trainer's timings
    assert (unset.recovery_s, unset.residency_rate) == (0.2, RunConfig.residency_rate)
    assert (unset.save_s, unset.load_s) == (None, None)
