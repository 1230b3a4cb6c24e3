"""Layout by module: each open call's interior laid out on its own, the pieces composed into one ``Layout``.

One dot run over a whole every-op view explodes with nested clusters (an 8-layer Llama every op takes dot tens
of seconds, 16 layers over a minute; bench/bench_layout_scale.py). Here every piece is a small flat graph
(``pieces``), laid out by dot bottom-up: a cluster's interior first, then its parent with the cluster as one
fixed-size box. Pieces are cached by their key (what their geometry depends on), in one bounded ``Cache``
this module owns, shared by every view of every trace: 80 identical decoder layers are laid out once, and
after a click only the pieces whose contents changed (the toggled call's chain up to the top level) go to dot
again. The result is a pure function of the view: a piece's layout does not depend on which other pieces
were laid out with it, so cached and fresh pieces give the same numbers.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

import numpy as np

from torchvista_dash.cache import Cache
from torchvista_dash.layout.composed.piecedot import layout_pieces
from torchvista_dash.layout.composed.pieceread import PieceLayout
from torchvista_dash.layout.composed.pieces import (
    HEADER,
    MARGIN,
    Fields,
    Plan,
    Size,
    cluster_size,
    node_sizes,
    plan,
)
from torchvista_dash.layout.composed.porttable import port_cells
from torchvista_dash.layout.composed.trivial import lay_out_single
from torchvista_dash.layout.graphviz.run import GraphvizError, timeout_seconds
from torchvista_dash.layout.textmetrics import EDGE_PT, text_width
from torchvista_dash.layout.types import Box, EdgePath, Layout, Point
from torchvista_dash.view.types import VisibleGraph

Progress = Callable[[str, int, int], None]  # (stage, done, total): "modules" i of n pieces, then "compose"

PIECE_CACHE_SIZE = 4096
MAX_PIECE_EDGES = 20_000  # edges between the direct children of one module call (what dot pays for)
_pieces: Cache[tuple, PieceLayout] = Cache(PIECE_CACHE_SIZE)
_lock = threading.Lock()
_stats = {"piece_hits": 0, "piece_misses": 0, "piece_dot_runs": 0}


def piece_cache_info() -> dict[str, int]:
    """Pieces found in the cache, pieces laid out by dot, dot processes started, and the cache's size."""
    with _lock:
        return {**_stats, "size": len(_pieces), "maxsize": PIECE_CACHE_SIZE}


def clear_piece_cache() -> None:
    _pieces.clear()


def _lookup(keys: list[tuple]) -> dict[tuple, PieceLayout]:
    found = {}
    for k in keys:
        hit = _pieces.peek(k)
        if hit is not None:
            found[k] = hit
    with _lock:
        _stats["piece_hits"] += len(found)
        _stats["piece_misses"] += len(keys) - len(found)
    return found


def _store(new: dict[tuple, PieceLayout], runs: int) -> None:
    with _lock:
        _stats["piece_dot_runs"] += runs
    for k, v in new.items():
        _pieces.put(k, v)


def compose_layout(
    vg: VisibleGraph, rankdir: str = "TB", *, timeout: float | None = None, progress: Progress | None = None
) -> Layout:
    """The Layout of ``vg`` laid out piece by piece (see the module docstring)."""
    budget = timeout_seconds(timeout)  # $TVD_DOT_TIMEOUT when not given, checked here
    deadline = time.monotonic() + budget
    pl = plan(vg)
    sizes: dict[str, Size] = node_sizes(vg)
    total = len(pl.pieces)
    done = 0
    got: dict[str | None, PieceLayout] = {}
    fields: dict[str, Fields] = {}
    for level in pl.levels:
        keys = {
            cid: pl.pieces[cid].key([sizes[c] for c in pl.pieces[cid].children], rankdir, pl.pieces, fields)
            for cid in level
        }
        unique = list(dict.fromkeys(keys.values()))
        found = _lookup(unique)
        for k in unique:
            if k not in found:
                single = lay_out_single(k)  # one child: no dot needed
                if single is not None:
                    found[k] = single
                    _store({k: single}, 0)
        missing = [k for k in unique if k not in found]
        for k in missing:
            _guard(k, pl, keys)
        if missing:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GraphvizError(
                    f"Graphviz dot ran past its time budget of {budget:g} s laying out this view"
                )
            tick = None
            if progress is not None:
                waiting = sum(1 for k in keys.values() if k not in found)
                tick = _Ticker(progress, total, done + len(level) - waiting, waiting, len(missing))
            try:
                lays, runs = layout_pieces(missing, left, on_done=tick)
            except GraphvizError as exc:
                if "time budget" not in str(exc):
                    raise
                raise GraphvizError(  # the budget of the whole layout, not of the batch that overran it
                    f"Graphviz dot ran past its time budget of {budget:g} s and was stopped. Collapse some "
                    f"modules, or raise the timeout (layout_view(..., timeout=...) or $TVD_DOT_TIMEOUT)."
                ) from None
            new = dict(zip(missing, lays, strict=True))
            _store(new, runs)
            found.update(new)
        for cid, k in keys.items():
            lay = got[cid] = found[k]
            if cid is not None:
                group = cid in pl.groups
                sizes[cid] = cluster_size((lay.width, lay.height), pl.labels[cid], group)
                p = pl.pieces[cid]
                fields[cid] = _fields(
                    lay,
                    sizes[cid],
                    len(p.children),
                    len(p.in_ports),
                    len(p.out_ports),
                    rankdir,
                    0.0 if group else MARGIN,
                )
        done += len(level)
        if progress is not None:
            progress("modules", done, total)
    out = _compose(vg, pl, got, sizes, rankdir)
    if progress is not None:
        progress("compose", total, total)
    return out


