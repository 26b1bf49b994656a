"""``MODULE:NAME`` flags (``--trainer``, ``--scores``) find the user's module in the
directory the command runs from, as ``python -m`` does, even from a console script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from learnsched._named import import_named

MODULE = "a_trainer_beside_the_user"


@pytest.fixture
def beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module in a fresh current directory that is not on the import path, as under
    a console script (whose path starts with its bin folder)."""
    (tmp_path / f"{MODULE}.py").write_text(
        "from learnsched.control.trainer import Trainer\n\nclass Mine(Trainer):\n    pass\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return tmp_path


def test_a_module_in_the_current_directory_is_found(beside: Path) -> None:
    cls = import_named(f"{MODULE}:Mine", "trainer", "CLASS")
    assert getattr(cls, "__name__", None) == "Mine"
    assert sys.path[-1] == str(beside)  # last: it shadows nothing installed


def test_the_current_directory_is_added_once(beside: Path) -> None:
    import_named(f"{MODULE}:Mine", "trainer", "CLASS")
    import_named(f"{MODULE}:Mine", "trainer", "CLASS")
    assert sys.path.count(str(beside)) == 1


def test_a_missing_module_is_still_named(beside: Path) -> None:
    with pytest.raises(ValueError, match="cannot import no_such_module_here"):
        import_named("no_such_module_here:X", "trainer", "CLASS")


def test_a_console_script_loads_a_trainer_beside_the_user(beside: Path) -> None:
    """``-I``: neither the current directory nor PYTHONPATH on the path, as a console
    script starts."""
    code = (
        "from learnsched.control.trainer import load_trainer_class; "
        f"print(load_trainer_class('{MODULE}:Mine').__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=beside, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Mine"
