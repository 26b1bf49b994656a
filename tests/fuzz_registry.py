"""The fuzz registry: one entry per command and per binding, and the rule each run obeys.

A new command (``learnsched gate``) or binding (``_core.portfolio.Portfolio``) is covered by adding
one entry to :data:`COMMANDS` or :data:`BINDINGS`; ``test_fuzz_registry.py`` fails until
every registered command and every callable of ``_core`` and ``_capacity``
has one.

* A **command** entry says how to draw its required arguments (structure-aware input
  files: valid documents of its format, then mutated: a field replaced by junk, cut
  short, nested too deep, a BOM, a byte that is not UTF-8, a 131,073-character CSV field
  ...). Every other option of its parser is drawn automatically from value pools by its
  type (numbers at the edges, junk strings, bogus choices), so a flag added later is
  fuzzed without an edit; ``never`` lists options that must not be drawn (those that run
  user code or need hardware) and ``options`` overrides a pool. A run must exit 0-4
  (never 70, the catch-all's "this is a bug"), print no traceback, end a failure with
  one line naming the command and, for bad input or an environment failure, something it
  was given (a flag, a file, a field), and print standard JSON for ``--json``.
* A **binding** entry draws calls (mostly valid arguments built from valid scenarios,
  sometimes one replaced by junk, out-of-range states, wrong dtypes or lengths): each
  either succeeds (its invariants checked) or raises ValueError, TypeError or IndexError
  naming one of the entry's argument names.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import copy
import io
import json
import math
import os
import re
import select
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from fuzzing import (
    COUNTS,
    IDLE_NAMES,
    REPLAY_NAMES,
    SCAN_NAMES,
    TAIL_NAMES,
    WINDOW_NAMES,
    junk,
    maybe,
)
from hypothesis import assume
from hypothesis import strategies as st

import learnsched as ls
from learnsched import _capacity, _core
from learnsched.calendar.causal import CAUSAL_POLICIES, GAP_MODELS

from strategies import json_values, scenarios

# --- files: valid documents of each format, then mutated ------------------------------


@dataclass(frozen=True)
class File:
    """An input file the runner writes into the run's folder; argv names it ``name``."""

    name: str
    data: bytes
    named: bool = True  # False: written beside the others, not named in argv (a module)


Arg = str | File

BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400, "true", '"5"', "-1"]


