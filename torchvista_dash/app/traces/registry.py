"""Server-side registry of traces, keyed by trace id (a content hash), shared by every app in the process.

The browser only ever holds a trace id and its own expand state, so sessions never share state and the
server needs no per-session memory. Each trace has one ``Entry``: the trace and everything derived from it
(visible views, layouts, figures, first pictures, per-trace facts), each in a bounded LRU. The registry
itself is bounded too: past ``max_traces()`` the least recently used entry goes, with all its caches
(traces an app was started with are kept). A page whose trace went says so and asks to show it again.

With a shared store (shared.py: a folder or Redis), every trace registered here is published to it, and a
trace id this process does not hold is looked up there (sharing.py validates it as an untrusted file), so a
link made on one worker or host opens on any other.
"""

from __future__ import annotations

import operator
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from torchvista_dash.app.traces import shared, sharing
from torchvista_dash.cache import Cache
from torchvista_dash.model.errors import TorchvistaDashError

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.app.traces.pictures import Drawn
    from torchvista_dash.layout.types import Layout
    from torchvista_dash.model.options import DrawOptions
    from torchvista_dash.traced import Trace
    from torchvista_dash.view.types import ViewSpec, VisibleGraph

MAX_TRACES = 32  # registered traces kept (besides those an app was started with)
MAX_TRACES_ENV = "TVD_MAX_TRACES"
# per trace: a view, its layout and its figure for about the last 48 views (a figure of a few hundred boxes is
# ~0.3-1 MB of JSON-able dicts besides its gzipped picture, pictures.py), notebook pictures only for first
# views
VIEWS, LAYOUTS, FIGURES, PICTURES, FACTS = 96, 64, 48, 8, 8
# and by memory: an 80-layer Llama every-op view's layout is about 8 MB and its figure about 28 MB, so a trace
# explored at that size keeps about its last 12 layouts and 7 figures, not 64 and 48 (1.8 GB)
LAYOUT_BYTES, FIGURE_BYTES = 96 * 2**20, 192 * 2**20
STILL_HELD_S = 20.0  # how often a trace in use here is confirmed in the shared store (republished if lost)
STILL_HELD_ENV = "TVD_STORE_CHECK_S"


def still_held_s() -> float:
    """``$TVD_STORE_CHECK_S`` when set (seconds, a number), else ``STILL_HELD_S``."""
    try:
        return float(os.environ.get(STILL_HELD_ENV, "") or STILL_HELD_S)
    except ValueError:
        return STILL_HELD_S


FigureKey = tuple["ViewSpec", "DrawOptions"]  # what a figure or picture depends on


class Entry:
    """One trace and its caches; evicting the entry frees all of them at once."""

    def __init__(self, trace: Trace, *, keep: bool = False) -> None:
        self.trace = trace
        self.keep = keep
        self.confirmed = time.monotonic()  # when the shared store was last seen to hold the trace
        self.views: Cache[ViewSpec, VisibleGraph] = Cache(VIEWS)
        self.layouts: Cache[tuple[ViewSpec, str], Layout] = Cache(
            LAYOUTS, max_bytes=LAYOUT_BYTES, weigh=layout_bytes
        )
        self.figures: Cache[FigureKey, Drawn] = Cache(
            FIGURES, max_bytes=FIGURE_BYTES, weigh=operator.attrgetter("nbytes")
        )
        self.pictures: Cache[FigureKey, bytes] = Cache(PICTURES)
        self.facts: Cache[str, Any] = Cache(FACTS)  # per-trace tables (e.g. the nodes inside each call)

    def clear(self) -> None:
        for c in (self.views, self.layouts, self.figures, self.pictures, self.facts):
            c.clear()


def layout_bytes(layout: Layout) -> int:
    """About what a Layout holds in CPython: a point 104 bytes, a box with its dict entries about 330, an edge
    250 (within 5 % of tracemalloc on an 80-layer Llama every-op layout: 7.7 MB)."""
    points = sum(len(e.points) for e in layout.edges)
    return 104 * points + 330 * (len(layout.nodes) + len(layout.clusters)) + 250 * len(layout.edges)


