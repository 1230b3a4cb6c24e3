"""The search box's answers: module calls and ops by name, qualname or class, labelled as a user reads them.

Labels never show internal ids: an op reads ``softmax (op) in blocks.0.attn · 1×2×16×16``, and two ops that
would read the same are told apart by their order (``#2``). With nothing typed, the box lists the model's
top-level modules, so it opens on something to choose (and the dropdown puts the cursor in its search field).
"""

from __future__ import annotations

from torchvista_dash.model.graph import Graph, tensor_shape_text

SEARCH_LIMIT = 40


def _call_label(graph: Graph, cid: str) -> str:
    c = graph.call_by_id[cid]
    return f"{c.qualname or '(root)'}: {c.cls}" + (f" (call {c.call_index + 1})" if c.call_index else "")


def search(graph: Graph, text: str, *, exact: str | None = None) -> list[dict[str, str]]:
    """Module calls and ops whose name, qualname or class contains ``text`` (case-insensitive), at most
    SEARCH_LIMIT; ``exact``: only the entry for that id."""
    needle = text.strip().lower()
    out: list[dict[str, str]] = []
    if not needle and exact is None:
        return out
    for c in graph.module_calls:
        hay = f"{c.qualname} {c.cls}".lower()
        if (exact is not None and c.id == exact) or (exact is None and needle in hay):
            out.append({"label": _call_label(graph, c.id), "value": c.id, "search": hay})
            if len(out) >= SEARCH_LIMIT:
                return out
    seen: dict[str, int] = {}
    for n in graph.nodes:
        owner = graph.call_by_id[n.parent].qualname if n.parent in graph.call_by_id else ""
        hay = f"{n.name} {owner}".lower()
        where = f" in {owner or '(root)'}" if n.parent is not None else ""
        shape = tensor_shape_text(n.outputs[0]) if n.outputs and n.outputs[0].shape else ""
        label = f"{n.name} ({n.kind}){where}" + (f" · {shape}" if shape else "")
        seen[label] = seen.get(label, 0) + 1  # counted over every node, so a label never changes with text
        if (exact is not None and n.id == exact) or (exact is None and needle in hay):
            out.append(
                {
                    "label": label + (f" #{seen[label]}" if seen[label] > 1 else ""),
                    "value": n.id,
                    "search": hay,
                }
            )
            if len(out) >= SEARCH_LIMIT:
                break
    return out


def browse(graph: Graph) -> list[dict[str, str]]:
    """The options shown before anything is typed: the root's direct children (then the root)."""
    top = [c.id for c in graph.module_calls if c.depth == 1][: SEARCH_LIMIT - 1]
    roots = [c.id for c in graph.module_calls if c.parent is None][:1]
    return [
        {"label": _call_label(graph, cid), "value": cid, "search": graph.call_by_id[cid].qualname.lower()}
        for cid in top + roots
    ]
