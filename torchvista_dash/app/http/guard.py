"""What a request must be before the app reads it: for a Host this server answers for, and not too big.

A server on 127.0.0.1 is still reachable from any web page the user opens, through DNS rebinding: a name
the attacker controls first resolves to their host, then to 127.0.0.1, and the page's scripts talk to this
server as if it were theirs. The browser still sends the attacker's name in ``Host``, so answering only for
the names this server is reached by (the bound address, localhost, 127.0.0.1, ::1, and any the user adds)
closes that door. The size cap keeps one request from making the server parse (and hold) a huge body.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from typing import Any

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
ANY_HOST = "*"
HOSTS_ENV = "TVD_ALLOWED_HOSTS"  # comma-separated names; "*" answers any Host
MAX_REQUEST_ENV = "TVD_MAX_REQUEST_BYTES"
MAX_REQUEST_BYTES = 4 * 1024 * 1024  # a click's request is a few kB; a whole every-op store well under 1 MB


def host_name(header: str) -> str:
    """The name part of a Host header ("[::1]:8050" → "::1", "LocalHost." → "localhost")."""
    h = header.strip().lower()
    if h.startswith("["):
        return h[1 : h.find("]")] if "]" in h else h[1:]
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def machine_names() -> set[str]:
    """This machine's own names and addresses: the Hosts a server bound to every interface is reached by."""
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    for name in list(names):
        try:
            names.update(str(info[4][0]).lower() for info in socket.getaddrinfo(name, None))
        except OSError:
            pass
    return {n for n in names if n}


def env_hosts() -> set[str]:
    return {
        host_name(h) if h.strip() != ANY_HOST else ANY_HOST
        for h in os.environ.get(HOSTS_ENV, "").split(",")
        if h.strip()
    }


def max_request_bytes() -> int:
    """The request size cap: ``$TVD_MAX_REQUEST_BYTES`` when set (a positive integer), else the default."""
    raw = os.environ.get(MAX_REQUEST_ENV)
    if raw is None or not raw.strip():
        return MAX_REQUEST_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(
            f"${MAX_REQUEST_ENV}={raw!r} is not a positive whole number of bytes; "
            f"unset it for the default {MAX_REQUEST_BYTES:,}"
        )
    return value


class HostGuard:
    """WSGI middleware: answers 400 to a Host header outside ``allowed`` (before any app code runs).

    ``allow`` adds names later: the server that binds an address adds it (``serve_forever``,
    ``BackgroundServer``), so the app itself need not know where it will be served.
    """

    def __init__(self, app: Callable[..., Any], allowed: Iterable[str] = ()) -> None:
        self.app = app
        self.allowed: set[str] = set(LOCAL_HOSTS) | env_hosts()
        self.allow(allowed)

    def allow(self, hosts: Iterable[str]) -> None:
        for h in hosts:
            if h == ANY_HOST:
                self.allowed.add(ANY_HOST)
            elif host_name(h) in WILDCARD_BINDS:
                self.allowed |= machine_names()
            else:
                self.allowed.add(host_name(h))

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        header = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
        name = host_name(header)
        if ANY_HOST in self.allowed or name in self.allowed:
            return self.app(environ, start_response)
        shown = header.encode("ascii", "replace").decode()[:200]
        body = (
            f"Host {shown!r} is not allowed: this server answers for "
            f"{', '.join(sorted(self.allowed))}. To reach it by that name, start it with "
            f"--allow-host NAME (or set ${HOSTS_ENV}=NAME).\n"
        ).encode()
        start_response(
            "400 Bad Request",
            [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
        )
        return [body]