def _guard(key: tuple, pl: Plan, keys: dict[str | None, tuple]) -> None:
    """Refuse, before dot starts, a piece dot would take minutes over: what dot pays for is edges (each a
    chain of virtual nodes through the ranks it spans), not boxes, so the guard counts the piece's edges."""
    edges = len(key[4])
    if edges > MAX_PIECE_EDGES:
        cid = next(c for c, k in keys.items() if k is key)
        where = "the top level" if cid is None else f"module call {cid}"
        raise GraphvizError(
            f"{where} holds {edges:,} edges between its direct children, over the "
            f"{MAX_PIECE_EDGES:,} one dot run lays out in seconds: collapse some of its "
            f"modules, or raise layout.compose.MAX_PIECE_EDGES"
        )


class _Ticker:
    """Progress within one level: modules found in the cache count at once, the others as dot finishes
    them."""

    def __init__(self, progress: Progress, total: int, done: int, waiting: int, n_keys: int) -> None:
        self.progress, self.total, self.done, self.waiting, self.n_keys = (
            progress,
            total,
            done,
            waiting,
            n_keys,
        )
        self.finished = 0
        progress("modules", done, total)

    def __call__(self, n_keys: int) -> None:
        self.finished += n_keys
        self.progress("modules", self.done + self.waiting * self.finished // self.n_keys, self.total)


def _compose(
    vg: VisibleGraph, pl: Plan, got: dict[str | None, PieceLayout], sizes: dict[str, Size], rankdir: str
) -> Layout:
    """Place every piece in one coordinate system and join each edge's route into one polyline. An 80-layer
    every-op view has 6,000 boxes and 100,000 edge points: both are placed level by level in numpy, and the
    edges gathered from one array of every piece's moved points."""
    offset: dict[str | None, Point] = {None: (0.0, 0.0)}
    nodes: dict[str, Box] = {}
    clusters: dict[str, Box] = {}
    for level in reversed(pl.levels):  # parents before their children
        ids: list[tuple[str, bool]] = []
        xywh: list[tuple[float, float, float, float]] = []
        for cid in level:
            p, lay = pl.pieces[cid], got[cid]
            ox, oy = offset[cid]
            for child, cl, (cx, cy) in zip(p.children, p.is_cluster, lay.centres, strict=False):
                ids.append((child, cl))
                xywh.append((cx + ox, cy + oy, *sizes[child]))
        if not ids:
            continue
        a = np.array(xywh, dtype=float)
        half = a[:, 2:] / 2
        boxes = (np.round(np.hstack((a[:, :2] - half, a[:, :2] + half)), 2) + 0.0).tolist()
        for (child, cl), box in zip(ids, boxes, strict=True):
            b = (box[0], box[1], box[2], box[3])
            if cl and child in pl.groups:  # drawn as its members alone, where its interior put them
                offset[child] = (b[0], b[1])
            elif cl:
                clusters[child] = b
                offset[child] = (b[0] + (sizes[child][0] - got[child].width) / 2, b[1] + MARGIN)
            else:
                nodes[child] = b
    edges = _join_edges(vg, pl, got, offset)
    parent: dict[str, str | None] = {v.id: v.parent for v in vg.nodes}
    parent.update({c.id: c.parent for c in vg.clusters})
    top = got[None]
    return Layout(
        nodes=nodes,
        clusters=clusters,
        parent=parent,
        edges=edges,
        width=top.width,
        height=top.height,
        rankdir=rankdir,
    )


def _join_edges(
    vg: VisibleGraph, pl: Plan, got: dict[str | None, PieceLayout], offset: dict[str | None, Point]
) -> tuple[EdgePath, ...]:
    """Every visible edge's polyline: its route's piece edges in drawing coordinates, one after another, the
    point where two meet kept once."""
    base: dict[str | None, int] = {}
    blocks: list[np.ndarray] = []
    at = 0
    for cid, lay in got.items():
        base[cid] = at
        blocks.append(lay.points + np.array(offset[cid]))
        at += len(lay.points)
    allxy = np.round(np.concatenate(blocks), 2) + 0.0 if blocks else np.zeros((0, 2))
    seg_first: list[int] = []
    seg_len: list[int] = []
    n_segs: list[int] = []
    for route in pl.routes:
        for cid, k in route:
            st = got[cid].starts
            seg_first.append(base[cid] + st[k])
            seg_len.append(st[k + 1] - st[k])
        n_segs.append(len(route))
    if not n_segs:
        return ()
    first = np.array(seg_first, dtype=np.int64)
    length = np.array(seg_len, dtype=np.int64)
    edge_first_seg = np.cumsum([0] + n_segs[:-1])  # every route has at least one segment
    # a segment after the first of its edge drops its first point when it is where the previous one ended
    opens = np.zeros(len(first), dtype=bool)
    opens[edge_first_seg] = True
    last_prev = np.roll(first + length - 1, 1)
    joined = ~opens & (allxy[first] == allxy[last_prev]).all(axis=1)
    first = first + joined
    length = length - joined
    idx = np.repeat(first - np.cumsum(length) + length, length) + np.arange(int(length.sum()))
    flat = allxy[idx].tolist()
    ends = np.cumsum(np.add.reduceat(length, edge_first_seg)).tolist()
    out: list[EdgePath] = []
    first_label: dict[tuple[str, str], Point] = {}
    fan = _fan_out(vg)
    lo = 0
    for e, hi in zip(vg.edges, ends, strict=True):
        pts_t = tuple(map(tuple, flat[lo:hi]))
        lo = hi
        pos = None
        if e.label:
            group = (e.src, e.tensor)
            if group not in first_label:  # one label per tensor: the edges it feeds share the first's
                pos = first_label[group] = _label_at(pts_t, e.label, near_source=fan[group] > 1)
        out.append(EdgePath(e.src, e.dst, pts_t, e.label, pos))
    return tuple(out)


def _fields(
    lay: PieceLayout, size: Size, n: int, n_in: int, n_out: int, rankdir: str, margin: float
) -> Fields:
    """Where each port of a laid-out cluster goes on its border in the parent: where the port is inside (the
    cluster's box is ``size``, its interior centred across it and ``margin`` above its lower border), so the
    edges joining them run on straight and never cross."""
    w, h = size
    dx = (w - lay.width) / 2
    if rankdir in ("TB", "BT"):
        extent, place = w, (lambda s: dx + lay.centres[s][0])
    else:  # along the side from the top
        extent, place = h, (lambda s: h - margin - lay.centres[s][1])
    return (
        port_cells(extent, [place(s) for s in range(n, n + n_in)]),
        port_cells(extent, [place(s) for s in range(n + n_in, n + n_in + n_out)]),
    )


def _fan_out(vg: VisibleGraph) -> dict[tuple[str, str], int]:
    """How many visible edges carry each (source, tensor): their shape label is drawn once, by the source."""
    out: dict[tuple[str, str], int] = {}
    for e in vg.edges:
        out[(e.src, e.tensor)] = out.get((e.src, e.tensor), 0) + 1
    return out


def _label_at(pts: tuple[Point, ...], label: str, near_source: bool) -> Point:
    """Where an edge's shape label goes: beside the middle of the edge, or just below its source when the
    tensor feeds several boxes (all of them share one label there)."""
    if near_source or len(pts) == 2:
        (ax, ay), (bx, by) = pts[0], pts[1]
        d = math.hypot(bx - ax, by - ay)
        t = min(1.0, 12.0 / d) if near_source and d > 0 else 0.5
    else:
        (ax, ay), (bx, by) = pts[len(pts) // 2 - 1], pts[len(pts) // 2]
        t = 0.5
    x, y = ax + t * (bx - ax), ay + t * (by - ay)
    return (round(x + text_width(label, EDGE_PT) / 2 + 3, 2), round(y, 2))


__all__ = ["HEADER", "Progress", "clear_piece_cache", "compose_layout", "piece_cache_info"]