def _replace_number(text: str, draw: st.DrawFn) -> str:
    numbers = list(re.finditer(r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?", text))
    if not numbers:
        return text
    hit = draw(st.sampled_from(numbers))
    return text[: hit.start()] + draw(st.sampled_from(BAD_NUMBERS)) + text[hit.end() :]


def _mutate_value(obj: Any, draw: st.DrawFn) -> Any:
    """A copy of ``obj`` with one key of one object in it replaced, removed or added
    (a copy: a strategy's value may be shared between examples)."""
    obj = copy.deepcopy(obj)
    objects = [obj] if isinstance(obj, dict) else []
    stack = [obj]
    while stack:
        item = stack.pop()
        children = list(item.values()) if isinstance(item, dict) else item
        if isinstance(item, (dict, list)):
            objects += [c for c in children if isinstance(c, dict)]
            stack += [c for c in children if isinstance(c, (dict, list))]
    if not objects:
        return draw(json_values)
    target = draw(st.sampled_from(objects))
    action = draw(st.integers(0, 2))
    if action == 0 and target:
        target[draw(st.sampled_from(sorted(target)))] = draw(json_values)
    elif action == 1 and target:
        target.pop(draw(st.sampled_from(sorted(target))))
    else:
        target[draw(st.text(max_size=6))] = draw(json_values)
    return obj


def _mutate_bytes(data: bytes, draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return b"\xef\xbb\xbf" + data  # a BOM: must be read like the file without it
    if kind == 1:
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + data[at:]
    if kind == 2:
        return data[: draw(st.integers(0, len(data)))]
    if kind == 3:
        return data.replace(b"\n", b"\r\n")
    if kind == 4:
        return draw(st.binary(max_size=40))
    return data + b"\x00"


@st.composite
def json_files(draw: st.DrawFn, valid: st.SearchStrategy[Any], name: str = "in.json") -> File:
    """A JSON input: mostly ``valid``'s document, else mutated in structure, text or bytes."""
    obj = draw(valid)
    kind = draw(st.integers(0, 9))
    if kind <= 3:
        text = json.dumps(obj)
    elif kind == 4:
        text = json.dumps(_mutate_value(obj, draw))
    elif kind == 5:
        text = _replace_number(json.dumps(obj), draw)
    elif kind == 6:
        depth = draw(st.sampled_from([31, 33, 200, 1000, 5000]))
        text = "[" * depth + "]" * depth
    elif kind == 7:
        text = json.dumps([obj, obj]) if draw(st.booleans()) else json.dumps({"x": obj})
    else:
        return File(name, _mutate_bytes(json.dumps(obj).encode(), draw))
    return File(name, text.encode())


CSV_FIELD_LIMIT = 131_072


@st.composite
def csv_files(
    draw: st.DrawFn, header: Sequence[str], cell: st.SearchStrategy[str], name: str = "in.csv"
) -> File:
    """A CSV input: ``header`` and rows of ``cell``s, sometimes malformed."""
    rows = draw(st.lists(st.lists(cell, min_size=len(header), max_size=len(header)), max_size=6))
    lines = [",".join(header), *(",".join(row) for row in rows)]
    kind = draw(st.integers(0, 9))
    if kind == 5 and lines:
        lines[-1] += ",1" + "9" * CSV_FIELD_LIMIT  # a field over the csv module's limit
    elif kind == 6:
        lines.insert(draw(st.integers(1, len(lines))), '"unclosed,' + "x" * 10)
    elif kind == 7:
        lines[0] = draw(
            st.sampled_from(["", "a,b,c", ",".join(reversed(header)), "\t".join(header)])
        )
    data = ("\n".join(lines) + "\n").encode()
    if kind >= 8:
        data = _mutate_bytes(data, draw)
    return File(name, data)


def scenario_objects(**kwargs: Any) -> st.SearchStrategy[dict[str, Any]]:
    return scenarios(**kwargs).map(lambda s: s.to_json())


@st.composite
def calendars(draw: st.DrawFn, start: float = 0.0) -> list[list[float]]:
    out, t = [], start + draw(st.sampled_from([0.0, 5.0, 30.0]))
    for _ in range(draw(st.integers(1, 3))):
        length = draw(st.sampled_from([5.0, 30.0, 80.0]))
        out.append([t, t + length])
        t += length + draw(st.sampled_from([1.0, 20.0, 100.0]))
    return out


@st.composite
def online_specs(draw: st.DrawFn) -> Any:
    obj = draw(scenario_objects(max_windows=3, max_quanta=6))
    if draw(st.booleans()):
        obj["forecast"] = "exact"
    else:
        after = obj["windows"][-1][1]
        obj["forecast"] = {"samples": draw(st.lists(calendars(after), min_size=1, max_size=3))}
    return obj if draw(st.booleans()) else [obj]


BAD_SAMPLE_ARRAYS = [
    {"windows": np.array([[0, 5], [9, 20]]), "offsets": np.array([0, 2])},
    {"windows": np.zeros((2, 3)), "offsets": np.array([0, 2])},
    {"windows": np.array([[0.0, 5.0], [4.0, 9.0]]), "offsets": np.array([0, 2])},
    {"windows": np.array([[0.0, np.nan]]), "offsets": np.array([0, 1])},
    {"windows": np.array([[0.0, 5.0]]), "offsets": np.array([0, 1, 1])},
    {"windows": np.array([[0.0, 5.0]]), "offsets": np.array([1, 0])},
    {"windows": np.array([[0.0, 5.0]]), "offsets": np.array([0, 1], dtype=np.int32)},
    {"windows": np.array([[0.0, 5.0]])},
    {"windows": np.array([[0.0, 5.0]]), "offsets": np.array([0, 1]), "extra": np.zeros(1)},
    {"windows": np.array([[0.0, 5.0]]), "offsets": np.array([None, 1])},
]


def _npz(arrays: Mapping[str, Any]) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out.getvalue()


@st.composite
def npz_spec_files(draw: st.DrawFn) -> list[Arg]:
    """A SPEC with its samples in ``o.npz`` beside it (as write_online_spec writes one),
    sometimes with the file's bytes or arrays damaged or its reference made wrong."""
    from learnsched.calendar.spec import write_online_spec

    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "o.json"
        write_online_spec(spec, draw(online_specs()))
        text, npz = spec.read_text(encoding="utf-8"), Path(folder) / "o.npz"
        data = npz.read_bytes() if npz.exists() else b""
    kind = draw(st.integers(0, 9))
    if kind == 5:
        data = _mutate_bytes(data, draw)
    elif kind == 6:
        data = _npz(draw(st.sampled_from(BAD_SAMPLE_ARRAYS)))
    elif kind == 7:
        text = json.dumps(_mutate_value(json.loads(text), draw))
    elif kind == 8:
        text = re.sub(
            r'"(first|count)": \d+',
            lambda m: f'"{m[1]}": {draw(st.sampled_from(["-1", "99", "1.5", "null", "[]"]))}',
            text,
        )
    elif kind == 9:
        text = text.replace(
            '"o.npz"', draw(st.sampled_from(['"missing.npz"', '"o.json"', '"x"', '""', "5"]))
        )
    return [File("o.json", text.encode()), File("o.npz", data, named=False)]


SWEEP_FIELDS = ("benefit_rate", "quantum_s", "horizon_s", "residency_rate", "save_s", "load_s")


@st.composite
def sweep_specs(draw: st.DrawFn) -> dict[str, Any]:
    grid = draw(st.integers(0, 3)) == 0
    fields = (*SWEEP_FIELDS, "cold_recovery_s") if grid else SWEEP_FIELDS
    vary = {
        f: draw(
            st.lists(
                st.sampled_from([0.0, 0.5, 1.0, 5.0, 50.0]), min_size=1, max_size=2, unique=True
            )
        )
        for f in draw(st.lists(st.sampled_from(fields), max_size=2, unique=True))
    }
    policies = draw(
        st.lists(
            st.sampled_from(["never", "dp", "rollout", "guarded"]),
            min_size=1,
            max_size=2,
            unique=True,
        )
    )
    base: Any = (
        "paper_grid"
        if grid
        else draw(st.lists(scenario_objects(max_windows=3), min_size=1, max_size=2))
    )
    return {"base": base, "vary": vary, "policies": policies}


def portfolio_specs() -> st.SearchStrategy[Any]:
    from portfolio_reference import specs

    return specs(max_candidates=2, max_quanta=3, max_stages=3)


def calendar_objects() -> st.SearchStrategy[Any]:
    return st.one_of(
        calendars().map(lambda w: {"windows": w}),
        calendars().map(lambda w: {"windows": w, "clock": "relative"}),
        calendars(),
    )


def profile_objects() -> st.SearchStrategy[Any]:
    from learnsched import handoff

    return st.just(handoff.PAPER_PROFILE.to_json())


def recovery_sample_objects() -> st.SearchStrategy[Any]:
    seconds = st.lists(st.sampled_from([0.5, 34.7, 69.988, 120.0]), min_size=1, max_size=4)
    return st.fixed_dictionaries({"vllm": seconds, "sglang": seconds})


trace_cells = st.one_of(
    st.sampled_from(["0", "1", "2.5", "30", "100", "1e3"]),
    st.sampled_from(["nan", "inf", "", "x", "1e400", "-1", "-0"]),
)


def trace_files(name: str = "trace.csv") -> st.SearchStrategy[File]:
    return csv_files(("arrival", "work", "deadline"), trace_cells, name)


AZURE_STAMPS = st.sampled_from(
    ["2023-11-16 18:15:46.6805900", "2023-11-16 18:16:03.97", "2023-11-16 18:20:00", "x", ""]
)


def azure_files(name: str = "azure.csv") -> st.SearchStrategy[File]:
    cell = st.one_of(AZURE_STAMPS, st.sampled_from(["100", "2000", "0", "-5", "x"]))
    return csv_files(("TIMESTAMP", "ContextTokens", "GeneratedTokens"), cell, name)


TOML_DOCUMENTS = [
    'engine = "vllm"\n',
    "metrics-port = 99999\n",
    'metrics-port = "x"\n',
    "seconds = -1\n",
    "seconds = nan\n",
    "samples = 2147483648\n",
    "queue = [1, 2]\n",
    "[trainer-options]\na = 1\n",
    "trainer-options = 1\n",
    "bogus = true\n",
    "json = 1\n",
    "x = " + "[" * 3000 + "]" * 3000 + "\n",
    "= =\n",
]


@st.composite
def toml_files(draw: st.DrawFn, name: str = "c.toml") -> File:
    """A ``--config`` file: mostly a document of one odd flag, else mutated bytes."""
    data = draw(st.sampled_from(TOML_DOCUMENTS)).encode()
    kind = draw(st.integers(0, 5))
    if kind == 4:
        data = b"\xef\xbb\xbf" + data
    elif kind == 5:
        data = _mutate_bytes(data, draw)
    return File(name, data)


def rate_files(name: str = "rates.csv") -> st.SearchStrategy[File]:
    return csv_files(("start", "rate"), trace_cells, name)


# --- commands ----------------------------------------------------------------------------

FLOATS = [
    "0",
    "-1",
    "1",
    "0.5",
    "3",
    "60",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1e-320",
    "1e400",
    "x",
    "",
]
INTS = ["0", "-1", "1", "2", "3", "64", "2147483648", "-2147483649", "9" * 30, "x", "1.5", ""]
STRINGS = ["x", "", "a,b", "1,2", "0", "-1", "\u00e9", "nowhere/x", ".", "1e400"]
PATHS = ["out.json", "out.csv", "out.png", "missing/out.json", ".", "x"]
OUTPUT_FLAGS = {
    "--out",
    "--csv",
    "--plot",
    "--output",
    "--ledger",
    "--engine-log",
    "--state-dir",
    "--folder",
}
DEAD_URL = "http://127.0.0.1:9"  # the discard port: refused at once


@dataclass(frozen=True)
class Command:
    """How to fuzz one command.

    Attributes
    ----------
    required
        Its required arguments (positionals first), drawn as a list of ``Arg``.
    options
        Value strategies that replace the automatic pools, by flag.
    never
        Flags the fuzz never gives (they run user code, need hardware, or run long).
    names
        Field names an error line may name besides the flags and files it was given.
    examples
        Inputs per default (fast) run; the slow campaign multiplies it.
    """

    required: st.SearchStrategy[list[Arg]] = field(default_factory=lambda: st.just([]))
    options: Mapping[str, st.SearchStrategy[list[Arg]]] = field(default_factory=dict)
    never: frozenset[str] = frozenset()
    names: tuple[str, ...] = ()
    examples: int = 6


def values(pool: Sequence[str]) -> st.SearchStrategy[list[Arg]]:
    return st.sampled_from(list(pool)).map(lambda v: [v])


def files(strategy: st.SearchStrategy[File]) -> st.SearchStrategy[list[Arg]]:
    return strategy.map(lambda f: [f])


SCENARIO_NAMES = (
    *ls.scenario.JSON_KEYS,
    *ls.scenario.TWO_PATH_JSON_KEYS,
    "scenario",
    "windows",
    "initial",
)
SERVICE_NAMES = (
    "prefill_tokens_per_s",
    "decode_tokens_per_s",
    "request_s",
    "slo_s",
    "service rate",
)
DEVICE_NAMES = ("device", "GPU", "NVML")
# guard-check's --scores: a module written into the run's folder (the worker imports it
# from there), whose factories return exact, wrong or broken estimators; some copies of
# it do not import at all.
SCORE_MODULE = "fuzz_score_factories"
SCORE_SOURCE = """
import math
import learnsched as ls
def exact(scenario):
    model = ls.Model(scenario)
    return lambda state, action: model.reference_score(state, action)
def off_by_one(scenario):
    model = ls.Model(scenario)
    return lambda state, action: model.reference_score(state, action) + 1.0
def nan(scenario):
    return lambda state, action: math.nan
def text(scenario):
    return lambda state, action: "x"
def huge(scenario):
    return lambda state, action: 10**400
def raises(scenario):
    raise RuntimeError("the factory failed")
def raises_later(scenario):
    def scores(state, action):
        raise KeyError(state)
    return scores
def not_callable(scenario):
    return 5
NOT_A_FACTORY = 3
"""
SCORE_FACTORIES = [
    "exact",
    "off_by_one",
    "nan",
    "text",
    "huge",
    "raises",
    "raises_later",
    "not_callable",
    "NOT_A_FACTORY",
    "missing",
]
SCORE_MODULES = [
    File(f"{SCORE_MODULE}.py", SCORE_SOURCE.encode(), named=False),
    File(f"{SCORE_MODULE}.py", SCORE_SOURCE.encode(), named=False),
    File(f"{SCORE_MODULE}.py", b"def exact(:\n", named=False),
    File(f"{SCORE_MODULE}.py", b"raise RuntimeError('import failed')\n", named=False),
]
GRID_IDS = st.sampled_from(["S0348", "S0000", "S1919", "S1920", "s0348", "x", "-1", ""])

COMMANDS: dict[str, Command] = {
    "grid": Command(
        options={
            "--quantum": values(["5", "2.5", "1", "0", "-1", "nan", "1e-9", "x"]),
            "--costs": files(json_files(profile_objects(), "p.json")),
        },
        never=frozenset({"--plot"}),
    ),
    "solve": Command(
        required=files(json_files(scenario_objects(max_windows=3, max_quanta=6), "s.json")),
        options={
            "--costs": files(json_files(profile_objects(), "p.json")),
            "--policy": values(["dp", "rollout", "guarded", "never", "bogus", ""]),
        },
        names=SCENARIO_NAMES,
    ),
    "explain": Command(
        required=GRID_IDS.map(lambda sid: [sid]),
        options={
            "--quantum": values(["5", "1", "0", "nan", "x", "7"]),
            "--costs": files(json_files(profile_objects(), "p.json")),
        },
        never=frozenset({"--plot"}),
        names=("scenario id", "quantum_s"),
    ),
    "econ breakeven": Command(
        required=st.lists(st.sampled_from(FLOATS), min_size=6, max_size=6).map(
            lambda v: [
                f"{flag}={x}"
                for flag, x in zip(
                    (
                        "--arrival-rate",
                        "--use-fraction",
                        "--unit-value",
                        "--horizon",
                        "--build-time",
                        "--cost",
                    ),
                    v,
                    strict=True,
                )
            ]
        ),
    ),
    "econ wait": Command(
        required=st.lists(st.sampled_from(FLOATS), min_size=5, max_size=5).map(
            lambda v: [
                f"{flag}={x}"
                for flag, x in zip(
                    (
                        "--cost-now",
                        "--cost-wait",
                        "--publish-now",
                        "--publish-wait",
                        "--benefit-rate",
                    ),
                    v,
                    strict=True,
                )
            ]
        ),
        names=("cost_now", "cost_wait", "publish_now_s", "publish_wait_s", "benefit_rate"),
    ),
    "econ utility": Command(
        required=st.sampled_from(
            [["--demand", "sparse"], ["--demand", "sustained"], ["--guidance"], ["--demand", "x"]]
        )
    ),
    "econ alerts": Command(
        # Always a small --n (the default draws 10**5 alerts for each of 10 seeds, seconds a
        # run); the pools still hold sizes past every limit.
        required=st.sampled_from(["1", "10", "1000", "0", "-1", "x", "10000001", "2147483648"]).map(
            lambda n: ["--n", n]
        ),
        options={
            "--repeats": values(["1", "2", "0", "-1", "x", "10001", "1" + "0" * 12]),
            "--recovery-samples": files(json_files(recovery_sample_objects(), "r.json")),
        },
        never=frozenset({"--plot", "--n"}),
    ),
    "econ paper": Command(examples=2),
    "capacity check": Command(
        required=st.tuples(trace_files(), st.sampled_from(FLOATS)).map(
            lambda t: [t[0], "--rate", t[1]]
        ),
        options={"--rate-file": files(rate_files())},
        names=("arrival", "work", "deadline", "rate", "start"),
    ),
    "capacity lend": Command(
        required=st.tuples(trace_files(), st.sampled_from(FLOATS)).map(
            lambda t: [t[0], "--rate", t[1]]
        ),
        options={"--rate-file": files(rate_files())},
        names=("arrival", "work", "deadline", "rate", "start", "share"),
    ),
    "capacity replay": Command(
        required=st.tuples(trace_files(), st.sampled_from(FLOATS)).map(
            lambda t: [t[0], "--rate", t[1]]
        ),
        options={
            "--rate-file": files(rate_files()),
            "--period": values(["0.1", "1", "0", "-1", "nan", "1e-9", "x"]),
        },
        names=("arrival", "work", "deadline", "rate", "start", "share", "period"),
    ),
    "probe nvml": Command(names=DEVICE_NAMES, examples=2),
    "probe lora": Command(
        required=st.just(["--device=cpu", "--shape=tiny"]),
        options={
            "--runs": values(["2", "0", "-1", "x", "2147483648"]),
            "--rank": values(["2", "0", "-1", "x"]),
        },
        never=frozenset({"--shape", "--device", "--gpu", "--dtype", "--targets", "--adapter"}),
        names=DEVICE_NAMES,
        examples=3,
    ),
    "probe memory": Command(
        required=st.sampled_from(["1", "0", "-1", "x", "2147483648", str(os.getpid())]).map(
            lambda p: ["--pid", p]
        )
    ),
    "probe waits": Command(
        required=st.just(["--commands=2", "--step-ms=5", "--slice-ms=1"]),
        options={
            "--commands": values(["2", "0", "-1", "x", "2147483648"]),
            "--step-ms": values(["5", "0", "-1", "nan", "x", "1e308"]),
        },
        examples=3,
    ),
    "probe recovery": Command(
        required=st.sampled_from(["vllm", "sglang", "tgi"]).map(
            lambda e: ["--engine", e, "--url", DEAD_URL, "--timeout-s=1"]
        ),
        options={
            "--url": values(
                [DEAD_URL, "x", "http://", "ftp://127.0.0.1:1", "http://127.0.0.1:99999"]
            )
        },
        never=frozenset({"--launch", "--pid", "--gpu"}),
        names=("engine", "url", *DEVICE_NAMES),
    ),
    "probe all": Command(
        required=st.just(
            [
                "--device=cpu",
                "--shape=tiny",
                "--runs=2",
                "--step-ms=5",
                "--slice-ms=1",
                "--commands=2",
                f"--url={DEAD_URL}",
                "--timeout-s=1",
            ]
        ),
        never=frozenset(
            {
                "--launch",
                "--pid",
                "--gpu",
                "--shape",
                "--device",
                "--runs",
                "--commands",
                "--step-ms",
                "--slice-ms",
                "--url",
                "--dtype",
                "--targets",
                "--adapter",
                "--rank",
                "--folder",
            }
        ),
        examples=2,
    ),
    "run": Command(
        required=st.tuples(
            files(json_files(calendar_objects(), "c.json")), st.sampled_from(["vllm", "sglang"])
        ).map(
            lambda t: [
                "--engine",
                t[1],
                "--url",
                DEAD_URL,
                "--trainer",
                "learnsched_fuzz_nowhere:Trainer",
                "--calendar",
                *t[0],
                "--ledger",
                "l.jsonl",
                "--state-dir",
                ".",
                "--timeout",
                "1",
                "--seconds",
                "1",
            ]
        ),
        options={
            "--history": files(json_files(calendar_objects(), "h.json")),
            "--trainer-options": values(["{}", "[]", "{", "[" * 1000, '{"a": NaN}', "1"]),
            "--config": files(toml_files()),
        },
        never=frozenset(
            {"--trainer", "--url", "--ledger", "--state-dir", "--timeout", "--seconds"}
        ),
        names=("windows", "clock", "config", "flag", "TOML"),
    ),
    "demo": Command(
        required=st.sampled_from(["-1", "nan", "inf", "x", "0"]).map(lambda s: ["--seconds", s]),
        never=frozenset({"--seconds", "--plot", "--ledger", "--state-dir"}),
        examples=3,
    ),
    "sweep": Command(
        required=files(json_files(sweep_specs(), "spec.json")).map(
            lambda f: [*f, "--out", "out.csv", "--workers", "1"]
        ),
        options={
            "--chunk-rows": values(["1", "64", "0", "-1", "x", "2147483648"]),
            "--backend": values(["local", "ray", "x"]),
        },
        never=frozenset({"--plot", "--address", "--out", "--workers"}),
        names=(*SCENARIO_NAMES, "base", "vary", "policies", "SPEC"),
    ),
    "windows": Command(
        required=st.one_of(files(trace_files()), files(azure_files())),
        names=(
            "arrival",
            "work",
            "deadline",
            "TIMESTAMP",
            "ContextTokens",
            "GeneratedTokens",
            *SERVICE_NAMES,
        ),
    ),
    "online": Command(
        required=st.one_of(
            files(json_files(online_specs(), "o.json")),
            npz_spec_files(),
            st.one_of(trace_files(), azure_files()).map(
                lambda f: [
                    "--trace",
                    f,
                    "--samples",
                    "1,2",
                    "--horizon-s",
                    "60",
                    "--warmup-s",
                    "60",
                ]
            ),
        ),
        options={
            "--samples": values(["1", "1,2", "0", "x", "", "70000", "1," * 3 + "2"]),
            "--threads": values(["1", "2", "0", "-1", "2000"]),
        },
        never=frozenset({"--plot", "--trace"}),
        names=(
            *SCENARIO_NAMES,
            "forecast",
            "samples",
            "calendars",
            ".npz",
            "spec",
            "arrival",
            "TIMESTAMP",
            *SERVICE_NAMES,
        ),
    ),
    "gate": Command(
        # Valid arguments would serve until a signal: every draw has a URL no gate accepts.
        required=st.tuples(
            st.sampled_from(["vllm", "sglang", "tgi"]),
            st.sampled_from(
                ["x", "", "ftp://127.0.0.1:1", "http://", "http://[::1", "http://h:99999", "//h:1"]
            ),
        ).map(lambda t: ["--engine", t[0], "--url", t[1]]),
        options={"--listen": values(["0", "127.0.0.1:0", "x", ":", "99999", "[::1]:0", "-1"])},
        never=frozenset({"--url"}),
        names=("url", "engine", "aiohttp", "serve"),
        examples=4,
    ),
    "guard-check": Command(
        required=st.tuples(
            files(json_files(scenario_objects(max_windows=2, max_quanta=4), "s.json")),
            st.sampled_from(SCORE_FACTORIES),
            st.sampled_from(["0", "1", "inf", "-1", "nan", "x"]),
            st.sampled_from(SCORE_MODULES),
        ).map(lambda t: [*t[0], "--scores", f"{SCORE_MODULE}:{t[1]}", "--epsilon", t[2], t[3]]),
        never=frozenset({"--scores", "--epsilon"}),
        names=(*SCENARIO_NAMES, "scores", "epsilon"),
    ),
    "synth": Command(
        required=files(azure_files()).map(lambda t: [*t, "--out", "syn.csv"]),
        options={
            "--days": values(["0.01", "0.1", "0", "-1", "inf", "nan", "1e300", "x"]),
            "--bin-s": values(["10", "1", "1e-300", "5e-324", "0", "inf", "x"]),
            "--amplitude": values(["0", "0.5", "0.999999", "1", "-1", "nan"]),
            "--peak-hour": values(["0", "14", "24", "25", "-1", "nan"]),
        },
        names=("days", "bin_s", "amplitude", "peak_hour", "duration_s", "trace", "requests"),
    ),
    "portfolio": Command(
        required=files(json_files(portfolio_specs(), "p.json")),
        # The study runs for minutes, and so does causal mode on the shipped trace: its
        # --trace is always a small drawn file.
        never=frozenset({"--study", "--seeds", "--setting"}),
        options={
            "--trace": files(azure_files("t.csv")),
            "--samples": values(["1", "2", "0", "-1", "65537", "2147483648", "x"]),
        },
        names=(
            *SCENARIO_NAMES,
            "candidates",
            "gpus",
            "budget_gpu_s",
            "policies",
            "SPEC",
            "spec",
            "trace",
            "TIMESTAMP",
            "ContextTokens",
            "GeneratedTokens",
            "samples",
            "from_s",
            "to_s",
            "horizon",
            "history_s",
            "slo_s",
            "lateness_price",
            "return_level",
            "candidate policy",
            "forecaster",
            "portfolio",
            "shared",
            "work_quanta",
        ),
    ),
    "econ calibrate-alerts": Command(
        # Small fits always (the defaults fit for seconds a run); the pools hold huge sizes.
        required=st.just(
            ["--fit-alerts", "100", "--alerts", "100", "--fit-seeds", "1", "--seeds", "1"]
        ),
        options={
            flag: values(["1", "100", "0", "-1", "x", "10000001", "2147483648"])
            for flag in ("--fit-alerts", "--alerts", "--fit-seeds", "--seeds")
        },
        names=("n_alerts", "seeds", "alerts"),
    ),
}
"""Every leaf command (``prog`` without ``learnsched ``) and how to fuzz it."""


def auto_values(action: argparse.Action) -> st.SearchStrategy[list[Arg]]:
    """Values for an option the entry does not override, by the option's type."""
    flag = action.option_strings[0]
    if action.nargs == 0:
        return st.just([])
    if action.choices is not None:
        pool = [str(c) for c in action.choices] + ["bogus", ""]
    elif flag in OUTPUT_FLAGS:
        pool = PATHS
    elif action.type is int:
        pool = INTS
    elif action.type is not None and getattr(action.type, "__name__", "") in (
        "float",
        "nonnegative_float",
    ):
        pool = FLOATS
    else:
        pool = STRINGS
    if action.nargs in (2, "+", "*"):
        count = 2 if action.nargs == 2 else None
        return st.lists(st.sampled_from(pool), min_size=count or 0, max_size=count or 2)
    default = action.default
    if isinstance(default, (int, float, str)) and not isinstance(default, bool) and default != "":
        return values([str(default)] * len(pool) + list(pool))  # half the time the default
    return values(pool)


def argv_strategy(name: str, parser: argparse.ArgumentParser) -> st.SearchStrategy[list[Arg]]:
    """``learnsched NAME`` with its required arguments and a random subset of its options."""
    entry = COMMANDS[name]
    optional = [
        a
        for a in parser._actions
        if a.option_strings
        and not a.required
        and a.dest != "help"
        and not set(a.option_strings) & entry.never
    ]

    @st.composite
    def draw_argv(draw: st.DrawFn) -> list[Arg]:
        argv: list[Arg] = [*name.split(), *draw(entry.required)]
        for action in optional:
            if draw(st.integers(0, 4)) == 0:
                flag = action.option_strings[0]
                argv += [flag, *draw(entry.options.get(flag, auto_values(action)))]
        return argv

    return draw_argv()


def leaf_parsers(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> dict[str, argparse.ArgumentParser]:
    """Every command that runs (sub-commands of groups), by name: ``{"econ wait": parser}``."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {prefix.strip(): parser}
    found: dict[str, argparse.ArgumentParser] = {}
    for action in subs:
        for word, sub in action.choices.items():
            found.update(leaf_parsers(sub, f"{prefix} {word}"))
    return found


ALLOWED_EXITS = frozenset({0, 1, 2, 3, 4})


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str


def materialize(argv: list[Arg], folder: Path) -> list[str]:
    """The words of ``argv``, its files written into ``folder`` (named relative to it)."""
    words: list[str] = []
    for arg in argv:
        if isinstance(arg, File):
            (folder / arg.name).write_bytes(arg.data)
            if arg.named:
                words.append(arg.name)
        else:
            words.append(arg)
    return words


# The worker: one Python process that runs command after command in-process, started
# once (a process per input would cost ~0.5 s each), with its memory capped so that an
# unbounded allocation fails there (MemoryError: "out of memory", which the rule
# refuses) instead of exhausting a machine shared with others. A crash or a hang ends
# only the worker; the next input starts a fresh one.
MEMORY_LIMIT_BYTES = 6 << 30
RUN_TIMEOUT_S = 120.0
WORKER = r"""
import contextlib, importlib, io, json, os, sys
from learnsched.cli import main
requests, replies = os.fdopen(int(sys.argv[1]), "r"), os.fdopen(int(sys.argv[2]), "w")
for line in requests:
    request = json.loads(line)
    os.chdir(request["cwd"])
    # A module the last run imported from its folder (guard-check's --scores) is
    # imported afresh from this one.
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(os.path.dirname(request["cwd"])):
            del sys.modules[name]
    importlib.invalidate_caches()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(request["argv"])
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 2
    replies.write(json.dumps({"status": status, "out": out.getvalue(), "err": err.getvalue()}) + "\n")
    replies.flush()
"""


def _limit_memory(pid: int) -> None:
    """Cap the worker's address space, unless under AddressSanitizer (it reserves
    terabytes of address space for its shadow memory, and bounds its own allocator)."""
    import resource

    if "asan" not in os.environ.get("LD_PRELOAD", ""):
        limit = (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES)
        resource.prlimit(pid, resource.RLIMIT_AS, limit)


class Worker:
    """The worker process (see above), restarted after a crash or a hang."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None

    def _start(self) -> None:
        to_worker, self._requests = os.pipe()
        self._replies, from_worker = os.pipe()
        env = {
            **os.environ,
            "MALLOC_ARENA_MAX": "2",
            "PYTHONWARNINGS": "ignore",
            # Ray sizes its object store at 30% of the machine's memory: under the cap its
            # raylet dies and every `sweep --backend ray` waited 30 s for it (exit 4). A
            # store of 0.5% fits the cap (Ray starts in seconds, as without one).
            "RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION": "0.005",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(to_worker), str(from_worker)],
            pass_fds=(to_worker, from_worker),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=tempfile.gettempdir(),  # not the source tree, whose learnsched/ is unbuilt
            env=env,
        )
        _limit_memory(self.process.pid)  # before its first request: it is still importing
        os.close(to_worker)
        os.close(from_worker)
        self._reader = os.fdopen(self._replies, "r")
        self._writer = os.fdopen(self._requests, "w")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self._reader.close()
            with contextlib.suppress(BrokenPipeError):
                self._writer.close()
            self.process = None

    def run(self, words: list[str], folder: Path) -> Ran:
        """``learnsched WORDS`` in ``folder``; a crash or hang is reported, not raised."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self._start()
        assert self.process is not None
        self._writer.write(json.dumps({"argv": words, "cwd": str(folder)}) + "\n")
        self._writer.flush()
        ready, _, _ = select.select([self._reader], [], [], RUN_TIMEOUT_S)
        line = self._reader.readline() if ready else ""
        if not line:
            code = self.process.poll()
            self.stop()
            what = (
                f"hung (no answer in {RUN_TIMEOUT_S:g} s)"
                if code is None
                else f"crashed (exit {code})"
            )
            raise AssertionError(f"learnsched {' '.join(words)}: the worker {what}")
        reply = json.loads(line)
        return Ran(reply["status"], reply["out"], reply["err"])


WORKERS = Worker()
atexit.register(WORKERS.stop)


def run_argv(argv: list[Arg], folder: Path) -> Ran:
    """``learnsched ARGV`` in the worker, in ``folder`` (its files written there first)."""
    return WORKERS.run(materialize(argv, folder), folder)


def _mentions(
    line: str, argv: list[Arg], parser: argparse.ArgumentParser, names: Sequence[str]
) -> bool:
    words = [a.name if isinstance(a, File) else a for a in argv]
    flags = [s for a in parser._actions for s in a.option_strings]
    dests = [a.dest for a in parser._actions] + [
        str(a.metavar) for a in parser._actions if a.metavar
    ]
    given = [w for w in words if len(w) > 2 and not w.startswith("-")]
    # Words of 3+ characters only: a message naming "n" or "s" names nothing.
    candidates = [*flags, *dests, *given, *names, "argument"]
    message = line.split("error:", 1)[-1]
    if any(message.strip().startswith(f"{w}:") for w in words if w and not w.startswith("-")):
        return True  # a path named first, however short (".: Is a directory", "x: No such file")
    return any(len(c) > 2 and c in message for c in candidates)


def check_run(name: str, argv: list[Arg], ran: Ran, parser: argparse.ArgumentParser) -> None:
    """The CLI's rule for one run (see the module docstring)."""
    COUNTS["registry cli"] += 1
    COUNTS[f"registry cli exit {ran.status}"] += 1
    shown = [a.name if isinstance(a, File) else a for a in argv]
    assert ran.status in ALLOWED_EXITS, (shown, ran.status, ran.err[-2000:])
    assert "Traceback" not in ran.err, (shown, ran.err[-2000:])
    if ran.status in (0, 1) and ran.out and "--json" in shown:  # 1: a report of violations
        json.loads(ran.out, parse_constant=_refuse_constant)
    if ran.status == 0 or (ran.status == 1 and not ran.err):
        return
    lines = ran.err.strip().splitlines()
    assert lines, (shown, ran.status)
    last = lines[-1]
    assert last.startswith(f"learnsched {name}"), (shown, last)
    assert "out of memory" not in last, f"an unbounded allocation: {last!r} for {shown}"
    if ran.status in (2, 4):
        COUNTS["registry cli named errors"] += 1
        assert "error:" in last, (shown, last)
        assert _mentions(last, argv, parser, COMMANDS[name].names), (
            f"unnamed error: {last!r} for {shown}"
        )


def _refuse_constant(name: str) -> Any:
    raise AssertionError(f"non-standard JSON constant {name}")


# --- bindings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One drawn call, ``target(*args)`` (shown by hypothesis when an example fails)."""

    target: Callable[..., Any]
    args: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        name = getattr(self.target, "__qualname__", repr(self.target))
        return f"{name}{self.args!r:.400}"


@dataclass(frozen=True)
class Binding:
    """How to fuzz one callable: its calls, the names its errors may use, its invariants."""

    calls: st.SearchStrategy[Call]
    names: tuple[str, ...]
    check: Callable[[Call, Any], None] = lambda call, result: None
    errors: tuple[type[Exception], ...] = ()  # documented besides the named ones


NAMED_ERRORS = (ValueError, TypeError, IndexError)


def run_call(name: str, call: Call) -> None:
    """Run a drawn call under the binding rule (see the module docstring)."""
    entry = BINDINGS[name]
    COUNTS["registry bindings"] += 1
    try:
        result = call.target(*call.args)
    except (*NAMED_ERRORS, *entry.errors) as err:
        message = str(err)
        if not any(n in message for n in entry.names):
            raise AssertionError(f"unnamed {type(err).__name__} from {name}: {message!r}") from err
        COUNTS["registry bindings named errors"] += 1
        return
    entry.check(call, result)


# Valid values, then junk in their place.
core_scenarios = st.one_of(
    scenarios(max_windows=3, max_quanta=6), scenarios(max_windows=3, max_quanta=6, two_path=True)
).map(lambda s: s.to_core())
policies = st.sampled_from(list(_core.finite.Policy.__members__.values()))
FORECAST_POLICIES = [
    _core.finite.Policy.WINDOW,
    _core.finite.Policy.COSTED_WINDOW,
    _core.finite.Policy.ROLLOUT,
    _core.finite.Policy.DP,
]
forecast_policies = st.sampled_from(FORECAST_POLICIES)
small_ints = st.integers(-2, 9)
edge_floats = st.sampled_from([0.0, 1.0, 0.5, -1.0, math.nan, math.inf, -math.inf, 1e308, 5e-324])
floats = st.one_of(st.floats(-1e3, 1e3), edge_floats)
STATE_NAMES = (
    "window",
    "progress",
    "durable",
    "active",
    "policy",
    "state",
    "recovery_s",
    "incompatible",
)
SCENARIO_FIELD_NAMES = (
    *ls.scenario.INITIAL_KEYS,
    *SCENARIO_NAMES,
    "work_quanta",
    "quantum_s",
    "benefit_rate",
    "horizon_s",
    "costs",
    "states",
    "benefit_schedule",
    "incompatible",
)


def models(scenario: _core.finite.Scenario) -> _core.finite.Model:
    return _core.finite.Model(scenario)


def _finite_plan(call: Call, plan: Any) -> None:
    assert math.isfinite(plan.value), call


@st.composite
def state_args(draw: st.DrawFn) -> tuple[Any, ...]:
    return (
        draw(maybe(st.integers(0, 3), st.one_of(junk, small_ints))),
        draw(maybe(st.integers(0, 6), st.one_of(junk, small_ints))),
        draw(maybe(st.integers(0, 6), st.one_of(junk, small_ints))),
        draw(maybe(st.booleans())),
    )


@st.composite
def int32_columns(draw: st.DrawFn, n: int, high: int) -> Any:
    values = draw(st.lists(st.integers(-1, high + 1), min_size=n, max_size=n))
    kind = draw(st.integers(0, 7))
    if kind <= 4:
        return np.array(values, dtype=np.int32)
    if kind == 5:  # another dtype (astype wraps -1 into uint8 as numpy does)
        return np.array(values).astype(draw(st.sampled_from(["i8", "u1", "f8", "?", "i2"])))
    if kind == 6:
        return np.repeat(np.array(values, dtype=np.int32), 2)[::2]
    return draw(
        st.sampled_from([values, None, np.zeros((n, 2), np.int32), np.zeros(n + 1, np.int32)])
    )


@st.composite
def decide_many_calls(draw: st.DrawFn) -> Call:
    model = _core.finite.Model(draw(core_scenarios))
    n = draw(st.integers(0, 5))
    active = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return Call(
        model.decide_many,
        (
            draw(int32_columns(n, 3)),
            draw(int32_columns(n, 6)),
            draw(int32_columns(n, 6)),
            draw(
                maybe(
                    st.just(active), st.sampled_from([active.astype(np.int32), list(active), None])
                )
            ),
            draw(maybe(policies)),
            draw(maybe(st.just(0.0), floats)),
        ),
    )


def _decisions(call: Call, result: Any) -> None:
    kind, quanta, checkpoint, cold = result
    assert len(kind) == len(quanta) == len(checkpoint) == len(cold) == len(call.args[0])
    assert np.all(kind <= 5)
    assert np.all(quanta >= 0)


@st.composite
def packed_samples(draw: st.DrawFn, after: float) -> tuple[Any, Any]:
    samples = draw(st.lists(calendars(after), min_size=1, max_size=3))
    windows = np.array([w for c in samples for w in c], dtype=np.float64).reshape(-1, 2)
    offsets = np.zeros(len(samples) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in samples], out=offsets[1:])
    kind = draw(st.integers(0, 7))
    if kind == 5:  # offsets out of bounds: what bind_forecast.cpp:46 read past the end for
        offsets = offsets.copy()
        offsets[draw(st.integers(0, len(offsets) - 1))] = draw(
            st.sampled_from([-1, 10**6, 2**62, len(windows) + 1])
        )
    elif kind == 6:
        windows = draw(
            st.sampled_from(
                [windows[:, :1], windows.ravel(), np.array([[math.nan, 1.0]] * len(windows))]
            )
        )
    elif kind == 7:
        offsets = draw(
            st.sampled_from(
                [
                    offsets[::-1].copy(),
                    offsets.astype(np.float64) + 0.5,
                    np.array([], np.int64),
                    offsets.reshape(1, -1),
                ]
            )
        )
    return windows, offsets


@st.composite
def current_scenarios(draw: st.DrawFn) -> tuple[_core.finite.Scenario, float]:
    base = draw(scenarios(max_windows=1, max_quanta=6, two_path=draw(st.booleans()))).to_core()
    end = base.windows[0][1]
    return base, end


@st.composite
def sample_tables_calls(draw: st.DrawFn) -> Call:
    current, end = draw(current_scenarios())
    windows, offsets = draw(packed_samples(end))
    threads = draw(maybe(st.integers(1, 3), st.one_of(junk, st.integers(-2, 0))))
    return Call(
        _core.forecast.SampleTables,
        (current, windows, offsets, draw(st.lists(forecast_policies, max_size=3)), threads),
    )


@st.composite
def forecast_models(draw: st.DrawFn) -> _core.forecast.ForecastModel:
    current, end = draw(current_scenarios())
    windows, offsets = draw(
        packed_samples(end).filter(lambda p: p[1].ndim == 1 and p[1].dtype == np.int64)
    )
    try:
        return _core.forecast.ForecastModel(current, windows, offsets, FORECAST_POLICIES)
    except ValueError:  # a drawn sample the model refuses: draw another
        assume(False)
        raise


@st.composite
def forecast_model_calls(draw: st.DrawFn) -> Call:
    current, end = draw(current_scenarios())
    if draw(st.booleans()):
        windows, offsets = draw(packed_samples(end))
        return Call(
            _core.forecast.ForecastModel,
            (
                current,
                windows,
                offsets,
                draw(st.lists(forecast_policies, max_size=3)),
                draw(maybe(st.just(1), junk)),
            ),
        )
    windows, offsets = draw(packed_samples(0.0))
    try:
        tables = _core.forecast.SampleTables(current, windows, offsets, [_core.finite.Policy.DP])
    except ValueError:
        tables = draw(junk)
    return Call(_core.forecast.ForecastModel, (draw(maybe(st.just(current), junk)), tables))


def _method(
    name: str, make: st.SearchStrategy[Any], args: st.SearchStrategy[tuple[Any, ...]]
) -> st.SearchStrategy[Call]:
    return st.tuples(make, args).map(lambda t: Call(getattr(t[0], name), t[1]))


model_objects = core_scenarios.map(models)
forecast_states = st.tuples(
    maybe(st.integers(0, 6), st.one_of(junk, small_ints)),
    maybe(st.integers(0, 6), st.one_of(junk, small_ints)),
    maybe(st.booleans()),
)
action_kinds = st.sampled_from(list(_core.finite.ActionKind.__members__.values()))
actions = st.builds(_core.finite.Action, action_kinds, st.integers(0, 6), st.booleans(), st.booleans())
states = st.builds(
    _core.finite.State, st.integers(-1, 4), st.integers(-1, 7), st.integers(-1, 7), st.booleans()
)


def _noise() -> st.SearchStrategy[Any]:
    return st.sampled_from(
        [
            None,
            lambda s, a: 0.0,
            lambda s, a: 1.5,
            lambda s, a: math.nan,
            lambda s, a: "x",
            lambda s, a: True,
            lambda s, a: None,
            lambda s, a: np.float32(2.0),
            lambda s, a: 10**400,
        ]
    )


raw_windows = st.lists(st.tuples(floats, floats), max_size=3)


@st.composite
def raw_scenarios(draw: st.DrawFn) -> Call:
    """``_core.finite.Scenario`` with any field values, then validated by the core."""
    costs = _core.finite.HandoffCosts(
        draw(floats), draw(floats), draw(floats), draw(floats), draw(st.none() | floats)
    )
    scenario = _core.finite.Scenario(
        draw(maybe(st.just([(0.0, 80.0), (100.0, 180.0)]), raw_windows)),
        draw(maybe(st.integers(1, 8), st.sampled_from([0, -1, 2**24, 2**31 - 1]))),
        draw(maybe(st.just(5.0), floats)),
        draw(maybe(st.just(0.25), floats)),
        draw(maybe(st.just(1000.0), floats)),
        costs,
        _core.finite.State(
            0,
            *draw(maybe(st.just((0, 0, False)), st.tuples(small_ints, small_ints, st.booleans()))),
        ),
        draw(maybe(st.just([]), st.lists(st.tuples(floats, floats), max_size=3))),
    )
    return Call(draw(st.sampled_from([_core.finite.validate, _core.finite.Model])), (scenario,))


@st.composite
def rows_calls(draw: st.DrawFn) -> Call:
    n = draw(st.integers(0, 3))
    index = st.lists(maybe(st.integers(0, 1), st.integers(-2, 5)), min_size=n, max_size=n)
    return Call(
        _core.finite.scenario_rows,
        (
            [[(0.0, 80.0)], [(0.0, 40.0), (50.0, 90.0)]],
            [_core.finite.HandoffCosts(1.0, 0.0, 0.1, 0.1)],
            [_core.finite.State(0, 0, 0, False)],
            draw(index),
            draw(
                st.lists(
                    maybe(st.integers(1, 6), st.integers(-1, 0)),
                    min_size=n,
                    max_size=n + draw(st.integers(0, 1)),
                )
            ),
            [5.0] * n,
            [0.25] * n,
            [500.0] * n,
            draw(st.lists(maybe(st.just(0), st.integers(-1, 3)), min_size=n, max_size=n)),
            [0] * n,
        ),
    )


kernel_arrays = st.one_of(
    st.lists(st.floats(-10, 10), max_size=4).map(lambda v: np.array(v, dtype=np.float64)),
    st.lists(st.floats(-10, 10), max_size=4),
    junk,
    st.sampled_from([np.zeros((2, 2)), np.array(["x"]), np.array([True]), np.zeros(3, np.float32)]),
)


@st.composite
def next_share_calls(draw: st.DrawFn) -> Call:
    from learnsched.capacity import AIMDConfig

    config = draw(maybe(st.just(AIMDConfig()), st.one_of(junk, st.just(object()))))
    return Call(
        _capacity.next_share,
        (
            draw(maybe(st.floats(0, 1), floats)),
            draw(maybe(st.floats(0, 50), floats)),
            draw(maybe(st.floats(0, 5), floats)),
            config,
        ),
    )


def _finite_or_nan(call: Call, result: Any) -> None:
    assert isinstance(result, float), call


PORTFOLIO_NAMES = (
    "gpus", "returns", "budget_gpu_s", "candidates", "windows", "work_quanta", "quantum_s",
    "benefit_rate", "horizon_s", "save_s", "load_s", "half_life_s", "initial", "recovery_s",
    "residency_rate", "cold_recovery_s", "progress", "durable", "active", "incompatible",
    "states", "state space", "limit", "portfolio",
)  # fmt: skip
PORTFOLIO_STATE_NAMES = (
    "state", "stage", "candidates", "candidate", "progress", "durable", "active", "done",
    "busy_until_s", "gpu_s", "action", "policy", "incompatible", "feasible", "reads", "built",
)  # fmt: skip
portfolio_policies = st.sampled_from(list(_core.portfolio.PortfolioPolicy.__members__.values()))


def _core_portfolio(spec: dict[str, Any]) -> Any:
    from learnsched.portfolio.model import Portfolio

    return Portfolio.from_json(spec)[0].to_core()


@st.composite
def _portfolios(draw: st.DrawFn) -> Any:
    return _core_portfolio(draw(portfolio_specs()))


core_portfolios = _portfolios()
portfolio_models = st.tuples(
    core_portfolios, st.lists(portfolio_policies, min_size=1, max_size=3)
).map(lambda t: _core.portfolio.PortfolioModel(*t))
candidate_states = st.builds(
    _core.portfolio.CandidateState,
    st.integers(0, 3),
    st.integers(0, 3),
    st.booleans(),
    st.booleans(),
    st.floats(0, 100),
)


@st.composite
def raw_portfolios(draw: st.DrawFn, validate: bool = False) -> Call:
    """``_core.portfolio.Portfolio`` from any pieces (then validated when asked)."""
    valid = draw(core_portfolios)
    gpus = draw(
        maybe(
            st.just([[(0.0, 80.0), (100.0, 180.0)]]),
            st.lists(raw_windows, max_size=3),
        )
    )
    returns = draw(
        maybe(
            st.just(valid.returns),
            st.builds(_core.portfolio.SharedReturn, floats, floats, st.none() | floats),
        )
    )
    budget = draw(st.none() | floats)
    candidates = draw(
        maybe(
            st.just(list(valid.candidates)),
            st.just([]) | st.lists(st.just(valid.candidates[0]), max_size=12),
        )
    )
    if validate:
        try:
            portfolio = _core.portfolio.Portfolio(gpus, returns, budget, candidates)
        except NAMED_ERRORS:
            portfolio = valid
        return Call(_core.portfolio.validate_portfolio, (portfolio,))
    return Call(_core.portfolio.Portfolio, (gpus, returns, budget, candidates))


@st.composite
def portfolio_state_calls(
    draw: st.DrawFn, method: str, policy: bool = False, action: bool = False
) -> Call:
    model = draw(portfolio_models)
    state = model.initial_state()
    if draw(st.integers(0, 3)) == 0:  # another state: any stage, time and candidates
        state = _core.portfolio.PortfolioState(
            draw(st.integers(-1, model.stage_count + 1)),
            draw(floats),
            draw(st.lists(candidate_states, max_size=3)),
        )
    args: tuple[Any, ...] = (draw(maybe(st.just(state), junk)),)
    if policy:
        args += (draw(maybe(portfolio_policies, junk)),)
    if action:
        choices: list[Any] = []
        if isinstance(args[0], _core.portfolio.PortfolioState) and draw(st.booleans()):
            with contextlib.suppress(*NAMED_ERRORS):  # an invalid state has no choices
                choices = model.choices(args[0])
        pick = (
            st.sampled_from(choices)
            if choices
            else st.builds(_core.portfolio.PortfolioAction, st.integers(0, 2), actions)
        )
        args += (draw(maybe(pick, junk)),)
    return Call(getattr(model, method), args)


@st.composite
def unlent_schedules(draw: st.DrawFn) -> Any:
    """A valid ``_core.causal.UnlentSchedule`` of 1-6 requests (deadlines met unlent)."""
    n = draw(st.integers(1, 6))
    arrival = np.cumsum(draw(st.lists(st.floats(0, 20), min_size=n, max_size=n)))
    service = np.array(draw(st.lists(st.floats(0.1, 3), min_size=n, max_size=n)))
    deadline = arrival + service + draw(st.floats(0, 5)) + service.sum()
    return _core.causal.UnlentSchedule(arrival, service, deadline)


def _end(schedule: Any) -> float:
    return float(schedule.gaps()[1][-1]) if schedule.gap_count else 0.0


@st.composite
def causal_candidates(draw: st.DrawFn) -> Any:
    return _core.causal.CausalCandidate(
        draw(st.integers(1, 3)),
        draw(st.floats(0.5, 5)),
        draw(st.floats(0, 2)),
        draw(st.floats(1, 200)),
        draw(st.floats(0, 2)),
        draw(st.floats(0, 1)),
        draw(st.floats(0, 1)),
        draw(st.floats(0, 1)),
        draw(st.floats(0, 2)),
    )


@st.composite
def gap_pools(draw: st.DrawFn, schedule: Any | None = None) -> Any:
    schedule = draw(unlent_schedules()) if schedule is None else schedule
    return _core.causal.GapPool(
        schedule,
        _end(schedule) + draw(st.floats(0, 10)),
        draw(st.floats(1, 1000)),
        draw(st.floats(0, 5)),
        draw(st.floats(0, 10)),
        draw(st.sampled_from(GAP_MODELS)),
        draw(st.integers(1, 4)),
    )


CAUSAL_NAMES = (
    "arrival", "service", "deadline", "trace", "request", "horizon", "from_s", "to_s",
    "quantum_s", "recovery_s", "work_quanta", "benefit", "residency_rate", "save_s", "load_s",
    "lateness_price", "policy", "forecast", "return_level", "pool", "tables", "seed",
    "threads", "job", "max_nodes", "branches", "probabilities", "scenario tree", "move",
    "state", "progress", "durable", "gap_start", "incompatible", "now_s", "history_s",
    "candidate", "portfolio", "shared", "per candidate",
    "close_s", "reach_s", "repeat_last", "gap model", "record", "ages", "remaining", "n ",
    "work size", "candidate", "1-D", "finite",
)  # fmt: skip
horizons = st.tuples(st.floats(0, 1), st.floats(0, 1)).map(sorted)


@st.composite
def causal_horizon(draw: st.DrawFn, schedule: Any) -> tuple[Any, Any]:
    """``(from_s, to_s)`` inside the trace mostly, anything sometimes."""
    low, high = draw(horizons)
    end = _end(schedule)
    return draw(maybe(st.just(low * end), floats)), draw(maybe(st.just(high * end), floats))


@st.composite
def causal_jobs(draw: st.DrawFn, schedule: Any) -> Any:
    from_s, to_s = draw(causal_horizon(schedule))
    pool = draw(st.none() | gap_pools(schedule))
    job = (
        draw(maybe(causal_candidates())),
        from_s,
        to_s,
        draw(maybe(st.sampled_from(CAUSAL_POLICIES))),
        draw(maybe(st.floats(0, 1), floats)),
        draw(maybe(st.just(pool))),
        draw(maybe(st.none())),
        draw(maybe(st.integers(0, 2**64 - 1), st.integers(-5, -1))),
        draw(maybe(st.booleans())),
    )
    return draw(maybe(st.just(_core.causal.CausalJob(*job)), st.one_of(junk, st.just(job))))


@st.composite
def run_causal_calls(draw: st.DrawFn) -> Call:
    schedule = draw(unlent_schedules())
    jobs = draw(st.lists(causal_jobs(schedule), max_size=3))
    threads = draw(maybe(st.integers(1, 3), st.sampled_from([0, -1, 1025, 2**31])))
    return Call(_core.causal.run_causal, (draw(maybe(st.just(schedule))), jobs, threads))


@st.composite
def schedule_calls(draw: st.DrawFn) -> Call:
    n = draw(st.integers(0, 4))
    columns = [
        draw(maybe(st.lists(st.floats(0, 50), min_size=n, max_size=n).map(sorted), kernel_arrays))
        for _ in range(3)
    ]
    return Call(_core.causal.UnlentSchedule, tuple(columns))


@st.composite
def causal_sims(draw: st.DrawFn) -> Any:
    schedule = draw(unlent_schedules())
    from_s, to_s = draw(causal_horizon(schedule))
    try:
        return _core.causal.CausalSim(schedule, draw(causal_candidates()), from_s, to_s)
    except ValueError:  # an empty horizon: draw another
        assume(False)
        raise


causal_move_args = st.one_of(st.sampled_from(_core.causal.causal_moves()), junk)


@st.composite
def causal_decider_calls(draw: st.DrawFn, decide: bool = False) -> Call:
    schedule = draw(unlent_schedules())
    candidate = draw(causal_candidates())
    args = (
        draw(maybe(st.just(candidate))),
        draw(maybe(st.sampled_from(CAUSAL_POLICIES))),
        draw(maybe(st.floats(0, 1), floats)),
        draw(maybe(st.none() | gap_pools(schedule))),
        draw(maybe(st.none())),
        draw(maybe(st.integers(0, 2**64 - 1), st.integers(-5, -1))),
    )
    if not decide:
        return Call(_core.causal.CausalDecider, args)
    try:
        decider = _core.causal.CausalDecider(candidate, draw(st.sampled_from(CAUSAL_POLICIES)), 0.5,
                                      draw(gap_pools(schedule)), None, 0)  # fmt: skip
    except ValueError:
        assume(False)
        raise
    gap = draw(st.floats(0, 50))
    progress = draw(st.integers(-1, candidate.work_quanta))
    state = (
        draw(maybe(st.just(gap) | st.floats(gap, gap + 10), floats)),
        gap,
        progress,
        draw(st.integers(-1, max(progress, 0))),
        draw(st.booleans()),
    )
    return Call(decider.decide, state)


@st.composite
def tree_calls(draw: st.DrawFn, exact: bool = False) -> Call:
    branches = draw(st.lists(unlent_schedules(), min_size=1, max_size=3))
    from_s, to_s = draw(causal_horizon(branches[0]))
    candidate = draw(maybe(causal_candidates()))
    nodes = draw(maybe(st.integers(1, 20_000), st.integers(-1, 0)))
    if exact:
        return Call(_core.causal.exact_schedule, (branches[0], candidate, from_s, to_s, nodes))
    weights = [1.0 / len(branches)] * len(branches)
    return Call(
        _core.causal.stochastic_dp,
        (
            draw(maybe(st.just(branches), st.lists(st.none() | junk, max_size=2))),
            draw(maybe(st.just(weights), st.lists(floats, max_size=3))),
            candidate,
            from_s,
            to_s,
            nodes,
            draw(st.booleans()),
        ),
    )


@st.composite
def portfolio_causal_calls(draw: st.DrawFn) -> Call:
    schedule = draw(unlent_schedules())
    first = draw(causal_candidates())
    n = draw(st.integers(0, 3))
    # The return path and the lateness price are shared: the others differ in the rest.
    others = [
        _core.causal.CausalCandidate(
            draw(st.integers(1, 3)), draw(st.floats(0.5, 5)), draw(st.floats(0, 2)),
            draw(st.floats(1, 200)), first.recovery_s, first.residency_rate, first.save_s,
            first.load_s, first.lateness_price,
        )
        for _ in range(n - 1)
    ]  # fmt: skip
    candidates = [first, *others][:n]
    pools = [draw(st.none() | gap_pools(schedule)) for _ in candidates]
    from_s, to_s = draw(causal_horizon(schedule))
    args = (
        schedule,
        draw(maybe(st.just(candidates), st.lists(junk, max_size=2))),
        draw(maybe(st.just([0] * n), st.lists(st.integers(-2, 4), max_size=4))),
        draw(maybe(st.just(pools), st.lists(st.none(), max_size=4))),
        draw(maybe(st.just([None] * n), st.lists(junk, max_size=2))),
        from_s,
        to_s,
        draw(maybe(st.sampled_from(_core.portfolio.causal_portfolio_policies()))),
        draw(maybe(st.sampled_from(CAUSAL_POLICIES))),
        draw(maybe(st.floats(0, 1), floats)),
        draw(maybe(st.integers(0, 2**64 - 1), st.integers(-3, -1))),
    )
    return Call(_core.portfolio.run_portfolio_causal, args)


def _named_check(name: str, value: Any) -> Any:
    if not isinstance(value, list):
        raise TypeError(f"{name} must be a list of [start, end] pairs")
    return value


@st.composite
def run_online_calls(draw: st.DrawFn) -> Call:
    current, end = draw(current_scenarios())
    windows, offsets = draw(packed_samples(end))
    case = (draw(maybe(st.just(current))), windows, offsets)
    cases = draw(maybe(st.just([case]), st.one_of(junk, st.just([case[:2]]))))
    threads = draw(maybe(st.integers(1, 3), st.sampled_from([0, -1, 1025, 2**31])))
    return Call(_core.forecast.run_online, (cases, draw(st.lists(forecast_policies, max_size=2)), threads))


@st.composite
def built_tables(draw: st.DrawFn) -> Any:
    current, end = draw(current_scenarios())
    windows, offsets = draw(packed_samples(end))
    try:
        return _core.forecast.SampleTables(current, windows, offsets, FORECAST_POLICIES)
    except ValueError:
        assume(False)
        raise


BINDINGS: dict[str, Binding] = {
    "_core.finite.Action": Binding(
        st.builds(
            lambda *a: Call(_core.finite.Action, a),
            maybe(action_kinds),
            maybe(st.integers(0, 9), st.one_of(junk, st.integers(-3, -1), st.just(2**31))),
            maybe(st.booleans()),
            maybe(st.booleans()),
        ),
        ("kind", "quanta", "checkpoint", "cold", "incompatible"),
    ),
    "_core.finite.ActionKind": Binding(
        st.one_of(junk, st.integers(-2, 8)).map(lambda v: Call(_core.finite.ActionKind, (v,))),
        ("incompatible", "value"),
    ),
    "_core.finite.Policy": Binding(
        st.one_of(junk, st.integers(-2, 9)).map(lambda v: Call(_core.finite.Policy, (v,))),
        ("incompatible", "value"),
    ),
    "_core.finite.CostSplit": Binding(st.just(Call(_core.finite.CostSplit)), ("constructor",)),
    "_core.finite.Segment": Binding(st.just(Call(_core.finite.Segment)), ("constructor",)),
    "_core.finite.Plan": Binding(st.just(Call(_core.finite.Plan)), ("constructor",)),
    "_core.finite.HandoffCosts": Binding(
        st.tuples(floats, floats, floats, floats, st.none() | floats | junk).map(
            lambda a: Call(_core.finite.HandoffCosts, a)
        ),
        ("recovery_s", "incompatible"),
    ),
    "_core.finite.State": Binding(state_args().map(lambda a: Call(_core.finite.State, a)), ("incompatible",)),
    "_core.finite.Scenario": Binding(raw_scenarios(), SCENARIO_FIELD_NAMES),
    "_core.finite.Scenario.benefit": Binding(
        _method("benefit", core_scenarios, st.tuples(maybe(floats, junk))),
        ("publish_s", "incompatible"),
        _finite_or_nan,
    ),
    "_core.finite.validate": Binding(raw_scenarios(), SCENARIO_FIELD_NAMES),
    "_core.finite.Model": Binding(
        st.one_of(
            raw_scenarios(),
            st.tuples(core_scenarios, maybe(st.none(), st.lists(policies, max_size=3) | junk)).map(
                lambda a: Call(_core.finite.Model, a)
            ),
        ),
        (*SCENARIO_FIELD_NAMES, "policies"),
    ),
    "_core.finite.Model.rebuild": Binding(
        st.tuples(model_objects, raw_scenarios()).map(lambda t: Call(t[0].rebuild, t[1].args)),
        SCENARIO_FIELD_NAMES,
    ),
    "_core.finite.Model.decide": Binding(
        st.tuples(model_objects, state_args(), maybe(policies)).map(
            lambda t: Call(t[0].decide, (*t[1], t[2]))
        ),
        (*STATE_NAMES, "reads", "policy"),
    ),
    "_core.finite.Model.decide_many": Binding(
        decide_many_calls(), (*STATE_NAMES, "states", "epsilon", "length"), _decisions
    ),
    "_core.finite.Model.solve": Binding(
        st.tuples(model_objects, maybe(policies), maybe(st.floats(0, 10), floats), _noise()).map(
            lambda t: Call(t[0].solve, t[1:])
        ),
        ("policy", "epsilon", "score_noise", "score noise", "incompatible"),
        _finite_plan,
    ),
    "_core.finite.Model.optimal_value": Binding(
        _method("optimal_value", model_objects, st.tuples(maybe(states, junk))),
        (*STATE_NAMES, "must"),
    ),
    "_core.finite.Model.reference_value": Binding(
        _method("reference_value", model_objects, st.tuples(maybe(states, junk))),
        (*STATE_NAMES, "must"),
    ),
    "_core.finite.Model.window_plan_value": Binding(
        _method("window_plan_value", model_objects, st.tuples(maybe(states, junk))),
        (*STATE_NAMES, "must"),
    ),
    "_core.finite.Plan.columns": Binding(
        st.tuples(model_objects, policies.filter(lambda p: p != _core.finite.Policy.GUARDED)).map(
            lambda t: Call(t[0].solve(t[1]).columns)
        ),
        (),
        lambda call, result: (
            None if set(result) >= {"window", "kind", "cost"} else pytest_fail(call)
        ),
    ),
    "_core.forecast.SampleTables": Binding(
        sample_tables_calls(),
        (
            "offsets",
            "windows",
            "samples",
            "threads",
            "policies",
            "incompatible",
            "work_quanta",
            "candidate",
        ),
    ),
    "_core.forecast.ForecastModel": Binding(
        forecast_model_calls(),
        (
            "offsets",
            "windows",
            "samples",
            "threads",
            "policies",
            "incompatible",
            "current",
            "tables",
            "candidate",
            "window",
        ),
    ),
    "_core.forecast.ForecastModel.decide": Binding(
        st.tuples(forecast_models(), forecast_states, maybe(forecast_policies, policies)).map(
            lambda t: Call(t[0].decide, (*t[1], t[2]))
        ),
        (*STATE_NAMES, "policies under a forecast", "reads"),
    ),
    "_core.forecast.ForecastModel.take": Binding(
        st.tuples(forecast_models(), forecast_states, maybe(actions)).map(
            lambda t: Call(t[0].take, (*t[1], t[2]))
        ),
        (*STATE_NAMES, "action", "feasible", "fit"),
    ),
    "_core.forecast.ForecastModel.mean_window_plan_values": Binding(
        forecast_models().map(lambda m: Call(m.mean_window_plan_values)),
        ("needed", "table", "built"),
    ),
    "_core.forecast.ForecastModel.mean_reference_values": Binding(
        forecast_models().map(lambda m: Call(m.mean_reference_values)), ("needed", "table", "built")
    ),
    "_core.forecast.ForecastModel.mean_optimal_values": Binding(
        forecast_models().map(lambda m: Call(m.mean_optimal_values)), ("needed", "table", "built")
    ),
    "_core.finite.solve_batch": Binding(
        st.tuples(
            st.lists(maybe(core_scenarios), max_size=3),
            maybe(st.lists(policies, max_size=3)),
            maybe(st.integers(1, 3), st.one_of(junk, st.integers(-2, 0), st.just(2**20))),
            maybe(st.just(0.0), floats),
        ).map(lambda a: Call(_core.finite.solve_batch, a)),
        ("scenarios", "policies", "threads", "epsilon", "incompatible", "scenarios["),
        lambda call, result: None if np.all(np.isfinite(result["value"])) else pytest_fail(call),
    ),
    "_core.finite.scenario_rows": Binding(
        rows_calls(), ("window_set", "cost_set", "initial_set", "row column", "entries")
    ),
    "_core.finite.policy_name": Binding(
        st.one_of(policies, junk).map(lambda p: Call(_core.finite.policy_name, (p,))), ("incompatible",)
    ),
    "_core.finite.cost_fields": Binding(
        st.just(Call(_core.finite.cost_fields)),
        (),
        lambda call, result: (
            None
            if result == ["work", "save", "load", "recovery", "residency"]
            else pytest_fail(call)
        ),
    ),
    "_core.finite.ties": Binding(
        st.tuples(st.one_of(floats, kernel_arrays), st.one_of(floats, kernel_arrays)).map(
            lambda a: Call(_core.finite.ties, a)
        ),
        ("incompatible", "broadcast", "could not"),
    ),
    "_capacity.feasibility_scan": Binding(
        st.tuples(*[kernel_arrays] * 6, maybe(st.floats(0, 1), floats), kernel_arrays).map(
            lambda a: Call(_capacity.feasibility_scan, a)
        ),
        SCAN_NAMES,
    ),
    "_capacity.scan_window": Binding(
        st.tuples(*[kernel_arrays] * 6, floats, floats, kernel_arrays).map(
            lambda a: Call(_capacity.scan_window, a)
        ),
        WINDOW_NAMES,
    ),
    "_capacity.next_share": Binding(
        next_share_calls(), ("share", "arrival_rate", "backlog_s", "config")
    ),
    "_capacity.replay": Binding(
        st.tuples(
            *[kernel_arrays] * 6,
            *[maybe(st.floats(0.1, 2), floats)] * 3,
            *[maybe(st.floats(0, 1), floats)] * 5,
            maybe(st.floats(0, 50), floats),
            maybe(st.floats(0, 50), floats),
            maybe(st.integers(0, 2), junk),
            floats,
            floats,
            kernel_arrays,
            kernel_arrays,
        ).map(lambda a: Call(_capacity.replay, a)),
        REPLAY_NAMES,
    ),
    "_capacity.tail_counts": Binding(
        st.tuples(
            kernel_arrays,
            kernel_arrays,
            maybe(st.builds(lambda: np.zeros(2, dtype=np.intp)), kernel_arrays),
        ).map(lambda a: Call(_capacity.tail_counts, a)),
        TAIL_NAMES,
    ),
    "_core.finite.Model.feasible_actions": Binding(
        _method("feasible_actions", model_objects, st.tuples(maybe(states, junk))),
        (*STATE_NAMES, "must"),
    ),
    "_core.finite.Model.reference_score": Binding(
        _method(
            "reference_score", model_objects, st.tuples(maybe(states, junk), maybe(actions, junk))
        ),
        (*STATE_NAMES, "action", "feasible", "must"),
    ),
    "_core.finite.Reach": Binding(
        st.one_of(junk, st.integers(-2, 4)).map(lambda v: Call(_core.finite.Reach, (v,))),
        ("incompatible", "value"),
    ),
    "_core.finite.ScoreErrorReport": Binding(st.just(Call(_core.finite.ScoreErrorReport)), ("constructor",)),
    "_core.finite.measure_score_error": Binding(
        st.tuples(
            maybe(model_objects, junk),
            _noise(),
            maybe(st.floats(0, 10), floats),
            maybe(st.sampled_from(list(_core.finite.Reach.__members__.values())), junk),
        ).map(lambda a: Call(_core.finite.measure_score_error, a)),
        ("model", "scores", "epsilon", "reach", "score", "incompatible", "finite"),
    ),
    "_core.portfolio.SharedReturn": Binding(
        st.tuples(floats, floats, st.none() | floats | junk).map(
            lambda a: Call(_core.portfolio.SharedReturn, a)
        ),
        ("recovery_s", "residency_rate", "incompatible"),
    ),
    "_core.portfolio.PortfolioCandidate": Binding(
        st.tuples(
            maybe(st.just("a"), junk),
            maybe(st.integers(1, 4), st.integers(-2, 0)),
            floats,
            floats,
            floats,
            floats,
            floats,
            st.none() | floats,
            maybe(st.just(_core.finite.State(0, 0, 0, False)), junk),
        ).map(lambda a: Call(_core.portfolio.PortfolioCandidate, a)),
        ("incompatible", "name", "work_quanta"),
    ),
    "_core.portfolio.Portfolio": Binding(raw_portfolios(), PORTFOLIO_NAMES),
    "_core.portfolio.validate_portfolio": Binding(raw_portfolios(validate=True), PORTFOLIO_NAMES),
    "_core.portfolio.PortfolioModel": Binding(
        st.tuples(core_portfolios, maybe(st.lists(portfolio_policies, max_size=3), junk)).map(
            lambda a: Call(_core.portfolio.PortfolioModel, a)
        ),
        (*PORTFOLIO_NAMES, "policies"),
    ),
    "_core.portfolio.PortfolioModel.benefit": Binding(
        st.tuples(
            portfolio_models, maybe(st.integers(0, 1), st.integers(-2, 5)), maybe(floats, junk)
        ).map(lambda t: Call(t[0].benefit, t[1:])),
        ("candidate", "publish_s", "incompatible"),
    ),
    "_core.portfolio.PortfolioModel.initial_state": Binding(
        portfolio_models.map(lambda m: Call(m.initial_state)), ()
    ),
    "_core.portfolio.PortfolioModel.stage": Binding(
        st.tuples(portfolio_models, st.integers(-2, 8)).map(lambda t: Call(t[0].stage, (t[1],))),
        ("stage", "i", "incompatible"),
    ),
    "_core.portfolio.PortfolioModel.choices": Binding(
        portfolio_state_calls("choices"), PORTFOLIO_STATE_NAMES
    ),
    "_core.portfolio.PortfolioModel.decide": Binding(
        portfolio_state_calls("decide", policy=True), PORTFOLIO_STATE_NAMES
    ),
    "_core.portfolio.PortfolioModel.optimal_value": Binding(
        portfolio_state_calls("optimal_value"), PORTFOLIO_STATE_NAMES
    ),
    "_core.portfolio.PortfolioModel.reference_value": Binding(
        portfolio_state_calls("reference_value"), PORTFOLIO_STATE_NAMES
    ),
    "_core.portfolio.PortfolioModel.step": Binding(
        portfolio_state_calls("step", action=True), PORTFOLIO_STATE_NAMES
    ),
    "_core.portfolio.PortfolioModel.solve": Binding(
        st.tuples(portfolio_models, maybe(portfolio_policies, junk)).map(
            lambda t: Call(t[0].solve, (t[1],))
        ),
        ("policy", "incompatible", "reads", "built"),
        lambda call, plan: None if math.isfinite(plan.value) else pytest_fail(call),
    ),
    "_core.portfolio.PortfolioAction": Binding(
        st.tuples(
            maybe(st.integers(0, 2), st.one_of(junk, st.integers(-2, -1))), maybe(actions, junk)
        ).map(lambda a: Call(_core.portfolio.PortfolioAction, a)),
        ("candidate", "incompatible"),
    ),
    "_core.portfolio.CandidateState": Binding(
        st.tuples(small_ints, small_ints, st.booleans(), st.booleans(), floats).map(
            lambda a: Call(_core.portfolio.CandidateState, a)
        ),
        ("incompatible",),
    ),
    "_core.portfolio.PortfolioState": Binding(
        st.tuples(small_ints, floats, st.lists(candidate_states, max_size=3) | junk).map(
            lambda a: Call(_core.portfolio.PortfolioState, a)
        ),
        ("incompatible",),
    ),
    "_core.portfolio.PortfolioPolicy": Binding(
        st.one_of(junk, st.integers(-2, 9)).map(lambda v: Call(_core.portfolio.PortfolioPolicy, (v,))),
        ("incompatible", "value"),
    ),
    "_core.portfolio.PortfolioPlan": Binding(st.just(Call(_core.portfolio.PortfolioPlan)), ("constructor",)),
    "_core.portfolio.PortfolioStep": Binding(st.just(Call(_core.portfolio.PortfolioStep)), ("constructor",)),
    "_core.portfolio.StateSpaceError": Binding(
        st.text(max_size=5).map(lambda t: Call(_core.portfolio.StateSpaceError, (t,))), ()
    ),
    "_core.causal.UnlentSchedule": Binding(schedule_calls(), CAUSAL_NAMES),
    "_core.causal.UnlentSchedule.gaps": Binding(unlent_schedules().map(lambda s: Call(s.gaps)), ()),
    "_core.causal.UnlentSchedule.causal_windows": Binding(
        st.tuples(unlent_schedules(), floats, floats, floats, floats, st.booleans()).map(
            lambda t: Call(t[0].causal_windows, t[1:])
        ),
        CAUSAL_NAMES,
    ),
    "_core.causal.GapPool": Binding(
        st.tuples(
            maybe(unlent_schedules()),
            floats,
            floats,
            floats,
            floats,
            maybe(st.sampled_from(GAP_MODELS)),
            maybe(st.integers(1, 4), st.sampled_from([0, -1, 2**31, 2**63])),
        ).map(lambda a: Call(_core.causal.GapPool, a)),
        CAUSAL_NAMES,
    ),
    "_core.causal.GapRecords": Binding(
        st.tuples(
            maybe(unlent_schedules()),
            floats,
            floats,
            floats,
            floats,
            maybe(st.integers(1, 3), st.sampled_from([0, -1, 2**31, 2**63])),
        ).map(lambda a: Call(_core.causal.GapRecords, a)),
        (*CAUSAL_NAMES, "until_s"),
    ),
    "_core.causal.GapPool.draw": Binding(
        st.tuples(
            gap_pools(),
            floats,
            maybe(st.integers(0, 50), st.sampled_from([-1, 2**24 + 1, 2**63])),
            maybe(st.integers(0, 2**64 - 1), st.integers(-3, -1)),
        ).map(lambda t: Call(t[0].draw, t[1:])),
        CAUSAL_NAMES,
    ),
    "_core.causal.GapPool.lateness": Binding(
        st.tuples(
            gap_pools(), st.integers(-3, 8) | st.sampled_from([2**31 - 1, 2**31]), floats
        ).map(lambda t: Call(t[0].lateness, t[1:])),
        CAUSAL_NAMES,
    ),
    "_core.causal.GapPool.slack": Binding(
        st.tuples(gap_pools(), st.integers(-3, 8) | st.sampled_from([2**31 - 1, 2**31])).map(
            lambda t: Call(t[0].slack, t[1:])
        ),
        CAUSAL_NAMES,
    ),
    "_core.causal.GapPool.scores": Binding(
        st.tuples(gap_pools(), kernel_arrays, kernel_arrays, st.integers(0, 9)).map(
            lambda t: Call(t[0].scores, t[1:])
        ),
        CAUSAL_NAMES,
    ),
    "_core.causal.GapPool.windows": Binding(
        st.tuples(gap_pools(), floats, floats).map(lambda t: Call(t[0].windows, t[1:])),
        CAUSAL_NAMES,
    ),
    "_core.causal.CausalCandidate": Binding(
        st.tuples(
            maybe(st.integers(1, 3), st.integers(-2, 0)),
            *[floats] * 8,
            maybe(st.just([]), st.lists(st.tuples(floats, floats), max_size=2)),
        ).map(lambda a: Call(_core.causal.CausalCandidate, a)),
        CAUSAL_NAMES,
    ),
    "_core.causal.CausalSim": Binding(
        unlent_schedules().flatmap(
            lambda s: st.tuples(st.just(s), maybe(causal_candidates()), causal_horizon(s)).map(
                lambda t: Call(_core.causal.CausalSim, (t[0], t[1], *t[2]))
            )
        ),
        CAUSAL_NAMES,
    ),
    "_core.causal.CausalSim.allows": Binding(
        st.tuples(causal_sims(), causal_move_args).map(lambda t: Call(t[0].allows, (t[1],))),
        CAUSAL_NAMES,
    ),
    "_core.causal.CausalSim.apply": Binding(
        st.tuples(causal_sims(), causal_move_args).map(lambda t: Call(t[0].apply, (t[1],))),
        CAUSAL_NAMES,
    ),
    "_core.causal.CausalDecider": Binding(causal_decider_calls(), CAUSAL_NAMES),
    "_core.causal.CausalDecider.decide": Binding(causal_decider_calls(decide=True), CAUSAL_NAMES),
    # Fields are kept as given (run_causal checks them): any nine objects build one.
    "_core.causal.CausalJob": Binding(
        st.lists(junk, min_size=8, max_size=9).map(lambda a: Call(_core.causal.CausalJob, tuple(a))),
        CAUSAL_NAMES,
    ),
    "_core.causal.run_causal": Binding(run_causal_calls(), CAUSAL_NAMES),
    # OverflowError past max_nodes: documented (learnsched.calendar.causal.clairvoyant).
    "_core.causal.exact_schedule": Binding(tree_calls(exact=True), CAUSAL_NAMES, errors=(OverflowError,)),
    "_core.causal.stochastic_dp": Binding(tree_calls(), CAUSAL_NAMES, errors=(OverflowError,)),
    "_core.causal.stream_seed": Binding(
        st.tuples(*[st.integers(-2, 2**64 + 1)] * 3).map(lambda a: Call(_core.causal.stream_seed, a)),
        ("incompatible",),
    ),
    "_core.portfolio.run_portfolio_causal": Binding(portfolio_causal_calls(), CAUSAL_NAMES),
    "_core.portfolio.causal_portfolio_policies": Binding(st.just(Call(_core.portfolio.causal_portfolio_policies)), ()),
    "_core.causal.causal_moves": Binding(st.just(Call(_core.causal.causal_moves)), ()),
    "_core.causal.causal_plans": Binding(st.just(Call(_core.causal.causal_plans)), ()),
    "_core.causal.causal_policies": Binding(st.just(Call(_core.causal.causal_policies)), ()),
    "_core.causal.gap_models": Binding(st.just(Call(_core.causal.gap_models)), ()),
    "_core.forecast.pack_calendars": Binding(
        st.tuples(
            st.just("samples"),
            st.lists(st.one_of(calendars(), junk, raw_windows), max_size=3),
            st.just(_named_check),
        ).map(lambda a: Call(_core.forecast.pack_calendars, a)),
        ("samples", "calendar"),
    ),
    "_core.forecast.run_online": Binding(
        run_online_calls(),
        (
            "cases",
            "threads",
            "offsets",
            "windows",
            "samples",
            "scenario",
            "incompatible",
            "window",
            "work_quanta",
            "candidate",
            "policies",
        ),
    ),
    "_core.forecast.SampleTables.row_after": Binding(
        st.tuples(
            built_tables(),
            st.integers(-2, 4) | st.sampled_from([2**31, 2**63]),
            floats,
            st.sampled_from(["window", "reference", "optimal", "bogus", ""]),
        ).map(lambda t: Call(t[0].row_after, t[1:])),
        ("sample", "time_s", "table", "built", "incompatible"),
    ),
    "_core.forecast.SampleTables.row_sum": Binding(
        st.tuples(built_tables(), floats).map(lambda t: Call(t[0].row_sum, t[1:])),
        ("time_s", "built", "table"),
    ),
    "_capacity.idle_window_bounds": Binding(
        st.tuples(
            *[kernel_arrays] * 3,
            maybe(st.floats(0.1, 10), floats),
            maybe(st.floats(0, 5), floats),
            maybe(st.floats(0, 5), floats),
            maybe(st.floats(0.01, 1), floats),
            maybe(st.floats(0, 0.1), floats),
        ).map(lambda a: Call(_capacity.idle_window_bounds, a)),
        (*IDLE_NAMES, "ascending", "length", "finite"),
    ),
}
"""Every callable of the compiled modules and how to fuzz it."""


def pytest_fail(call: Call) -> None:
    raise AssertionError(f"invariant broken by {call!r}")


def compiled_callables() -> set[str]:
    """Every public callable of ``_core`` and ``_capacity``: functions,
    classes (their constructors) and methods (not properties, enum members or dunders)."""
    found: set[str] = set()
    submodules = (_core.finite, _core.forecast, _core.causal, _core.portfolio)
    for module in (_core, *submodules, _capacity):
        prefix = module.__name__.removeprefix("learnsched.")
        for name, obj in vars(module).items():
            if name.startswith("_") or not callable(obj):
                continue
            if getattr(obj, "__module__", module.__name__) != module.__name__:
                continue  # an import (float64_vector in _capacity), not the module's own
            found.add(f"{prefix}.{name}")
            if isinstance(obj, type):
                for member, value in vars(obj).items():
                    if member.startswith("_") or isinstance(value, (property, obj)):
                        continue
                    if callable(value) and not isinstance(value, (staticmethod, classmethod, type)):
                        found.add(f"{prefix}.{name}.{member}")
    return found
