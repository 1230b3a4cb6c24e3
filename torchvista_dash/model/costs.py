"""Costs per op, per module call and per module, from what the trace recorded (pure data, no torch).

The tracer stores each op's FLOPs and (when timed) its time on the node, and each tensor's bytes on its
metadata; parameters are known per module. Everything summed here is derived from those, once per graph:
a module call's totals cover every op inside it, a module's (``stats``) sum its calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torchvista_dash.model.graph import Graph, ModuleCall, Node

# The metrics a picture can be coloured by, and the stats() column each one is.
METRICS: dict[str, str] = {"flops": "flops", "params": "params", "bytes": "output_bytes", "time": "time_ms"}
METRIC_LABELS: dict[str, str] = {
    "flops": "FLOPs",
    "params": "parameters",
    "bytes": "output bytes",
    "time": "time",
}
STATS_KEYS = ("qualname", "cls", "calls", "params", "param_bytes", "flops", "output_bytes", "time_ms")

_ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
}


@dataclass(frozen=True)
class Cost:
    """What one op, call or module costs; ``time_ms`` is None unless the trace was timed."""

    flops: int = 0
    output_bytes: int = 0
    time_ms: float | None = None

    def __add__(self, other: Cost) -> Cost:
        t = (
            None
            if self.time_ms is None and other.time_ms is None
            else (self.time_ms or 0.0) + (other.time_ms or 0.0)
        )
        return Cost(self.flops + other.flops, self.output_bytes + other.output_bytes, t)


ZERO = Cost()


def node_cost(n: Node) -> Cost:
    """An op's own cost. The recorder's ``identity`` nodes hand tensors on and make none, so they cost 0."""
    if n.kind != "op" or (n.name == "identity" and not n.flops):
        return ZERO
    return Cost(n.flops, sum(m.nbytes for m in n.outputs), n.time_ms)


class Costs:
    """The totals of one graph: per call (every op inside it) and the model's; computed once per graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        own: dict[str | None, Cost] = {}
        for n in graph.nodes:
            c = node_cost(n)
            if c is not ZERO:
                own[n.parent] = own.get(n.parent, ZERO) + c
        totals = {c.id: own.get(c.id, ZERO) for c in graph.module_calls}
        for c in reversed(graph.module_calls):  # a call is recorded before the calls inside it
            if c.parent is not None:
                totals[c.parent] = totals[c.parent] + totals[c.id]
        self.call: dict[str, Cost] = totals
        top = own.get(None, ZERO)
        for cid in graph.children_calls.get(None, []):
            top = top + totals[cid]
        self.total = top
        self.total_params = graph.total_params

    def has(self, metric: str) -> bool:
        """Did this trace record ``metric``? (Older traces have no FLOPs; only timed ones have times.)"""
        need = {"flops": "flops", "time": "time"}.get(metric)
        return need is None or need in self.graph.measured

    def value(self, cost: Cost, metric: str) -> float | None:
        if metric == "flops":
            return float(cost.flops)
        if metric == "bytes":
            return float(cost.output_bytes)
        if metric == "time":
            return cost.time_ms
        raise ValueError(f"no such metric {metric!r}")

    def of_calls(self, call_ids: Iterable[str], metric: str) -> float | None:
        """A metric summed over calls (a folded run: all its members)."""
        ids = list(call_ids)
        if metric == "params":
            by_id = self.graph.call_by_id
            return float(sum(by_id[c].num_params for c in ids))
        total = ZERO
        for c in ids:
            total = total + self.call.get(c, ZERO)
        return self.value(total, metric)

    def of_node(self, n: Node, metric: str) -> float | None:
        if metric == "params":
            return float(_param_numel(self.graph, n)) if n.kind == "parameter" else 0.0
        return self.value(node_cost(n), metric)

    def model_total(self, metric: str) -> float | None:
        if metric == "params":
            return float(self.total_params)
        return self.value(self.total, metric)


def costs_of(graph: Graph) -> Costs:
    """The Costs of a graph, computed once and kept on it, as ``cached_property`` does (graphs are immutable;
    hashing one would hash every node)."""
    c = graph.__dict__.get("_costs")
    if c is None:
        c = graph.__dict__["_costs"] = Costs(graph)
    return c


def check_metric(graph: Graph, metric: str) -> str:
    """``metric`` if this graph can be coloured by it; else a clear error that says what to do."""
    if metric not in METRICS:
        raise ValueError(f"color_by={metric!r}: choose one of {', '.join(METRICS)}")
    if not costs_of(graph).has(metric):
        how = (
            "trace with trace_model(..., timing=True)"
            if metric == "time"
            else "trace the model again with this version (this trace was saved before FLOPs were recorded)"
        )
        raise ValueError(f"color_by={metric!r}: this trace has no {metric} recorded; {how}")
    return metric


def _param_numel(graph: Graph, n: Node) -> int:
    """A parameter node's element count, from its module's ParamInfo (the node's name is its qualname)."""
    owner, _, pname = n.name.rpartition(".")
    for c in graph.calls_by_qualname.get(owner, ()):
        for p in c.params:
            if p.name == pname:
                return _numel(p.shape)
    return 0


