"""Simulated engines for the handoff and control tests (:mod:`learnsched.testing.engine`).

``engine(dialect, ...)`` is the forgiving engine (refusals answer 400/503);
``strict_engine(dialect, ...)`` fails as the real engine does (SGLang's server exits,
vLLM queues while asleep and aborts on ``/sleep``): see ``--help`` of
``python -m learnsched.testing.engine`` for each behaviour's flag.
"""

from __future__ import annotations

from learnsched.testing import EngineConfig, EngineProcess, engine_command

# A forgotten engine exits on its own; fast decoding keeps the tests short.
LIFETIME_S = 120.0
FAST = {"token_s": 0.001}


def config(dialect: str, **options: object) -> EngineConfig:
    """An engine config with the tests' defaults (fast tokens) under ``options``."""
    return EngineConfig(dialect, **{**FAST, **options})  # type: ignore[arg-type]


def strict_config(dialect: str, **options: object) -> EngineConfig:
    """:meth:`EngineConfig.strict` with the tests' defaults under ``options``."""
    return EngineConfig.strict(dialect, **{**FAST, **options})


def engine(dialect: str, **options: object) -> EngineProcess:
    """A simulated engine in a child process (use as a context manager)."""
    return EngineProcess(config(dialect, **options), lifetime_s=LIFETIME_S)


def strict_engine(dialect: str, **options: object) -> EngineProcess:
    """A strict simulated engine in a child process: ``.alive()``, ``.returncode`` and
    ``.stderr_text()`` tell whether (and why) it died."""
    return EngineProcess(strict_config(dialect, **options), lifetime_s=LIFETIME_S)


def command(dialect: str, port: int, **options: object) -> list[str]:
    """The command that launches a simulated engine on ``port`` (cold-start probes)."""
    return engine_command(config(dialect, **options), port, lifetime_s=LIFETIME_S)


def shell_command(dialect: str, port: int, **options: object) -> str:
    """:func:`command` as one shell line (``--launch``)."""
    return " ".join(command(dialect, port, **options))
