"""``serve --workers N``: the app under gunicorn, N worker processes sharing one trace store.

Workers share no memory, so what one registers or lays out goes through the store (app/traces/shared.py):
the trace the server was started with is traced once, by the master, and published as kept; each worker
builds its own app (after the fork: no thread, Graphviz process or Redis connection crosses it) and reads the
trace from the store, validated like any file. With no store given, a folder store in a temporary directory
serves the workers of this host, and is removed when the server stops. gunicorn is an optional extra:
``pip install 'torchvista_dash[serve]'``.
"""

from __future__ import annotations

import gc
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import dash

from torchvista_dash.app.traces import shared, sharing
from torchvista_dash.model.errors import TorchvistaDashError

THREADS = 8  # per worker: one slow layout never blocks another tab
TIMEOUT_S = 300  # gunicorn's silence limit for a worker (its main thread answers it while a layout runs)


class WorkersError(TorchvistaDashError, RuntimeError):
    """``--workers`` cannot be used as asked (gunicorn missing, a store only one process reads)."""


@dataclass(frozen=True)
class Site:
    """What each worker serves: a trace (by id, from the store), a folder gallery, or the demo gallery."""

    store_url: str
    trace_id: str | None = None
    folder: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] = ()
    push_token: str | None = None


def build(site: Site, host: str) -> dash.Dash:
    """The app one worker serves (called in the worker, after the fork)."""
    from torchvista_dash.app.server.gallery import folder_gallery
    from torchvista_dash.app.server.server import allow_hosts, make_app

    shared.configure(site.store_url)
    options = dict(site.options)
    if site.trace_id is not None:
        trace = sharing.fetch_trace(site.trace_id)
        if trace is None:
            raise WorkersError(f"the store {site.store_url} lost the served trace {site.trace_id}")
        options["traces"] = [trace]
    elif site.folder is not None:
        gallery, _ = folder_gallery(site.folder)
        options.update(gallery=gallery, title=gallery.title)
    else:
        options.update(gallery=True, title="torchvista_dash gallery")
    app = make_app(**options, allowed_hosts=site.allowed_hosts, push_token=site.push_token)
    allow_hosts(app, [host])
    gc.freeze()  # what a worker starts with lives as long as it does: out of the collector's walks
    return app


def temporary_store() -> tuple[str, str]:
    """A folder store for the workers of this host: (its URL, the folder to remove at exit)."""
    folder = tempfile.mkdtemp(prefix="tvd-store-")
    return f"file://{folder}", folder


def check_store(url: str) -> shared.Store:
    """The store at ``url``, answering; StoreError / StoreUnavailable naming the URL if not."""
    store = shared.open_store(url)
    store.ping()
    if not store.shared:
        raise WorkersError(
            "--workers needs a store every worker reads: --store file:///path or redis://host:6379/0 "
            "(or none, for a temporary folder)"
        )
    return store


def run(site: Site, host: str, port: int, workers: int, *, cleanup: str | None = None) -> None:
    """Serve ``site`` with ``workers`` gunicorn worker processes until stopped (Ctrl-C, SIGTERM)."""
    try:
        from gunicorn.app.base import BaseApplication
    except ImportError:
        raise WorkersError(
            "--workers needs gunicorn: pip install 'torchvista_dash[serve]' (or serve with one worker)"
        ) from None

    def when_ready(server: Any) -> None:
        bound = server.LISTENERS[0].getsockname() if server.LISTENERS else (host, port)
        print(
            f"torchvista_dash serving on http://{host}:{bound[1]}/ with {workers} workers, "
            f"store {site.store_url}  (Ctrl-C to stop)",
            flush=True,
        )

    class Server(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
        def load_config(self) -> None:
            settings = {
                "bind": f"{host}:{port}",
                "workers": workers,
                "worker_class": "gthread",
                "threads": THREADS,
                "timeout": TIMEOUT_S,
                "graceful_timeout": 5,
                "keepalive": 5,
                "accesslog": None,
                "loglevel": "warning",
                "when_ready": when_ready,
                "preload_app": False,  # each worker builds its app after the fork
            }
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return build(site, host).server

    try:
        Server().run()
    finally:
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
        sys.stdout.flush()
