"""SVG / PNG / PDF through Graphviz's own renderer, drawing the *same* geometry as the plotly figure.

Plotly's image export needs kaleido plus a Chrome it downloads; Graphviz is already required for
the layout, so static files come from it: every box, cluster and edge of the ``Layout`` is written
as a DOT node/edge with a pinned position (``pos="x,y!"``, edge splines in ``pos``) and rendered
with ``neato -n2``, which draws positions as given instead of laying out again. Colours and shapes
come from the same theme table as the figure (style.py).
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

from ..graph import Graph
from ..layout.types import Box, Layout, Point
from ..view_types import VisibleGraph
from . import shapes
from .figure import HEADER_OFFSET, TOGGLE_INSET, _bounds, _check
from .style import CLOSE_MARK, OPEN_MARK, Theme, get_theme, kind_style

STATIC_FORMATS: tuple[str, ...] = ("svg", "png", "pdf")
FONT = "Helvetica"
FONT_PT = 11.0
SMALL_PT = 9.0
HEADER_PT = 10.0        # as the layout reserves for cluster labels
EDGE_PT = 8.0
PNG_DPI = 144
PNG_MAX_PX = 16000      # long side; bigger views get a lower dpi instead of cairo's silent down-scaling

# visible kind → (Graphviz shape, extra style, peripheries)
_GV_SHAPES: dict[str, tuple[str, str, int]] = {
    "op": ("box", "rounded,", 1),
    "module": ("box", "", 1),
    "folded": ("box", "", 2),
    "input": ("box", "rounded,", 1),
    "output": ("box", "rounded,", 1),
    "parameter": ("hexagon", "", 1),
    "constant": ("octagon", "", 1),
}


def _colour(c: str) -> str:
    """Plotly colour strings → Graphviz ``#rrggbb[aa]``."""
    m = re.fullmatch(r"rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*([\d.]+)\s*)?\)", c)
    if not m:
        return c
    r, g, b = (int(m.group(i)) for i in (1, 2, 3))
    out = f"#{r:02x}{g:02x}{b:02x}"
    if m.group(4) is not None:
        out += f"{round(float(m.group(4)) * 255):02x}"
    return out