def _numel(shape: Iterable[int]) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


# ---- stats(): one row per module --------------------------------------------------------------------------
def stats_rows(graph: Graph) -> list[dict[str, Any]]:
    """One row per module (by qualname, in call order; the root ``""`` first is the model total).

    A module called several times sums its calls (a call nested in a call of the same module is counted
    once). ``params``/``param_bytes`` cover the module's subtree, shared parameters once; ``flops`` and
    ``time_ms`` are None when the trace did not record them.
    """
    costs = costs_of(graph)
    has_flops, has_time = costs.has("flops"), costs.has("time")
    first: dict[str, ModuleCall] = {}
    summed: dict[str, Cost] = {}
    calls: dict[str, int] = {}
    by_id = graph.call_by_id
    for c in graph.module_calls:
        first.setdefault(c.qualname, c)
        calls[c.qualname] = calls.get(c.qualname, 0) + 1
        if not _inside_same(c, by_id):
            summed[c.qualname] = summed.get(c.qualname, ZERO) + costs.call[c.id]
    pbytes = _param_bytes(graph, first)
    rows = []
    for q, c in first.items():
        s = summed.get(q, ZERO)
        rows.append(
            {
                "qualname": q,
                "cls": c.cls,
                "calls": calls[q],
                "params": c.num_params,
                "param_bytes": pbytes[q],
                "flops": s.flops if has_flops else None,
                "output_bytes": s.output_bytes,
                "time_ms": (None if s.time_ms is None else round(s.time_ms, 4)) if has_time else None,
            }
        )
    return rows


def _inside_same(c: ModuleCall, by_id: dict[str, ModuleCall]) -> bool:
    cur = c.parent
    while cur is not None:
        p = by_id[cur]
        if p.qualname == c.qualname:
            return True
        cur = p.parent
    return False


def _param_bytes(graph: Graph, first: dict[str, ModuleCall]) -> dict[str, int]:
    """Bytes of each module's subtree parameters (buffers left out, like ``params``).

    ParamInfo has no identity, so a weight tied into two modules appears in both: the subtree's bytes per
    parameter (its dtypes) times ``num_params`` (which counts shared ones once) gives the right total.
    """
    raw: dict[str, list[int]] = {q: [0, 0] for q in first}  # qualname -> [numel, bytes] over the subtree
    for q, c in first.items():
        numel = sum(_numel(p.shape) for p in c.params if not p.is_buffer)
        nbytes = sum(_numel(p.shape) * _ITEMSIZE.get(p.dtype, 4) for p in c.params if not p.is_buffer)
        if not numel:
            continue
        prefix: str | None = q
        while prefix is not None:
            if prefix in raw:
                raw[prefix][0] += numel
                raw[prefix][1] += nbytes
            prefix = None if prefix == "" else prefix.rpartition(".")[0]
    out = {}
    for q, c in first.items():
        numel, nbytes = raw[q]
        out[q] = round(nbytes * c.num_params / numel) if numel else 0
    return out


def human(value: float | None, metric: str) -> str:
    """``5.44 GFLOP``, ``124M params``, ``3.15 MB``, ``1.25 ms``: how values read in hover and details."""
    if value is None:
        return "–"
    if metric == "time":
        return f"{value:.3g} ms"
    unit = {"flops": " FLOP", "params": " params", "bytes": " B"}[metric]
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            if metric == "params":
                return f"{value / scale:.3g}{prefix}{unit}"
            return f"{value / scale:.3g} {prefix}{unit.strip()}"
    return f"{value:.0f}{unit}"


# ---- what the details panel says about one call or op ------------------------------------------------------
def cost_lines(
    graph: Graph, call_id: str | None = None, node_id: str | None = None, skip: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """(label, text) rows: each recorded metric of a call (its totals) or an op, with its share of the model;
    the metrics in ``skip`` are left out (the module panel writes its parameters on a line of its own)."""
    costs = costs_of(graph)
    rows = []
    for metric in METRICS:
        if metric in skip or not costs.has(metric) or (metric == "params" and node_id is not None):
            continue
        if call_id is not None:
            v = costs.of_calls((call_id,), metric)
        else:
            v = costs.of_node(graph.node_by_id[str(node_id)], metric)
        total = costs.model_total(metric)
        if v is None:
            continue
        share = f" ({100.0 * v / total:.1f} %)" if total else ""
        rows.append((METRIC_LABELS[metric], human(v, metric) + share))
    return rows


def heaviest_children(
    graph: Graph, call_id: str, metric: str = "flops", limit: int = 5
) -> list[tuple[str, str, float, float]]:
    """The calls directly inside ``call_id`` that cost the most: (qualname, cls, value, share of this
    call)."""
    costs = costs_of(graph)
    if not costs.has(metric):
        return []
    mine = costs.of_calls((call_id,), metric) or 0.0
    kids = []
    for cid in graph.children_calls.get(call_id, []):
        v = costs.of_calls((cid,), metric) or 0.0
        if v > 0:
            c = graph.call_by_id[cid]
            kids.append((c.qualname, c.cls, v, v / mine if mine else 0.0))
    kids.sort(key=lambda k: -k[2])
    return kids[:limit]
