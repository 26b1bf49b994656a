"""The side doors' HTTP server: the loop's metrics and health, the arrivals endpoint and
the door's control listener each serve a few small requests on daemon threads of the
process (standard library only), on IPv4 or IPv6 as their host is written."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from ._checks import integer

if TYPE_CHECKING:  # typing.Self needs Python 3.11; mypy ships typing_extensions
    from typing_extensions import Self

__all__ = ["SideServer"]


def address_family(host: str, port: int) -> socket.AddressFamily:
    """The family ``host`` resolves to (``AF_INET6`` for ``::1``); ``ValueError`` naming
    the host where it resolves to nothing."""
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as err:
        raise ValueError(f"host {host!r} cannot be listened on: {err.strerror}") from None


class _Server(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` (IPv4 only as it comes) bound in the host's own family."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = address_family(*address)
        super().__init__(address, handler)


class SideServer:
    """``handler`` served on ``host:port`` on a daemon thread named ``name``; a context
    manager.

    Parameters
    ----------
    host, port
        Where to listen: a name, an IPv4 or an IPv6 address (port 0: a free one, see
        :attr:`port`).
    handler
        The request handler class.
    name
        The serving thread's name.
    """

    def __init__(
        self, host: str, port: int, handler: type[BaseHTTPRequestHandler], name: str
    ) -> None:
        self.server = _Server((host, integer("port", port, low=0, high=65535)), handler)
        self.host = host
        self.port = int(self.server.server_address[1])
        self._serving = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (an IPv6 host in brackets)."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    def start(self) -> Self:
        """Serve in the background; returns ``self``."""
        self._serving.start()
        return self

    def stop(self) -> None:
        """Stop serving (if started) and close the socket."""
        if self._serving.is_alive():
            self.server.shutdown()
            self._serving.join()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
