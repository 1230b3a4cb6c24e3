"""How far a slow view change has got, shown in the page while it runs (Dash means only, no JavaScript).

The view callback answers when its layout is done, which for a big every-op view takes seconds. Dash's
``running=`` turns a ``dcc.Interval`` on while that callback runs and off when its answer arrives, so an idle
page, and every click answered before the first tick (``POLL_MS``), sends no poll at all. Each poll asks this
record how far its request has got. The poll finds its request by what the browser sent: while a view
callback is in flight, the poll carries the same store and control values it did, so both hash to one key
without an id made in the browser. A layout reports to a record of its own view, and a request points at the
view it waits for: a click that waits for the background precompute laying out the same view sees that work's
progress too. Records live only while their request runs, and there are at most ``MAX_RECORDS``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from hashlib import blake2b
from typing import Any

from torchvista_dash.cache import Cache

POLL_MS = 250  # how often a page asks while its view callback runs
SHOW_AFTER_S = 0.7  # a request answered sooner shows no progress (the spinner says enough)
MAX_RECORDS = 256  # requests and layouts in flight at once, across every page of the server


@dataclass
class _Request:
    started: float
    stage: str
    work: Hashable | None = None
    show_after: float = SHOW_AFTER_S


_lock = threading.Lock()  # a request's record is read and changed under it
_requests: Cache[str, _Request] = Cache(MAX_RECORDS)
_work: Cache[Hashable, str] = Cache(MAX_RECORDS)
_current: ContextVar[str | None] = ContextVar("tvd_app_request", default=None)


def request_key(*parts: Any) -> str:
    """One key for the values a request was made with (the view callback's, and its poll's)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


@contextmanager
def request(key: str, show_after: float = SHOW_AFTER_S) -> Iterator[None]:
    """Within the block, this thread's work is request ``key``'s (its stages and the views it waits for);
    ``show_after``: seconds before the page shows it (0 for work known to be slow)."""
    _requests.put(key, _Request(time.monotonic(), "building the view", show_after=show_after))
    token = _current.set(key)
    try:
        yield
    finally:
        _current.reset(token)
        _requests.pop(key)


def stage(text: str) -> None:
    """The current request has moved on to ``text`` (e.g. drawing the figure)."""
    key = _current.get()
    if key is None:
        return
    with _lock:
        req = _requests.peek(key)
        if req is not None:
            req.stage, req.work = text, None


@contextmanager
def waiting_for(work: Hashable, text: str) -> Iterator[None]:
    """The current request waits for ``work`` (laid out by this thread or another): its reports are shown."""
    key = _current.get()
    if key is None:
        yield
        return
    with _lock:
        req = _requests.peek(key)
        if req is not None:
            req.stage, req.work = text, work
    try:
        yield
    finally:
        with _lock:
            req = _requests.peek(key)
            if req is not None and req.work == work:
                req.work = None


def reporter(work: Hashable) -> Callable[[str, int, int], None]:
    """A layout progress callback (``layout.reporting``) that records the stages of ``work``."""

    def report(step: str, done: int, total: int) -> None:
        text = (
            f"laying out modules: {done:,} of {total:,}"
            if step == "modules"
            else f"joining {total:,} modules into one picture"
            if step == "compose"
            else f"{step}: {done} of {total}"
        )
        _work.put(work, text)

    return report


def work_text(work: Hashable) -> str | None:
    """What ``work`` last reported ("laying out modules: 3 of 12"), while it runs."""
    return _work.peek(work)


def finished(work: Hashable) -> None:
    """``work`` is done: forget its record."""
    _work.pop(work)


def text(key: str, now: float | None = None) -> str:
    """What the page shows for request ``key``: empty until it has run its ``show_after``, and once it
    ended."""
    with _lock:
        req = _requests.peek(key)
        if req is None:
            return ""
        elapsed = (time.monotonic() if now is None else now) - req.started
        if elapsed < req.show_after:
            return ""
        what = (_work.peek(req.work) if req.work is not None else None) or req.stage
    return f"{what[:1].upper()}{what[1:]} ({elapsed:.1f} s)"


def in_flight() -> int:
    """Requests and layouts recorded now (tests: nothing stays behind)."""
    return len(_requests) + len(_work)
