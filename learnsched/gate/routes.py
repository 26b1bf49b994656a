"""A request's path as the engine will route it, decided on before the gate forwards it.

The gate passes a route on only if its engine's dialect lists it
(:meth:`~learnsched.serving.Engine.forwards`), so it must see the path
the engine's router will see: the engine's HTTP server percent-decodes the whole path
(``/%70ause`` is ``/pause``) and its router redirects ``/pause/`` to ``/pause``. A
:class:`Target` is that path, decoded once (as the engine does) and normalised (no empty
segment: ``//pause``; no dot segment: ``/./pause``, ``/v1/../pause``; no trailing slash),
with the query left as sent. The gate decides on its ``path`` and forwards its ``raw``
form, so what it checked is exactly what the engine runs.

An answer's ``Location`` naming the engine's own address (a redirect the engine built
from its private host and port) is rewritten to the gate's (:func:`local_location`):
clients never learn where the engine listens.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

__all__ = ["Target", "local_location"]

# Characters a path segment may hold unescaped (RFC 3986 pchar, less the percent sign).
PATH_SAFE = "/:@!$&'()*+,;=-._~"


@dataclass(frozen=True)
class Target:
    """A request target as the engine routes it.

    Attributes
    ----------
    path
        Decoded and normalised: ``/`` and the segments, none empty, ``.`` or ``..``.
    query
        As sent, without the ``?`` (empty: none).
    """

    path: str
    query: str = ""

    @classmethod
    def of(cls, raw: str) -> Target:
        """The target of a request line's ``raw`` path (``/a%2Fb/../c?x=1``), or of its
        absolute form (``http://HOST/v1/models``, which a server must accept: RFC 9112
        3.2.2; the gate routes it to its engine whatever host it names); a fragment (which
        no client should send) is dropped, as the engine's HTTP parser drops it."""
        raw = raw.partition("#")[0]
        if not raw.startswith("/") and urlsplit(raw).scheme.lower() in ("http", "https"):
            absolute = urlsplit(raw)
            raw = (absolute.path or "/") + (f"?{absolute.query}" if absolute.query else "")
        path, _, query = raw.partition("?")
        segments: list[str] = []
        # Decoded before splitting: the engine sees %2F as a slash too.
        for segment in unquote(path, errors="replace").split("/"):
            if segment == "..":
                if segments:
                    segments.pop()
            elif segment not in ("", "."):
                segments.append(segment)
        return cls("/" + "/".join(segments), query)

    @property
    def raw(self) -> str:
        """The target to send on: the path percent-encoded again, the query as it came."""
        encoded = quote(self.path, safe=PATH_SAFE)
        return f"{encoded}?{self.query}" if self.query else encoded


def local_location(location: str, upstream: str, origin: str) -> str:
    """``location`` (an answer's ``Location`` header) with the engine's origin
    ``upstream`` (``http://HOST:PORT``) replaced by the gate's ``origin``; any other
    location (relative, or another host's) unchanged."""
    target, engine = urlsplit(location), urlsplit(upstream)
    try:
        same = (target.scheme.lower(), target.hostname, target.port or _port(target.scheme)) == (
            engine.scheme.lower(), engine.hostname, engine.port or _port(engine.scheme),
        )  # fmt: skip
    except ValueError:  # a port that is no number: not the engine's address
        return location
    if not target.netloc or not same:
        return location
    rest = location[len(f"{target.scheme}://{target.netloc}") :]
    return origin.rstrip("/") + rest


def _port(scheme: str) -> int | None:
    """The default port of ``scheme`` (``None``: not HTTP)."""
    return {"http": 80, "https": 443}.get(scheme.lower())
