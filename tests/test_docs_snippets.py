"""The README's and the docs' Python snippets run, and type-check with mypy.

Every fenced ``python`` block of README.md and docs/**/*.md is a snippet; a page's
snippets run in order in one namespace, as a reader would paste them. mypy checks each
page as one module, strictly, against the installed package and its stubs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conftest import run_python

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/ (where the tree has them)."""
    docs = ROOT / "docs"
    found = sorted(docs.rglob("*.md")) if docs.is_dir() else []
    return [ROOT / "README.md", *(p for p in found if "_build" not in p.parts)]


def snippets(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


PAGES = [p for p in pages() if snippets(p)]


def module_text(page: Path) -> str:
    return "\n".join(snippets(page))


def module_name(page: Path) -> str:
    return "snippets_" + re.sub(r"\W", "_", str(page.relative_to(ROOT).with_suffix("")))


def test_the_readme_has_snippets() -> None:
    assert ROOT / "README.md" in PAGES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_snippets_run(page: Path, tmp_path: Path) -> None:
    # A child process outside the source tree, so only the installed package is imported.
    script = tmp_path / f"{module_name(page)}.py"
    script.write_text(module_text(page), encoding="utf-8")
    done = run_python([str(script)], cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr


def test_snippets_type_check(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    api = pytest.importorskip("mypy.api", reason="needs mypy (learnsched[dev])")
    files = []
    for page in PAGES:
        path = tmp_path / f"{module_name(page)}.py"
        path.write_text(module_text(page), encoding="utf-8")
        files.append(str(path))
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    cache_dir = cache.mkdir("mypy-snippets") if cache is not None else tmp_path / ".mypy"
    # The package's own settings (strict), with mypy's cache kept between runs.
    stdout, stderr, status = api.run(
        [
            "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(cache_dir),
            "--no-error-summary",
            *files,
        ]
    )  # fmt: skip
    assert status == 0, stdout + stderr


def test_no_snippet_needs_what_the_docs_do_not_install() -> None:
    # Snippets run with the test extra only: every import is the package's, numpy's or
    # the standard library's (a snippet for an extra goes in examples/, which CI runs).
    allowed = {"learnsched", "numpy", "__future__", *sys.stdlib_module_names}
    for page in PAGES:
        for module in re.findall(r"^(?:from|import) (\w+)", module_text(page), re.MULTILINE):
            assert module in allowed, (page.name, module)
