"""Inputs and outputs that come from one structured value, drawn as one box that opens like a module.

A Llama returns ``cache.layers[0].keys`` … ``cache.layers[5].values`` and ``hidden_states[0..6]``: twenty
output boxes in a row squeeze the model into a corner. Every input or output whose name starts with the
same value (the part before the first ``[`` or ``.``; ``output[1]`` for an item of a returned tuple)
belongs to one group when there are two or more: the
view draws the group as one box (``cache · 6 × (keys, values)``) until it is opened. A plain tensor stays
its own box. Pure data, computed once per graph.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

from torchvista_dash.model.graph import Graph, tensor_shape_text
from torchvista_dash.view.types import IO_PREFIX

_ROOT = re.compile(r"^([^\[.]+)(.*)$")
_TUPLE_ROOTS = ("output", "args")  # a returned tuple / *args: each item is its own value
_FIRST = re.compile(r"^(\[[^\]]*\])(.*)$")
_INDEX = re.compile(r"\[(\d+)\]")


@dataclass(frozen=True)
class IOGroup:
    """The inputs (or outputs) of one structured value: ``id`` is ``io:<kind>:<root>``."""

    id: str
    kind: str  # "input" or "output"
    root: str  # the value's name: "cache", "hidden_states", "batch"
    members: tuple[str, ...]  # node ids, in graph order
    label: str  # "cache · 6 × (keys, values)"
    sublabel: str  # the members' common shape, or how many tensors


@dataclass(frozen=True)
class IOGroups:
    groups: dict[str, IOGroup]  # group id → group
    group_of: dict[str, str]  # node id → group id


_CACHE: dict[int, IOGroups] = {}


def io_groups(graph: Graph) -> IOGroups:
    """The graph's groups, cached for the graph's lifetime."""
    key = id(graph)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = _analyse(graph)
        weakref.finalize(graph, _CACHE.pop, key, None)
    return found


def _analyse(graph: Graph) -> IOGroups:
    by_root: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for n in graph.nodes:
        if n.kind not in ("input", "output") or n.parent is not None:
            continue
        m = _ROOT.match(n.name)
        if m is None:
            continue
        root, rest = m.group(1), m.group(2)
        first = _FIRST.match(rest) if root in _TUPLE_ROOTS else None
        if first is not None:
            root, rest = root + first.group(1), first.group(2)
        by_root.setdefault((n.kind, root), []).append((n.id, rest, _shape(n)))
    groups: dict[str, IOGroup] = {}
    group_of: dict[str, str] = {}
    for (kind, root), items in by_root.items():
        if len(items) < 2:
            continue
        gid = f"{IO_PREFIX}{kind}:{root}"
        shapes = {s for _, _, s in items}
        sub = shapes.pop() if len(shapes) == 1 else f"{len(items)} tensors"
        groups[gid] = IOGroup(
            gid, kind, root, tuple(i for i, _, _ in items), _summary(root, [r for _, r, _ in items]), sub
        )
        group_of.update(dict.fromkeys((i for i, _, _ in items), gid))
    return IOGroups(groups, group_of)


def _shape(node: object) -> str:
    outs = getattr(node, "outputs", ())
    return tensor_shape_text(outs[0]) if outs else "scalar"


def _summary(root: str, rests: list[str]) -> str:
    """``cache · 6 × (keys, values)`` when the members are a list of the same fields, ``cache · 2 × 6 × (keys,
    values)`` for several such lists alike (T5's self- and cross-attention caches), else ``root · N
    tensors``."""
    lists: dict[str, dict[int, list[str]]] = {}  # the part before the index → index → fields
    for rest in rests:
        m = _INDEX.search(rest)
        if m is None:
            return f"{root} · {len(rests)} tensors"
        lists.setdefault(rest[: m.start()], {}).setdefault(int(m.group(1)), []).append(
            rest[m.end() :].lstrip(".")
        )
    shapes = set()
    for per_index in lists.values():
        fields = list(per_index.values())
        if sorted(per_index) != list(range(len(per_index))) or any(f != fields[0] for f in fields):
            return f"{root} · {len(rests)} tensors"
        shapes.add((len(per_index), tuple(fields[0])))
    if len(shapes) != 1:
        return f"{root} · {len(rests)} tensors"
    ((count, first),) = shapes
    outer = f"{len(lists)} × " if len(lists) > 1 else ""
    if first == ("",):
        return f"{root} · {outer}{count} tensors"
    return f"{root} · {outer}{count} × ({', '.join(first)})"
