"""The serving engine's connection flags, shared by ``run`` and ``probe recovery``."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the handoff wing loads only when a command runs
    from ..serving.endpoint import ServingEndpoint

__all__ = ["API_KEY_ENV", "add_connection_arguments", "endpoint_from_args"]

API_KEY_ENV = "LEARNSCHED_API_KEY"
"""The environment variable ``--api-key`` defaults to (keeps the key off the command line)."""


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """``--api-key`` and ``--ca-file`` (the URL and engine are the command's own flags)."""
    parser.add_argument(
        "--api-key",
        metavar="KEY",
        help=f"sent as Authorization: Bearer KEY, for an engine started with --api-key "
        f"(default: ${API_KEY_ENV}, which keeps it out of the process list)",
    )
    parser.add_argument(
        "--ca-file", metavar="PEM", help="certificate authorities for an https:// engine URL"
    )


def endpoint_from_args(args: argparse.Namespace) -> ServingEndpoint:
    """The engine at ``args.url`` speaking ``args.engine``, with its key and CAs."""
    from ..serving.endpoint import ServingEndpoint

    key = args.api_key if args.api_key is not None else os.environ.get(API_KEY_ENV) or None
    return ServingEndpoint(args.url, args.engine, api_key=key, ca_file=args.ca_file)
