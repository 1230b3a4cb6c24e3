"""VisibleGraph → Layout with Graphviz ``dot`` (one run, JSON output), cached in a bounded LRU.

A view's layout depends only on the VisibleGraph and the options, so returning to a view (collapse after
expand, the app's precomputed next click) costs a dictionary lookup instead of a Graphviz run.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from typing import Any

from ..view_types import VisibleGraph
from .dot import RANKDIRS, build_dot, check_rankdir, node_size, text_width, to_dot
from .parse import spline_points
from .run import DEFAULT_TIMEOUT, DotRun, GraphvizError, GraphvizNotFound, find_dot, run_dot
from .stream import JsonStream
from .types import Box, EdgePath, Layout

__all__ = [
    "Box", "DEFAULT_TIMEOUT", "DotRun", "EdgePath", "GraphvizError", "GraphvizNotFound", "Layout", "RANKDIRS",
    "cache_info", "clear_cache", "find_dot", "layout_view", "node_size", "run_dot",
    "spline_points", "text_width", "to_dot",
]

CACHE_SIZE = 64
DOT_FORMAT = "json0"   # JSON without xdot drawing ops: a quarter of the bytes, and dot writes it faster
_cache: OrderedDict[tuple[VisibleGraph, str], Layout] = OrderedDict()
_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "dot_runs": 0}


def layout_view(vg: VisibleGraph, rankdir: str = "TB", *, timeout: float | None = None) -> Layout:
    """Node boxes, cluster boxes and edge paths for ``vg`` (points, y up). Cached by (view, rankdir).

    Raises GraphvizNotFound if dot is missing, GraphvizError if it fails or overruns ``timeout`` seconds.
    The returned Layout is shared with the cache: treat it as read-only.
    """
    check_rankdir(rankdir)
    key = (vg, rankdir)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            _stats["hits"] += 1
            return hit
        _stats["misses"] += 1
    gc_was_enabled = gc.isenabled()
    gc.disable()   # building/parsing allocates thousands of short-lived objects: no full collection mid-click
    try:
        with DotRun(DOT_FORMAT, timeout) as run:   # dot starts up while the DOT is being written
            dot, names = build_dot(vg, rankdir)
            stream = JsonStream(vg, names, rankdir)   # reads dot's output while dot is still writing it
            run.feed(dot.to_string(), stream.feed)
        with _lock:
            _stats["dot_runs"] += 1
        lay = stream.layout()
    finally:
        if gc_was_enabled:
            gc.enable()
    with _lock:
        _cache[key] = lay
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return lay




def cache_info() -> dict[str, Any]:
    """Hits, misses, Graphviz runs so far, and the current/maximum cache size."""
    with _lock:
        return {**_stats, "size": len(_cache), "maxsize": CACHE_SIZE}


def clear_cache() -> None:
    with _lock:
        _cache.clear()
