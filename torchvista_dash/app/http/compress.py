"""Gzip for the app's JSON answers: a click's figure (its hit layer: ids and hover text for every box) is
2.5 MB of JSON at an 80-layer every-op view, and 0.17 MB gzipped.

Dash's own ``compress=True`` needs flask-compress and compresses everything, the script bundles too, on every
request; this compresses only what is worth it: JSON answers (callbacks, the page's layout) above
``MIN_BYTES``, at a fast level (``LEVEL``: about 15 ms for 2.5 MB), for clients that accept gzip. Pictures are
gzipped once when stored (pictures.py).
"""

from __future__ import annotations

import gzip
from typing import Any

MIN_BYTES = 16 * 1024
LEVEL = 1


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip (``gzip``/``*`` listed, and not at ``q=0``)."""
    for part in header.lower().split(","):
        name, _, params = part.strip().partition(";")
        if name.strip() in ("gzip", "*"):
            q = params.strip().replace(" ", "")
            if q.startswith("q="):
                try:
                    return float(q[2:]) > 0
                except ValueError:
                    return False
            return True
    return False


def gzip_json(response: Any) -> Any:
    """A Flask ``after_request`` hook: ``response`` gzipped when it is a big JSON answer the client can
    unpack; anything else unchanged."""
    from flask import request

    if (
        response.status_code != 200
        or response.direct_passthrough
        or response.mimetype != "application/json"
        or "Content-Encoding" in response.headers
        or not accepts_gzip(request.headers.get("Accept-Encoding", ""))
    ):
        return response
    body = response.get_data()
    if len(body) < MIN_BYTES:
        return response
    response.set_data(gzip.compress(body, compresslevel=LEVEL, mtime=0))
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response
