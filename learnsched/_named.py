"""Objects named ``MODULE:NAME`` on the command line (trainers, score factories).

``MODULE`` is found as ``python -m`` finds it: in the directory the command runs from as
well as on the path. A console script's own path holds its ``bin`` folder, not the
current directory, so a user's ``mytrainer.py`` beside them would be out of reach; the
current directory goes last, so it never shadows an installed module.
"""

from __future__ import annotations

import importlib
import os
import sys

__all__ = ["import_named"]


def import_named(spec: str, what: str, placeholder: str = "NAME") -> object:
    """The attribute ``NAME`` of the importable ``MODULE`` that ``spec`` names.

    Parameters
    ----------
    spec
        ``MODULE:NAME``; ``MODULE`` is looked for in the current directory too.
    what
        What it is, for the messages (``"trainer"``, ``"scores"``).
    placeholder
        How the messages call the name (``"CLASS"`` for a class).

    Raises
    ------
    ValueError
        Not ``MODULE:NAME``, the module cannot be imported (whatever importing it raises),
        or it has no such name.
    """
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise ValueError(f"{what} must be MODULE:{placeholder}, got {spec!r}")
    _search_here()
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # the user's module runs: whatever it raises
        # (a SyntaxError, its own RuntimeError) is bad input naming it, not a learnsched bug.
        detail = str(err) if isinstance(err, ImportError) else f"{type(err).__name__}: {err}"
        raise ValueError(f"{what} {spec!r}: cannot import {module_name} ({detail})") from err
    if not hasattr(module, name):
        raise ValueError(f"{what} {spec!r}: {module_name} has no {name}")
    return getattr(module, name)


def _search_here() -> None:
    """Put the current directory on the import path (last) unless it is there."""
    here = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == here for entry in sys.path):
        sys.path.append(here)
