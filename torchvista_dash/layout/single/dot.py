"""VisibleGraph → pydot DOT: nested clusters, node sizes estimated from label text, deterministic order.

DOT names are positional (node ``12``, subgraph ``cluster3``) so no id ever needs quoting; ``to_dot`` adds the
visible ids as Graphviz ``id`` attributes (element ids in Graphviz's own SVG output) and the node labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pydot

from torchvista_dash.layout.textmetrics import EDGE_PT, FONT_NAME, HEADER_PT, LABEL_PT, SUB_PT, text_width
from torchvista_dash.view.types import VisibleGraph, VisibleNode, io_side, printable

PAD_X = 14.0  # points of horizontal padding inside a box
PAD_Y = 8.0
MIN_WIDTH = 36.0
RANKDIRS = ("TB", "LR", "BT", "RL")

# Graph attributes. newrank lets ranks span clusters (more compact with deep nesting). Iteration caps
# (nslimit/mclimit/searchsize) buy a single run nothing on graphs up to 2,000 nodes (bench/bench_layout.py),
# so it keeps dot's defaults and its full layout quality. A piece of a composed layout caps the network
# simplex that places nodes across the ranks at NSLIMIT x its nodes: uncapped, a piece with many tensors
# leaving for many out-ports (an 80-layer Llama's opened KV cache) spends up to a minute there; the cap
# moves no box of the ordinary pieces, and a smaller one costs the dense blocks crossings
# (tests/layout/test_layout_models.py, bench/bench_layout_scale.py).
# Edges are routed as polylines: dot fits each curved spline on its own through a corridor that others
# share, so edges in one order at both ends cross each other on the way, twice, wherever a corridor runs
# beside a tall box, as every layer of a stack laid out by module is one rank (bench/bench_layout_scale.py
# counts the crossings; docs/speed-history.md has them with curves).
NODESEP, RANKSEP, SPLINES = "0.25", "0.3", "polyline"  # inches, inches, dot's edge routing
NSLIMIT = "5"
GRAPH_ATTRS: dict[str, str] = {"newrank": "true", "nodesep": NODESEP, "ranksep": RANKSEP, "splines": SPLINES}
DRAWING_ATTRS: dict[str, str] = {
    "labeljust": "l",
    "style": "rounded",
    "color": "gray50",
    "outputorder": "edgesfirst",
}


TWO_LINE_HEIGHT = LABEL_PT * 1.4 + 2 * PAD_Y + SUB_PT * 1.3


def node_size(node: VisibleNode) -> tuple[float, float]:
    """Width and height in points of a node's box, from its label text."""
    w = max(text_width(node.label, LABEL_PT), text_width(node.sublabel, SUB_PT)) + 2 * PAD_X
    h = TWO_LINE_HEIGHT if node.sublabel else LABEL_PT * 1.4 + 2 * PAD_Y
    return max(w, MIN_WIDTH), h


@dataclass(frozen=True)
class DotNames:
    """DOT name ↔ visible id, for reading dot's output back."""

    nodes: dict[str, str]  # DOT node name → visible node id
    clusters: dict[str, str]  # DOT subgraph name → cluster id


MAX_QUOTED_CHARS = 4000  # dot refuses a quoted string over 16 KB (4 UTF-8 bytes a character at most)


