"""The package's import structure: no import cycle, no wing using another's privates, and
no wing importing a wing above it.

Read from the sources with :mod:`ast`, so nothing is imported. For cycles, a module-level
import (``if TYPE_CHECKING:`` blocks included: a type-only cycle is still a cycle) is an
edge from the importing module to the one imported; imports inside functions are the
package's deliberate lazy loads and are not edges. For layers every import counts, lazy
ones included: a lazy import still makes the lower wing need the higher one. A wing is a
subpackage of ``learnsched`` (``handoff``, ``control``, ``gate`` ...): it may use another
wing's public names only, and the package's own top-level modules (``learnsched._checks``
...) are the layer every wing stands on. Within a wing or the top level too, no module
imports a name another module marks private (see :func:`private_names` for what is
exempt).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "learnsched"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def is_package(name: str) -> bool:
    return name in MODULES and MODULES[name].name == "__init__.py"


def base_of(name: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    package = name if is_package(name) else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports(name: str, node: ast.AST) -> Iterator[tuple[str, str | None]]:
    """``(module, imported name or None)`` for each import statement under ``node``."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        base = base_of(name, node)
        for alias in node.names:
            yield base, alias.name


def module_level(tree: ast.Module) -> Iterator[ast.AST]:
    """Statements run at import: the body, and the bodies of top-level if/try blocks."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.If):
            pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                pending += handler.body


def targets(base: str, imported: str | None) -> list[str]:
    """The package modules an import loads (a submodule imported by name included)."""
    found = [base] if base in MODULES else []
    if imported is not None and f"{base}.{imported}" in MODULES:
        found.append(f"{base}.{imported}")
    return found


def ancestors(name: str) -> set[str]:
    """The packages above a module: Python imports them before it, so no edge."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = ancestors(name) | {name}
        for node in module_level(tree):
            for base, imported in imports(name, node):
                edges[name].update(t for t in targets(base, imported) if t not in skip)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def wing(name: str) -> str | None:
    """The wing a module belongs to (``None``: a top-level module of the package)."""
    parts = name.split(".")
    if len(parts) >= 2 and is_package(".".join(parts[:2])):
        return parts[1]
    return None


def private_uses() -> list[str]:
    """``importer: what`` for every import (lazy ones too) of another wing's private name."""
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            for base, imported in imports(name, node):
                if not base.startswith("learnsched.") or wing(base) in (None, wing(name)):
                    continue
                inner = base.split(".")[2:]
                if any(part.startswith("_") for part in inner) or (
                    imported is not None and imported.startswith("_")
                ):
                    found.append(f"{name}: {base} import {imported}")
    return found


def is_private_module(base: str, imported: str) -> bool:
    """Whether ``from base import imported`` imports a whole module (Python source, or a
    compiled extension with its stub) rather than a name defined in ``base``."""
    folder = PACKAGE.parent.joinpath(*base.split("."), imported)
    return folder.is_dir() or any(folder.with_suffix(s).exists() for s in (".py", ".pyi"))


def private_names() -> list[str]:
    """``importer: what`` for every import (lazy ones too) of a private name defined in
    another module of the package, wing or not.

    A leading underscore on a name in a module says "this module's own": a name that two
    modules share is public in the module that defines it (with a docstring; in
    ``__all__`` where users meet it) or moves down to a module both stand on. Two
    imports are not of that kind. A private module imported whole (``from learnsched
    import _core``) is the package's way of saying "not for users", not a name private
    to a module. A module whose own name is private (``learnsched._checks``,
    ``learnsched._json``, ``learnsched.testing._state``) exists to hold the shared
    internals of the package or of its wing, so everything in it is there for its
    siblings to import; the underscore on the module already keeps it from users.
    """
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            for base, imported in imports(name, node):
                if (
                    imported is None
                    or not imported.startswith("_")
                    or imported.startswith("__")
                    or base == name
                    or base.rpartition(".")[2].startswith("_")
                    or (base != "learnsched" and not base.startswith("learnsched."))
                    or is_private_module(base, imported)
                ):
                    continue
                found.append(f"{name}: {base} import {imported}")
    return found


