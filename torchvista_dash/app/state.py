"""The view state a browser holds (a JSON dict in a ``dcc.Store``) and the server-side pipeline it drives.

The store holds only ``{"trace", "expanded", "unfolded", "pinned", "fold", "params", "ranges", "relayout"}`` and
the ``DrawOptions`` fields (``rankdir``, ``theme``, ``highlight``, ...); everything derived from it (VisibleGraph, Layout, figure JSON) is a pure function
of it and is cached here, so two tabs on one graph never interfere and repeated views cost nothing.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields, replace
from functools import lru_cache
from typing import Any

from .. import view as view_mod
from ..layout import layout_view
from ..layout.types import Box, Layout
from ..options import DEFAULT_NODE_BUDGET, DEFAULT_VIEW, DrawOptions, ViewOptions
from ..pipeline import paint_of
from ..render import make_figure
from ..view_types import ViewSpec, VisibleGraph
from . import registry

NODE_BUDGET = DEFAULT_NODE_BUDGET   # the app's budget (tests lower it); beyond it a view auto-collapses
PRECOMPUTE_DELAY_S = 0.3   # background precompute waits this long after a view is sent
MARGIN = 20.0               # layout units around the picture when fitting to screen

Ranges = list[list[float]]  # [[x0, x1], [y0, y1]]


# ---- the store <-> ViewSpec ----------------------------------------------------------------
def spec_to_store(spec: ViewSpec) -> dict[str, Any]:
    return {"expanded": sorted(spec.expanded), "unfolded": sorted(spec.unfolded), "pinned": sorted(spec.pinned),
            "fold": spec.fold_repeats, "params": spec.show_params}


def spec_from_store(data: dict[str, Any]) -> ViewSpec:
    return ViewSpec(expanded=frozenset(data.get("expanded", ())), fold_repeats=bool(data.get("fold", True)),
                    unfolded=frozenset(data.get("unfolded", ())), show_params=bool(data.get("params", False)),
                    pinned=frozenset(data.get("pinned", ())))


def draw_to_store(draw: DrawOptions) -> dict[str, Any]:
    """The drawing options as store keys (one per ``DrawOptions`` field, same name)."""
    return {f.name: getattr(draw, f.name) for f in fields(draw)}


def draw_from_store(data: dict[str, Any], **changes: Any) -> DrawOptions:
    """The drawing options a store holds, with ``changes`` applied (missing keys: the defaults)."""
    base = DrawOptions(**{f.name: data[f.name] for f in fields(DrawOptions) if f.name in data})
    return replace(base, **changes) if changes else base


def initial_spec(trace_id: str, view: ViewOptions = DEFAULT_VIEW) -> ViewSpec:
    """The first view: ``view.depth`` levels open, plus the path to the failing op of a failed trace."""
    graph = registry.get(trace_id).graph
    spec = view_mod.make_spec(graph, depth=view.depth, fold_repeats=view.fold_repeats, show_params=view.show_params)
    if graph.error is not None and graph.error.node is not None and graph.error.node in graph.node_by_id:
        spec = view_mod.expand_to(graph, spec, graph.error.node)
    return spec


def first_view(trace_id: str, view: ViewOptions = DEFAULT_VIEW) -> tuple[ViewSpec, str | None]:
    """The spec a ModelGraph draws first (after any budget collapse) and the visible id it highlights (the
    failing op of a failed trace)."""
    spec = drawn_spec(trace_id, initial_spec(trace_id, view))
    graph = registry.get(trace_id).graph
    highlight = graph.error.node if graph.error is not None else None
    if highlight is not None:
        highlight = view_mod.visible_id_of(graph, visible(trace_id, spec), highlight)
    return spec, highlight


# ---- cached pipeline -----------------------------------------------------------------------
@lru_cache(maxsize=256)
def visible(trace_id: str, spec: ViewSpec) -> VisibleGraph:
    return view_mod.build_view(registry.get(trace_id).graph, spec, node_budget=NODE_BUDGET)


def drawn_spec(trace_id: str, spec: ViewSpec) -> ViewSpec:
    """The spec actually drawn: over the node budget, ``build_view`` collapses deeper calls, and the store
    must hold that spec, or a click on a box the budget closed would toggle the requested state instead."""
    return visible(trace_id, spec).spec


def layout_of(trace_id: str, spec: ViewSpec, rankdir: str) -> Layout:
    return layout_view(visible(trace_id, spec), rankdir=rankdir)


@lru_cache(maxsize=128)
def figure_json(trace_id: str, spec: ViewSpec, draw: DrawOptions) -> dict[str, Any]:
    """The figure as plain JSON-able dicts (built once per view; ranges are set per request on a copy)."""
    graph = registry.get(trace_id).graph
    vg = visible(trace_id, spec)
    paint = paint_of(graph, vg, draw, registry.get(trace_id).paint(vg, draw.theme))
    fig = make_figure(graph, vg, layout_of(trace_id, spec, draw.rankdir), paint=paint, **draw.for_render())
    return fig.to_plotly_json()


def figure_with_ranges(trace_id: str, spec: ViewSpec, draw: DrawOptions, ranges: Ranges) -> dict[str, Any]:
    base = figure_json(trace_id, spec, draw)
    lay = dict(base.get("layout", {}))
    lay["xaxis"] = {**lay.get("xaxis", {}), "range": list(ranges[0]), "autorange": False}
    lay["yaxis"] = {**lay.get("yaxis", {}), "range": list(ranges[1]), "autorange": False}
    lay.pop("uirevision", None)   # our ranges must win over plotly's remembered zoom
    return {"data": base.get("data", []), "layout": lay}


# ---- precomputing the likely next clicks ---------------------------------------------------
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tvd-precompute")
_pending: set[tuple[str, ViewSpec, DrawOptions, str]] = set()
_pending_lock = threading.Lock()


def precompute_neighbours(trace_id: str, spec: ViewSpec, draw: DrawOptions, limit: int = 12) -> None:
    """Lay out, in the background, the views one click away (each collapsed module opened), so a click
    usually finds its layout and figure in the cache."""
    graph = registry.get(trace_id).graph
    vg = visible(trace_id, spec)
    candidates = [n.id for n in vg.nodes if n.kind in ("module", "folded")][:limit]
    # Start after the current answer has gone out: the work holds the GIL while it builds figures.
    _pool.submit(time.sleep, PRECOMPUTE_DELAY_S)
    draw = replace(draw, highlight=None)   # a click clears the highlight
    for vid in candidates:
        key = (trace_id, spec, draw, vid)
        with _pending_lock:
            if key in _pending:
                continue
            _pending.add(key)

        def work(vid: str = vid) -> None:
            try:
                nxt = view_mod.toggle(graph, spec, vid)
                figure_json(trace_id, nxt, draw)
            except Exception:   # a precompute failure must never break the app; the click will report it
                pass

        _pool.submit(work)


# ---- where things are on screen ------------------------------------------------------------
def full_ranges(layout: Layout) -> Ranges:
    return [[-MARGIN, layout.width + MARGIN], [-MARGIN, layout.height + MARGIN]]


def box_of(layout: Layout, vid: str | None) -> Box | None:
    if vid is None:
        return None
    if vid in layout.clusters:
        return layout.clusters[vid]
    return layout.nodes.get(vid)


def anchor_of(layout: Layout, vid: str | None) -> tuple[float, float] | None:
    """The point of a box that should stay put on screen: its top centre (where a cluster's header is)."""
    box = box_of(layout, vid)
    if box is None:
        return None
    x0, y0, x1, y1 = box
    return ((x0 + x1) / 2.0, y1)


def shift(ranges: Ranges, dx: float, dy: float) -> Ranges:
    return [[ranges[0][0] + dx, ranges[0][1] + dx], [ranges[1][0] + dy, ranges[1][1] + dy]]


def keep_inside(ranges: Ranges, point: tuple[float, float], margin: float = 0.06) -> Ranges:
    """Shift the view just enough that ``point`` (a header) is a margin inside it: at the very edge of the
    plot a click would start an axis drag instead of reaching the header."""
    (x0, x1), (y0, y1) = ranges
    mx, my = (x1 - x0) * margin, (y1 - y0) * margin
    dx = min(0.0, point[0] - (x0 + mx)) + max(0.0, point[0] - (x1 - mx))
    dy = min(0.0, point[1] - (y0 + my)) + max(0.0, point[1] - (y1 - my))
    return shift(ranges, dx, dy) if (dx or dy) else ranges


def centre_on(ranges: Ranges, layout: Layout, vid: str | None) -> Ranges:
    """Same zoom, ``vid``'s box in the middle."""
    box = box_of(layout, vid)
    if box is None:
        return ranges
    cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
    mx, my = (ranges[0][0] + ranges[0][1]) / 2.0, (ranges[1][0] + ranges[1][1]) / 2.0
    return shift(ranges, cx - mx, cy - my)


def ranges_from_relayout(relayout: dict[str, Any] | None, current: Ranges, full: Ranges) -> Ranges:
    """The ranges the user is looking at, from plotly's last relayout event (zoom, pan, double-click reset)."""
    if not relayout:
        return current
    if relayout.get("xaxis.autorange") or relayout.get("yaxis.autorange"):
        return full
    xr = _axis_range(relayout, "xaxis")
    yr = _axis_range(relayout, "yaxis")
    if xr is not None and yr is not None:
        return [xr, yr]
    if yr is not None:   # only y reported: keep the aspect ratio about x's centre
        return [_scaled(current[0], (yr[1] - yr[0]) / max(current[1][1] - current[1][0], 1e-9)), yr]
    if xr is not None:
        return [xr, _scaled(current[1], (xr[1] - xr[0]) / max(current[0][1] - current[0][0], 1e-9))]
    return current


def is_echo(relayout: dict[str, Any] | None, sent: list[Ranges]) -> bool:
    """True when a relayout event only reports ranges the server itself sent, after plotly stretched one axis
    to keep the aspect ratio (it does so around the centre): not a user zoom or pan."""
    if not relayout:
        return False
    xr, yr = _axis_range(relayout, "xaxis"), _axis_range(relayout, "yaxis")
    if xr is None or yr is None:
        return False
    for sx, sy in sent:
        if (_close(yr, sy) and _close([_mid(xr)] * 2, [_mid(sx)] * 2)) or \
                (_close(xr, sx) and _close([_mid(yr)] * 2, [_mid(sy)] * 2)):
            return True
    return False


def _mid(r: list[float]) -> float:
    return (r[0] + r[1]) / 2.0


def _close(a: list[float], b: list[float], tol: float = 1e-3) -> bool:
    return abs(a[0] - b[0]) <= tol * max(1.0, abs(b[0])) and abs(a[1] - b[1]) <= tol * max(1.0, abs(b[1]))


def _axis_range(relayout: dict[str, Any], axis: str) -> list[float] | None:
    if f"{axis}.range[0]" in relayout and f"{axis}.range[1]" in relayout:
        return [float(relayout[f"{axis}.range[0]"]), float(relayout[f"{axis}.range[1]"])]
    r = relayout.get(f"{axis}.range")
    if isinstance(r, (list, tuple)) and len(r) == 2:
        return [float(r[0]), float(r[1])]
    return None


def _scaled(r: list[float], factor: float) -> list[float]:
    c, half = (r[0] + r[1]) / 2.0, (r[1] - r[0]) / 2.0 * factor
    return [c - half, c + half]
