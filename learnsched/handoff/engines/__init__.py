"""The serving engines learnsched can park and resume, one module per HTTP dialect.

To add an engine: subclass :class:`~.base.Engine` in a new module here, and add one
line to :data:`REGISTRY`.
"""

from __future__ import annotations

from .base import MEMORY_TAGS, PROMPT, Engine, Server
from .sglang import SGLang
from .vllm import VLLM_SLEEP_LEVELS, Vllm

__all__ = [
    "ENGINES",
    "MEMORY_TAGS",
    "PROMPT",
    "REGISTRY",
    "VLLM_SLEEP_LEVELS",
    "Engine",
    "Server",
    "engine",
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
