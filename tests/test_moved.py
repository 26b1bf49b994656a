"""Old import paths of moved modules and names: the same objects, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import re
import sys
import warnings

import pytest

from learnsched._moved import MODULES, NAMES, new_path

OLD_MODULES = [*sorted(MODULES), "learnsched.handoff.engines.actions"]
OLD_NAMES = sorted((module, name) for module, names in NAMES.items() for name in names)


def message(old: str, new: str) -> str:
    return re.escape(f"{old} moved to {new}; the old path goes in the next release")


@pytest.mark.parametrize("old", OLD_MODULES)
def test_an_old_module_path_warns_and_is_the_new_module(old: str) -> None:
    new = new_path(old)
    assert new is not None
    sys.modules.pop(old, None)  # a module imported before would not warn again
    # An old child path whose old parent was not imported yet warns for both.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert any(
        warning.category is DeprecationWarning
        and re.fullmatch(message(old, new), str(warning.message))
        for warning in caught
    )
    assert all(warning.filename == __file__ for warning in caught)  # the user's line


@pytest.mark.parametrize(("module", "name"), OLD_NAMES)
def test_an_old_name_warns_and_is_the_same_object(module: str, name: str) -> None:
    new = NAMES[module][name]
    with pytest.warns(DeprecationWarning, match=message(f"{module}.{name}", f"{new}.{name}")):
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(importlib.import_module(new), name)


def test_a_from_import_of_an_old_name_points_at_the_importing_line() -> None:
    from learnsched.serving import ServingEndpoint

    with pytest.warns(DeprecationWarning, match="learnsched.handoff.ServingEndpoint") as caught:
        from learnsched.handoff import ServingEndpoint as old
    assert old is ServingEndpoint
    assert {warning.filename for warning in caught} == {__file__}


def test_a_name_that_never_was_there_is_an_attribute_error() -> None:
    handoff = importlib.import_module("learnsched.handoff")
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        handoff.no_such_name  # noqa: B018
    assert new_path("learnsched.handoff.profile") is None
