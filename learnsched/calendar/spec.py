"""The ``learnsched online`` SPEC: true calendars with their forecasts, as JSON.

A SPEC is one object, or a list of them. Each is a ``learnsched solve`` scenario object
(its ``windows`` are the true calendar) plus ``"forecast"``: ``"exact"`` (the forecast is
the truth), or ``{"samples": SAMPLES}``: sampled calendars, each a full calendar from
time 0 of which only the windows starting at or after the current window's end are used.
SAMPLES is written inline, ``[[[start, end], ...], ...]`` (small SPECs), or names a numpy
``.npz`` file by a path relative to the SPEC's folder: ``"calendars.npz"`` (all of its
calendars) or ``{"file": "calendars.npz", "first": 64, "count": 64}`` (its calendars 64
to 127), so that one file holds every forecast of a SPEC. The file holds exactly the
arrays of :class:`~.forecast.PackedCalendars`: ``windows``, float64 of shape ``(M, 2)``
(every window's start and end, seconds), and ``offsets``, int64 of shape ``(N + 1,)``
(calendar ``i`` is ``windows[offsets[i]:offsets[i + 1]]``). :func:`write_online_spec`
writes a SPEC in this form.
"""

from __future__ import annotations

import copy
import json
import math
import os
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from .._atomic import atomic_write, atomic_write_text
from .._checks import indexed, integer
from .._json import read_json
from .._text import MAX_INPUT_BYTES, STDIN, source_name
from ..scenario import Scenario
from .forecast import PackedCalendars, SampleForecaster, packed_calendars
from .online import OnlineCase

__all__ = [
    "SAMPLE_ARRAYS",
    "parse_online_spec",
    "read_calendars",
    "read_online_spec",
    "write_online_spec",
]

SAMPLE_ARRAYS = ("windows", "offsets")
"""The arrays of a samples file, as :class:`~.forecast.PackedCalendars` names them."""

_FILE_KEYS = frozenset({"file", "first", "count"})

# numpy's stubs type np.lib.format from numpy 2.3 on: these say what its readers return.
_read_magic: Callable[[IO[bytes]], tuple[int, int]] = np.lib.format.read_magic
_HEADER_READERS: dict[
    tuple[int, int], Callable[[IO[bytes]], tuple[tuple[int, ...], bool, np.dtype[Any]]]
] = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _declared_bytes(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> int:
    """The bytes of data a ``.npy`` member's header declares."""
    with archive.open(member) as file:
        version = _read_magic(file)
        read_header = _HEADER_READERS.get(version)
        if read_header is None:
            raise ValueError(f"unsupported .npy format version {version}")
        shape, _, dtype = read_header(file)
        return math.prod(shape) * dtype.itemsize


def read_calendars(path: str | os.PathLike[str]) -> PackedCalendars:
    """The calendars in a numpy ``.npz`` file of the arrays ``windows`` (float64,
    ``(M, 2)``, seconds) and ``offsets`` (int64, ``(N + 1,)``), read with
    ``numpy.load(allow_pickle=False)`` and checked.

    Raises
    ------
    ValueError
        Naming the file: not an ``.npz`` of exactly those arrays, an array larger than
        the file or than :data:`~learnsched._text.MAX_INPUT_BYTES`, or calendars that
        :func:`~.forecast.packed_calendars` refuses (``PATH: calendars[i][j] starts at
        ...``).
    OSError
        It cannot be read.
    """
    shown = os.fspath(path)
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info for info in archive.infolist()}
            wanted = {f"{array}.npy" for array in SAMPLE_ARRAYS}
            if set(members) != wanted:
                found = sorted(m.removesuffix(".npy") for m in members)
                raise ValueError(f"must hold the arrays windows and offsets, got {found}")
            for member in members.values():
                # Checked before numpy allocates what a header declares.
                size = _declared_bytes(archive, member)
                if size > min(member.file_size, MAX_INPUT_BYTES):
                    raise ValueError(
                        f"{member.filename} declares {size} bytes of data in a member of "
                        f"{member.file_size} bytes (the limit is {MAX_INPUT_BYTES})"
                    )
        with np.load(path, allow_pickle=False) as arrays:
            windows, offsets = (arrays[array] for array in SAMPLE_ARRAYS)
    except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, ValueError) as err:
        raise ValueError(f"{shown} is not a samples file: {err}") from None
    try:
        return packed_calendars("calendars", windows, offsets)
    except ValueError as err:
        raise ValueError(f"{shown}: {err}") from None


