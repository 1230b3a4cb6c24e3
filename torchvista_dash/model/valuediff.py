"""Where two runs of one architecture diverge: per op, how far apart two value traces' outputs are.

What is compared is what a value trace keeps of each tensor (``model/values.py``): its min, max, mean and std
(exact reductions over every element, so a change anywhere moves the mean) and its ``sample``, the elements
at the same fixed positions in both runs, compared one by one. The differences are therefore lower bounds of
the true elementwise ones: a trace of a few numbers per tensor cannot hold more (keeping whole tensors would
make a trace as big as the activations). Two numbers ``x`` and ``y`` differ beyond a tolerance when
``|x - y| > atol + rtol * max(|x|, |y|)``; a different count of NaN or Inf, or another shape, always differs.

Ops are matched by where they run, not by position: the k-th op of a given name inside a given module call
(so a cast that only one run makes does not shift every op after it). Pure data, no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from torchvista_dash.model.errors import TorchvistaDashError
from torchvista_dash.model.graph import Graph, Node
from torchvista_dash.model.values import ValueStats, require_values

RTOL = 1e-5  # torch.allclose's defaults
ATOL = 1e-8


class StructureMismatch(TorchvistaDashError, ValueError):
    """Two traces of different architectures: their values cannot be compared op by op."""


@dataclass(frozen=True)
class OpDiff:
    """How far apart one op's outputs are in the two runs (the largest over its outputs and what is kept
    of them); ``node`` is the op's id in the second trace. Infinite for a NaN/Inf count or shape mismatch."""

    node: str
    name: str
    qualname: str
    abs: float
    rel: float
    pairs: tuple[tuple[float, float], ...]  # the (a, b) numbers compared, for ``beyond``

    def beyond(self, rtol: float = RTOL, atol: float = ATOL) -> bool:
        """Do the outputs differ beyond the tolerance?"""
        if math.isinf(self.abs):
            return True
        return any(abs(x - y) > atol + rtol * max(abs(x), abs(y)) for x, y in self.pairs)


def _pairs(a: ValueStats | None, b: ValueStats | None) -> tuple[tuple[float, float], ...] | None:
    """The numbers compared between two summaries; None when they disagree outright (NaN/Inf counts)."""
    if a is None or b is None:
        return ()
    if (a.nan or 0, a.inf or 0) != (b.nan or 0, b.inf or 0):
        return None
    out = [
        (x, y)
        for x, y in ((a.min, b.min), (a.max, b.max), (a.mean, b.mean), (a.std, b.std))
        if x is not None and y is not None
    ]
    out += [(x, y) for x, y in zip(a.sample, b.sample, strict=False) if x is not None and y is not None]
    return tuple(out)


def _op_key(graph: Graph) -> dict[str, tuple[str | None, str, int]]:
    """Node id → (its call, its name, how many nodes of that name came before it in that call)."""
    seen: dict[tuple[str | None, str], int] = {}
    out = {}
    for n in graph.nodes:
        k = (n.parent, n.name)
        seen[k] = seen.get(k, -1) + 1
        out[n.id] = (n.parent, n.name, seen[k])
    return out


def check_same_structure(a: Graph, b: Graph) -> None:
    """A clear error naming the first module (in call order) where two traces' architectures differ."""
    classes_a = {c.qualname: c.cls for c in a.module_calls}
    classes_b = {c.qualname: c.cls for c in b.module_calls}
    tail = "values are compared op by op between traces of one architecture"
    for x, y in zip(a.module_calls, b.module_calls, strict=False):
        if x.qualname == y.qualname and x.cls == y.cls:
            continue
        for c, here, there, which in (
            (y, classes_b, classes_a, "second"),
            (x, classes_a, classes_b, "first"),
        ):
            if c.qualname not in there:
                raise StructureMismatch(
                    f"the two traces differ in structure: module {c.qualname!r} ({c.cls}) is only in the "
                    f"{which}; {tail}"
                )
            if there[c.qualname] != here[c.qualname]:
                cls_a, cls_b = classes_a[c.qualname], classes_b[c.qualname]
                raise StructureMismatch(
                    f"the two traces differ in structure at module {c.qualname!r}: {cls_a} in the first, "
                    f"{cls_b} in the second; {tail}"
                )
        raise StructureMismatch(
            f"the two traces call their modules in another order from {x.qualname or '(root)'!r} (first) and "
            f"{y.qualname or '(root)'!r} (second) on; {tail}"
        )
    if len(a.module_calls) != len(b.module_calls):
        longer, which = (a, "first") if len(a.module_calls) > len(b.module_calls) else (b, "second")
        extra = longer.module_calls[min(len(a.module_calls), len(b.module_calls))]
        raise StructureMismatch(
            f"the two traces differ in structure: module {extra.qualname!r} ({extra.cls}) is called one more "
            f"time in the {which}; {tail}"
        )


