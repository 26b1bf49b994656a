"""Renamed names that still work for one release, with a ``DeprecationWarning``.

A module lists its old names in a mapping (old name -> new name) and hands it to
:func:`module_aliases` for its ``__getattr__``; readers of keyword arguments, JSON keys
and command-line flags call :func:`warn_renamed` when they meet an old spelling.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["module_aliases", "renamed_key", "warn_renamed"]


def warn_renamed(what: str, old: str, new: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` (a ``what``: name, key, flag ...) is deprecated for ``new``."""
    warnings.warn(
        f"the {what} {old!r} is deprecated and will be removed in the next release: use {new!r}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def module_aliases(
    module: str, namespace: Mapping[str, Any], aliases: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each old name of ``aliases`` as its new name's
    object of ``namespace`` (the module's globals), with a ``DeprecationWarning``."""

    def __getattr__(name: str) -> Any:
        new = aliases.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed("name", f"{module}.{name}", f"{module}.{new}")
        return namespace[new]

    return __getattr__


def renamed_key(data: Mapping[str, Any], old: str, new: str, what: str = "key") -> dict[str, Any]:
    """``data`` with its deprecated key ``old`` read as ``new`` (a warning when present;
    ``ValueError`` when both are given)."""
    if old not in data:
        return dict(data)
    if new in data:
        raise ValueError(f"give {new!r} only, not also its deprecated spelling {old!r}")
    warn_renamed(what, old, new, stacklevel=4)
    return {new if k == old else k: v for k, v in data.items()}
