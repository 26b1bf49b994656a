"""The fuzz campaign over every command and every compiled binding (tests/fuzz_registry.py).

By default a seeded handful of inputs per entry (seconds per entry); ``-m slow`` runs the
thorough campaign: many more inputs per entry, and a sample of them as real
``learnsched`` processes (a crash shows as a signal there, not as a dead test run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fuzz_registry as registry
import pytest
from fuzzing import COUNTS, fuzz
from hypothesis import given

from learnsched.cli import build_parser

PARSERS = registry.leaf_parsers(build_parser())
# The slow campaign's inputs per entry, as a multiple of its default; CI's sanitizer step
# sets a smaller one (every call runs several times slower under ASan + UBSan).
THOROUGH = int(os.environ.get("LEARNSCHED_FUZZ_THOROUGH", "25"))
BINDING_EXAMPLES = 30


def test_every_command_has_a_fuzz_entry() -> None:
    """A command added later (gate, portfolio, guard-check ...) fails here until it has
    an entry in fuzz_registry.COMMANDS."""
    missing = sorted(set(PARSERS) - set(registry.COMMANDS))
    assert not missing, f"add fuzz entries to tests/fuzz_registry.py COMMANDS for {missing}"
    assert sorted(set(registry.COMMANDS) - set(PARSERS)) == [], "entries for no command"


def test_every_compiled_callable_has_a_fuzz_entry() -> None:
    """A binding added later fails here until it has an entry in fuzz_registry.BINDINGS."""
    callables = registry.compiled_callables()
    missing = sorted(callables - set(registry.BINDINGS))
    assert not missing, f"add fuzz entries to tests/fuzz_registry.py BINDINGS for {missing}"
    assert sorted(set(registry.BINDINGS) - callables) == [], "entries for no callable"


def _fuzz_command(name: str, examples: int, folder: pytest.TempPathFactory) -> None:
    parser = PARSERS[name]

    @fuzz(examples)
    @given(registry.argv_strategy(name, parser))
    def one(argv: list[registry.Arg]) -> None:
        registry.check_run(name, argv, registry.run_argv(argv, folder.mktemp("run")), parser)

    one()


def _fuzz_binding(name: str, examples: int) -> None:
    @fuzz(examples)
    @given(registry.BINDINGS[name].calls)
    def one(call: registry.Call) -> None:
        registry.run_call(name, call)

    one()


@pytest.mark.parametrize("name", sorted(registry.COMMANDS))
def test_fuzz_command(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz_command(name, registry.COMMANDS[name].examples, tmp_path_factory)


@pytest.mark.parametrize("name", sorted(registry.BINDINGS))
def test_fuzz_binding(name: str) -> None:
    _fuzz_binding(name, BINDING_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(registry.COMMANDS))
def test_fuzz_command_thoroughly(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    _fuzz_command(name, registry.COMMANDS[name].examples * THOROUGH, tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(registry.BINDINGS))
def test_fuzz_binding_thoroughly(name: str) -> None:
    _fuzz_binding(name, BINDING_EXAMPLES * THOROUGH)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(registry.COMMANDS))
def test_fuzz_command_as_real_processes(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Real ``learnsched`` processes: a crash is a signal, a hang a timeout."""
    parser = PARSERS[name]

    @fuzz(registry.COMMANDS[name].examples)
    @given(registry.argv_strategy(name, parser))
    def one(argv: list[registry.Arg]) -> None:
        folder: Path = tmp_path_factory.mktemp("process")
        words = registry.materialize(argv, folder)
        done = subprocess.run(
            [sys.executable, "-m", "learnsched", *words],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=folder,  # not the source tree, whose learnsched/ has no built modules
        )
        assert done.returncode >= 0, f"{words}: killed by signal {-done.returncode}"
        COUNTS["registry processes"] += 1
        registry.check_run(
            name, argv, registry.Ran(done.returncode, done.stdout, done.stderr), parser
        )

    one()
