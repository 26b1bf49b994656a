"""Failures that are neither bad input nor a bug: the machine or its services failed.

The command line maps every exception to one exit status (:mod:`learnsched.cli.output`);
an exception class may name its own with a class attribute ``exit_status``.
:class:`EnvironmentFailure` is the one to raise when the environment, not the input,
stopped a command: a full disk, a denied permission, an engine or host that does not
answer. (Missing libraries and hardware are :class:`learnsched._extras.MissingExtra`.)
"""

from __future__ import annotations

__all__ = ["EXIT_ENVIRONMENT", "EnvironmentFailure"]

EXIT_ENVIRONMENT = 4
"""The command line's exit status for an environment failure."""


class EnvironmentFailure(RuntimeError):
    """The environment failed (disk full, permission denied, engine unreachable): exit 4.

    The message says what failed and why, e.g. ``"http://127.0.0.1:8000: connection
    refused"``.
    """

    exit_status = EXIT_ENVIRONMENT
