"""The diff's paint: added boxes in green, removed ones ghosted (dashed, faded), changed ones outlined in
orange.

Hover shows both sides (parameters and FLOPs before → after, and what changed); a folded run whose members
were partly added or removed says so by count ("GPT2Block ×2 → ×3: +1").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchvista_dash.model.costs import human
from torchvista_dash.model.graph import Graph
from torchvista_dash.render.hover import esc
from torchvista_dash.render.paint import BoxPaint, Paint
from torchvista_dash.render.style import get_theme, kind_style
from torchvista_dash.view.types import VisibleGraph, VisibleNode

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.compare import Diff

ADDED, REMOVED, CHANGED, SAME = "added", "removed", "changed", "same"  # Diff.status values
_ADDED = {
    "light": BoxPaint("#d3f3d9", "#2f9e44", "#12391b", width=2.0),
    "dark": BoxPaint("#1f3d26", "#51cf66", "#d3f9d8", width=2.0),
}
_REMOVED = {
    "light": BoxPaint("rgba(160,160,160,0.10)", "#9aa0a6", "#8a8f96", dash="dash", width=1.5),
    "dark": BoxPaint("rgba(120,120,120,0.10)", "#6c737c", "#8a9199", dash="dash", width=1.5),
}
_CHANGED_LINE = {"light": "#e8590c", "dark": "#ff922b"}


def _paints(theme: str, kind: str) -> dict[str, BoxPaint]:
    t = theme if theme in _ADDED else "light"
    ks = kind_style(get_theme(t), kind)
    return {
        ADDED: _ADDED[t],
        REMOVED: _REMOVED[t],
        CHANGED: BoxPaint(ks.fill, _CHANGED_LINE[t], ks.text, width=3.0),
    }


def _status_of_box(diff: Diff, graph: Graph, vn: VisibleNode) -> tuple[str, str]:
    """(status, count text) of a visible box: an op takes its module's added/removed status."""
    calls = graph.call_by_id
    node = graph.node_by_id.get(vn.id)
    if node is not None:
        call = calls.get(node.parent) if node.parent else None
        s = SAME if call is None else diff.status_of_call(call)
        return (s if s in (ADDED, REMOVED) else SAME), ""
    members = [calls[m] for m in (vn.members or (vn.id,)) if m in calls]
    states = [diff.status_of_call(c) for c in members]
    if not states:
        return SAME, ""
    if len(states) > 1:
        n_added, n_removed = states.count(ADDED), states.count(REMOVED)
        if (n_added or n_removed) and n_added + n_removed < len(states):
            before, after = len(states) - n_added, len(states) - n_removed
            delta = after - before
            return CHANGED, f"×{before} → ×{after}: {'+' if delta > 0 else '−'}{abs(delta)}"
    for s in (REMOVED, ADDED, CHANGED):
        if all(x == s for x in states):
            return s, ""
    return (CHANGED if any(x != SAME for x in states) else SAME), ""


def _side(diff: Diff, qualnames: list[str]) -> list[str]:
    """Parameters and FLOPs before → after, summed over ``qualnames``."""
    lines = []
    for key, metric in (("params", "params"), ("flops", "flops")):
        va = [diff.rows_a[q][key] for q in qualnames if q in diff.rows_a]
        vb = [diff.rows_b[q][key] for q in qualnames if q in diff.rows_b]
        a = sum(v for v in va if v is not None) if va and any(v is not None for v in va) else None
        b = sum(v for v in vb if v is not None) if vb and any(v is not None for v in vb) else None
        if a is None and b is None:
            continue
        text = (
            f"{human(a, metric) if a is not None else 'absent'} → "
            f"{human(b, metric) if b is not None else 'absent'}"
        )
        if a is not None and b is not None and a != b:
            d = b - a
            text += f" ({'+' if d > 0 else '−'}{human(abs(d), metric)})"
        lines.append(f"{'parameters' if key == 'params' else 'FLOPs'}: {esc(text)}")
    return lines


def _changes_inside(diff: Diff, graph: Graph) -> dict[str, int]:
    """Call id → how many calls below it differ: a collapsed box that differs only inside is marked too."""
    inside = dict.fromkeys(graph.call_by_id, 0)
    for call in reversed(graph.module_calls):  # children come after their parent in call order
        if call.parent in inside:
            inside[call.parent] += inside[call.id] + (diff.status_of_call(call) != SAME)
    return inside


def _hover(diff: Diff, status: str, count: str, qualnames: list[str], inside: int = 0) -> str:
    head = {
        "added": "added in the second trace",
        "removed": "removed (only in the first trace)",
        "changed": "changed",
        "same": "unchanged",
    }[status]
    if inside and not count and status == CHANGED and not any(diff.reasons.get(q) for q in qualnames):
        head = f"changed inside: {inside} module{'s' if inside > 1 else ''} differ"
    lines = [f"<b>diff:</b> {esc(count or head)}"]
    for q in qualnames[:1]:
        lines += [f"• {esc(r)}" for r in diff.reasons.get(q, [])[:5]]
    lines += _side(diff, qualnames)
    return "<br>".join(lines)


def diff_paint(diff: Diff, graph: Graph, vg: VisibleGraph, theme: str = "light") -> Paint:
    """Paint ``vg`` (a view of the merged graph) with the statuses of ``diff``."""
    calls = graph.call_by_id
    inside_of = _changes_inside(diff, graph)
    boxes: dict[str, BoxPaint] = {}
    hover: dict[str, str] = {}
    sublabels: dict[str, str] = {}
    for vn in vg.nodes:
        status, count = _status_of_box(diff, graph, vn)
        inside = sum(inside_of.get(m, 0) for m in (vn.members or (vn.id,)))
        if status == SAME and inside:
            status = CHANGED
        if status != "same":
            boxes[vn.id] = _paints(theme, vn.kind)[status]
        if count:
            sublabels[vn.id] = count
        if vn.kind in ("module", "folded"):
            qs = [calls[m].qualname for m in (vn.members or (vn.id,)) if m in calls]
            hover[vn.id] = _hover(diff, status, count, qs, inside)
        elif status != "same":
            hover[vn.id] = f"<b>diff:</b> {esc(status)} with its module"
    clusters: dict[str, BoxPaint] = {}
    for cl in vg.clusters:
        call = calls.get(cl.id)
        if call is None:
            continue
        status = diff.status_of_call(call)
        if status != "same":
            p = _paints(theme, "module")[status]
            clusters[cl.id] = BoxPaint("rgba(0,0,0,0)", p.line, p.text, p.dash, p.width)
        hover[cl.id] = _hover(diff, status, "", [call.qualname])
    s = diff.summary()
    title = (
        f"diff: +{len(s['added'])} added · −{len(s['removed'])} removed · {len(s['changed'])} changed"
        if not diff.empty
        else "diff: no module differs"
    )
    key = _paints(theme, "module")
    legend = tuple((key[k], k) for k in (ADDED, REMOVED, CHANGED))
    return Paint(boxes=boxes, clusters=clusters, hover=hover, sublabels=sublabels, title=title, legend=legend)
