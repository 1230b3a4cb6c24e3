"""``install(app)``: what a Dash app needs to host ModelGraphs well, set up on that app and no other.

Importing the package changes no app: nothing is added to Dash's process-wide hooks, no Flask signal is
subscribed, no thread starts. ``install`` is called where the app is known: ``make_app`` (the CLI's server,
notebooks' ``show()``), or by a user on their own app. It gives the app

- the picture route (app/http/picture_routes.py), so figures carry short picture URLs instead of megabytes of
  ``data:`` URIs at every click;
- the background precompute's request watching (it waits while this app answers requests);
- the ModelGraph callbacks, registered on the app itself at its first request (after Dash has moved in any
  ``dash.callback`` set waiting in the process, so the two never collide: callbacks.claim).

A user's app that is not installed still works: its ModelGraph callbacks come as a ``dash.callback`` set (the
All-in-One pattern, aio.py) and its pictures travel inside the figures. Dash's own ``dash.hooks`` would add
the route to every app made after the hook is declared, the user's other apps included, which is the
import-time effect this replaces; so the route is added here, per app, with Flask's ``add_url_rule``.
"""

from __future__ import annotations

import threading

import dash

from torchvista_dash.app.component import callbacks
from torchvista_dash.app.http import picture_routes
from torchvista_dash.app.traces import state

_lock = threading.Lock()


def install(app: dash.Dash) -> dash.Dash:
    """Set ``app`` up to host ModelGraphs (once; call it before the app's first request). Returns ``app``."""
    with _lock:
        if getattr(app, "_tvd_installed", False):
            return app
        picture_routes.add_route(app)
        state.precomputer.watch_requests(app.server)
        claimed = threading.Event()
        claim_lock = threading.Lock()

        def claim_callbacks() -> None:
            if claimed.is_set():
                return
            with claim_lock:
                if not claimed.is_set():
                    callbacks.claim(app)
                    claimed.set()

        app.server.before_request(claim_callbacks)  # runs after Dash's own set-up of the app
        app._tvd_installed = True  # type: ignore[attr-defined]
    return app


def installed(app: dash.Dash) -> bool:
    return bool(getattr(app, "_tvd_installed", False))
