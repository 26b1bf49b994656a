"""The resumable store of a sweep: finished chunks beside ``--out``, then ``--out`` itself.

``OUT.parts/manifest.json`` records the SPEC's hash and the chunk size; each finished
chunk is one binary file ``OUT.parts/chunk-NNNNNN.rows`` (its values and errors: the
point, parameters and scenario id of each row follow from the SPEC) written atomically,
so a killed run leaves only whole chunks, and a rerun of the same SPEC solves only the
missing ones. Chunk files are not fsynced (two fsyncs would cost more than a small chunk's
solve): a kill cannot cut one short, and a rerun reads every finished chunk back and
solves again any that a crash of the machine left unreadable. When every chunk is in,
``OUT`` is written once, atomically, from them (in row order, so it does not depend on how
the work was split or which run solved what), the manifest is marked complete and the
chunk files are removed.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._atomic import atomic_write, atomic_write_text, remove_stale_temps
from .._json import read_json
from .rows import Rows, concat_rows, rows_of
from .spec import SweepSpec
from .table import file_format, read_rows, write_rows

__all__ = ["CHUNK_SUFFIX", "Chunk", "ChunkStore", "read_chunk", "write_chunk"]

# 2: binary chunk files (version 1 wrote them as the output's CSV or Parquet).
MANIFEST_VERSION = 2
CHUNK_SUFFIX = ".rows"
_CHUNK_MAGIC = b"LSROWS\x00\x01"
_LENGTH = struct.Struct("<Q")
MANIFEST_KEYS = frozenset({"version", "spec_sha256", "rows", "chunk_rows", "complete", "spec"})
PROBE_PREFIX = ".probe-"
"""Files of the chunk-size probe (removed when it ends; a killed run's by the next)."""


@dataclass(frozen=True)
class Chunk:
    """Rows ``start .. stop - 1`` of the sweep, solved as one task."""

    index: int
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start


def write_chunk(path: str | os.PathLike[str], rows: Rows, durable: bool = False) -> None:
    """Write ``rows`` as a chunk file, atomically: a magic, the length of a JSON header
    (first row, row count, policy count, each invalid row's error), then the values as
    little-endian float64, row by row (bit for bit what :func:`read_chunk` gives back)."""
    errors = {str(i): e for i, e in enumerate(rows.error) if e}
    header = json.dumps(
        {"start": rows.start, "rows": len(rows), "policies": rows.value.shape[1], "errors": errors}
    ).encode()
    values = np.ascontiguousarray(rows.value, dtype="<f8").tobytes()

    def write(file: IO[bytes]) -> None:
        file.write(_CHUNK_MAGIC + _LENGTH.pack(len(header)) + header)
        file.write(values)

    atomic_write(path, write, durable=durable)


def read_chunk(path: str | os.PathLike[str], spec: SweepSpec) -> Rows:
    """The rows of a chunk file; ``ValueError`` if it is not one whole chunk of ``spec``."""
    data = Path(path).read_bytes()
    head = len(_CHUNK_MAGIC) + _LENGTH.size
    if len(data) < head or not data.startswith(_CHUNK_MAGIC):
        raise ValueError(f"{path} is not a sweep chunk")
    (length,) = _LENGTH.unpack_from(data, len(_CHUNK_MAGIC))
    try:
        header = json.loads(data[head : head + length])
        start, count, width = int(header["start"]), int(header["rows"]), int(header["policies"])
        errors = {int(i): str(e) for i, e in header["errors"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path} has no readable chunk header: {err}") from None
    body = memoryview(data)[head + length :]
    if width != len(spec.policies) or len(body) != 8 * count * width:
        raise ValueError(f"{path} holds {len(body)} bytes, not {count} rows of {width} values")
    value = np.frombuffer(body, dtype="<f8").astype(np.float64).reshape(count, width)
    return rows_of(spec, start, value, tuple(errors.get(i, "") for i in range(count)))


def _is_manifest(data: object) -> bool:
    """Whether ``data`` has a manifest's keys, with a usable chunk size and flag."""
    if not isinstance(data, dict) or not set(data) >= MANIFEST_KEYS:
        return False
    size = data["chunk_rows"]
    return type(size) is int and size >= 1 and type(data["complete"]) is bool


class ChunkStore:
    """Finished chunks of one sweep written to ``out`` (``.csv`` or ``.parquet``).

    Parameters
    ----------
    out
        The result file; its chunks live in the folder ``out + ".parts"``.
    spec
        The sweep.
    total_rows
        Rows of the whole sweep (points x base scenarios).

    Raises
    ------
    ValueError
        An unknown suffix, or ``out`` holding something other than this SPEC's sweep.
    """

    def __init__(self, out: str | os.PathLike[str], spec: SweepSpec, total_rows: int) -> None:
        self.out = Path(out)
        file_format(self.out)
        self.spec = spec
        self.total_rows = total_rows
        self.parts = self.out.with_name(self.out.name + ".parts")
        self.manifest_path = self.parts / "manifest.json"
        self.chunk_rows = 0
        self._solved: dict[int, Rows] = {}  # every finished chunk's rows, by index

    def _manifest(self, chunk_rows: int, complete: bool) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "spec_sha256": self.spec.hash,
            "rows": self.total_rows,
            "chunk_rows": chunk_rows,
            "complete": complete,
            "spec": self.spec.to_json(),
        }

    def _read_manifest(self) -> dict[str, Any] | None:
        if not self.manifest_path.exists():
            if self.out.exists():
                raise ValueError(
                    f"--out {self.out} exists but is no sweep output (no {self.manifest_path}): "
                    "remove it or choose another --out"
                )
            return None
        data = read_json(self.manifest_path)
        if not _is_manifest(data):
            raise ValueError(
                f"--out {self.out}: {self.manifest_path} is not a sweep manifest: remove "
                f"{self.out} and {self.parts} or choose another --out"
            )
        manifest: dict[str, Any] = data
        if manifest["version"] != MANIFEST_VERSION and not manifest["complete"]:
            return None  # an older run's chunks are in another format: solved again
        if manifest["spec_sha256"] != self.spec.hash or manifest["rows"] != self.total_rows:
            raise ValueError(
                f"--out {self.out} holds a sweep of another SPEC: remove {self.out} and "
                f"{self.parts} or choose another --out"
            )
        return manifest

    def open(self, choose_chunk_rows: Callable[[], int]) -> None:
        """Resume the sweep recorded beside ``out``, or start one.

        ``choose_chunk_rows`` is called only for a new sweep; a resumed one keeps the
        chunk size it started with, so its finished chunks stay valid.
        """
        manifest = self._read_manifest()
        if manifest is not None and manifest["complete"] and not self.out.exists():
            manifest = None  # the result was removed by hand: solve it again
        if manifest is None:
            self.parts.mkdir(exist_ok=True)
            for old in self.parts.glob("chunk-*"):  # chunks of an older format's run
                if old.suffix != CHUNK_SUFFIX:
                    old.unlink()
            self.chunk_rows = max(1, choose_chunk_rows())
            atomic_write_text(
                self.manifest_path,
                json.dumps(self._manifest(self.chunk_rows, False), indent=1, allow_nan=False),
            )
        else:
            self.chunk_rows = int(manifest["chunk_rows"])
        # Temporaries of a run cut short (the sweep lock is held: no live writer here).
        remove_stale_temps(self.parts)
        for probe in self.parts.glob(f"{PROBE_PREFIX}*{CHUNK_SUFFIX}"):
            probe.unlink()
        if manifest is not None and manifest["complete"]:  # killed before the clean-up
            self._remove_chunks()
        elif manifest is not None:
            self._load_finished()

    def _load_finished(self) -> None:
        """Read back the chunks an earlier run finished; drop any that do not read whole."""
        for chunk in self.chunks():
            path = self._path(chunk)
            if not path.exists():
                continue
            try:
                rows = read_chunk(path, self.spec)
            except (ValueError, OSError):
                path.unlink()
                continue
            if (rows.start, len(rows)) != (chunk.start, len(chunk)):
                path.unlink()
                continue
            self._solved[chunk.index] = rows

    @property
    def complete(self) -> bool:
        """Whether ``out`` holds the whole sweep."""
        manifest = self._read_manifest()
        return manifest is not None and bool(manifest["complete"]) and self.out.exists()

    def chunks(self) -> tuple[Chunk, ...]:
        """Every chunk of the sweep, in row order."""
        size = self.chunk_rows
        return tuple(
            Chunk(i, start, min(start + size, self.total_rows))
            for i, start in enumerate(range(0, self.total_rows, size))
        )

    def _path(self, chunk: Chunk) -> Path:
        return self.parts / f"chunk-{chunk.index:06d}{CHUNK_SUFFIX}"

    def finished(self) -> tuple[Chunk, ...]:
        """The chunks already written (all of them once ``out`` is complete)."""
        if self.complete:
            return self.chunks()
        return tuple(c for c in self.chunks() if c.index in self._solved)

    def write(self, chunk: Chunk, rows: Rows) -> None:
        """Record a solved chunk (atomically and durably)."""
        if (rows.start, len(rows)) != (chunk.start, len(chunk)):
            raise ValueError(f"rows {rows.start}+{len(rows)} do not match chunk {chunk}")
        write_chunk(self._path(chunk), rows)
        self._solved[chunk.index] = rows

    def _parts(self) -> Iterator[Rows]:
        for chunk in self.chunks():
            yield self._solved[chunk.index]

    def finish(self) -> Rows:
        """Write ``out`` from every chunk (or read it back if complete) and return its rows."""
        if self.complete:
            return read_rows(self.out, self.spec)
        rows = concat_rows(list(self._parts()))
        write_rows(self.out, rows, self.spec)
        atomic_write_text(
            self.manifest_path,
            json.dumps(self._manifest(self.chunk_rows, True), indent=1, allow_nan=False),
        )
        self._remove_chunks()
        return rows

    def _remove_chunks(self) -> None:
        for chunk in self.chunks():
            self._path(chunk).unlink(missing_ok=True)
