"""Sphinx configuration: MyST Markdown pages, autodoc + numpydoc for the API reference,
sphinx-argparse for the CLI reference. Built in CI with ``-W --keep-going -n``.

The API pages (``api/*.rst``) are written at build time by ``_ext/apigen.py`` from each
public module's ``__all__``, so a module or name added later is documented without an
edit here. They are build outputs (git-ignored).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

project = "learnsched"
author = "learnsched developers"
copyright = "2026, learnsched developers"


def _release() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("learnsched")
    except importlib.metadata.PackageNotFoundError:  # a tree that was never installed
        return "0+unknown"


release = _release()
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinxarg.ext",
    "apigen",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}  # api/*.rst: generated
root_doc = "index"
exclude_patterns = ["_build", "README.md"]
templates_path: list[str] = []

# MyST: ``{math}``/``$...$``, ``:::`` fences, definition lists; headings get anchors so
# pages can link to sections (``[text](model.md#feasibility-eq-10)``).
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# Every reference must resolve (-n in CI). Names from outside the package resolve to
# nothing here (the build runs offline, so no intersphinx): they are listed, not hidden.
EXTERNAL = (
    "numpy", "np", "npt", "collections", "typing", "typing_extensions", "pathlib", "os",
    "io", "argparse", "threading", "subprocess", "concurrent", "enum", "dataclasses",
    "datetime", "types", "json", "http", "socket", "random", "abc", "multiprocessing",
    "torch", "ray", "pyarrow", "matplotlib", "peft", "safetensors", "pynvml", "psutil",
    "aiohttp", "prometheus_client",
)  # fmt: skip
nitpicky = True
nitpick_ignore_regex = [
    ("py:.*", rf"({'|'.join(EXTERNAL)})(\..*)?"),
    # Private modules (learnsched._core, ._extras, ...) are not documented: a signature
    # or base class that names one stays plain text. So do pybind11's base class and the
    # commands' modules (the CLI reference documents the commands, not their code).
    ("py:.*", r"learnsched\._.*|(.*\.)?_[A-Za-z]\w*|pybind11_builtins\..*|learnsched\.cli(\..*)?"),
]

# autodoc: signatures keep their type hints; members in source order.
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_class_signature = "mixed"
# numpydoc: no autosummary tables of members (autodoc lists them itself).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
autosummary_generate = False  # numpydoc loads autosummary; no stub pages are wanted

html_theme = "furo"
html_title = f"learnsched {release}"
html_static_path: list[str] = []
smartquotes = False  # help texts show --out, not an en dash
