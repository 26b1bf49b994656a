"""Route patterns as the engines' web frameworks write them, and matching a path to them.

A dialect lists its routes (:attr:`~.base.Engine.generation_routes`,
:attr:`~.base.Engine.forwarded_routes`) the way vLLM's and SGLang's FastAPI routers
declare them: a literal path, or one with parameters: ``{name}`` matches one path
segment (``/v1/responses/{response_id}``), ``{name:path}`` the rest of the path, slashes
included (SGLang's ``/v1/models/{model:path}``). Paths are matched as the engine routes
them: percent-decoded, with no empty or dot segment (the gate normalises a request's path
before it asks).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["route_matches"]

# A path parameter: {name} or {name:path}.
PARAMETER = re.compile(r"\{(\w+)(:path)?\}")


def route_matches(routes: Iterable[str], path: str) -> bool:
    """Whether ``path`` (decoded, normalised) is one of ``routes`` (patterns as above)."""
    return any(_pattern(route).fullmatch(path) for route in routes)


@functools.cache
def _pattern(route: str) -> re.Pattern[str]:
    """The regular expression of one route pattern (``ValueError`` for a malformed one)."""
    literal = PARAMETER.sub("", route)
    if not route.startswith("/") or "{" in literal or "}" in literal:
        raise ValueError(f"route must be a path with {{name}} parameters, got {route!r}")
    parts, end = [], 0
    for match in PARAMETER.finditer(route):
        parts += [re.escape(route[end : match.start()]), ".+" if match.group(2) else "[^/]+"]
        end = match.end()
    parts.append(re.escape(route[end:]))
    return re.compile("".join(parts))