def quote(text: str) -> str:
    """A DOT double-quoted string (pydot only adds the quotes).

    Labels arrive escaped and capped (``view_types.label_text``); ids come straight from the trace file, so
    any other non-printable character (a NUL ended dot's string, other control characters broke its JSON
    output, a lone surrogate cannot be written as UTF-8) is escaped here too, and overlong text is cut.
    ``\\n`` stays: it is the line break between a label and its sublabel."""
    if not text.replace("\n", "").isprintable():
        text = "\n".join(printable(line) for line in text.split("\n"))
    if len(text) > MAX_QUOTED_CHARS:
        text = text[: MAX_QUOTED_CHARS - 1] + "…"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Quoted:
    """A label already quoted by ``quote``. pydot writes non-str values as they are, so the layout run skips
    pydot's per-character quoting scan (its largest cost on big graphs). ``to_dot`` uses plain strings."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = quote(text)

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return self.text


def check_rankdir(rankdir: str) -> str:
    if rankdir not in RANKDIRS:
        raise ValueError(
            f"rankdir must be one of {', '.join(RANKDIRS)} (top-to-bottom, left-to-right, ...), "
            f"got {rankdir!r}"
        )
    return rankdir


def build_dot(vg: VisibleGraph, rankdir: str = "TB", *, ids: bool = False) -> tuple[pydot.Dot, DotNames]:
    """The DOT for ``vg`` and the name mapping to read dot's output back.

    Edges are written in ``vg.edges`` order (dot numbers them so). ``ids`` adds the visible ids as Graphviz
    ``id`` attributes and the node labels, which only Graphviz's own drawing uses. The layout run leaves both
    out: boxes are ``fixedsize`` (sized here from their text), so a node's text cannot move anything, and
    unwritten text is neither quoted by pydot nor echoed back in dot's JSON."""
    check_rankdir(rankdir)
    text = quote if ids else Quoted
    # Only what moves something goes into the layout run: every attribute written is echoed back for each
    # object in dot's JSON. Styling (and node fonts: boxes are fixedsize) is for Graphviz's own drawing only.
    # Cluster attributes live on the root graph, which every cluster inherits.
    g = pydot.Dot(
        "view",
        graph_type="digraph",
        rankdir=rankdir,
        fontname=FONT_NAME,
        fontsize=str(HEADER_PT),
        **GRAPH_ATTRS,
        **(DRAWING_ATTRS if ids else {}),
    )
    two_lines = round(
        TWO_LINE_HEIGHT / 72, 4
    )  # most boxes carry a shape line: make theirs the default height
    node_drawing = {"fontname": FONT_NAME, "fontsize": str(LABEL_PT), "style": "rounded"} if ids else {}
    g.set_node_defaults(shape="box", fixedsize="true", height=two_lines, **node_drawing)
    g.set_edge_defaults(fontname=FONT_NAME, fontsize=str(EDGE_PT), arrowsize="0.6")

    subgraphs: dict[str | None, pydot.Dot | pydot.Subgraph] = {None: g}
    cluster_names: dict[str, str] = {}
    failed_parent: dict[str | None, bool] = {c.id: c.failed for c in vg.clusters}
    for i, c in enumerate(vg.clusters):
        # a subgraph named cluster<i> is a Graphviz cluster; pydot.Cluster would add "_", which makes pydot
        # scan the name for characters to quote
        sub = pydot.Subgraph(f"cluster{i}", label=text(c.label))
        if ids and (
            c.failed or failed_parent.get(c.parent, False)
        ):  # nested clusters inherit their parent's color
            sub.set("color", "red" if c.failed else "gray50")
        if ids:
            sub.set("id", quote(c.id))
        subgraphs[c.id] = sub
        cluster_names[f"cluster{i}"] = c.id
    for c in vg.clusters:  # parents are attached after being filled, so add children first is not needed
        parent = subgraphs.get(c.parent, g)
        parent.add_subgraph(subgraphs[c.id])  # type: ignore[arg-type]  # a cluster is always a Subgraph

    node_names: dict[str, str] = {}
    dot_name: dict[str, int] = {}
    for i, n in enumerate(vg.nodes):
        # int names: pydot writes int edge endpoints as they are, with no quoting scan
        node_names[str(i)] = n.id
        dot_name[n.id] = i
        w, h = node_size(n)
        # sizes in inches as floats: pydot writes numbers as they are (no quoting scan)
        attrs: dict[str, Any] = {"width": round(w / 72, 4)}
        if round(h / 72, 4) != two_lines:
            attrs["height"] = round(h / 72, 4)
        if ids:
            attrs["label"] = quote(n.label + ("\n" + n.sublabel if n.sublabel else ""))
            attrs["id"] = quote(n.id)
        if n.kind == "folded":
            attrs["peripheries"] = "2"
        if ids and n.kind in ("input", "output"):
            attrs["style"] = "rounded,bold"
        if ids and n.failed:
            attrs["color"] = "red"
        subgraphs.get(n.parent, g).add_node(pydot.Node(i, **attrs))  # type: ignore[arg-type]  # int: no quoting

    quoted: dict[str, object] = {}  # edge labels repeat (most tensors share a few shapes): quote each once
    for e in vg.edges:
        attrs = {}
        if e.label:
            label = quoted.get(e.label)
            if label is None:
                label = quoted[e.label] = text(e.label)
            attrs["label"] = label
        g.add_edge(pydot.Edge(dot_name[e.src], dot_name[e.dst], **attrs))
    _io_ranks(g, vg, dot_name)
    return g, DotNames(node_names, cluster_names)


INVISIBLE = (
    "invis"  # the style of the rank-keeping edges below: dot lays them out, the Layout leaves them out
)


def _io_ranks(g: pydot.Dot, vg: VisibleGraph, dot_name: dict[str, int]) -> None:
    """Inputs on the first rank and outputs on the last (top and bottom in TB, left and right in LR), not
    beside the op that made them. Each input/output side shares one rank; an invisible edge runs from the
    first input to every other box without an incoming edge, and from every box without an outgoing edge to
    the first output, so no box ranks before the inputs or after the outputs. (``rank=min``/``max`` would say
    it in one word, but Graphviz ignores them under ``newrank``.)"""
    sides: dict[str, list[str]] = {"input": [], "output": []}
    for n in vg.nodes:
        side = io_side(n.id, n.kind)
        if side in sides and (n.parent is None or io_side(n.parent, "") is not None):
            sides[side].append(n.id)
    has_in = {e.dst for e in vg.edges}
    has_out = {e.src for e in vg.edges}
    ranked = set(sides["input"]) | set(sides["output"])
    for side in ("input", "output"):
        if len(sides[side]) > 1:
            same = pydot.Subgraph(f"{side}s", rank="same")
            for vid in sides[side]:
                same.add_node(pydot.Node(dot_name[vid]))  # type: ignore[arg-type]  # int: no quoting
            g.add_subgraph(same)
    if sides["input"]:
        first = dot_name[sides["input"][0]]
        for n in vg.nodes:
            if n.id not in has_in and n.id not in ranked:
                g.add_edge(pydot.Edge(first, dot_name[n.id], style=INVISIBLE))
    if sides["output"]:
        last = dot_name[sides["output"][0]]
        for n in vg.nodes:
            if n.id not in has_out and n.id not in ranked:
                g.add_edge(pydot.Edge(dot_name[n.id], last, style=INVISIBLE))


def to_dot(vg: VisibleGraph, rankdir: str = "TB") -> pydot.Dot:
    """The pydot graph of a view (clusters nest like the module calls); visible ids are Graphviz ``id``s."""
    return build_dot(vg, rankdir, ids=True)[0]
