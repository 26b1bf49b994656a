"""One parser for the ``http(s)://HOST:PORT`` addresses the engine, the gate and the
notifier take: the scheme, the host and the port all checked, the field named; and the
TLS context of an ``https://`` engine, which the scheduler's calls and the gate share."""

from __future__ import annotations

import os
import ssl
from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["DEFAULT_PORTS", "HttpUrl", "http_url", "tls_context"]

DEFAULT_PORTS = {"http": 80, "https": 443}


class HttpUrl(NamedTuple):
    """A checked URL: scheme, host, port (the scheme's default when absent) and path."""

    scheme: str
    host: str
    port: int
    path: str


def http_url(
    name: str, url: str, *, schemes: tuple[str, ...] = ("http", "https"), path: bool = False
) -> HttpUrl:
    """``url`` parsed and checked.

    Parameters
    ----------
    name
        The field the URL came from (a flag or an argument), named by every error.
    url
        ``SCHEME://HOST[:PORT][/PATH]``.
    schemes
        The schemes accepted.
    path
        Whether a path beyond ``/`` is accepted.

    Raises
    ------
    ValueError
        Naming ``name`` and the URL: another scheme, no host, a port outside 0-65535
        (``urlsplit`` alone accepts ``:99999`` until the port is read), or a path.
    """
    form = " or ".join(f"{s}://HOST:PORT" for s in schemes) + ("[/PATH]" if path else "")
    try:
        parts = urlsplit(url)
    except ValueError as err:  # "http://[::1"
        raise ValueError(f"{name} must be {form}, got {url!r} ({err})") from None
    try:
        port = parts.port  # read lazily: ":99999" and ":x" raise only here
    except ValueError as err:
        raise ValueError(f"{name} {url!r}: bad port ({err})") from None
    if (
        parts.scheme not in schemes
        or not parts.hostname
        or (not path and parts.path not in ("", "/"))
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"{name} must be {form}, got {url!r}")
    return HttpUrl(
        parts.scheme,
        parts.hostname,
        DEFAULT_PORTS[parts.scheme] if port is None else port,
        parts.path,
    )


def tls_context(
    url: HttpUrl, ca_file: str | os.PathLike[str] | None, name: str = "ca_file"
) -> ssl.SSLContext | None:
    """The verifying TLS context for an ``https://`` ``url`` (``ca_file``: PEM certificate
    authorities in place of the system's, for a private CA); None for ``http://``.

    Raises
    ------
    ValueError
        ``ca_file`` for an ``http://`` URL (``name`` is the field named).
    OSError
        ``ca_file`` cannot be read (the error names it).
    """
    if url.scheme != "https":
        if ca_file is not None:
            raise ValueError(f"{name} is for an https:// server, got {url.scheme}://{url.host}")
        return None
    return ssl.create_default_context(cafile=None if ca_file is None else os.fspath(ca_file))
