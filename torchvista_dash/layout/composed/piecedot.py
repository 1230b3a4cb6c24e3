"""One piece's DOT, built with pydot from the piece's key alone, and many pieces laid out by one dot process
(dot lays out each graph of its input on its own); ``pieceread`` reads the output back.

In a piece, tensors entering the cluster start at ports on the first rank and tensors leaving it end at ports
on the last; edges carry no labels (a label would be a node of its own on a rank of its own, which doubles the
ranks and, with long skip edges, multiplies dot's work). One tensor feeding many children is drawn as a *bus*:
a chain of junction points, each one rank above its consumer, so a tensor reaching 80 decoder layers costs dot
about 80 virtual nodes, not 80 edges of up to 80 ranks each. Many children sending tensors out by one port
join its mirror, a *collector*: a branch from each child to its own junction, one rank below it, on a trunk
that runs down to the port.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pydot

from torchvista_dash.layout.composed.pieceread import PieceLayout, read_piece
from torchvista_dash.layout.composed.porttable import port_table
from torchvista_dash.layout.composed.wrap import wrap
from torchvista_dash.layout.graphviz.dotpool import run_graphs
from torchvista_dash.layout.graphviz.run import GraphvizError
from torchvista_dash.layout.single.dot import NODESEP, NSLIMIT, RANKSEP, SPLINES

PORT_SIZE = 0.02  # inches: ports and bus junctions are points, not boxes
GRAPH_ATTRS = {"nodesep": NODESEP, "ranksep": RANKSEP, "splines": SPLINES, "nslimit": NSLIMIT}
SINK_ROW = 4  # more end boxes than this fed by one child are stacked in rows
IN_SIDE = {"TB": "n", "BT": "s", "LR": "w", "RL": "e"}  # the side of a box that faces the first rank
OUT_SIDE = {"TB": "s", "BT": "n", "LR": "e", "RL": "w"}
PRECISE_OVER = (
    20_000.0  # points: pieces that may be bigger are read from dot's drawing ops (see layout_pieces)
)
STACK_SIZES = 0.1  # sibling clusters this close in size (a fraction of the larger) are layers of one stack
WRAP_SIZES = 0.5  # ... and this close, layers of a stack that wraps into columns (``wrap``)
ALIGN = 16  # dot weight of the edge aligning two layers of a stack (``_stacked_layers``)
STRAIGHT = 8  # dot weight of every edge between children: dot keeps the heavier of two edges straight
# dot weight of an edge into an out-port: the port is drawn where its tensors leave the interior, on the side
# they run down (at weight 0 dot packs out-ports beside each other, and tensors leaving down one side run
# back to the middle and out again: more crossings, tests/layout/test_layout_quality.py bounds them)
TO_OUT_PORT = 1
TRUNK = STRAIGHT  # dot weight of the edges joining a bus's junctions
# ... in a piece with more bus branches than BUS_HEAVY: dot's placement of many heavy trunks is what it spends
# its time on there (the 32-layer dense block's default view takes several times as long at the heavy weight,
# with more crossings; bench/bench_layout_scale.py)
TRUNK_LIGHT, BUS_HEAVY = 2, 400
BRANCH = 1  # dot weight of a bus branch (junction to consumer): it gives way, the trunk stays straight


DotEdge = tuple[int, int, dict[str, object]]


def _dot_edges(key: tuple) -> tuple[list[DotEdge], list[list[int]], int, list[list[int]]]:
    """The dot edges of a piece (tail slot, head slot, attributes), per piece edge the dot edges it runs along
    (a bus member: the trunk up to its junction, then its branch), the number of slots with junctions, and
    the slots that share a rank (the heads of a wrapped stack's columns, ``wrap``)."""
    rankdir, children, n_in, n_out, specs = key
    n = len(children)
    nxt = n + n_in + n_out
    out: list[DotEdge] = []
    follow: list[list[int]] = []
    stack = _stack_pairs(specs, children)
    # layers of one stack can differ more in size than the aligned ones do (MoE layers whose expert loops
    # route different numbers of experts): they wrap into columns all the same
    column, breaks, same_rank = wrap(
        _stack_pairs(specs, children, WRAP_SIZES), [c[0] for c in children], rankdir in ("TB", "BT")
    )
    stack = [p for p in stack if p not in breaks]
    depth = _depths(specs, n, n_in, n_out)
    # one trunk per bus and column of a wrapped stack (see the collectors), its consumers in rank order
    consumers: dict[tuple[int, tuple[int, int] | None], dict[int, dict[int, None]]] = {}
    for _tail, head, group, _tport, hport in specs:
        if group >= 0:
            consumers.setdefault((group, column.get(head)), {}).setdefault(head, {})[hport] = None
    branches = sum(len(ports) for c in consumers.values() for ports in c.values())
    trunk_weight = TRUNK if branches <= BUS_HEAVY else TRUNK_LIGHT
    trunks: dict[tuple[int, tuple[int, int] | None], _Trunk] = {}
    for bus, heads in consumers.items():
        tr = trunks[bus] = _Trunk(sorted(heads, key=lambda h: depth[h]))
        for i in range(len(tr.consumers)):
            j = nxt
            nxt += 1
            if i:
                # the trunk holds its junctions rank after rank (with constraint=false dot orders them freely,
                # and branches cross each other and the trunks; bench/bench_layout_scale.py counts crossings)
                tr.along.append(len(out))
                out.append((tr.junctions[-1], j, {"weight": trunk_weight}))
            tr.junctions.append(j)
        # a branch per port: tensors of one cable into one child leave the trunk at one junction and
        # run on side by side into their own ports, each where it goes on inside
        for i, head in enumerate(tr.consumers):
            for port in heads[head]:
                in_at = {"headport": f"i{port}:{IN_SIDE[rankdir]}"} if port >= 0 else {}
                tr.branch[(i, port)] = len(out)
                out.append((tr.junctions[i], head, {"weight": BRANCH, **in_at}))
    # collector group → tail's (trunk, place on it), per trunk its junctions and the dot edges along it
    collect: dict[int, tuple[dict[int, tuple[int, int]], list[list[int]]]] = {}
    for tail, head, group, tport, hport in specs:
        if group <= -2 and group not in collect:
            tails = list(dict.fromkeys(t for t, _h, g, _tp, _hp in specs if g == group))
            # one trunk per column of a wrapped stack: a trunk through every column would hold the column
            # heads on ranks below each other
            by_column: dict[tuple[int, int] | None, list[int]] = {}
            for t in tails:
                by_column.setdefault(column.get(t), []).append(t)
            place: dict[int, tuple[int, int]] = {}
            lines: list[list[int]] = []
            for part in by_column.values():
                js = list(range(nxt, nxt + len(part)))
                nxt += len(part)
                trunk_at = []
                for a, b in zip(js, [*js[1:], head], strict=True):
                    trunk_at.append(len(out))
                    out.append((a, b, {"weight": trunk_weight}))
                for i, t in enumerate(part):
                    place[t] = (len(lines), i)
                lines.append([*js, -1, *trunk_at])  # junctions, then (after -1) the trunk's dot edges
            collect[group] = (place, lines)
        # edges between children stay straight before edges to ports (which give way, like bus branches), and
        # an edge from one layer of a stack into the next gives way to the edge aligning them
        # (_stacked_layers)
        weight = (
            0
            if (tail, head) in stack or (tail, head) in breaks
            else STRAIGHT
            if max(tail, head) < n
            else TO_OUT_PORT
            if head >= n + n_in
            else 0
        )
        attrs: dict[str, object] = {"weight": weight}
        if (tail, head) in breaks:  # the foot of one column to the head of the next: no rank order
            attrs["constraint"] = "false"
        out_at = {"tailport": f"o{tport}:{OUT_SIDE[rankdir]}"} if tport >= 0 else {}
        in_at = {"headport": f"i{hport}:{IN_SIDE[rankdir]}"} if hport >= 0 else {}
        if group <= -2:
            place, lines = collect[group]
            at, i = place[tail]
            trunk = lines[at]
            split = trunk.index(-1)
            js, trunk_at = trunk[:split], trunk[split + 1 :]
            follow.append([len(out), *trunk_at[i:]])
            out.append((tail, js[i], {"weight": BRANCH, **out_at}))
            continue
        if group < 0:
            follow.append([len(out)])
            out.append((tail, head, {**attrs, **out_at, **in_at}))
            continue
        tr = trunks[(group, column.get(head))]
        # a tensor enters its cable's trunk at the first junction below its source
        at = tr.consumers.index(head)
        entry = next((i for i, c in enumerate(tr.consumers[:at]) if depth[c] > depth[tail]), at)
        feeder = (tail, tport, entry)
        if feeder not in tr.feeders:
            tr.feeders[feeder] = len(out)
            out.append((tail, tr.junctions[entry], {"weight": trunk_weight, **out_at}))
        follow.append([tr.feeders[feeder], *tr.along[entry:at], tr.branch[(at, hport)]])
    out.extend(_stacked_sinks(specs, n))
    out.extend((t, h, {"style": "invis", "weight": ALIGN}) for t, h in stack)
    # the columns left to right in reading order (on one rank, an edge holds its tail left of its head)
    out.extend((a, b, {"style": "invis"}) for heads in same_rank for a, b in itertools.pairwise(heads))
    return out, follow, nxt, same_rank


class _Trunk:
    """One bus's trunk in a piece's DOT: a junction one rank above each consumer, chained."""

    __slots__ = ("along", "branch", "consumers", "feeders", "junctions")

    def __init__(self, consumers: list[int]) -> None:
        self.consumers = consumers  # in rank order
        self.junctions: list[int] = []  # per consumer, its junction's slot
        self.along: list[int] = []  # the dot edges joining junction k to k + 1
        self.branch: dict[tuple[int, int], int] = {}  # (consumer's place, its port) → the dot edge into it
        self.feeders: dict[tuple[int, int, int], int] = {}  # (tail, its out-port, entry) → its dot edge


def _depths(specs: Sequence[tuple[int, int, int, int, int]], n: int, n_in: int, n_out: int) -> list[int]:
    """Per slot, the length of the longest path to it from the in-ports (dot's ranks, roughly): the order a
    bus's junctions go down its trunk in. Out-ports come after everything."""
    total = n + n_in + n_out
    succ: list[list[int]] = [[] for _ in range(total)]
    indeg = [0] * total
    for tail, head, *_rest in specs:
        if head < n + n_in and tail != head:
            succ[tail].append(head)
            indeg[head] += 1
    depth = [0] * total
    todo = [s for s in range(total) if indeg[s] == 0]
    while todo:
        s = todo.pop()
        for h in succ[s]:
            depth[h] = max(depth[h], depth[s] + 1)
            indeg[h] -= 1
            if indeg[h] == 0:
                todo.append(h)
    deepest = max(depth, default=0) + 1
    for s in range(n + n_in, total):
        depth[s] = deepest
    return depth


def _stacked(
    children: Sequence[tuple], tail: int, head: int, tport: int, hport: int, sizes: float = STACK_SIZES
) -> bool:
    """Whether a piece edge runs from an out-port of a child cluster into an in-port of a sibling of about the
    same size, within ``STACK_SIZES`` (one layer of a stack into the next: BERT's ``layer.10`` is 18 points
    wider than ``layer.9``, its modules' titles being one digit longer: aligning only equal sizes, the stack
    would step 300 points aside there)."""
    if not (tport >= 0 and hport >= 0 and tail < len(children) and head < len(children)):
        return False
    (wa, ha), (wb, hb) = children[tail][0], children[head][0]
    return abs(wa - wb) <= sizes * max(wa, wb) and abs(ha - hb) <= sizes * max(ha, hb)


def _stack_pairs(
    specs: Sequence[tuple[int, int, int, int, int]], children: Sequence[tuple], sizes: float = STACK_SIZES
) -> list[tuple[int, int]]:
    """Consecutive layers of a stack, held one above the other by an invisible heavy edge between their
    centres (the edges between them jog across the gap). Kept straight instead, port to port, they would make
    each layer step sideways from the one above by the distance between its in- and out-port (a Llama layer's
    hidden states enter 122 points left of where they leave: a diagonal staircase over 32 layers). A pair is
    aligned only when each is the other's one stacked neighbour: DenseNet's dense layers, each fed by every
    earlier one, are no stack (aligned as one, DenseNet-121 every op crosses about three times as often)."""
    pairs = list(
        dict.fromkeys((t, h) for t, h, _g, tp, hp in specs if _stacked(children, t, h, tp, hp, sizes))
    )
    heads: dict[int, int] = {}
    tails: dict[int, int] = {}
    for t, h in pairs:
        tails[h] = tails.get(h, 0) + 1
        heads[t] = heads.get(t, 0) + 1
    return [(t, h) for t, h in pairs if tails[h] == 1 and heads[t] == 1]


def _stacked_sinks(
    specs: Sequence[tuple[int, int, int, int, int]], n: int
) -> list[tuple[int, int, dict[str, object]]]:
    """Invisible edges that stack many end boxes fed by one child (GPT-2's 24 cached keys/values below the
    model's box), or each by a port of the piece (an opened cache output's 160 tensors, each from its own
    layer), into a block of rows, instead of one row as wide as all of them."""
    feeds: dict[int, set[int]] = {}
    has_out: set[int] = set()
    for tail, head, _g, _tp, _hp in specs:
        has_out.add(tail)
        if head < n:
            feeds.setdefault(head, set()).add(tail)
    by_source: dict[int, list[int]] = {}
    for head, tails in feeds.items():
        if head not in has_out and len(tails) == 1:
            tail = next(iter(tails))
            by_source.setdefault(tail if tail < n else -1, []).append(head)  # -1: the ports, together
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
    edges, follow, slots, same_rank = _dot_edges(key)
    g = pydot.Dot("p", graph_type="digraph", rankdir=rankdir, **GRAPH_ATTRS)
    g.set_node_defaults(shape="box", fixedsize="true", width=PORT_SIZE, height=PORT_SIZE, label='""')
    # no arrowheads: every spline runs to its head's border (the drawing adds the arrow there), and the
    # precise output's edges are their splines alone
    g.set_edge_defaults(arrowhead="none")
    n = len(children)
    for i, ((w, h), ins, outs) in enumerate(children):
        attrs: dict[str, Any] = {"width": round(w / 72, 4), "height": round(h / 72, 4)}
        if ins or outs:
            attrs.update(shape="box", margin="0", label=port_table(rankdir, w, h, ins, outs))
        g.add_node(pydot.Node(i, **attrs))  # type: ignore[arg-type]  # int names: no quoting scan
    for rank, first, count in (("min", n, n_in), ("max", n + n_in, n_out)):
        if count:
            sub = pydot.Subgraph(rank=rank)
            for s in range(first, first + count):
                sub.add_node(pydot.Node(s))  # type: ignore[arg-type]
            g.add_subgraph(sub)
    for heads in same_rank:
        sub = pydot.Subgraph(rank="same")
        for s in heads:
            sub.add_node(pydot.Node(s))  # type: ignore[arg-type]
        g.add_subgraph(sub)
    for j in range(n + n_in + n_out, slots):
        g.add_node(pydot.Node(j))  # type: ignore[arg-type]
    for t, h, edge_attrs in edges:
        if edge_attrs.get("constraint") == "false" and rankdir == "TB":
            continue  # a wrapped stack's jump between columns: drawn by hand (pieceread), no room taken
        g.add_edge(pydot.Edge(t, h, **dict[str, Any](edge_attrs)))
    return g.to_string(), edges, follow, slots


def layout_pieces(
    keys: Sequence[tuple], timeout: float, workers: int = 2, on_done: Callable[[int], None] | None = None
) -> tuple[list[PieceLayout], int]:
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
        out = [
            read_piece(d, keys[i], b[1], b[2], _real_slots(keys[i]))
            for d, b, i in zip(docs, built, chunk, strict=True)
        ]
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
