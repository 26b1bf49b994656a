"""Old import paths of moved modules and names: they keep working for one release.

One table says where each thing went. A whole module that moved (and every module below
it) is found by :class:`MovedFinder` on ``sys.meta_path``, installed by the front door:
importing the old path imports the new module, warns, and makes the old name an alias
of the same module object. A name that moved out of a module that is still there (a
wing's front door, or a module split in two) is found by that module's ``__getattr__``,
which calls :func:`moved_attribute`. The new modules are named here as strings and
imported with :mod:`importlib`, so a lower wing never imports a higher one by statement.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import FrameType, ModuleType

__all__ = ["MODULES", "NAMES", "MovedFinder", "install", "moved_attribute"]

MODULES: dict[str, str] = {
    "learnsched.handoff.endpoint": "learnsched.serving.endpoint",
    "learnsched.handoff.engines": "learnsched.serving.engines",
    "learnsched.handoff.errors": "learnsched.serving.errors",
    "learnsched.handoff.ledger": "learnsched.serving.ledger",
    "learnsched.handoff.preflight": "learnsched.serving.preflight",
    "learnsched.handoff.readiness": "learnsched.serving.readiness",
    "learnsched.portfolio.queue": "learnsched.control.queue",
    "learnsched.control.forecast": "learnsched.control.deciders",
}
"""Old module path -> new module path; the modules below an old path follow it."""

_SERVING = "learnsched.serving"
NAMES: dict[str, dict[str, str]] = {
    "learnsched.handoff": {
        **dict.fromkeys(
            (
                "ENGINES",
                "REGISTRY",
                "DeviceMemory",
                "Engine",
                "EngineBusy",
                "Generation",
                "GpuExtraMissing",
                "GpuProcess",
                "HandoffLedger",
                "HandoffProbeError",
                "HandoffRecord",
                "HostMemory",
                "HttpStatusError",
                "NvmlError",
                "NvmlUnavailable",
                "RecoveryFailed",
                "ServerConfigError",
                "ServingEndpoint",
                "TornRecordWarning",
                "poll_until",
                "read_ledger",
            ),
            _SERVING,
        ),
    },
    # MOVES, Decider and MoveDecider are still imported by the loop, so still there.
    "learnsched.control.loop": {"ModelDecider": "learnsched.control.deciders"},
    "learnsched.control.queue": {"QueueDecider": "learnsched.control.deciders"},
    "learnsched.handoff.waits": dict.fromkeys(
        ("DEFAULT_POLL_S", "POLL_RANGE_S", "Polled", "check_poll", "poll_until"),
        "learnsched.serving.polling",
    ),
}
"""Module that still exists -> name that left it -> the module that holds it now."""


def _user_frame_level() -> int:
    """The ``stacklevel`` that points a warning raised by our caller at the user's line.

    Counted as :func:`warnings.warn` counts (frames of importlib's bootstrap are not
    counted), skipping this module, importlib and the moved-from module's
    ``__getattr__``.
    """
    frame: FrameType | None = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame is not None:
        filename = frame.f_code.co_filename
        if "importlib" in filename and "_bootstrap" in filename:
            frame = frame.f_back
            continue
        ours = filename == __file__ or "importlib" in filename
        if not (ours or frame.f_code.co_name == "__getattr__"):
            return level
        level += 1
        frame = frame.f_back
    return level


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; the old path goes in the next release",
        DeprecationWarning,
        stacklevel=_user_frame_level(),
    )


def new_path(fullname: str) -> str | None:
    """Where the module ``fullname`` lives now, or ``None`` if it did not move."""
    for old, new in MODULES.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and loads it as an alias of the module's new home."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for ``fullname`` if it is an old path in :data:`MODULES`, else ``None``."""
        if not fullname.startswith("learnsched.") or new_path(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """The default placeholder module: :meth:`exec_module` replaces it."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Import the new module, warn, and put it in ``sys.modules`` under the old name.

        The import system returns whatever ``sys.modules`` holds under the old name once
        this returns, so the old path and the new one give the same module object.
        """
        old = module.__name__
        new = new_path(old)
        assert new is not None  # find_spec only answers for moved paths
        moved = importlib.import_module(new)
        _warn(old, new)
        sys.modules[old] = moved


def moved_attribute(module: str, name: str) -> object:
    """A name that moved out of ``module`` (for its ``__getattr__``), with a warning.

    Raises
    ------
    AttributeError
        ``name`` never was in ``module`` (the normal ``__getattr__`` answer).
    """
    new = NAMES.get(module, {}).get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(new), name)
    _warn(f"{module}.{name}", f"{new}.{name}")
    return value


def install() -> None:
    """Put one :class:`MovedFinder` first on ``sys.meta_path`` (again: no-op)."""
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