class ValueDiff:
    """Per op of ``b``, how far its outputs are from the same op's in ``a``."""

    def __init__(self, a: Graph, b: Graph) -> None:
        require_values(a, "comparing values")
        require_values(b, "comparing values")
        check_same_structure(a, b)
        self.a, self.b = a, b
        by_key = {k: nid for nid, k in _op_key(a).items()}
        self.match: dict[str, str] = {}  # node id in b -> the same op's id in a
        for nid, k in _op_key(b).items():
            other = by_key.get(k)
            if other is not None:
                self.match[nid] = other
        self.ops: dict[str, OpDiff] = {}
        for n in b.nodes:
            if n.kind in ("op", "input", "constant") and n.id in self.match:
                d = self._diff(a.node_by_id[self.match[n.id]], n)
                if d is not None:
                    self.ops[n.id] = d

    def _diff(self, na: Node, nb: Node) -> OpDiff | None:
        if not na.values or not nb.values:
            return None
        call = self.b.call_by_id.get(nb.parent) if nb.parent is not None else None
        q = call.qualname if call is not None else ""
        shapes = [m.shape for m in na.outputs] == [m.shape for m in nb.outputs]
        pairs: list[tuple[float, float]] = []
        for sa, sb in zip(na.values, nb.values, strict=False):
            got = _pairs(sa, sb) if shapes else None
            if got is None:
                return OpDiff(nb.id, nb.name, q, math.inf, math.inf, ())
            pairs += got
        ab = max((abs(x - y) for x, y in pairs), default=0.0)
        rel = max((abs(x - y) / max(abs(x), abs(y)) for x, y in pairs if x or y), default=0.0)
        return OpDiff(nb.id, nb.name, q, ab, rel, tuple(pairs))

    @cached_property
    def _inputs(self) -> dict[str, list[str]]:
        """Node id in b → the nodes whose outputs it reads."""
        out: dict[str, list[str]] = {}
        for e in self.b.edges:
            out.setdefault(e.dst, []).append(e.src)
        return out

    def first_divergence(self, rtol: float = RTOL, atol: float = ATOL) -> OpDiff | None:
        """The first op (in ``b``'s execution order) whose outputs differ beyond the tolerance while none of
        its inputs do (a model input that already differs counts: it has no inputs); None if the runs agree.
        Inputs without a summary (parameters) count as agreeing: an op reading a changed weight is where the
        change shows."""
        differs: set[str] = set()
        for n in self.b.nodes:
            d = self.ops.get(n.id)
            if d is None or not d.beyond(rtol, atol):
                continue
            differs.add(n.id)
            if not any(src in differs for src in self._inputs.get(n.id, ())):
                return d
        return None

    def per_module(self) -> dict[str, tuple[float, float]]:
        """Module qualname → the largest (absolute, relative) difference of the ops inside it."""
        out: dict[str, tuple[float, float]] = {}
        for nid, d in self.ops.items():
            parent = self.b.node_by_id[nid].parent
            for cid in self.b.ancestors(parent):
                q = self.b.call_by_id[cid].qualname
                ab, rel = out.get(q, (0.0, 0.0))
                out[q] = (max(ab, d.abs), max(rel, d.rel))
        return out

    def relative(self) -> dict[str, float]:
        """Node id in b → its relative difference (finite: a NaN/Inf mismatch counts as 1, all of it)."""
        return {nid: min(d.rel, 1.0) for nid, d in self.ops.items()}
