"""``learnsched run --config FILE.toml``: the long flag list from a file (issue 26, 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from learnsched.cli import build_parser, main
from learnsched.serving.ledger import read_ledger
from learnsched.testing import EngineConfig, SimulatedEngine

from control_support import COUNTING


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