class UnknownTrace(TorchvistaDashError, KeyError):
    """A trace id the server does not hold (the server restarted, or the trace was evicted), or that its
    shared store could not give (``args[1]`` says why)."""

    def __str__(self) -> str:
        if len(self.args) > 1:
            return f"trace {str(self.args[0])[:80]!r} is not on this server, and {self.args[1]}"
        return (
            f"no trace with id {str(self.args[0])[:80]!r} on this server (it restarted, or dropped the trace "
            f"after {max_traces()} newer ones); show the trace again"
        )


_lock = threading.Lock()  # a trace is looked up and moved between the two below under it
_entries: Cache[str, Entry] = Cache(MAX_TRACES)  # the evictable ones, least recently used out first
_kept: dict[str, Entry] = {}  # the traces a server was started with: never evicted


def max_traces() -> int:
    """The registry's cap: ``$TVD_MAX_TRACES`` when set (a positive integer), else ``MAX_TRACES``."""
    raw = os.environ.get(MAX_TRACES_ENV, "").strip()
    if not raw:
        return MAX_TRACES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"${MAX_TRACES_ENV}={raw!r} is not a positive whole number of traces; "
            f"unset it for the default {MAX_TRACES}"
        )
    return value


def register(trace: Trace, *, keep: bool = False) -> str:
    """Hold ``trace`` in the registry and return its id (the graph's content hash, computed once).

    ``keep``: never evict it (the traces a server was started with)."""
    tid = trace.id
    limit = max_traces()
    with _lock:
        held = _kept.get(tid) or _entries.peek(tid)
        new = held is None or (keep and not held.keep)
        if keep:
            _kept[tid] = held or Entry(trace, keep=True)
            _kept[tid].keep = True
            _entries.pop(tid)
        elif held is None:
            _entries.maxsize = limit
            _entries.put(tid, Entry(trace))
    if new:
        try:
            sharing.publish_trace(trace, keep=keep)
        except shared.StoreUnavailable:
            pass  # held here all the same; republished when the store answers again (entry)
    return tid


def entry(trace_id: str) -> Entry:
    """The trace's entry (a use: it moves to the back of the eviction line)."""
    with _lock:
        e = _kept.get(trace_id) or _entries.peek(trace_id)
    if e is None:
        return _from_store(trace_id)
    now = time.monotonic()
    if now - e.confirmed > still_held_s():
        e.confirmed = now
        try:
            sharing.still_held(e.trace, keep=e.keep)
        except shared.StoreUnavailable:
            pass  # what this process holds keeps working while the store is down
    return e


def _from_store(trace_id: str) -> Entry:
    """The entry of a trace another worker or host registered, read from the shared store."""
    if not isinstance(trace_id, str) or not 0 < len(trace_id) <= 128:
        raise UnknownTrace(str(trace_id)[:80])
    try:
        trace = sharing.fetch_trace(trace_id)
    except shared.StoreUnavailable as exc:
        raise UnknownTrace(trace_id, f"{exc}; traces this worker holds still work, try again later") from None
    except ValueError as exc:  # StoreEntryError, TraceFormatError: refused as a hostile file would be
        raise UnknownTrace(trace_id, f"the shared store's copy was refused ({exc})") from None
    if trace is None:
        raise UnknownTrace(trace_id)
    with _lock:
        e = _kept.get(trace_id) or _entries.peek(trace_id)
        if e is None:
            e = Entry(trace)
            _entries.maxsize = max_traces()
            _entries.put(trace_id, e)
    return e


def get(trace_id: str) -> Trace:
    return entry(trace_id).trace


def size() -> int:
    """How many traces are held now."""
    with _lock:
        return len(_entries) + len(_kept)


def clear_caches() -> None:
    """Forget every derived view, layout, figure and picture (the traces stay registered)."""
    with _lock:
        entries = [*_kept.values(), *_entries.values()]
    for e in entries:
        e.clear()
