"""What to do when the C++ core cannot be imported: most often, not a failed build but
the source tree shadowing the installed package (Python puts the current directory first
on ``sys.path``, so ``python -c "import learnsched"`` in a checkout imports the checkout,
whose core ``pip install .`` built elsewhere)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

__all__ = ["core_import_error"]


def _installed_elsewhere(here: Path) -> Path | None:
    """Where an installed learnsched lives, if not in ``here`` (None if it is not installed)."""
    try:
        dist = importlib.metadata.distribution("learnsched")
    except importlib.metadata.PackageNotFoundError:
        return None
    site = Path(str(dist.locate_file("learnsched"))).resolve()
    # An editable install has no package folder there: it is a source tree itself.
    return site if site.is_dir() and site != here else None


def core_import_error(err: ImportError) -> ImportError:
    """The error to raise for ``err`` (the core's own import error): it says why and what
    to run."""
    here = Path(__file__).resolve().parent
    source_tree = (here.parent / "setup.py").is_file() and (here.parent / "csrc").is_dir()
    elsewhere = _installed_elsewhere(here) if source_tree else None
    if elsewhere is not None:
        return ImportError(
            f"this imported learnsched from the source tree {here.parent} (the current "
            f"directory comes first on sys.path), whose C++ core is not built; the installed "
            f"learnsched is at {elsewhere}. Run Python from another directory, or build the "
            f"tree in place with `pip install -e .` ({err})"
        )
    return ImportError(
        "learnsched's C++ core (learnsched._core) is not built. Install the package with "
        f"`pip install .` (or `pip install -e .` for development) from the source tree ({err})"
    )
