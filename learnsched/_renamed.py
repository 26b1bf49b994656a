"""Renamed names that still work for one release, with a ``DeprecationWarning``.

A module lists its old names in a mapping (old name -> new name) and hands it to
:func:`module_aliases` for its ``__getattr__``; an old keyword argument is read by
:func:`renamed_kwargs`, an old command-line flag by :func:`renamed_flag`, and other
readers (JSON keys) call :func:`warn_renamed` when they meet an old spelling.
"""

from __future__ import annotations

import argparse
import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

__all__ = ["module_aliases", "renamed_flag", "renamed_kwargs", "warn_renamed"]

P = ParamSpec("P")
R = TypeVar("R")


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


def renamed_kwargs(**aliases: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A decorator reading each old keyword argument of ``aliases`` (old=new) as its new
    name, with a ``DeprecationWarning`` (``TypeError`` when both are given)."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            for old, new in aliases.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"give {new!r} only, not also its deprecated {old!r}")
                    warn_renamed("keyword argument", old, new)
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate


def renamed_flag(new: str) -> type[argparse.Action]:
    """An ``argparse`` action for a deprecated flag: it stores its value as the flag
    ``new`` does (give it ``dest`` and ``type``) and warns that ``new`` replaces it."""

    class Renamed(argparse.Action):
        def __call__(
            self,
            parser: argparse.ArgumentParser,
            namespace: argparse.Namespace,
            values: str | Sequence[Any] | None,
            option_string: str | None = None,
        ) -> None:
            warn_renamed("flag", option_string or self.option_strings[0], new, stacklevel=2)
            setattr(namespace, self.dest, values)

    return Renamed
