"""Importing a source tree whose C++ core is not built: one error that says why and what
to run, naming an installed copy the tree shadows, never a later AttributeError."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def unbuilt_tree(tmp_path: Path) -> Path:
    """A checkout's layout (setup.py, csrc/, the package) with no compiled module."""
    tree = tmp_path / "checkout"
    shutil.copytree(
        ROOT / "learnsched", tree / "learnsched",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"),
    )  # fmt: skip
    (tree / "csrc").mkdir()
    (tree / "setup.py").write_text("")
    return tree


def import_in(tree: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``import learnsched`` run in ``tree`` as a user would (the tree first on sys.path)."""
    code = f"{prelude}\nimport learnsched"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_an_unbuilt_tree_says_so_at_import(unbuilt_tree: Path) -> None:
    result = import_in(unbuilt_tree)
    assert result.returncode == 1
    line = last_line(result)
    assert line.startswith("ImportError: "), result.stderr
    assert "pip install -e ." in line
    assert "AttributeError" not in result.stderr


def test_an_installed_copy_the_tree_shadows_is_named(unbuilt_tree: Path, tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    (site / "learnsched").mkdir(parents=True)
    # An installed distribution whose package folder is `site`, the tree's own aside.
    prelude = (
        "import importlib.metadata as m\n"
        "class Dist:\n"
        f"    def locate_file(self, name): return {str(site)!r} + '/' + name\n"
        "m.distribution = lambda name: Dist()"
    )
    line = last_line(import_in(unbuilt_tree, prelude))
    assert f"from the source tree {unbuilt_tree}" in line
    assert f"the installed learnsched is at {site / 'learnsched'}" in line
    assert "Run Python from another directory" in line
