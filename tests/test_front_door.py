"""The front door exports the solver only; wings and commands load on first use."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest

import learnsched as ls

from conftest import run_python

WINGS = ("learnsched.capacity", "learnsched.economics", "learnsched.handoff")
HEAVY = (*WINGS, "learnsched.cli", "http.client", "subprocess")


def _heavy_loaded(code: str, tmp_path: Path) -> set[str]:
    probe = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))\n"
    done = run_python(["-c", probe], cwd=tmp_path, check=True)
    modules = json.loads(done.stdout.splitlines()[-1])
    return {m for m in modules if m in HEAVY or m.startswith("learnsched.cli.")}


def loaded_after(code: str, tmp_path: Path) -> set[str]:
    """The modules among HEAVY (and learnsched.cli.*) that ``code`` loads beyond numpy's.

    numpy, which the front door needs, brings its own: numpy 2.2 on Python 3.10 imports
    ``platform``, which imports ``subprocess`` there. Those are not learnsched's doing.
    """
    return _heavy_loaded(code, tmp_path) - _numpy_loads()


@functools.cache
def _numpy_loads() -> frozenset[str]:
    return frozenset(_heavy_loaded("import numpy", Path(tempfile.gettempdir())))


def test_import_loads_no_wing(tmp_path: Path) -> None:
    assert loaded_after("import learnsched", tmp_path) == set()


def test_version_loads_no_command(tmp_path: Path) -> None:
    code = (
        "from learnsched.cli import main\n"
        "try:\n"
        "    main(['--version'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert loaded_after(code, tmp_path) == {"learnsched.cli", "learnsched.cli.output"}


def test_grid_loads_only_its_command(tmp_path: Path) -> None:
    code = "from learnsched.cli import main\nmain(['grid', '--json'])"
    assert loaded_after(code, tmp_path) == {
        "learnsched.cli",
        "learnsched.cli.costs",  # --costs: its flags (the handoff wing loads only with it)
        "learnsched.cli.output",
        "learnsched.cli.solve",
    }


def test_wings_load_on_first_use() -> None:
    assert ls.capacity.max_share is not None
    assert ls.handoff.PAPER_PROFILE.handoff_costs("cold") == ls.PAPER_COLD
    with pytest.raises(AttributeError, match="no attribute 'no_such_wing'"):
        _ = ls.no_such_wing


def test_version_is_the_installed_metadata() -> None:
    import importlib.metadata

    assert ls.__version__ == importlib.metadata.version("learnsched")


def test_front_door_is_the_solver() -> None:
    assert len(ls.__all__) < 35
    for name in ls.__all__:
        assert getattr(ls, name) is not None
    assert not {"CostProfile", "max_share", "ReusePath", "load_cost_profile"} & set(ls.__all__)
