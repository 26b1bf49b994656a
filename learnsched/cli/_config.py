"""``--config FILE.toml``: a command's long flags from a TOML file.

Each key is a flag's long name (``trainer-options`` or ``trainer_options``), each value
what the flag would take: a string, a number, ``true`` for a switch; ``trainer-options``
may also be a table. A flag given on the command line wins over the file; a flag the
command requires may come from either. Unknown keys, values of the wrong type and
choices out of range are refused naming the file and the key (exit 2).

TOML is read with :mod:`tomllib` (Python 3.11+) or its backport ``tomli`` (a
dependency on 3.10).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["ConfigFlags", "read_toml"]


class _Unset:
    """The default of every flag a config may set: not given on the command line."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()
_TABLES = ("trainer_options",)  # flags whose JSON value may be a TOML table


def read_toml(path: str | Path) -> dict[str, Any]:
    """The TOML file at ``path`` as a dict (``ValueError`` naming it if it is not TOML)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the 3.10 job runs it
        import tomli as tomllib
    from .._text import read_text

    # The one reader: UTF-8 with or without a BOM, a bad byte named with its file and
    # line, 256 MiB at most (tomllib.load would refuse a BOM and name no file).
    text = read_text(path)
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"--config {path}: not TOML ({err})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ValueError(f"--config {path}: nested too deeply to read") from None
    return data


class ConfigFlags:
    """Lets a sub-command's flags come from ``--config``; build it after the flags.

    Parameters
    ----------
    parser
        The sub-command's parser, every flag added (``--config`` is added here).
    """

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.actions: dict[str, argparse.Action] = {}
        self.defaults: dict[str, Any] = {}
        self.required: list[str] = []
        for action in parser._actions:
            if not action.option_strings or action.dest in ("help", "config"):
                continue
            self.actions[action.dest] = action
            self.defaults[action.dest] = action.default
            if action.help:  # the help shows the real default, not the sentinel
                action.help = action.help.replace("%(default)s", str(action.default))
            if action.required:
                action.required = False  # checked after the file is read
                self.required.append(action.dest)
                action.help = f"{action.help} (required, here or in --config)"
            if not isinstance(action, argparse._AppendAction):  # an append adds to it
                action.default = UNSET
        parser.add_argument(
            "--config", type=Path, metavar="FILE.toml",
            help="long flags from a TOML file (key = the flag's name, e.g. "
            'engine = "vllm", trainer-options = {work_quanta = 600}); the command '
            "line wins",
        )  # fmt: skip

    def resolve(self, args: argparse.Namespace) -> argparse.Namespace:
        """``args`` with every flag the command line left unset taken from the config
        file (if any), else its default; ``ValueError`` for a bad file or a missing
        required flag."""
        config = read_toml(args.config) if args.config is not None else {}
        values = self._values(config, args.config)
        for dest, default in self.defaults.items():
            given = getattr(args, dest)
            if given is UNSET or (given is None and dest in values):
                setattr(args, dest, values.get(dest, default))
        missing = [self._flag(dest) for dest in self.required if getattr(args, dest) is None]
        if missing:
            raise ValueError(f"{', '.join(missing)} required (on the command line or in --config)")
        return args

    def _flag(self, dest: str) -> str:
        return self.actions[dest].option_strings[-1]

    def _values(self, config: Mapping[str, Any], path: Path | None) -> dict[str, Any]:
        values = {}
        for key, value in config.items():
            dest = key.replace("-", "_")
            where = f"--config {path}: {key}"
            action = self.actions.get(dest)
            if action is None:
                known = ", ".join(sorted(a.option_strings[-1][2:] for a in self.actions.values()))
                raise ValueError(f"{where}: not a flag of this command (known: {known})")
            values[dest] = self._converted(action, value, where)
        return values

    def _converted(self, action: argparse.Action, value: object, where: str) -> Any:
        """What the flag would have parsed ``value`` to."""
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                raise TypeError(f"{where} must be true or false, got {value!r}")
            return value
        if isinstance(action, argparse._AppendAction):  # a list, or one value
            items = value if isinstance(value, list) else [value]
            return [self._converted(_single(action), item, where) for item in items]
        if action.dest in _TABLES and isinstance(value, dict):
            return json.dumps(value)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(f"{where} must be a string or a number, got {value!r}")
        convert: Any = action.type
        result: Any
        try:
            if convert is float and isinstance(value, int):
                result = float(value)
            elif convert is int and not isinstance(value, int):
                raise TypeError(f"{where} must be an integer, got {value!r}")
            elif convert is None:
                result = value if isinstance(value, str) else str(value)
            elif isinstance(value, str) or convert in (int, float):
                result = convert(value)
            else:
                result = convert(str(value))
        except (argparse.ArgumentTypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None
        if action.choices is not None and result not in action.choices:
            choices = ", ".join(map(str, action.choices))
            raise ValueError(f"{where} must be one of {choices}, got {value!r}")
        return result


def _single(action: argparse.Action) -> argparse.Action:
    """An append flag's one-value form (its items convert as a plain flag's value)."""
    convert: Any = action.type
    return argparse.Action(action.option_strings, action.dest, type=convert, choices=action.choices)
