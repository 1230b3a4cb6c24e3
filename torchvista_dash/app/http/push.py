"""Traces brought to a running server: pushed over HTTP by a training job, or dropped on the page.

``POST <prefix>_tvd/push`` with ``Authorization: Bearer <token>`` and a trace's JSON (gzipped, with
``Content-Encoding: gzip``, or plain) registers the trace and answers its id and the page that shows it. The
token is shared: ``serve --push-token T`` or ``$TVD_PUSH_TOKEN`` on both sides. A server started without one
refuses every push; a wrong token gets 403 and stores nothing. What arrives is untrusted: size-capped before
and after inflating, parsed and validated as ``load_trace`` does a file, never unpickled; a ``.pt2`` program
(a zip) is refused over HTTP whatever it holds. ``push_trace`` is the client (``Trace.push``, the CLI's
``push``): the standard library's HTTP, nothing to install.
"""

from __future__ import annotations

import base64
import gzip
import hmac
import json
import os
import urllib.error
import urllib.request
import zlib
from typing import TYPE_CHECKING, Any

from torchvista_dash.model.checks import trace_size_limit
from torchvista_dash.model.errors import TorchvistaDashError

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.traced import Trace

PUSH_TOKEN_ENV = "TVD_PUSH_TOKEN"
ROUTE = "_tvd/push"
ZIP_MAGIC = b"PK\x03\x04"


class PushError(TorchvistaDashError, ValueError):
    """A push or upload refused (``status``: the HTTP status it is answered with)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def upload_cap() -> int:
    """The largest file the page takes: a dropped file travels base64 (4/3 of it) in one callback request,
    which the request cap (app/http/guard.py, ``$TVD_MAX_REQUEST_BYTES``) bounds like any other."""
    from torchvista_dash.app.http.guard import max_request_bytes

    return max(0, max_request_bytes() - 2**16) * 3 // 4


def push_token(given: str | None = None) -> str | None:
    """The token pushes must bear: ``given``, else ``$TVD_PUSH_TOKEN``, else None (every push refused)."""
    token = given if given is not None else os.environ.get(PUSH_TOKEN_ENV)
    return token.strip() or None if token else None


def check_token(expected: str | None, authorization: str) -> None:
    if expected is None:
        raise PushError(
            "this server takes no pushes: start it with --push-token T (or $TVD_PUSH_TOKEN) to accept them",
            403,
        )
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        raise PushError("wrong push token: nothing was stored", 403)


def trace_from_bytes(body: bytes, *, gzipped: bool = False, what: str = "the pushed file") -> Trace:
    """The trace in ``body`` (untrusted), validated as a trace file is; PushError for anything else."""
    from torchvista_dash.model.graph import Graph, TraceFormatError
    from torchvista_dash.traced import Trace

    limit = trace_size_limit()
    if gzipped or body[:2] == b"\x1f\x8b":
        inflate = zlib.decompressobj(wbits=47)  # gzip or zlib
        try:
            body = inflate.decompress(body, limit + 1)
        except zlib.error as exc:
            raise PushError(f"{what} is not valid gzip ({exc})") from None
        if len(body) > limit:
            raise PushError(f"{what} is over the {limit:,}-byte trace limit once inflated", 413)
    if body[:4] == ZIP_MAGIC:
        raise PushError(
            f"{what} is a zip (a .pt2 program?): programs are never accepted over HTTP; load it where it is "
            "and send its trace (trace.save('t.json'), then push t.json)"
        )
    try:
        graph = Graph.from_json(body, max_bytes=limit)
    except TraceFormatError as exc:
        raise PushError(f"{what} is not a torchvista_dash trace: {exc}") from None
    return Trace(graph, _checked=True)


def trace_from_upload(contents: str, filename: str | None) -> Trace:
    """The trace in a ``dcc.Upload``'s ``contents`` (a base64 data URL), checked as a pushed file is."""
    name = repr(str(filename or "the file")[:120])
    if str(filename or "").lower().endswith(".pt2"):
        raise PushError(f"{name} is a .pt2 program: the page takes trace JSON files only (trace.save)")
    head, _, data = (contents or "").partition(",")
    if not head.startswith("data:") or ";base64" not in head:
        raise PushError(f"{name} did not arrive as a file: drop a trace .json on the page")
    cap = upload_cap()
    if len(data) * 3 // 4 > cap:
        raise PushError(
            f"{name} is over {cap / 2**20:.1f} MB: push bigger traces with "
            "`python -m torchvista_dash push FILE --server URL --token T`",
            413,
        )
    try:
        body = base64.b64decode(data, validate=True)
    except ValueError:
        raise PushError(f"{name} did not arrive whole (bad base64)") from None
    return trace_from_bytes(body, what=name)


def handle(token: str | None, authorization: str, body: bytes, encoding: str) -> tuple[int, dict[str, Any]]:
    """The push route's answer, Flask-free: (status, JSON body). ``register`` happens only for a good push."""
    from torchvista_dash.app.traces import registry

    try:
        check_token(token, authorization)
        trace = trace_from_bytes(body, gzipped="gzip" in encoding.lower())
    except PushError as exc:
        return exc.status, {"error": str(exc)}
    tid = registry.register(trace)
    return 201, {"id": tid, "model": trace.graph.model_name or "model", "ops": trace.graph.op_count}


# ---- the client ----------------------------------------------------------------------------------------
def push_trace(trace: Trace, server: str, token: str | None = None, *, timeout: float = 60.0) -> str:
    """Send ``trace`` to the server at ``server`` (its page URL); returns the URL of the page that shows it.
    ``token``: the server's push token (default ``$TVD_PUSH_TOKEN``). Raises PushError with the server's
    reason when it refuses."""
    token = push_token(token)
    if token is None:
        raise PushError(f"no push token: pass token= (--token) or set ${PUSH_TOKEN_ENV}", 403)
    base = server if server.endswith("/") else server + "/"
    body = gzip.compress(trace.graph.to_bytes(), compresslevel=6, mtime=0)
    request = urllib.request.Request(
        base + ROUTE,
        data=body,
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.loads(response.read(1 << 20))
    except urllib.error.HTTPError as exc:
        try:
            reason = json.loads(exc.read(1 << 16)).get("error", "")
        except (ValueError, AttributeError):
            reason = ""
        raise PushError(
            f"the server refused the trace (HTTP {exc.code}): {reason or exc.reason}", exc.code
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise PushError(f"cannot reach {base}: {getattr(exc, 'reason', exc)}", 0) from None
    return f"{base}?trace={answer['id']}"
