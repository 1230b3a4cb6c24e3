"""One piece's geometry from Graphviz ``dot``: its DOT (built with pydot from the piece's key alone), many
pieces laid out by one dot process (dot lays out each graph of its input on its own), the output read back.

In a piece, tensors entering the cluster start at ports on the first rank and tensors leaving it end at ports
on the last; edges carry no labels (a label would be a node of its own on a rank of its own, which doubled the
ranks and, with long skip edges, multiplied dot's work). One tensor feeding many children is drawn as a *bus*:
a chain of junction points, each one rank above its consumer, so a tensor reaching 80 decoder layers costs dot
about 80 virtual nodes, not 80 edges of up to 80 ranks each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pydot

from .dotpool import run_graphs
from .parse import spline_polylines
from .run import GraphvizError
from .types import Point

PORT_SIZE = 0.02          # inches: ports and bus junctions are points, not boxes
GRAPH_ATTRS = {"nodesep": "0.25", "ranksep": "0.3"}
Polyline = tuple[Point, ...]
SINK_ROW = 4   # more end boxes than this fed by one child are stacked in rows
IN_SIDE = {"TB": "n", "BT": "s", "LR": "w", "RL": "e"}     # the side of a box that faces the first rank
OUT_SIDE = {"TB": "s", "BT": "n", "LR": "e", "RL": "w"}
KEEP = 4.0                  # points kept between a row of ports and the boxes next to it
RANK_GAP = 0.3 * 72 - KEEP  # points cut beside a row of ports: the rank gap (ranksep) but KEEP
PRECISE_OVER = 20_000.0   # points: pieces that may be bigger are read from dot's drawing ops (see layout_pieces)
MAX_CELL = 65_535   # points: the biggest WIDTH/HEIGHT of a cell Graphviz takes
STACK_SIZES = 0.1   # sibling clusters this close in size (a fraction of the larger) are layers of one stack
ALIGN = 16     # dot weight of the edge aligning two layers of a stack (``_stacked_layers``)
STRAIGHT = 8   # dot weight of every edge but a bus branch: dot keeps the heavier of two edges straight
TRUNK = STRAIGHT   # dot weight of the edges joining a bus's junctions
# ... in a piece with more bus branches than BUS_HEAVY: dot's placement of many heavy trunks is what it spends
# its time on there (the 32-layer dense block's default view: ~5x the time of weight 2, and more crossings)
TRUNK_LIGHT, BUS_HEAVY = 2, 400
BRANCH = 1         # dot weight of a bus branch (junction to consumer): it gives way, the trunk stays straight


@dataclass(frozen=True, eq=False)
class PieceLayout:
    """A piece laid out in its own coordinates (points, y up, lower-left corner at 0, 0)."""

    width: float
    height: float
    centres: tuple[Point, ...]      # per DOT slot: children, then in-ports, then out-ports
    points: np.ndarray              # every piece edge's polyline (tail's border to head's), one after another
    starts: tuple[int, ...]         # piece edge k is points[starts[k]:starts[k + 1]]


def _dot_edges(key: tuple) -> tuple[list[tuple[int, int, dict[str, object]]], list[list[int]], int]:
    """The dot edges of a piece (tail slot, head slot, attributes), per piece edge the dot edges it runs along
    (a bus member: the trunk up to its junction, then its branch), and the number of slots with junctions."""
    _rankdir, children, n_in, n_out, specs = key
    nxt = len(children) + n_in + n_out
    out: list[tuple[int, int, dict[str, object]]] = []
    follow: list[list[int]] = []
    last: dict[int, tuple[int, list[int]]] = {}     # bus group → (its latest junction, the trunk to it)
    rankdir = key[0]
    stack = _stack_pairs(specs, children)
    trunk_weight = TRUNK if sum(1 for s in specs if s[2] >= 0) <= BUS_HEAVY else TRUNK_LIGHT
    for tail, head, group, tport, hport in specs:
        # edges between children stay straight before edges to ports (which give way, like bus branches), and
        # an edge from one layer of a stack into the next gives way to the edge aligning them (_stacked_layers)
        weight = 0 if (tail, head) in stack else \
            STRAIGHT if max(tail, head) < len(children) else 0
        attrs: dict[str, object] = {"weight": weight}
        out_at = {"tailport": f"o{tport}:{OUT_SIDE[rankdir]}"} if tport >= 0 else {}
        in_at = {"headport": f"i{hport}:{IN_SIDE[rankdir]}"} if hport >= 0 else {}
        if group < 0:
            follow.append([len(out)])
            out.append((tail, head, {**attrs, **out_at, **in_at}))
            continue
        j = nxt
        nxt += 1
        if group in last:
            prev, trunk = last[group]
            trunk = [*trunk, len(out)]
            # the trunk holds its junctions rank after rank (constraint=false let dot order them freely:
            # branches then crossed each other and the trunks, Llama 8 layers 288 crossings against 226)
            out.append((prev, j, {"weight": trunk_weight}))
        else:
            trunk = [len(out)]
            out.append((tail, j, {"weight": trunk_weight, **out_at}))
        last[group] = (j, trunk)
        follow.append([*trunk, len(out)])
        out.append((j, head, {**attrs, "weight": BRANCH, **in_at}))
    out.extend(_stacked_sinks(specs, len(children)))
    out.extend((t, h, {"style": "invis", "weight": ALIGN}) for t, h in stack)
    return out, follow, nxt


def port_cells(extent: float, places: Sequence[float]) -> tuple[int, ...]:
    """The start of each port's 1-point cell on a border ``extent`` points long (``places``: the ports' points
    from its start): the border is drawn as a table of whole points, centred on the box, and two ports never
    share a point (a crowded run is pushed along, and back from the far end)."""
    side = math.floor(extent)
    shift = (extent - side) / 2
    starts = [min(max(math.floor(p - shift), 0), max(side - 1, 0)) for p in places]
    order = sorted(range(len(starts)), key=lambda k: (starts[k], k))
    at = 0
    for k in order:
        starts[k] = at = max(starts[k], at)
        at += 1
    end = side
    for k in reversed(order):
        starts[k] = end = min(starts[k], end - 1)
    return tuple(starts)


def cell_centre(extent: float, start: int) -> float:
    """The point (from the border's start) where a port whose cell starts at ``start`` sits."""
    return start + 0.5 + (extent - math.floor(extent)) / 2


def _strip(prefix: str, side: int, starts: Sequence[int], horizontal: bool) -> str:
    """One border of a child cluster: a row (column) of empty cells of whole points, a 1-point cell named
    ``prefix`` + port index where each port is, filler between."""
    cells: list[tuple[str, int]] = []
    at = 0
    for k, st in sorted(enumerate(starts), key=lambda kc: (kc[1], kc[0])):
        if st > at:
            cells.append(("", st - at))
        cells.append((f' PORT="{prefix}{k}"', 1))
        at = st + 1
    if side > at:
        cells.append(("", side - at))
    size = 'WIDTH="{}" HEIGHT="1"' if horizontal else 'WIDTH="1" HEIGHT="{}"'
    tds = [f'<TD {size.format(n)} FIXEDSIZE="TRUE"{port}></TD>' for port, n in _split(cells)]
    body = "<TR>" + "".join(tds) + "</TR>" if horizontal else "".join(f"<TR>{td}</TR>" for td in tds)
    return f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">{body}</TABLE>'


def _split(cells: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Filler cells cut to at most ``MAX_CELL`` points each (Graphviz ignores a bigger cell size)."""
    out: list[tuple[str, int]] = []
    for port, n in cells:
        while n > MAX_CELL:
            out.append((port, MAX_CELL))
            n -= MAX_CELL
        out.append((port, n))
    return out


def _block(w: int, h: int) -> str:
    """The inside of a child cluster's table: a cell ``w`` × ``h`` points, a grid of cells when a side is over
    ``MAX_CELL`` (an 80-layer model is 270,000 points tall)."""
    cols = [n for _p, n in _split([("", w)])]
    rows = [n for _p, n in _split([("", h)])]
    if len(cols) == 1 and len(rows) == 1:
        return f'<TD WIDTH="{w}" HEIGHT="{h}" FIXEDSIZE="TRUE"></TD>'
    body = "".join("<TR>" + "".join(f'<TD WIDTH="{c}" HEIGHT="{r}" FIXEDSIZE="TRUE"></TD>' for c in cols) + "</TR>"
                   for r in rows)
    return f'<TD><TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">{body}</TABLE></TD>'


def _port_table(rankdir: str, w: float, h: float, ins: Sequence[int], outs: Sequence[int]) -> str:
    """A child cluster as an HTML-like table of its own size: its in-ports as cells along the side facing the
    first rank, its out-ports along the opposite side, each where the port is inside the cluster. So dot ends
    each edge where the edge goes on inside, and a chain of identical layers (hidden states in at one place,
    out at the same place) stays one straight column instead of stepping sideways layer after layer."""
    horizontal = rankdir in ("TB", "BT")
    wi, hi = math.floor(w), math.floor(h)
    side = wi if horizontal else hi
    strips = [(_strip("i", side, ins, horizontal) if ins else None), (_strip("o", side, outs, horizontal) if outs else None)]
    if rankdir in ("BT", "RL"):
        strips.reverse()
    first, last = strips
    thick = (first is not None) + (last is not None)
    if horizontal:
        mid = _block(wi, max(hi - thick, 1))
        rows = [f"<TR><TD>{first}</TD></TR>" if first else "", f"<TR>{mid}</TR>", f"<TR><TD>{last}</TD></TR>" if last else ""]
        body = "".join(rows)
    else:
        mid = _block(max(wi - thick, 1), hi)
        body = "<TR>" + (f"<TD>{first}</TD>" if first else "") + mid + (f"<TD>{last}</TD>" if last else "") + "</TR>"
    return f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0">{body}</TABLE>>'


def _stacked(children: Sequence[tuple], tail: int, head: int, tport: int, hport: int) -> bool:
    """Whether a piece edge runs from an out-port of a child cluster into an in-port of a sibling of about the
    same size, within ``STACK_SIZES`` (one layer of a stack into the next: BERT's ``layer.10`` is 18 points
    wider than ``layer.9``, its modules' titles being one digit longer, and the stack stepped 300 points aside
    there when only equal sizes were aligned)."""
    if not (tport >= 0 and hport >= 0 and tail < len(children) and head < len(children)):
        return False
    (wa, ha), (wb, hb) = children[tail][0], children[head][0]
    return abs(wa - wb) <= STACK_SIZES * max(wa, wb) and abs(ha - hb) <= STACK_SIZES * max(ha, hb)


def _stack_pairs(specs: Sequence[tuple[int, int, int, int, int]], children: Sequence[tuple]) -> list[tuple[int, int]]:
    """Consecutive layers of a stack, held one above the other by an invisible heavy edge between their centres
    (the edges between them jog across the gap). Kept straight instead, port to port, they made each layer step
    sideways from the one above by the distance between its in- and out-port (a Llama layer's hidden states
    enter 122 points left of where they leave: a diagonal staircase over 32 layers). A pair is aligned only
    when each is the other's one stacked neighbour: DenseNet's dense layers, each fed by every earlier one,
    are no stack (aligned, DenseNet-121 every op had 42,486 crossings instead of 13,083)."""
    pairs = list(dict.fromkeys((t, h) for t, h, _g, tp, hp in specs if _stacked(children, t, h, tp, hp)))
    heads: dict[int, int] = {}
    tails: dict[int, int] = {}
    for t, h in pairs:
        tails[h] = tails.get(h, 0) + 1
        heads[t] = heads.get(t, 0) + 1
    return [(t, h) for t, h in pairs if tails[h] == 1 and heads[t] == 1]


def _stacked_sinks(specs: Sequence[tuple[int, int, int, int, int]], n: int) -> list[tuple[int, int, dict[str, object]]]:
    """Invisible edges that stack many end boxes fed by one child (GPT-2's 24 cached keys/values below the
    model's box) into a block of rows, instead of one row as wide as all of them."""
    feeds: dict[int, set[int]] = {}
    has_out: set[int] = set()
    for tail, head, _g, _tp, _hp in specs:
        has_out.add(tail)
        if head < n:
            feeds.setdefault(head, set()).add(tail)
    by_source: dict[int, list[int]] = {}
    for head, tails in feeds.items():
        if head not in has_out and len(tails) == 1:
            by_source.setdefault(next(iter(tails)), []).append(head)
    out: list[tuple[int, int, dict[str, object]]] = []
    for sinks in by_source.values():
        if len(sinks) > SINK_ROW:
            width = max(SINK_ROW, math.ceil(math.sqrt(len(sinks))))
            sinks.sort()
            out.extend((a, b, {"style": "invis"}) for a, b in zip(sinks, sinks[width:], strict=False))
    return out


def piece_dot(key: tuple) -> tuple[str, list[tuple[int, int, dict[str, object]]], list[list[int]], int]:
    """DOT text of the piece ``key`` (built with pydot), with what ``_dot_edges`` says about its edges."""
    rankdir, children, n_in, n_out, _specs = key
    edges, follow, slots = _dot_edges(key)
    g = pydot.Dot("p", graph_type="digraph", rankdir=rankdir, **GRAPH_ATTRS)
    g.set_node_defaults(shape="box", fixedsize="true", width=PORT_SIZE, height=PORT_SIZE, label='""')
    # no arrowheads: every spline runs to its head's border (the drawing adds the arrow there), and the
    # precise output's edges are their splines alone
    g.set_edge_defaults(arrowhead="none")
    n = len(children)
    for i, ((w, h), ins, outs) in enumerate(children):
        attrs: dict[str, Any] = {"width": round(w / 72, 4), "height": round(h / 72, 4)}
        if ins or outs:
            attrs.update(shape="box", margin="0", label=_port_table(rankdir, w, h, ins, outs))
        g.add_node(pydot.Node(i, **attrs))  # type: ignore[arg-type]  # int names: no quoting scan
    for rank, first, count in (("min", n, n_in), ("max", n + n_in, n_out)):
        if count:
            sub = pydot.Subgraph(rank=rank)
            for s in range(first, first + count):
                sub.add_node(pydot.Node(s))  # type: ignore[arg-type]
            g.add_subgraph(sub)
    for j in range(n + n_in + n_out, slots):
        g.add_node(pydot.Node(j))  # type: ignore[arg-type]
    for t, h, edge_attrs in edges:
        g.add_edge(pydot.Edge(t, h, **dict[str, Any](edge_attrs)))
    return g.to_string(), edges, follow, slots


def _trim(key: tuple, width: float, height: float, centres: tuple[Point, ...], flat: np.ndarray,
          starts: list[int]) -> tuple[float, float, tuple[Point, ...], np.ndarray]:
    """Close the gap dot leaves between the ports' rank and the first (last) rank of boxes: ports are points on
    the border, not a rank of their own, and each one cost a cluster a rank's height at both ends.
    ``flat`` holds every piece edge's polyline, edge k at ``starts[k]:starts[k + 1]`` (numpy: a tall piece
    has tens of thousands of points)."""
    rankdir, children, n_in, n_out, specs = key
    n = len(children)
    extent, across = (height, width) if rankdir in ("TB", "BT") else (width, height)
    pts = _frame_xy(rankdir, width, height, np.array(centres, dtype=float).reshape(-1, 2))
    polys = _frame_xy(rankdir, width, height, flat)
    # the free band between the ports and the nearest box (sources without inputs share the ports' rank)
    half = np.array([(h if rankdir in ("TB", "BT") else w) / 2 for (w, h), _i, _o in children], dtype=float)
    hi = float((pts[:n, 1] + half).max()) if n else 0.0
    lo = float((pts[:n, 1] - half).min()) if n else extent
    cut_top = max(0.0, min(RANK_GAP, extent - hi - KEEP)) if n_in else 0.0
    cut_bottom = max(0.0, min(RANK_GAP, lo - KEEP)) if n_out else 0.0
    top = max(extent - cut_top - cut_bottom, 1.0)
    pts[:, 1] -= cut_bottom
    pts[n:n + n_in, 1] = top
    pts[n + n_in:n + n_in + n_out, 1] = 0.0
    polys[:, 1] = np.minimum(np.maximum(polys[:, 1] - cut_bottom, 0.0), top)
    for k, (tail, head, *_rest) in enumerate(specs):
        if n <= tail < n + n_in:
            polys[starts[k]] = pts[tail]
        if n + n_in <= head < n + n_in + n_out:
            polys[starts[k + 1] - 1] = pts[head]
    w, h = (across, top) if rankdir in ("TB", "BT") else (top, across)
    back = _unframe_xy(rankdir, top, pts)
    return w, h, tuple(map(tuple, back.tolist())), _unframe_xy(rankdir, top, polys)


def _frame_xy(rankdir: str, width: float, height: float, xy: np.ndarray) -> np.ndarray:
    """``_to_frame``'s map applied to an (n, 2) array (a new array)."""
    x, y = xy[:, 0], xy[:, 1]
    if rankdir == "TB":
        return xy.astype(float, copy=True)
    if rankdir == "BT":
        return np.column_stack((x, height - y))
    if rankdir == "LR":
        return np.column_stack((y, width - x))
    return np.column_stack((y, x))


def _unframe_xy(rankdir: str, extent: float, xy: np.ndarray) -> np.ndarray:
    """``from_frame``'s map applied to an (n, 2) array, rounded to 1/100 pt."""
    u, v = xy[:, 0], xy[:, 1]
    if rankdir == "TB":
        out = np.column_stack((u, v))
    elif rankdir == "BT":
        out = np.column_stack((u, extent - v))
    elif rankdir == "LR":
        out = np.column_stack((extent - v, u))
    else:
        out = np.column_stack((v, u))
    return np.round(out, 2) + 0.0      # + 0.0: no negative zeros


def _to_frame(rankdir: str, width: float, height: float) -> tuple[Callable[[Point], Point], float, float]:
    """A map to a frame where ranks run down from the in-ports' side (v = extent) to the out-ports' (v = 0),
    the extent along the ranks, and the extent across them."""
    if rankdir == "TB":
        return (lambda p: p), height, width
    if rankdir == "BT":
        return (lambda p: (p[0], height - p[1])), height, width
    if rankdir == "LR":
        return (lambda p: (p[1], width - p[0])), width, height
    return (lambda p: (p[1], p[0])), width, height


def from_frame(rankdir: str, extent: float) -> Callable[[Point], Point]:
    """The inverse of ``_to_frame`` for a piece now ``extent`` long along its ranks (rounded to 1/100 pt)."""
    if rankdir == "TB":
        return lambda p: (round(p[0], 2), round(p[1], 2))
    if rankdir == "BT":
        return lambda p: (round(p[0], 2), round(extent - p[1], 2))
    if rankdir == "LR":
        return lambda p: (round(extent - p[1], 2), round(p[0], 2))
    return lambda p: (round(p[1], 2), round(p[0], 2))


def _straighten(pts: list[Point]) -> Polyline:
    """The polyline without the points that lie on the line through their neighbours (within half a point):
    an edge through many ranks is one point per rank from dot, a bus member the whole trunk before its branch."""
    if len(pts) <= 2:
        return tuple(pts)
    out = [pts[0]]
    for b, c in zip(pts[1:], pts[2:], strict=False):
        a = out[-1]
        cross = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        if abs(cross) > 0.5 * (abs(c[0] - a[0]) + abs(c[1] - a[1])) or \
                (b[0] - a[0]) * (c[0] - b[0]) + (b[1] - a[1]) * (c[1] - b[1]) < 0:
            out.append(b)           # a bend, or a turn back: kept
    out.append(pts[-1])
    return tuple(out)


def _on_a_run(xy: np.ndarray) -> np.ndarray:
    """For each point but the first and last: whether it lies strictly inside a run along one axis-parallel
    line (the same x, or the same y, with its neighbours, going on the same way)."""
    a, b, c = xy[:-2], xy[1:-1], xy[2:]
    same_x = (a[:, 0] == b[:, 0]) & (b[:, 0] == c[:, 0]) & ((b[:, 1] - a[:, 1]) * (c[:, 1] - b[:, 1]) > 0)
    same_y = (a[:, 1] == b[:, 1]) & (b[:, 1] == c[:, 1]) & ((b[:, 0] - a[:, 0]) * (c[:, 0] - b[:, 0]) > 0)
    return same_x | same_y


def _extent(ops: list[dict]) -> tuple[float, float, float, float]:
    """The bounding box of the points of xdot drawing ops (a node's polygon, the graph's background)."""
    pts = [p for op in ops for p in op.get("points", ())]
    if not pts:
        return (0.0, 0.0, 0.0, 0.0)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return (min(xs), min(ys), max(xs), max(ys))


def _spline(edge: dict) -> str:
    """An edge's spline from its xdot ``b`` op, written as a ``pos`` (the ``pos`` itself has 5 digits)."""
    for op in edge.get("_draw_", ()):
        if op.get("op") in ("b", "B"):
            return " ".join(f"{x!r},{y!r}" for x, y in op["points"])
    if edge.get("style") == "invis" and "pos" in edge:     # drawn by no op: its 5-digit pos (never shown)
        return str(edge["pos"])
    raise GraphvizError("Graphviz output has an edge without a spline")


def _read(doc: dict, key: tuple, edges: list[tuple[int, int, dict[str, object]]], follow: list[list[int]],
          n_real: int) -> PieceLayout:
    """One piece's PieceLayout from its JSON document (coordinates moved so the piece starts at 0, 0)."""
    precise = "_draw_" in doc      # -Tjson: xdot drawing ops, 2 decimals at any size
    if precise:
        x0, y0, x1, y1 = _extent(doc["_draw_"])
    else:
        x0, y0, x1, y1 = (float(v) for v in doc.get("bb", "0,0,0,0").split(","))
    name_of: dict[int, int] = {}
    pos_of: dict[int, Point] = {}
    for obj in doc.get("objects", ()):
        if "pos" in obj:
            s = int(obj["name"])
            name_of[obj["_gvid"]] = s
            if precise:
                a0, b0, a1, b1 = _extent(obj["_draw_"])
                pos_of[s] = ((a0 + a1) / 2, (b0 + b1) / 2)
            else:
                px, py = (float(v) for v in obj["pos"].split(","))
                pos_of[s] = (px, py)
    if any(s not in pos_of for s in range(n_real)):
        raise GraphvizError("Graphviz output misses a node of a piece")
    found = sorted(doc.get("edges", ()), key=lambda e: e["_gvid"])
    # dot numbers edges in its own order: match them back by (tail, head), in the order they were written
    written: dict[tuple[int, int], list[int]] = {}
    for k, (t, h, _attrs) in enumerate(edges):
        written.setdefault((t, h), []).append(k)
    polys: list[Polyline] = [()] * len(edges)
    lines = spline_polylines([_spline(e) if precise else e["pos"] for e in found]) if found else []
    for e, line in zip(found, lines, strict=True):
        t, h = name_of[e["tail"]], name_of[e["head"]]
        todo = written.get((t, h))
        if not todo:
            raise GraphvizError("Graphviz output has an edge the piece does not")
        k = todo.pop(0)
        a, b = line[0], line[-1]
        if math.dist(a, pos_of[t]) + math.dist(b, pos_of[h]) > math.dist(a, pos_of[h]) + math.dist(b, pos_of[t]):
            line = line[::-1]          # dot may list a reversed edge's points from its head
        polys[k] = line
    if any(not p for p in polys):
        raise GraphvizError("Graphviz output misses an edge of a piece")
    # every point moved and rounded in one numpy call; inside each dot edge, the points strictly inside a run
    # along one axis-parallel line (dot's one point per rank of a long edge) dropped there too
    sizes = np.array([len(p) for p in polys], dtype=np.intp)
    ends = np.cumsum(sizes)
    # (a piece may have no edges at all: boxes that nothing joins)
    xy = np.round(np.array([p for line in polys for p in line], dtype=float).reshape(-1, 2) - (x0, y0), 2) + 0.0
    keep = np.ones(len(xy), dtype=bool)
    keep[1:-1] = ~_on_a_run(xy)
    keep[ends - sizes] = True
    keep[ends - 1] = True
    kept_before = np.concatenate(([0], np.cumsum(keep)))
    lo_k, hi_k = kept_before[ends - sizes].tolist(), kept_before[ends].tolist()
    kept = xy[keep].tolist()
    out: list[Polyline] = []
    for path in follow:
        pts: list = []
        for k in path:
            seg = kept[lo_k[k]:hi_k[k]]
            pts.extend(seg[1:] if pts and pts[-1] == seg[0] else seg)
        out.append(_straighten(pts))
    centres = tuple((round(pos_of[s][0] - x0, 2), round(pos_of[s][1] - y0, 2)) for s in range(n_real))
    starts = [0]
    for line in out:
        starts.append(starts[-1] + len(line))
    flat = np.array([p for line in out for p in line], dtype=float).reshape(-1, 2)
    width, height, centres, flat = _trim(key, round(x1 - x0, 2), round(y1 - y0, 2), centres, flat, starts)
    return PieceLayout(width, height, centres, flat, tuple(starts))


def layout_pieces(keys: Sequence[tuple], timeout: float, workers: int = 2,
                  on_done: Callable[[int], None] | None = None) -> tuple[list[PieceLayout], int]:
    """Lay out every piece of ``keys``: each is one graph of a dot input, at most ``workers`` dot processes
    at once. Big pieces are read from ``-Tjson`` (drawing ops with 2 decimals): ``-Tjson0`` writes positions
    with 5 significant digits, 10 points off at a height of 300,000."""
    n = len(keys)
    result: list[PieceLayout | None] = [None] * n
    todo = list(range(n))
    big = [i for i in todo if _extent_guess(keys[i]) > PRECISE_OVER]
    small = [i for i in todo if _extent_guess(keys[i]) <= PRECISE_OVER]
    chunks = [("json", [i]) for i in big]
    chunks += [("json0", small[w::workers]) for w in range(min(workers, len(small)))]

    def run(job: tuple[str, list[int]]) -> list[PieceLayout]:
        fmt, chunk = job
        built = [piece_dot(keys[i]) for i in chunk]
        docs = [orjson.loads(d) for d in run_graphs(fmt, [b[0] for b in built], timeout)]
        if len(docs) != len(chunk):
            raise GraphvizError(f"Graphviz laid out {len(docs)} of {len(chunk)} pieces")
        out = [_read(d, keys[i], b[1], b[2], _real_slots(keys[i])) for d, b, i in zip(docs, built, chunk, strict=True)]
        if on_done is not None:
            on_done(len(chunk))
        return out

    if len(chunks) <= 1:
        outs = [run(c) for c in chunks]
    else:
        with ThreadPoolExecutor(min(workers, len(chunks))) as pool:
            outs = list(pool.map(run, chunks))
    for (_fmt, chunk), out in zip(chunks, outs, strict=True):
        for i, lay in zip(chunk, out, strict=True):
            result[i] = lay
    return [r for r in result if r is not None], len(chunks)


def _extent_guess(key: tuple) -> float:
    """An upper bound of a piece's extent along its ranks (points): all its children in one column."""
    return sum(w + h + 22.0 for (w, h), _i, _o in key[1])


def _real_slots(key: tuple) -> int:
    """Children and ports: the slots whose centres a PieceLayout keeps (junctions are not kept)."""
    return len(key[1]) + key[2] + key[3]
