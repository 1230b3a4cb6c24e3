"""VisibleGraph → Layout with Graphviz ``dot`` (one run, JSON output, or by module).

``layout_view`` is a pure function of the view and the options and keeps no whole-view layouts: whoever keeps
a view's layout owns its cache (the app's per-trace registry entry, bounded by bytes, so evicting a trace
frees its layouts). Below it, the layout by module keeps the pieces it is made of (``compose``): 80 identical
decoder layers are laid out once, in any view of any trace.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from torchvista_dash.layout.composed.compose import (
    Progress,
    clear_piece_cache,
    compose_layout,
    piece_cache_info,
)
from torchvista_dash.layout.graphviz.run import (
    DEFAULT_TIMEOUT,
    DotRun,
    GraphvizError,
    GraphvizNotFound,
    find_dot,
    run_dot,
)
from torchvista_dash.layout.graphviz.stream import JsonStream
from torchvista_dash.layout.single.dot import (
    RANKDIRS,
    build_dot,
    check_rankdir,
    node_size,
    to_dot,
)
from torchvista_dash.layout.single.parse import spline_points
from torchvista_dash.layout.textmetrics import text_width
from torchvista_dash.layout.types import Box, EdgePath, Layout
from torchvista_dash.view.types import VisibleGraph

__all__ = [
    "Box",
    "DEFAULT_TIMEOUT",
    "DotRun",
    "EdgePath",
    "GraphvizError",
    "GraphvizNotFound",
    "Layout",
    "Progress",
    "RANKDIRS",
    "choose_method",
    "clear_piece_cache",
    "piece_cache_info",
    "reporting",
    "cache_info",
    "clear_cache",
    "find_dot",
    "layout_view",
    "node_size",
    "run_dot",
    "spline_points",
    "text_width",
    "to_dot",
]

# Views with more open modules than this are laid out by module. bench/bench_layout_scale.py compares the two
# (docs/performance.md, "Layout"): by module is as fast or faster even for the default views (one open module:
# dot processes kept running beat a fresh one) and draws them as compactly, so only views with nothing open
# (one box per top-level call, no cluster) take one dot run over the whole view.
SINGLE_RUN_MAX_CLUSTERS = 0
DOT_FORMAT = "json0"  # JSON without xdot drawing ops: a quarter of the bytes, and dot writes it faster
_lock = threading.Lock()
_stats = {"layouts": 0, "dot_runs": 0}  # views laid out, whole-view dot runs (pieces count their own)


_reporter: ContextVar[Progress | None] = ContextVar("tvd_layout_progress", default=None)


@contextmanager
def reporting(progress: Progress | None) -> Iterator[None]:
    """Within the block, layouts report their progress to ``progress`` unless given their own (the CLI's
    export draws a bar with it, without every function between it and ``layout_view`` passing it on)."""
    token = _reporter.set(progress)
    try:
        yield
    finally:
        _reporter.reset(token)


def choose_method(vg: VisibleGraph) -> str:
    """``single`` (one dot run over the whole view) or ``composed`` (laid out by module, ``compose``)."""
    return "composed" if len(vg.clusters) > SINGLE_RUN_MAX_CLUSTERS else "single"


def layout_view(
    vg: VisibleGraph,
    rankdir: str = "TB",
    *,
    timeout: float | None = None,
    progress: Progress | None = None,
    method: str = "auto",
) -> Layout:
    """Node boxes, cluster boxes and edge paths for ``vg`` (points, y up); not cached here (see above).

    ``method`` is ``single`` (one dot run over the whole view), ``composed`` (each open module laid out on its
    own and the pieces composed, see ``compose``) or ``auto`` (``choose_method``). ``progress(stage, i, n)``
    is called as the composed layout goes (stage ``modules``: i of n modules laid out; then ``compose``).
    Raises GraphvizNotFound if dot is missing, GraphvizError if it fails or overruns ``timeout`` seconds.
    Whoever caches the returned Layout shares it: treat it as read-only.
    """
    check_rankdir(rankdir)
    if progress is None:
        progress = _reporter.get()
    if method == "auto":
        method = choose_method(vg)
    if method not in ("single", "composed"):
        raise ValueError(f"method must be 'auto', 'single' or 'composed', got {method!r}")
    with _lock:
        _stats["layouts"] += 1
    gc_was_enabled = gc.isenabled()
    gc.disable()  # building/parsing allocates 100,000s of short-lived objects: no full collection mid-click
    try:
        lay = (
            compose_layout(vg, rankdir, timeout=timeout, progress=progress)
            if method == "composed"
            else _single_run(vg, rankdir, timeout)
        )
    finally:
        if gc_was_enabled:
            gc.enable()
    return lay


def _single_run(vg: VisibleGraph, rankdir: str, timeout: float | None) -> Layout:
    """The whole view in one dot run (nested clusters as DOT subgraphs)."""
    with DotRun(DOT_FORMAT, timeout) as run:  # dot starts up while the DOT is being written
        dot, names = build_dot(vg, rankdir)
        stream = JsonStream(vg, names, rankdir)  # reads dot's output while dot is still writing it
        run.feed(dot.to_string(), stream.feed)
    with _lock:
        _stats["dot_runs"] += 1
    return stream.layout()


def cache_info() -> dict[str, Any]:
    """Views laid out and Graphviz runs so far (whole views and pieces), and the piece cache's counts
    (``piece_hits``, ``piece_misses``, ``piece_dot_runs``, ``piece_size``)."""
    pieces = piece_cache_info()
    with _lock:
        return {
            **_stats,
            "dot_runs": _stats["dot_runs"] + pieces["piece_dot_runs"],
            "piece_hits": pieces["piece_hits"],
            "piece_misses": pieces["piece_misses"],
            "piece_dot_runs": pieces["piece_dot_runs"],
            "piece_size": pieces["size"],
        }


def clear_cache() -> None:
    """Forget every cached piece (the next layouts run dot again)."""
    clear_piece_cache()
