"""Optional dependencies: imported on first use, or one error naming the extra to install.

The package never imports an extra at import time; a function that needs one calls
:func:`require`. The command line turns :class:`MissingExtra` into exit status 3.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtra", "install_hint", "require"]


class MissingExtra(ImportError):
    """An optional package (or the hardware it drives) is not available here."""


def install_hint(extra: str) -> str:
    """The install commands for ``extra``: from PyPI, and from a source tree."""
    return f"pip install 'learnsched[{extra}]' (from a source tree: pip install \".[{extra}]\")"


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtra` naming ``extra`` to install.

    Parameters
    ----------
    module
        The dotted module name, e.g. ``"matplotlib.pyplot"``.
    extra
        The learnsched extra that installs it, e.g. ``"plot"``.

    Returns
    -------
    ModuleType
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(
            f"{module} is not installed ({err}); install the {extra} extra: {install_hint(extra)}",
            name=module,
        ) from err