def _q(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _h(text: str) -> str:
    return html.escape(str(text), quote=True)


def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _node_attrs(box: Box) -> str:
    x0, y0, x1, y1 = box
    return (f'pos="{_num((x0 + x1) / 2)},{_num((y0 + y1) / 2)}!", width={_num((x1 - x0) / 72)}, '
            f'height={_num((y1 - y0) / 72)}, fixedsize=true')


def _spline(points: tuple[Point, ...]) -> str | None:
    """A polyline ending at the arrow tip → DOT edge ``pos``: cubic B-spline to the arrow base, ``e,`` tip."""
    head = shapes.arrowhead(points)
    if head is None:
        return None
    tip = points[-1]
    base = ((head[1][0] + head[2][0]) / 2, (head[1][1] + head[2][1]) / 2)
    pts = list(points[:-1]) + [base]
    ctrl = [pts[0]]
    for a, b in zip(pts, pts[1:], strict=False):
        ctrl += [(a[0] + (b[0] - a[0]) / 3, a[1] + (b[1] - a[1]) / 3),
                 (a[0] + 2 * (b[0] - a[0]) / 3, a[1] + 2 * (b[1] - a[1]) / 3), b]
    return f"e,{_num(tip[0])},{_num(tip[1])} " + " ".join(f"{_num(x)},{_num(y)}" for x, y in ctrl)


def to_static_dot(graph: Graph, vg: VisibleGraph, layout: Layout, theme: str = "light", *,
                  highlight: str | None = None) -> str:
    """DOT that draws the layout's geometry as-is (for ``neato -n2``) with the figure's colours."""
    th: Theme = get_theme(theme)
    _check(vg, layout, highlight)
    x0, y0, x1, y1 = _bounds(layout)
    lines = [
        "digraph torchvista_dash {",
        f'  graph [bgcolor={_q(_colour(th.paper))}, outputorder=edgesfirst, splines=true, pad=0.2, '
        f'bb="{_num(x0)},{_num(y0)},{_num(x1)},{_num(y1)}"];',
        f'  node [fontname={_q(FONT)}, fontsize={_num(FONT_PT)}, margin=0, penwidth=1];',
        f'  edge [color={_q(_colour(th.edge))}, fontname={_q(FONT)}, fontsize={_num(EDGE_PT)}, '
        f'fontcolor={_q(_colour(th.muted))}, arrowsize=0.8, penwidth=1.2];',
    ]
    depth = {c.id: len(layout_chain(c.id, layout)) for c in vg.clusters}
    for i, cl in enumerate(sorted(vg.clusters, key=lambda c: depth[c.id])):
        box = layout.clusters[cl.id]
        line = th.failed_line if cl.failed else th.cluster_line
        lines.append(f"  c{i} [{_node_attrs(box)}, shape=box, style=\"rounded,filled\", label=\"\", "
                     f"fillcolor={_q(_colour(th.cluster_fill))}, color={_q(_colour(line))}, "
                     f"penwidth={2 if cl.failed else 1}];")
        text = f"{CLOSE_MARK} {cl.label}"
        est_w = len(text) * HEADER_PT * 0.6
        hx = box[0] + TOGGLE_INSET - 6 + est_w / 2
        lines.append(f'  h{i} [pos="{_num(hx)},{_num(box[3] - HEADER_OFFSET)}!", shape=plaintext, '
                     f'fontsize={_num(HEADER_PT)}, label=<<B>{_h(text)}</B>>, fontcolor={_q(_colour(th.failed_line if cl.failed else th.font))}];')
    index = {}
    for i, vn in enumerate(vg.nodes):
        index[vn.id] = f"n{i}"
        ks = kind_style(th, vn.kind, vn.failed)
        shape, style, peri = _GV_SHAPES.get(vn.kind, ("box", "", 1))
        label = vn.label
        if vn.kind == "folded" and vn.count > 1 and f"×{vn.count}" not in label:
            label += f" ×{vn.count}"
        if vn.kind in ("module", "folded"):
            label = f"{OPEN_MARK} {label}"
        html_label = _h(label)
        if vn.sublabel:
            html_label += f'<BR/><FONT POINT-SIZE="{_num(SMALL_PT)}">{_h(vn.sublabel)}</FONT>'
        pen = 1.8 if vn.kind in ("module", "folded") or vn.failed else 1
        lines.append(f"  n{i} [{_node_attrs(layout.nodes[vn.id])}, shape={shape}, style=\"{style}filled\", "
                     f"peripheries={peri}, fillcolor={_q(ks.fill)}, color={_q(ks.line)}, fontcolor={_q(ks.text)}, "
                     f"penwidth={pen}, label=<{html_label}>];")
    if highlight is not None:
        b = layout.nodes.get(highlight) or layout.clusters[highlight]
        grown = (b[0] - 3, b[1] - 3, b[2] + 3, b[3] + 3)
        lines.append(f"  hl [{_node_attrs(grown)}, shape=box, style=rounded, label=\"\", "
                     f"color={_q(th.highlight)}, penwidth=3.5];")
    kind_of = {n.id: n.kind for n in vg.nodes}
    for e in layout.edges:
        if e.src not in index or e.dst not in index:
            continue
        pos = _spline(e.points)
        attrs = [f'pos="{pos}"'] if pos else []
        if kind_of.get(e.src) in ("parameter", "constant"):
            attrs.append("style=dotted")
        if e.label and e.label_pos is not None:
            attrs.append(f'label={_q(e.label)}, lp="{_num(e.label_pos[0])},{_num(e.label_pos[1])}"')
        lines.append(f"  {index[e.src]} -> {index[e.dst]} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def layout_chain(cluster_id: str, layout: Layout) -> list[str]:
    """Enclosing clusters of a cluster, innermost first (its nesting depth is the length)."""
    out: list[str] = []
    cur = layout.parent.get(cluster_id)
    while cur is not None and cur not in out:
        out.append(cur)
        cur = layout.parent.get(cur)
    return out


def neato_binary() -> str:
    exe = shutil.which("neato")
    if exe is None:
        raise RuntimeError("Graphviz is not installed (no `neato` on PATH); SVG/PNG/PDF export uses it. "
                           "Install it: `apt-get install graphviz`, `brew install graphviz` or "
                           "`conda install graphviz`, or export to .html or .json instead")
    return exe


def static_image(graph: Graph, vg: VisibleGraph, layout: Layout, fmt: str, theme: str = "light", *,
                 highlight: str | None = None) -> bytes:
    """``fmt`` (svg, png, pdf) drawn by Graphviz from the same geometry as the figure."""
    if fmt not in STATIC_FORMATS:
        raise ValueError(f"render_static draws {', '.join(STATIC_FORMATS)}, not {fmt!r}")
    dot = to_static_dot(graph, vg, layout, theme, highlight=highlight)
    cmd = [neato_binary(), "-n2", f"-T{fmt}"]
    if fmt == "png":
        x0, y0, x1, y1 = _bounds(layout)
        longest = max(x1 - x0, y1 - y0, 1.0) + 30
        cmd.append(f"-Gdpi={_num(max(18.0, min(PNG_DPI, PNG_MAX_PX * 72 / longest)))}")
    proc = subprocess.run(cmd, input=dot.encode("utf-8"), capture_output=True, timeout=300, check=False)
    if proc.returncode != 0 or not proc.stdout:
        raise RuntimeError(f"Graphviz failed to render {fmt} (exit {proc.returncode}): "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()[:2000]}")
    return proc.stdout


def render_static(graph: Graph, vg: VisibleGraph, layout: Layout, path: str | Path, fmt: str,
                  theme: str = "light", *, highlight: str | None = None) -> Path:
    """Write ``fmt`` (svg, png, pdf) to ``path`` with Graphviz, from the same geometry as the figure."""
    data = static_image(graph, vg, layout, fmt, theme, highlight=highlight)
    path = Path(path)
    path.write_bytes(data)
    return path
