"""The picture route: ``<prefix>_tvd/picture/<key>.svg`` answers a picture of the store (traces/pictures.py)
to a Dash app that hosts a ModelGraph, gzipped and cached as immutable (the key is the hash of the bytes).

An app serves it once ``add_route(app)`` was called on it (``install``, app/server/install.py): importing
this module adds nothing to any app. The key in a request is untrusted: anything but 32 hex digits is
refused before any lookup.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import dash

from torchvista_dash.app.http.compress import accepts_gzip
from torchvista_dash.app.traces.pictures import Store, store

ROUTE = "_tvd/picture/<key>.svg"  # under the app's routes prefix
PREFIX = "_tvd/picture/"
KEY = re.compile(r"[0-9a-f]{32}")
HEADERS = {
    "Content-Type": "image/svg+xml",
    "Cache-Control": "public, max-age=31536000, immutable",
    "Vary": "Accept-Encoding",
    "X-Content-Type-Options": "nosniff",
    # opened on its own, the SVG can run nothing and load nothing: it is a picture
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def served(
    key: str, accept_encoding: str = "gzip", if_none_match: str = "", into: Store | None = None
) -> tuple[int, dict[str, str], bytes]:
    """The route's answer to ``key`` (untrusted): (status, headers, body)."""
    if not isinstance(key, str) or len(key) != 32 or not KEY.fullmatch(key):
        return (
            400,
            {"Content-Type": "text/plain; charset=utf-8"},
            b"bad picture key: 32 hex digits expected\n",
        )
    pic = (store if into is None else into).get(key)
    if pic is None:
        return (
            404,
            {"Content-Type": "text/plain; charset=utf-8"},
            (b"no such picture on this server (it was dropped or the server restarted): reload the page\n"),
        )
    etag = f'"{key}"'
    headers = {**HEADERS, "ETag": etag}
    if etag in (t.strip() for t in if_none_match.split(",")) or if_none_match.strip() == "*":
        return 304, headers, b""
    if accepts_gzip(accept_encoding):
        return 200, {**headers, "Content-Encoding": "gzip"}, pic.gz()
    return 200, headers, pic.svg()


def add_route(app: dash.Dash) -> None:
    """Serve the route on ``app`` (once; before its first request, as Flask requires of any route)."""
    if app in _apps:
        return
    from flask import make_response, request

    def picture(key: str) -> Any:
        status, headers, body = served(
            key, request.headers.get("Accept-Encoding", ""), request.headers.get("If-None-Match", "")
        )
        response = make_response(body, status)
        response.headers.update(headers)
        return response

    routes = app.config.routes_pathname_prefix or "/"
    app.server.add_url_rule(routes + ROUTE, endpoint="tvd_picture", view_func=picture, methods=["GET"])
    _apps.add(app)


_apps: weakref.WeakSet[dash.Dash] = weakref.WeakSet()  # the apps that serve the route


def serves_route(app: dash.Dash) -> bool:
    return app in _apps


def base_url(app: dash.Dash | None) -> str | None:
    """The URL path ``app``'s pictures are served under (its requests prefix + ``_tvd/picture/``), or None
    when it does not serve the route (not installed, or no app): its figures then keep data URIs."""
    if app is None or app not in _apps:
        return None
    return (app.config.requests_pathname_prefix or "/") + PREFIX
