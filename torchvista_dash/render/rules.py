"""Style rules: boxes coloured by name or class pattern (``("re:.*attn.*", "#e45756")``, ``("cls:Linear",
"#4c78a8")``), the first matching rule winning, as a ``Paint`` laid over the kind colours and colour-by.

``re:`` searches a box's path (a module's qualname; an op's module qualname and its name, ``layers.0.attn.
softmax``); ``cls:`` is a module's class name, exactly. An open module's cluster takes its rule's colour as
its outline. The rules themselves are checked where they are made (``model.options.style_rules``).
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache

from torchvista_dash.model.graph import Graph
from torchvista_dash.render.paint import BoxPaint, Paint
from torchvista_dash.view.types import VisibleGraph, VisibleNode

Rules = tuple[tuple[str, str], ...]


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _matches(pattern: str, path: str, cls: str) -> bool:
    if pattern.startswith("cls:"):
        return bool(cls) and cls == pattern[4:]
    return _compiled(pattern[3:]).search(path) is not None


def _text_on(colour: str) -> str:
    """Black or white text, whichever reads on ``colour`` (a ``#rrggbb`` or ``#rgb``)."""
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return "#111111" if 0.299 * r + 0.587 * g + 0.114 * b > 150 else "#ffffff"


def _darker(colour: str) -> str:
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    return "#" + "".join(f"{int(int(h[i : i + 2], 16) * 0.7):02x}" for i in (0, 2, 4))


def _path_and_class(graph: Graph, vn: VisibleNode) -> tuple[str, str]:
    if vn.kind in ("module", "folded"):
        call = graph.call_by_id.get(vn.members[0] if vn.members else vn.id)
        return (call.qualname, call.cls) if call is not None else (vn.label, "")
    node = graph.node_by_id.get(vn.id)
    if node is None:
        return vn.label, ""
    owner = graph.call_by_id.get(node.parent) if node.parent is not None else None
    return (f"{owner.qualname}.{node.name}" if owner and owner.qualname else node.name), ""


def _first(rules: Rules, path: str, cls: str) -> str | None:
    return next((colour for pattern, colour in rules if _matches(pattern, path, cls)), None)


def rules_paint(graph: Graph, vg: VisibleGraph, rules: Rules, base: Paint | None = None) -> Paint | None:
    """``base`` (or no paint) with the boxes and open modules the rules match painted their colour."""
    if not rules:
        return base
    base = base or Paint()
    boxes = dict(base.boxes)
    clusters = dict(base.clusters)
    for vn in vg.nodes:
        colour = _first(rules, *_path_and_class(graph, vn))
        if colour is not None:
            boxes[vn.id] = BoxPaint(colour, _darker(colour), _text_on(colour))
    for cl in vg.clusters:
        call = graph.call_by_id.get(cl.id)
        if call is None:
            continue
        colour = _first(rules, call.qualname, call.cls)
        if colour is not None:
            clusters[cl.id] = BoxPaint(colour, colour, _text_on(colour), width=2.0)
    return dataclasses.replace(base, boxes=boxes, clusters=clusters)
