"""Write the API reference pages from the package itself, before Sphinx reads any page.

One page per public package a user imports (``learnsched``, then each wing:
``learnsched.calendar``, ``learnsched.handoff``, ...). A page documents the package's
``__all__`` and then, as sections, each public submodule's docstring and the names of its
``__all__`` not already documented under the package. "Public" means no path component
starts with ``_``; ``learnsched.cli`` is the CLI reference's (``cli.md``), not this one's.
Each object is documented once, where the user first meets it (walking outward from the
front door), so a name re-exported by a wing is not repeated under its defining module.
A module or name added later gets its entry without an edit here.

The pages are reStructuredText (autodoc emits reST, which MyST pages cannot hold
directly). Constants are written as ``py:data`` with the doc comment of the module that
defines them, since autodoc would otherwise show the docstring of their type (a tuple's).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

from sphinx.pycode import ModuleAnalyzer, PycodeError

PACKAGE = "learnsched"
SKIP = ("learnsched.cli",)  # documented by cli.md from the parsers
OUT = "api"  # relative to the Sphinx source folder
MAX_VALUE = 72  # longer constant values are left out of the page


def _public(name: str) -> bool:
    if any(part.startswith("_") for part in name.split(".")):
        return False
    return not any(name == skip or name.startswith(skip + ".") for skip in SKIP)


def _modules(package: ModuleType) -> list[str]:
    """Every public module below ``package``, in name order."""
    found = pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    return sorted(info.name for info in found if _public(info.name))


def _heading(text: str, mark: str) -> str:
    return f"{text}\n{mark * len(text)}\n"


def _indent(lines: list[str]) -> str:
    return "".join(f"   {line}\n" if line else "\n" for line in lines)


class Reference:
    """The pages, and which objects and constants are already documented."""

    def __init__(self, modules: list[str]) -> None:
        self.modules = modules
        self.seen: set[int] = set()  # ids of documented classes and functions
        self.constants: set[tuple[str, int]] = set()  # (name, id) of documented data
        self.names: dict[int, str] = {}  # id of a class or function -> its documented name
        self.data: dict[str, list[tuple[object, str]]] = {}  # name -> (value, documented)
        self.typevars: list[str] = []  # signatures name them; they have no page
        self._docs: dict[str, dict[str, list[str]]] = {}

    def attribute_doc(self, name: str, obj: object) -> list[str]:
        """The doc comment of constant ``name`` in the module that defines it."""
        for module in [PACKAGE, *self.modules]:
            docs = self._docs.get(module)
            if docs is None:
                try:
                    found = ModuleAnalyzer.for_module(module).find_attr_docs()
                except PycodeError:
                    found = {}
                docs = self._docs[module] = {n: lines for (scope, n), lines in found.items()
                                             if scope == ""}  # fmt: skip
            if name in docs and getattr(importlib.import_module(module), name, None) is obj:
                return [line.rstrip("\n") for line in docs[name]]
        return []

    def entry(self, module: str, name: str, obj: object) -> str:
        """The directive documenting ``module.name`` (empty if documented already)."""
        if isinstance(obj, ModuleType):
            return ""  # a submodule in __all__ gets its own section
        if inspect.isclass(obj) or inspect.isroutine(obj):
            if id(obj) in self.seen:
                return ""
            self.seen.add(id(obj))
            self.names[id(obj)] = f"{module}.{name}"
            kind = "autoclass" if inspect.isclass(obj) else "autofunction"
            options = "   :members:\n   :show-inheritance:\n" if kind == "autoclass" else ""
            return f".. {kind}:: {module}.{name}\n{options}\n"
        key = (name, id(obj))
        if key in self.constants:
            return ""
        self.constants.add(key)
        self.data.setdefault(name, []).append((obj, f"{module}.{name}"))
        lines = [f".. py:data:: {name}", f"   :module: {module}"]
        value = repr(obj)
        alias = typing.get_origin(obj) is not None
        if alias or len(value) <= MAX_VALUE:
            lines.append(f"   :value: {value}")
        doc = self.attribute_doc(name, obj)
        return "\n".join(lines) + "\n\n" + _indent(doc) + "\n"

    def section(self, module: str, level: str | None) -> str:
        """A module's docstring and its ``__all__``; a heading unless it is the page's."""
        text = _heading(f"``{module}``", level) + "\n" if level else ""
        # A module named like a function its package exports (capacity.replay): the
        # function keeps the name's index entry.
        clash = module in self.names.values()
        options = "   :no-members:\n" + ("   :no-index:\n" if clash else "")
        text += f".. automodule:: {module}\n{options}\n"
        imported = _load(module)
        self.typevars += [f"{module}.{n}" for n, v in vars(imported).items()
                          if isinstance(v, typing.TypeVar)]  # fmt: skip
        for name in getattr(imported, "__all__", ()):
            text += self.entry(module, name, getattr(imported, name))
        return text


def write_pages(srcdir: Path) -> Reference:
    """Write ``api/*.rst`` and ``api/index.rst`` under ``srcdir``; what they document."""
    root = _load(PACKAGE)
    modules = _modules(root)
    ref = Reference(modules)
    packages = [m for m in modules if m.count(".") == 1 and hasattr(_load(m), "__path__")]
    # The front door first (it claims the solver's names) with the top-level modules as
    # sections; then one page per subpackage with its own modules as sections.
    pages = {PACKAGE: _heading(f"``{PACKAGE}``", "=") + "\n" + ref.section(PACKAGE, None)}
    for name in modules:
        if name.count(".") == 1 and name not in packages:
            pages[PACKAGE] += ref.section(name, "-")
    for package in packages:
        text = _heading(f"``{package}``", "=") + "\n" + ref.section(package, None)
        for name in modules:
            if name.startswith(package + "."):
                text += ref.section(name, "-")
        pages[package] = text
    out = srcdir / OUT
    out.mkdir(exist_ok=True)
    for name, text in pages.items():
        _write(out / f"{name}.rst", text)
    toc = "".join(f"   {name}\n" for name in pages)
    index = (
        _heading("API reference", "=")
        + "\nGenerated from the docstrings of each public module (numpy style, rendered by "
        "numpydoc).\nThe solver is the front door, ``learnsched``; each wing is a subpackage "
        "loaded on first use.\n\n.. toctree::\n   :maxdepth: 1\n\n" + toc
    )
    _write(out / "index.rst", index)
    return ref


def _lookup(path: str) -> tuple[bool, object]:
    """``(True, obj)`` for the object at dotted ``path`` (importing its module), else
    ``(False, None)``."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False, None
        return True, obj
    return False, None


def _scopes(context: str) -> list[str]:
    """Where a name written in the docstring of ``context`` is looked up: the context
    itself (a class's methods), then its module and each package above it; for an object
    documented where users import it, the same from where it is defined."""
    found, obj = _lookup(context)
    paths = [context]
    defined = getattr(obj, "__module__", None) if found else None
    if isinstance(defined, str):
        paths.append(f"{defined}.{getattr(obj, '__qualname__', '')}".rstrip("."))
    out = []
    for path in paths:
        parts = path.split(".")
        out += [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    return out


def documented_name(ref: Reference, target: str, contexts: list[str]) -> str | None:
    """Where ``target``, as written in the docstrings of ``contexts``, is documented: docstrings name objects where they are defined (``:func:`read_ledger``` in
    ``learnsched.serving.ledger``), the reference documents them where users import them
    (``learnsched.serving.read_ledger``). Resolved by the object itself, not its name."""
    target = target.lstrip(".")
    scopes: list[str] = []
    for context in contexts:
        scopes += [s for s in _scopes(context) if s not in scopes]
    for scope in [*scopes, ""]:
        path = f"{scope}.{target}" if scope else target
        found, obj = _lookup(path)
        if not found:
            continue
        if id(obj) in ref.names:
            return ref.names[id(obj)]
        for value, name in ref.data.get(path.rsplit(".", 1)[-1], ()):
            if value is obj:
                return name
        owner, _, attr = path.rpartition(".")
        found, parent = _lookup(owner)
        if found and id(parent) in ref.names:  # a method or attribute of a documented class
            return f"{ref.names[id(parent)]}.{attr}"
    return None


def _private(target: str, contexts: list[str]) -> bool:
    """Whether ``target`` names an object of a private module (``_config.STRICT``)."""
    target = target.lstrip(".")
    for context in contexts:
        for scope in [*_scopes(context), ""]:
            path = f"{scope}.{target}" if scope else target
            found, obj = _lookup(path)
            if found:
                defined = getattr(obj, "__module__", None) or path.rpartition(".")[0]
                return any(part.startswith("_") for part in f"{defined}.{path}".split("."))
    return False


def _missing_reference(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py" or not hasattr(app, "learnsched_reference"):
        return None
    module, cls = node.get("py:module"), node.get("py:class")
    contexts = [f"{module}.{cls}" if cls else module] if module else []
    # Where the docstring came from ("...:docstring of learnsched.batch.solve_batch").
    source = getattr(node, "source", None) or ""
    if "docstring of " in source:
        contexts.insert(0, source.rsplit("docstring of ", 1)[1])
    ref = app.learnsched_reference
    name = documented_name(ref, node["reftarget"], contexts)
    if name is None and _private(node["reftarget"], contexts):
        return contnode  # a private module's name: plain text, as in signatures
    domain = env.get_domain("py")
    node["refspecific"] = False
    found = None
    if name is not None and name != node["reftarget"]:
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], name, node, contnode
        )
    if found is None and node["reftype"] == "attr":
        # An instance attribute (set in __init__, a dataclass field) has no entry of its
        # own: the reference goes to its class, which describes it.
        owner, _, _ = node["reftarget"].lstrip(".~").rpartition(".")
        cls = documented_name(ref, owner, contexts) if owner else node.get("py:class")
        if cls:
            found = domain.resolve_xref(
                env, node["refdoc"], app.builder, "class", cls, node, contnode
            )
    return found


def _load(name: str) -> ModuleType:
    """Import ``name``; a failure names the module and the likely cause."""
    try:
        return importlib.import_module(name)
    except Exception as err:
        raise RuntimeError(
            f"the API reference cannot import {name}: {err!r} (is the installed "
            "learnsched built from this tree? pip install -e . --no-build-isolation)"
        ) from err


def _write(path: Path, text: str) -> None:
    """Write only on change, so Sphinx's incremental builds reread only what changed."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _generate(app: Any) -> None:
    ref = app.learnsched_reference = write_pages(Path(app.srcdir))
    app.config.nitpick_ignore += [(kind, name) for name in ref.typevars
                                  for kind in ("py:class", "py:obj")]  # fmt: skip


def _factory_defaults(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None]:
    """A dataclass field with a ``default_factory`` shows ``= <factory>``, which is no
    Python: Sphinx then splits the whole signature at every comma, so ``tuple[int, ...]``
    becomes two unresolved types. Show ``= ...`` (a default exists) instead."""
    if signature is not None:
        signature = signature.replace("= <factory>", "= ...")
    return signature, return_annotation


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _generate)
    app.connect("missing-reference", _missing_reference)
    app.connect("autodoc-process-signature", _factory_defaults)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
