"""The serving engines learnsched can park and resume: one module per HTTP dialect, and
the actions every caller uses (:mod:`.actions`).

Probes, the control loop and the gate park and resume only through :func:`park` and
:func:`resume` (idleness checked inside the park, the engines' own pause calls, only
what was released resumed) and check a return with :func:`same_model`.

To add an engine: subclass :class:`~.base.Engine` in a new module here, and add one
line to :data:`REGISTRY`.
"""

from __future__ import annotations

from .actions import Door, EngineServer, Parked, check_idle, park, resume, same_model
from .base import MEMORY_TAGS, PROMPT, Engine, Server
from .load import Load, load_of, metric_sum
from .outcome import CUT_OFF, AnswerScanner, ends_at_close, failure_of
from .sglang import SGLang
from .vllm import VLLM_SLEEP_LEVELS, Vllm

__all__ = [
    "CUT_OFF",
    "ENGINES",
    "MEMORY_TAGS",
    "PROMPT",
    "REGISTRY",
    "VLLM_SLEEP_LEVELS",
    "AnswerScanner",
    "Door",
    "Engine",
    "EngineServer",
    "Load",
    "Parked",
    "Server",
    "check_idle",
    "ends_at_close",
    "engine",
    "failure_of",
    "load_of",
    "metric_sum",
    "park",
    "resume",
    "same_model",
]

# Engine name (``--engine NAME``) -> its dialect.
REGISTRY: dict[str, Engine] = {
    "vllm": Vllm(),
    "sglang": SGLang(),
}
ENGINES = tuple(REGISTRY)


def engine(name: str) -> Engine:
    """The registered dialect called ``name``; ``ValueError`` naming the known ones."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}") from None
