"""The serving engine's connection flags, shared by ``run`` and ``probe recovery``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..control.config import API_KEY_ENV

if TYPE_CHECKING:  # the handoff wing loads only when a command runs
    from ..serving.endpoint import ServingEndpoint

__all__ = ["add_connection_arguments", "endpoint_from_args"]


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
    from ..control.config import serving_endpoint

    return serving_endpoint(args.url, args.engine, args.api_key, args.ca_file)
