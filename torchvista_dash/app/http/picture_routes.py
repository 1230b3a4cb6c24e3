"""The picture route: ``<prefix>_tvd/picture/<key>.svg`` answers a picture of the store (traces/pictures.py)
to any Dash app that hosts a ModelGraph, gzipped and cached as immutable (the key is the hash of the bytes).

The key in a request is untrusted: anything but 32 hex digits is refused before any lookup.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
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


@dash.hooks.route(name=ROUTE, methods=("GET",))
def _picture_route(key: str) -> Any:
    """Every Dash app made after this module is imported serves the route (a ModelGraph in a user's app
    too)."""
    from flask import make_response, request

    status, headers, body = served(
        key, request.headers.get("Accept-Encoding", ""), request.headers.get("If-None-Match", "")
    )
    response = make_response(body, status)
    response.headers.update(headers)
    return response


# ---- which app a request is for: its prefix, and whether it serves the route -----------------------------
_apps: weakref.WeakSet[dash.Dash] = weakref.WeakSet()


@dash.hooks.setup()
def _track(app: dash.Dash) -> None:
    _apps.add(app)


def _serving_apps() -> Iterator[dash.Dash]:
    from flask import current_app

    server = current_app._get_current_object()  # type: ignore[attr-defined]
    return (a for a in list(_apps) if getattr(a, "server", None) is server)


def base_url() -> str | None:
    """The URL path pictures are served under for the Dash app the current request is for (its requests
    prefix + ``_tvd/picture/``), or None outside a request or when that app does not serve the route (it was
    made before this module was imported): its figures then keep data URIs."""
    from flask import has_request_context, request

    if not has_request_context():
        return None
    best: dash.Dash | None = None
    for app in _serving_apps():
        routes = app.config.routes_pathname_prefix or "/"
        if (
            routes + ROUTE in getattr(app, "routes", ())
            and request.path.startswith(routes)
            and (best is None or len(routes) > len(best.config.routes_pathname_prefix or "/"))
        ):
            best = app
    if best is None:
        return None
    return (best.config.requests_pathname_prefix or "/") + PREFIX
