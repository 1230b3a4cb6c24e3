"""Which module calls repeat: a structural fingerprint of every call and the runs of identical siblings.

Computed once per Graph object (an ``id()``-keyed cache released with the graph) and shared by every view of
it. A run is two or more consecutive sibling calls with the same fingerprint (class, ``extra_repr``,
parameter shapes, op sequence with shapes, incoming shapes) where each feeds the next and no op of their
parent sits between them; its fold id is ``fold:<first call id>``.
"""

from __future__ import annotations

import hashlib
import weakref
from bisect import bisect_right
from dataclasses import dataclass, field

from torchvista_dash.model.graph import Graph

FOLD_PREFIX = "fold:"
HIDDEN_KINDS = ("parameter", "constant")  # node kinds a view draws only when asked (show_params)


@dataclass
class Index:
    order: dict[str, int]  # node id → position in the forward pass
    call_chain: dict[str, tuple[str, ...]]  # call id → its ancestors outer→inner, itself last
    span: dict[str, tuple[int, int]]  # call id → first/last node position in its subtree
    signature: dict[str, str]  # call id → structural digest
    runs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # fold id → member call ids
    fold_of: dict[str, str] = field(default_factory=dict)  # member call id → fold id


_CACHE: dict[int, Index] = {}


def index_of(graph: Graph) -> Index:
    """The structural analysis of ``graph``, cached for the graph's lifetime."""
    key = id(graph)
    idx = _CACHE.get(key)
    if idx is None:
        idx = _analyse(graph)
        _CACHE[key] = idx
        weakref.finalize(graph, _CACHE.pop, key, None)
    return idx


def _analyse(graph: Graph) -> Index:
    calls = graph.call_by_id
    chain: dict[str, tuple[str, ...]] = {}

    def chain_of(cid: str) -> tuple[str, ...]:
        todo = []
        cur: str | None = cid
        while cur is not None and cur not in chain:
            todo.append(cur)
            cur = calls[cur].parent
        base = chain[cur] if cur is not None else ()
        for c in reversed(todo):
            base = base + (c,)
            chain[c] = base
        return chain[cid]

    for c in graph.module_calls:
        chain_of(c.id)
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    node_chain = {n.id: (chain[n.parent] if n.parent is not None else ()) for n in graph.nodes}

    span: dict[str, tuple[int, int]] = {}
    for n in graph.nodes:
        i = order[n.id]
        for c in node_chain[n.id]:
            lo, hi = span.get(c, (i, i))
            span[c] = (min(lo, i), max(hi, i))

    # tensors entering each call, and which sibling feeds which. Tensors leaving a call are not part of its
    # signature: they depend on its successors (T5's last block passes no position bias on), while what it
    # computes is already in its op sequence.
    ins: dict[str, dict[str, tuple[int, ...]]] = {}
    feeds: set[tuple[str, str]] = set()
    kinds = {n.id: n.kind for n in graph.nodes}
    for e in graph.edges:
        s, d = node_chain[e.src], node_chain[e.dst]
        p = 0
        while p < len(s) and p < len(d) and s[p] == d[p]:
            p += 1
        if p < len(s) and p < len(d):
            feeds.add((s[p], d[p]))
        if kinds[e.src] in HIDDEN_KINDS:
            continue
        for c in d[p:]:
            ins.setdefault(c, {}).setdefault(e.tensor, e.meta.shape)

    # structural signatures, innermost calls first
    signature: dict[str, str] = {}
    items: dict[str, list[tuple[int, object]]] = {c.id: [] for c in graph.module_calls}
    for n in graph.nodes:
        if n.parent is not None:
            items[n.parent].append(
                (
                    order[n.id],
                    (
                        "n",
                        n.kind,
                        n.name if n.kind not in HIDDEN_KINDS else "",
                        tuple(m.shape for m in n.outputs),
                    ),
                )
            )
    for c in sorted(graph.module_calls, key=lambda c: -len(chain[c.id])):
        body = sorted(items[c.id], key=lambda t: t[0])
        desc = (
            c.cls,
            c.extra_repr,
            tuple((p.name, p.shape, p.dtype) for p in c.params),
            tuple(x for _, x in body),
            tuple(ins.get(c.id, {}).values()),
        )
        signature[c.id] = hashlib.sha1(repr(desc).encode()).hexdigest()[:20]
        if c.parent is not None and c.id in span:
            items[c.parent].append((span[c.id][0], ("c", signature[c.id])))

    idx = Index(order=order, call_chain=chain, span=span, signature=signature)

    # runs of ≥2 consecutive, chained, structurally identical siblings
    direct_ops: dict[str | None, list[int]] = {}
    for n in graph.nodes:
        if n.kind == "op":
            direct_ops.setdefault(n.parent, []).append(order[n.id])
    for parent, kids in graph.children_calls.items():
        ops = direct_ops.get(parent, [])
        run: list[str] = []
        for cid in kids + [None]:
            if cid is not None and cid not in span:
                cid = None  # a call that recorded nothing breaks any run
            if run and cid is not None and _continues(idx, ops, feeds, run[-1], cid):
                run.append(cid)
                continue
            if len(run) >= 2:
                fid = FOLD_PREFIX + run[0]
                idx.runs[fid] = tuple(run)
                for m in run:
                    idx.fold_of[m] = fid
            run = [cid] if cid is not None else []
    return idx


def _continues(idx: Index, parent_ops: list[int], feeds: set[tuple[str, str]], prev: str, cur: str) -> bool:
    if idx.signature[prev] != idx.signature[cur] or (prev, cur) not in feeds:
        return False
    last, first = idx.span[prev][1], idx.span[cur][0]
    if first < last:
        return False
    k = bisect_right(parent_ops, last)  # a parent-level op between the two breaks the run
    return not (k < len(parent_ops) and parent_ops[k] < first)
