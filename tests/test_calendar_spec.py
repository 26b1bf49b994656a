"""The ``online`` SPEC's samples files: written, read back bit for bit, and refused by name."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import learnsched as ls
from learnsched.calendar.forecast import packed_calendars
from learnsched.calendar.online import OnlineCase
from learnsched.calendar.spec import (
    parse_online_spec,
    read_calendars,
    read_online_spec,
    write_online_spec,
)
from learnsched.cli import main

from conftest import calendar


def entry(forecast: Any) -> dict[str, Any]:
    obj = ls.scenario_by_id("S0348").scenario.to_json()
    obj["forecast"] = forecast
    return obj


SPEC = [
    entry({"samples": [calendar(80, 80, 80, 240), calendar(240, 80, 80, 80)]}),
    entry("exact"),
    entry({"samples": [calendar(80, 80, 80, 240)]}),
]


def packed(case: OnlineCase) -> tuple[np.ndarray, np.ndarray]:
    fixed = case.forecaster.fixed_packed(case.samples)
    assert fixed is not None
    return fixed


def test_a_written_spec_reads_back_bit_for_bit(tmp_path: Path) -> None:
    samples = write_online_spec(tmp_path / "spec.json", SPEC)
    assert samples == tmp_path / "spec.npz"
    with np.load(samples, allow_pickle=False) as arrays:
        assert sorted(arrays.files) == ["offsets", "windows"]
        assert arrays["windows"].dtype == np.float64
        assert arrays["offsets"].tolist() == [0, 4, 8, 12]  # four windows each
    written, given = read_online_spec(tmp_path / "spec.json"), parse_online_spec(SPEC)
    assert [c.samples for c in written] == [2, 1, 1]
    for a, b in zip(written, given, strict=True):
        assert a.scenario == b.scenario
        assert type(a.forecaster) is type(b.forecaster)
        for x, y in zip(packed(a), packed(b), strict=True):
            assert np.array_equal(x, y)
            assert x.dtype == y.dtype


def test_samples_files_select_calendars_relative_to_the_spec(tmp_path: Path) -> None:
    write_online_spec(tmp_path / "all.json", SPEC)
    whole = entry({"samples": "all.npz"})
    part = entry({"samples": {"file": "all.npz", "first": 1, "count": 2}})
    cases = parse_online_spec([whole, part], tmp_path)
    assert [c.samples for c in cases] == [3, 2]
    windows, offsets = packed(cases[1])
    assert offsets.tolist() == [0, 4, 8]
    assert windows.tolist() == [
        list(w) for w in calendar(240, 80, 80, 80) + calendar(80, 80, 80, 240)
    ]
    with pytest.raises(FileNotFoundError):
        parse_online_spec(whole)  # the current directory holds no all.npz


def test_the_online_command_reads_both_forms_to_the_same_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    inline = tmp_path / "inline.json"
    inline.write_text(json.dumps(SPEC), encoding="utf-8")
    write_online_spec(tmp_path / "npz.json", SPEC)
    outs = []
    for path in (inline, tmp_path / "npz.json"):
        assert main(["online", str(path), "--json", "--seeds", "2"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


def save(path: Path, **arrays: Any) -> Path:
    np.savez(path, **arrays)
    return path


GOOD = {"windows": np.array([[0.0, 5.0], [9.0, 20.0], [1.0, 2.0]]), "offsets": np.array([0, 2, 3])}


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (
            {**GOOD, "windows": GOOD["windows"].astype(np.int64)},
            r"calendars windows must be float64 of shape \(M, 2\), got int64 of shape \(3, 2\)",
        ),
        ({**GOOD, "windows": np.zeros((3, 3))}, r"got float64 of shape \(3, 3\)"),
        (
            {**GOOD, "offsets": GOOD["offsets"].astype(np.int32)},
            r"calendars offsets must be int64 of shape \(N \+ 1,\) with N >= 1, got int32",
        ),
        ({**GOOD, "offsets": np.array([0])}, r"with N >= 1, got int64 of shape \(1,\)"),
        (
            {**GOOD, "offsets": np.array([0, 2, 4])},
            r"offsets must run from 0 to the 3 windows, got 0 to 4",
        ),
        (
            {**GOOD, "offsets": np.array([-1, 2, 3])},
            r"offsets must run from 0 to the 3 windows, got -1 to 3",
        ),
        (
            {**GOOD, "offsets": np.array([0, 2, 1, 3])},
            r"offsets must not decrease, got offsets\[1\] = 2 > offsets\[2\] = 1",
        ),
        (
            {**GOOD, "offsets": np.array([0, 2, 2, 3])},
            r"calendars\[1\] must hold at least one \[start, end\] window, got \[\]",
        ),
        (
            {**GOOD, "windows": np.array([[0.0, 5.0], [np.nan, 20.0], [1.0, 2.0]])},
            r"calendars\[0\]\[1\] start must be finite, got nan",
        ),
        (
            {**GOOD, "windows": np.array([[0.0, 5.0], [9.0, np.inf], [1.0, 2.0]])},
            r"calendars\[0\]\[1\] end must be finite, got inf",
        ),
        (
            {**GOOD, "windows": np.array([[0.0, 5.0], [9.0, 20.0], [-1.0, -3.0]])},
            r"calendars\[1\]\[0\] must end after it starts, got \[-1.0, -3.0\]",
        ),
        (
            {**GOOD, "windows": np.array([[0.0, 5.0], [4.0, 20.0], [1.0, 2.0]])},
            r"calendars\[0\]\[1\] starts at 4.0 before calendars\[0\]\[0\] ends at 5.0",
        ),
        (
            {"windows": GOOD["windows"]},
            r"is not a samples file: must hold the arrays windows and offsets, got \['windows'\]",
        ),
        ({**GOOD, "extra": np.zeros(1)}, r"got \['extra', 'offsets', 'windows'\]"),
        (
            {**GOOD, "offsets": np.array([0, None, 3])},
            r"is not a samples file: Object arrays cannot be loaded",
        ),
    ],
)
def test_bad_samples_files_are_refused_by_name(
    tmp_path: Path, arrays: dict[str, Any], message: str
) -> None:
    path = save(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*" + message):
        read_calendars(path)
    with pytest.raises(ValueError, match=r"^spec\[0\]: forecast.samples: .*bad.npz"):
        parse_online_spec([entry({"samples": "bad.npz"})], tmp_path)


def test_the_checks_match_the_inline_reader(tmp_path: Path) -> None:
    """A calendar the file holds is named as the same calendar written inline."""
    windows = np.array([[0.0, 5.0], [9.0, 20.0], [30.0, 40.0], [35.0, 50.0]])
    with pytest.raises(ValueError, match=r"starts at 35\.0") as from_file:
        packed_calendars("forecast.samples", windows, np.array([0, 2, 4]))
    with pytest.raises(ValueError, match=r"starts at 35\.0") as inline:
        parse_online_spec(entry({"samples": [windows[:2].tolist(), windows[2:].tolist()]}))
    assert str(from_file.value) == str(inline.value)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            {"file": "ok.npz", "first": 2},
            r"forecast.samples.first must be <= 1, got 2 \(.*ok.npz holds 2 calendars\)",
        ),
        ({"file": "ok.npz", "first": -1}, r"forecast.samples.first must be >= 0, got -1"),
        ({"file": "ok.npz", "count": 3}, r"forecast.samples.count must be <= 2, got 3"),
        ({"file": "ok.npz", "first": 1, "count": 0}, r"forecast.samples.count must be >= 1, got 0"),
        ({"file": "ok.npz", "count": "2"}, r"forecast.samples.count must be an integer, got '2'"),
        ({"file": "ok.npz", "first": 1.0}, r"forecast.samples.first must be an integer, got 1.0"),
        (
            {"file": "ok.npz", "last": 1},
            r'forecast.samples must name its file as \{"file": "NAME.npz"',
        ),
        ({"first": 1}, r"forecast.samples must name its file as"),
        ({"file": "ok.json"}, r"forecast.samples.file must name a .npz file, got 'ok.json'"),
        ({"file": 5}, r"forecast.samples.file must name a .npz file, got 5"),
        (
            "ok.json",
            r"forecast.samples must be a list of calendars or a .npz file's name, got 'ok.json'",
        ),
        ("spec.npz", r"forecast.samples: .*spec.npz is not a samples file: File is not a zip file"),
    ],
)
def test_bad_references_are_refused_by_name(tmp_path: Path, ref: Any, message: str) -> None:
    save(tmp_path / "ok.npz", **GOOD)
    (tmp_path / "spec.npz").write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^spec\[0\]: " + message):
        parse_online_spec([entry({"samples": ref})], tmp_path)


def test_a_header_larger_than_its_data_is_refused_before_reading(tmp_path: Path) -> None:
    """A member's header declares the array's size: one larger than the member is refused
    before numpy allocates it (a 16 TB array in a file of a few hundred bytes)."""
    out = io.BytesIO()
    np.savez(out, **GOOD)
    with zipfile.ZipFile(out) as source, zipfile.ZipFile(tmp_path / "big.npz", "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == "windows.npy":
                data = data.replace(b"(3, 2)", b"(1000000000000, 2)")
            target.writestr(name, data)
    with pytest.raises(
        ValueError,
        match=r"big.npz is not a samples file: windows.npy declares 16000000000000 bytes of data in a member of \d+ bytes",
    ):
        read_calendars(tmp_path / "big.npz")


def test_a_spec_is_not_written_over_its_samples(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"the SPEC's path must not end in .npz"):
        write_online_spec(tmp_path / "spec.npz", SPEC)
    assert list(tmp_path.iterdir()) == []
