"""Test doubles shipped with learnsched: a simulated vLLM/SGLang serving engine.

``python -m learnsched.testing.engine --dialect vllm|sglang --port P`` serves one on
loopback; :class:`SimulatedEngine` (in-process) and :class:`EngineProcess` (a child
process) start one from Python. See :mod:`learnsched.testing.engine`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import EngineConfig, EngineProcess, SimulatedEngine, engine_command, free_port

__all__ = ["EngineConfig", "EngineProcess", "SimulatedEngine", "engine_command", "free_port"]


def __getattr__(name: str) -> object:
    # Lazy: ``python -m learnsched.testing.engine`` must find the module not yet imported.
    if name in __all__:
        return getattr(importlib.import_module(".engine", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
