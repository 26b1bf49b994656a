"""The public trace formats: Azure 2024's offsets, BurstGPT's CSV and JSON Lines traces,
each read to the same arrivals and tokens as the same requests in the Azure format, their
bad rows named by line, and told apart by load_trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from learnsched.calendar.traces import (
    TokenTrace,
    load_trace,
    read_azure_trace,
    read_burstgpt_trace,
    read_jsonl_trace,
)
from learnsched.cli import main

# Three requests: seconds from the first, prompt and output tokens (one out of order
# where a test says so).
REQUESTS = [(0.0, 120, 30), (1.25, 4000, 0), (7.5, 55, 900)]


def azure_csv(path: Path, stamps: list[str]) -> Path:
    rows = [f"{s},{p},{o}" for s, (_, p, o) in zip(stamps, REQUESTS, strict=True)]
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path


def burstgpt_csv(
    path: Path, requests: list[tuple[float, int, int]], model: str = "ChatGPT"
) -> Path:
    head = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    rows = [f"{t},{model},{p},{o},{p + o},Conversation log" for t, p, o in requests]
    path.write_text(head + "\n".join(rows) + "\n")
    return path


def jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def assert_requests(trace: TokenTrace) -> None:
    assert trace.arrival.tolist() == [r[0] for r in REQUESTS]
    assert trace.context_tokens.tolist() == [r[1] for r in REQUESTS]
    assert trace.generated_tokens.tolist() == [r[2] for r in REQUESTS]


def test_azure_2024_offsets_are_applied(tmp_path: Path) -> None:
    utc = ["2024-05-10 00:00:00+00:00", "2024-05-10 00:00:01.25+00:00", "2024-05-10 00:00:07.5Z"]
    assert_requests(read_azure_trace(azure_csv(tmp_path / "utc.csv", utc)))
    # The same instants written two hours east of UTC.
    east = [
        "2024-05-10 02:00:00+02:00",
        "2024-05-10 02:00:01.25+0200",
        "2024-05-10T02:00:07.5+02:00",
    ]
    assert_requests(read_azure_trace(azure_csv(tmp_path / "east.csv", east)))
    mixed = ["2024-05-10 00:00:00+00:00", "2024-05-10 00:00:01.25-01:00", "2024-05-10 00:00:07.5"]
    arrival = read_azure_trace(azure_csv(tmp_path / "mixed.csv", mixed), sort=True).arrival
    assert arrival.tolist() == [0.0, 7.5, 3601.25]


def test_burstgpt_reads_the_same_requests_column_by_column_or_row_by_row(tmp_path: Path) -> None:
    shifted = [(t + 3.0, p, o) for t, p, o in REQUESTS]  # its clock starts anywhere
    regular = read_burstgpt_trace(burstgpt_csv(tmp_path / "b.csv", shifted))
    assert_requests(regular)
    # A quoted model name is not a regular file: read row by row, to the same values.
    quoted = read_burstgpt_trace(burstgpt_csv(tmp_path / "q.csv", shifted, '"GPT-4, turbo"'))
    assert_requests(quoted)
    trace = load_trace(tmp_path / "b.csv")
    assert np.all(trace.work > 0)
    assert trace.arrival.tolist() == [r[0] for r in REQUESTS]


@pytest.mark.parametrize("model", ["ChatGPT", '"GPT-4, turbo"'])
def test_burstgpt_bad_rows_are_named(tmp_path: Path, model: str) -> None:
    late = [REQUESTS[0], REQUESTS[2], REQUESTS[1]]
    with pytest.raises(ValueError, match=r"line 4: the timestamp 1.25 is earlier"):
        read_burstgpt_trace(burstgpt_csv(tmp_path / "late.csv", late, model))
    assert read_burstgpt_trace(tmp_path / "late.csv", sort=True).arrival.tolist() == [0, 1.25, 7.5]
    bad = burstgpt_csv(tmp_path / "bad.csv", [REQUESTS[0], (1.0, -4, 2)], model)
    with pytest.raises(ValueError, match=r"line 3: Request tokens must be a finite count >= 0"):
        read_burstgpt_trace(bad)
    text = (tmp_path / "bad.csv").read_text().replace("1.0,", "soon,", 1)
    (tmp_path / "word.csv").write_text(text)
    with pytest.raises(ValueError, match=r"line 3: Timestamp must be a number, got 'soon'"):
        read_burstgpt_trace(tmp_path / "word.csv")
    (tmp_path / "cols.csv").write_text("Timestamp,Request tokens\n0,1\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) Response tokens"):
        read_burstgpt_trace(tmp_path / "cols.csv")


@pytest.mark.parametrize(
    ("prompt", "output"),
    [("input_length", "output_length"), ("input_tokens", "output_tokens"),
     ("prompt_tokens", "completion_tokens")],
)  # fmt: skip
def test_jsonl_milliseconds_and_token_keys(tmp_path: Path, prompt: str, output: str) -> None:
    records = [
        {"timestamp": 5000 + 1000 * t, prompt: p, output: o, "hash_ids": [1, 2]}
        for t, p, o in REQUESTS
    ]
    path = jsonl(tmp_path / "t.jsonl", records)
    path.write_text(path.read_text() + "\n\n")  # blank lines are skipped
    assert_requests(read_jsonl_trace(path))
    assert load_trace(path).arrival.tolist() == [r[0] for r in REQUESTS]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "line 2: each line must be a JSON object"),
        ('{"timestamp": 1}', r"line 2: needs timestamp \(ms\) and input_length/output_length"),
        ('{"timestamp": true, "input_length": 1, "output_length": 1}', "must be numbers"),
        ('{"timestamp": 1, "input_length": -1, "output_length": 1}', "prompt tokens must be"),
        ('{"timestamp": -5, "input_length": 1, "output_length": 1}', "line 2: the timestamp"),
        ("{not json", "line 2: not JSON"),
    ],
)
def test_jsonl_bad_lines_are_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 1, "output_length": 1}\n' + line + "\n")
    with pytest.raises(ValueError, match=message):
        read_jsonl_trace(path)


def test_empty_and_unknown_traces_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds no requests"):
        read_jsonl_trace(jsonl(tmp_path / "none.jsonl", []))
    (tmp_path / "other.csv").write_text("time,tokens\n0,1\n")
    with pytest.raises(ValueError, match=r"\(BurstGPT\).*\.jsonl"):
        load_trace(tmp_path / "other.csv")


def test_windows_reads_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shifted = [(t + 3.0, p, o) for t, p, o in REQUESTS]
    records = [
        {"timestamp": 1000 * t, "input_tokens": p, "output_tokens": o} for t, p, o in REQUESTS
    ]
    outs = []
    for path in (burstgpt_csv(tmp_path / "b.csv", shifted), jsonl(tmp_path / "t.jsonl", records)):
        assert main(["windows", str(path), "--json", "--min-useful-s", "1"]) == 0
        outs.append(json.loads(capsys.readouterr().out)["windows"])
    assert outs[0] == outs[1] != []


def test_jsonl_at_once_or_line_by_line_the_same_values(tmp_path: Path) -> None:
    """A file whose lines name their counts alike is parsed at once; one that mixes the key
    pairs is read line by line: the same requests either way."""
    pairs = (("input_length", "output_length"), ("prompt_tokens", "completion_tokens"))
    alike = [{"timestamp": 1000 * t + 0.1, pairs[0][0]: p, pairs[0][1]: o} for t, p, o in REQUESTS]
    mixed = [
        {"timestamp": 1000 * t + 0.1, pairs[k % 2][0]: p, pairs[k % 2][1]: float(o)}
        for k, (t, p, o) in enumerate(REQUESTS)
    ]
    at_once = read_jsonl_trace(jsonl(tmp_path / "alike.jsonl", alike))
    by_line = read_jsonl_trace(jsonl(tmp_path / "mixed.jsonl", mixed))
    for name in ("arrival", "context_tokens", "generated_tokens"):
        assert getattr(at_once, name).tobytes() == getattr(by_line, name).tobytes()
    huge = jsonl(
        tmp_path / "huge.jsonl", [{"timestamp": 10**400, "input_tokens": 1, "output_tokens": 1}]
    )
    with pytest.raises(ValueError, match="line 1: a number beyond any double"):
        read_jsonl_trace(huge)
