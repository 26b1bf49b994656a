"""URLs the commands and the engine client take: checked when parsed, each error naming
its flag or argument."""

from __future__ import annotations

import re

import pytest

from learnsched._url import http_url
from learnsched.cli import main
from learnsched.serving import ServingEndpoint


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://h:99999", "bad port (Port out of range 0-65535)"),
        ("http://h:x", "bad port"),
        ("", "must be http://HOST:PORT or https://HOST:PORT, got ''"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://h:1/?q=1", "got 'http://h:1/?q=1'"),
    ],
)
def test_gate_urls_are_checked_before_it_serves(
    capsys: pytest.CaptureFixture[str], url: str, why: str
) -> None:
    """URLs are checked when parsed, naming the flag: urlsplit reads the port lazily, so
    ``http://h:99999`` would otherwise pass until the first request."""
    with pytest.raises(SystemExit) as exited:  # argparse's own exit
        main(["gate", "--engine", "vllm", "--url", url])
    assert exited.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after the usage lines
    assert line.startswith("learnsched gate: error: argument --url: URL"), line
    assert why in line
    for name, check in (
        ("url", lambda: ServingEndpoint(url, "vllm")),
        ("notify url", lambda: http_url("notify url", url, schemes=("http",), path=True)),
    ):
        with pytest.raises(ValueError, match=re.escape(name)):
            check()
    assert http_url("url", "https://h") == ("https", "h", 443, "")
