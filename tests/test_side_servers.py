"""The side doors' HTTP server (metrics and health, arrivals, the door's control): it
listens on IPv4 and IPv6 alike, names a host it cannot listen on, and stops cleanly
whether or not it was started."""

from __future__ import annotations

import http.client
import socket
from http.server import BaseHTTPRequestHandler

import pytest

from learnsched._http_server import SideServer
from learnsched.gate.notify import ArrivalForwarder, NotifyServer


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


needs_ipv6 = pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")


class Hello(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")


def fetch(server: SideServer) -> bytes:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.request("GET", "/")
        return conn.getresponse().read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("host", "url_host"),
    [("127.0.0.1", "127.0.0.1"), pytest.param("::1", "[::1]", marks=needs_ipv6)],
)
def test_it_serves_on_either_family(host: str, url_host: str) -> None:
    with SideServer(host, 0, Hello, "test-side") as server:
        assert server.port > 0
        assert server.url == f"http://{url_host}:{server.port}"
        assert fetch(server) == b"hello"


@needs_ipv6
def test_arrivals_reach_an_ipv6_notify_endpoint() -> None:
    told: list[int] = []
    with NotifyServer(lambda: told.append(1), "::1", 0) as server:
        assert server.url.startswith("http://[::1]:")
        forwarder = ArrivalForwarder(server.url).start()
        forwarder.arrived()
        forwarder.arrived()
        forwarder.stop()
    assert forwarder.sent == 2
    assert told == [1, 1]


def test_a_host_it_cannot_listen_on_is_named() -> None:
    with pytest.raises(ValueError, match=r"'no-such-host\.invalid' cannot be listened on"):
        SideServer("no-such-host.invalid", 0, Hello, "test-side")


def test_a_bad_port_is_named() -> None:
    with pytest.raises(ValueError, match="port"):
        SideServer("127.0.0.1", 70000, Hello, "test-side")


def test_stopping_an_unstarted_server_frees_its_port() -> None:
    server = SideServer("127.0.0.1", 0, Hello, "test-side")
    port = server.port
    server.stop()  # returns at once: nothing serves yet
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as again:
        again.bind(("127.0.0.1", port))