class _Files:
    """Samples files relative to a SPEC's folder, each read and checked once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.read: dict[Path, PackedCalendars] = {}

    def samples(self, ref: str | Mapping[str, Any]) -> PackedCalendars:
        """The calendars a ``"samples"`` value that names a file selects."""
        fields: Mapping[str, Any] = {"file": ref} if isinstance(ref, str) else ref
        unknown = sorted(set(fields) - _FILE_KEYS)
        if unknown or "file" not in fields:
            raise ValueError(
                'forecast.samples must name its file as {"file": "NAME.npz", "first": i, '
                f'"count": n}}, got {dict(fields)!r:.120}'
            )
        file = fields["file"]
        if not isinstance(file, str) or not file.endswith(".npz"):
            raise ValueError(f"forecast.samples.file must name a .npz file, got {file!r:.80}")
        path = self.folder / file
        if path not in self.read:
            try:
                self.read[path] = read_calendars(path)
            except ValueError as err:
                raise ValueError(f"forecast.samples: {err}") from None
        calendars = self.read[path]
        try:
            first = integer("forecast.samples.first", fields.get("first", 0), 0, len(calendars) - 1)
            left = len(calendars) - first
            count = integer("forecast.samples.count", fields.get("count", left), 1, left)
        except (TypeError, ValueError) as err:  # a JSON value of the wrong type: a bad value
            raise ValueError(f"{err} ({path} holds {len(calendars)} calendars)") from None
        return calendars.select(first, count)


def _case(obj: object, files: _Files) -> OnlineCase:
    if not isinstance(obj, Mapping):
        raise ValueError(f"a SPEC entry must be a JSON object, got {type(obj).__name__}")  # noqa: TRY004
    if "forecast" not in obj:
        raise ValueError('forecast is missing: give "exact" or {"samples": [...]}')
    rest: dict[str, Any] = {k: v for k, v in obj.items() if k != "forecast"}
    scenario = Scenario.from_json(rest)
    forecast = obj["forecast"]
    if forecast == "exact":
        return OnlineCase.exact(scenario)
    if not isinstance(forecast, Mapping) or set(forecast) != {"samples"}:
        raise ValueError(f'forecast must be "exact" or {{"samples": [...]}}, got {forecast!r:.80}')
    samples = forecast["samples"]
    if isinstance(samples, str) and not samples.endswith(".npz"):
        raise ValueError(
            f"forecast.samples must be a list of calendars or a .npz file's name, got {samples!r:.80}"
        )
    if isinstance(samples, (str, Mapping)):
        samples = files.samples(samples)
    forecaster = SampleForecaster(samples)
    return OnlineCase(scenario, forecaster, samples=forecaster.count)


def parse_online_spec(
    data: object, folder: str | os.PathLike[str] | None = None
) -> list[OnlineCase]:
    """The online cases of a parsed SPEC (one object or a list of them).

    Parameters
    ----------
    data
        The SPEC's JSON value; a forecast's samples may also be
        :class:`~.forecast.PackedCalendars`.
    folder
        Where the samples files it names are (default: the current directory).

    Raises
    ------
    ValueError
        Naming the entry and field, e.g. ``spec[2]: forecast.samples[0][1] starts at ...``.
    OSError
        A samples file cannot be read.
    """
    files = _Files(Path(folder if folder is not None else os.curdir))
    if isinstance(data, list):
        if not data:
            raise ValueError("spec must hold at least one scenario object, got []")
        return indexed("spec", data, lambda entry: _case(entry, files))
    return [_case(data, files)]


def read_online_spec(path: str | os.PathLike[str]) -> list[OnlineCase]:
    """The online cases of the SPEC file ``path`` (``-``: standard input, whose samples
    files are then relative to the current directory).

    Raises
    ------
    ValueError
        ``{path} is not valid JSON: ...`` with the line and column, ``{path}: JSON nesting
        depth N exceeds the limit of 32``, or a field named as :func:`parse_online_spec`
        names it.
    OSError
        The SPEC or a samples file cannot be read.
    """
    folder = os.curdir if os.fspath(path) == STDIN else os.path.dirname(os.fspath(path))
    return parse_online_spec(read_json(path, source_name(path)), folder or os.curdir)


def write_online_spec(path: str | os.PathLike[str], data: object) -> Path:
    """Write the SPEC ``data`` (as :func:`parse_online_spec` reads it) to ``path`` with
    every forecast's samples in one ``.npz`` file beside it, which
    :func:`read_online_spec` reads back to the same calendars, bit for bit.

    Parameters
    ----------
    path
        The SPEC file to write; the samples go to the same path with suffix ``.npz``.
    data
        One SPEC object or a list of them; samples inline, packed, or in files relative
        to the current directory.

    Returns
    -------
    Path
        The samples file (written only if a forecast has samples).

    Raises
    ------
    ValueError
        What :func:`parse_online_spec` refuses in ``data``, or a ``path`` ending in
        ``.npz``: nothing is written then.
    """
    samples_path = Path(path).with_suffix(".npz")
    if samples_path == Path(path):
        raise ValueError(f"the SPEC's path must not end in .npz (its samples go there), got {path}")
    cases = parse_online_spec(data)
    entries = copy.copy(data) if isinstance(data, list) else [data]
    windows: list[npt.NDArray[np.float64]] = []
    offsets: list[npt.NDArray[np.int64]] = [np.zeros(1, dtype=np.int64)]
    first = total = 0
    for i, (entry, case) in enumerate(zip(entries, cases, strict=True)):
        if entry["forecast"] == "exact":
            continue
        packed = case.forecaster.fixed_packed(case.samples)
        assert packed is not None  # a SampleForecaster's samples are fixed
        windows.append(packed[0])
        offsets.append(packed[1][1:] + total)
        total += packed[0].shape[0]
        entries[i] = {
            **entry,
            "forecast": {
                "samples": {"file": samples_path.name, "first": first, "count": case.samples}
            },
        }
        first += case.samples
    if windows:
        every, starts = np.concatenate(windows), np.concatenate(offsets)
        atomic_write(samples_path, lambda file: np.savez(file, windows=every, offsets=starts))
    out = entries if isinstance(data, list) else entries[0]
    atomic_write_text(path, json.dumps(out, indent=1, allow_nan=False) + "\n")
    return samples_path
