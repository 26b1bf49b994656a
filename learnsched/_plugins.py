"""Loading the user's own code named ``MODULE:NAME`` (a trainer class, a score factory).

Importing a user's module runs it: whatever it raises (an ImportError, a SyntaxError, a
RuntimeError of its own) is reported as bad input naming the option and the module, never
as a bug of learnsched.
"""

from __future__ import annotations

import importlib

__all__ = ["load_named"]


def load_named(spec: str, option: str, expected: str) -> object:
    """The object ``MODULE:NAME`` names.

    Parameters
    ----------
    spec
        ``MODULE:NAME``.
    option
        The option it was given as, for messages (``"trainer"``, ``"scores"``).
    expected
        What ``NAME`` is (``"CLASS"``), for messages.

    Raises
    ------
    ValueError
        Not ``MODULE:NAME``, the module does not import (any exception it raises), or it
        has no such name.
    """
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise ValueError(f"{option} must be MODULE:{expected}, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise ValueError(
            f"{option} {spec!r}: cannot import {module_name} ({type(err).__name__}: {err})"
        ) from err
    found = getattr(module, name, None)
    if found is None:
        raise ValueError(f"{option} {spec!r}: {module_name} has no {name}")
    return found