def test_the_checks_see_a_cycle_and_a_private_import() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    node = ast.parse("from ..handoff.recovery import _park").body[0]
    assert list(imports("learnsched.control.actuation", node)) == [
        ("learnsched.handoff.recovery", "_park")
    ]


def test_no_import_cycle() -> None:
    assert cycles(graph()) == []


@pytest.mark.parametrize(
    ("importer", "module"),
    [("learnsched.handoff.lora", "learnsched.handoff.profile")],
)
def test_the_lora_profile_circle_is_gone(importer: str, module: str) -> None:
    assert module not in graph()[importer]


def test_no_wing_imports_another_wings_private_names() -> None:
    assert private_uses() == []


FOUNDATION = "learnsched"  # the top-level modules, in the layer order as one wing

# The floor plan, bottom layer first: a wing imports only wings in layers below its own
# (wings sharing a layer stand alone, so none imports another).
LAYERS: tuple[tuple[tuple[str, ...], str], ...] = (
    ((FOUNDATION,), "the solver, the scenario and the shared helpers every wing uses"),
    (("capacity", "economics", "sweep"), "models on the solver, each on its own"),
    (("calendar",), "idle windows from traces, and capacity's return path in them"),
    (("portfolio",), "many jobs over the calendar's windows: a model, nothing that runs"),
    (("serving",), "the engines' HTTP client and the ledger: talks to an engine"),
    (("handoff",), "the probes: measure handoff costs through the serving client"),
    (("testing",), "the simulated engine: speaks the serving dialects"),
    (("gate",), "the request gate in front of an engine, on the serving dialects"),
    (("control",), "the running scheduler: decides and runs with everything below"),
    (("cli",), "every command: prints, and may use every wing"),
)
RANK = {wing: rank for rank, (wings, _) in enumerate(LAYERS) for wing in wings}
# ``python -m learnsched`` is the CLI's entry point, above everything. The front door's
# lazy wings and the deprecation table's old paths are loaded by name with importlib, so
# they are no import statement and no edge here.
EXEMPT = {"learnsched.__main__"}


def wing_graph() -> dict[str, set[str]]:
    """``wing -> wings it imports`` over every import statement, lazy ones included."""
    edges: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if name in EXEMPT:
            continue
        importer = wing(name) or FOUNDATION
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            for base, imported in imports(name, node):
                for target in targets(base, imported):
                    imported_wing = wing(target) or FOUNDATION
                    if imported_wing != importer:
                        edges.setdefault(importer, set()).add(imported_wing)
    return edges


def upward(edges: dict[str, set[str]]) -> list[str]:
    """``importer -> imported`` for every import of a wing not in a layer below."""
    return sorted(
        f"{importer} -> {imported}"
        for importer, imports_ in edges.items()
        for imported in imports_
        if RANK[imported] >= RANK[importer]
    )


def test_the_layer_check_sees_an_upward_import() -> None:
    assert upward({"portfolio": {"calendar", "capacity"}, "control": {"portfolio"}}) == []
    assert upward({"portfolio": {"control", "calendar"}}) == ["portfolio -> control"]
    assert upward({"handoff": {"testing"}}) == ["handoff -> testing"]
    assert upward({"economics": {"sweep"}}) == ["economics -> sweep"]  # a peer
    assert upward({FOUNDATION: {"capacity"}}) == [f"{FOUNDATION} -> capacity"]


def test_every_wing_has_a_layer() -> None:
    wings = {wing(name) for name in MODULES} - {None}
    assert wings <= set(RANK), f"add {sorted(wings - set(RANK))} to LAYERS"


def test_no_wing_imports_a_wing_above_it() -> None:
    assert upward(wing_graph()) == []


def test_no_module_imports_another_modules_private_names() -> None:
    assert private_names() == []


def test_the_private_name_check_tells_a_name_from_a_private_module() -> None:
    assert is_private_module("learnsched", "_core")  # compiled: its stub is there
    assert is_private_module("learnsched", "_checks")
    assert not is_private_module("learnsched.scenario", "_window")
