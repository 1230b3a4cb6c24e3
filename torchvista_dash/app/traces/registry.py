"""Server-side registry of traces, keyed by trace id (a content hash), shared by every app in the process.

The browser only ever holds a trace id and its own expand state, so sessions never share state and the
server needs no per-session memory. Each trace has one ``Entry``: the trace and everything derived from it
(visible views, layouts, figures, first pictures, per-trace facts), each in a bounded LRU. The registry
itself is bounded too: past ``max_traces()`` the least recently used entry goes, with all its caches
(traces an app was started with are kept). A page whose trace went says so and asks to show it again.
"""

from __future__ import annotations

import operator
import os
import threading
from typing import TYPE_CHECKING, Any

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

FigureKey = tuple["ViewSpec", "DrawOptions"]  # what a figure or picture depends on


class Entry:
    """One trace and its caches; evicting the entry frees all of them at once."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
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
    """A trace id the server does not hold (the server restarted, or the trace was evicted)."""

    def __str__(self) -> str:
        return (
            f"no trace with id {self.args[0]!r} on this server (it restarted, or dropped the trace after "
            f"{max_traces()} newer ones); show the trace again"
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
        if keep:
            _kept[tid] = held or Entry(trace)
            _entries.pop(tid)
        elif held is None:
            _entries.maxsize = limit
            _entries.put(tid, Entry(trace))
    return tid


def entry(trace_id: str) -> Entry:
    """The trace's entry (a use: it moves to the back of the eviction line)."""
    with _lock:
        e = _kept.get(trace_id) or _entries.peek(trace_id)
    if e is None:
        raise UnknownTrace(trace_id)
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
