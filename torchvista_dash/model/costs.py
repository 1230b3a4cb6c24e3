"""Costs per module and per call, from what the trace recorded (pure data, no torch): ``stats()``'s rows and
the details panel's lines.

The tracer stores each op's FLOPs and (when timed) its time on the node, and each tensor's bytes on its
metadata; parameters are known per module. The sums are the metric registry's (``metrics.py``): a module
call's totals cover every op inside it, a module's (``stats``) sum its calls.
"""

from __future__ import annotations

from typing import Any

from torchvista_dash.model.graph import Graph, ModuleCall
from torchvista_dash.model.metrics import COST_METRICS, REGISTRY, has_metric, values_of
from torchvista_dash.model.metrics import check_metric as check_metric
from torchvista_dash.model.metrics import human as human

METRICS: tuple[str, ...] = COST_METRICS  # the costs, in the order stats() and details list them
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


def _numel(shape: Any) -> int:
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
    has_flops, has_time = has_metric(graph, "flops"), has_metric(graph, "time")
    per_call = {m: values_of(graph, m).call for m in ("flops", "bytes", "time")}
    first: dict[str, ModuleCall] = {}
    summed: dict[str, dict[str, float | None]] = {}
    calls: dict[str, int] = {}
    by_id = graph.call_by_id
    for c in graph.module_calls:
        first.setdefault(c.qualname, c)
        calls[c.qualname] = calls.get(c.qualname, 0) + 1
        if not _inside_same(c, by_id):
            row = summed.setdefault(c.qualname, {"flops": 0.0, "bytes": 0.0, "time": None})
            for m, values in per_call.items():
                v = values[c.id]
                if v is not None:
                    row[m] = (row[m] or 0.0) + v
    pbytes = _param_bytes(graph, first)
    rows = []
    for q, c in first.items():
        s = summed.get(q, {"flops": 0.0, "bytes": 0.0, "time": None})
        t = s["time"]
        rows.append(
            {
                "qualname": q,
                "cls": c.cls,
                "calls": calls[q],
                "params": c.num_params,
                "param_bytes": pbytes[q],
                "flops": round(s["flops"] or 0) if has_flops else None,
                "output_bytes": round(s["bytes"] or 0),
                "time_ms": (None if t is None else round(t, 4)) if has_time else None,
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


# ---- what the details panel says about one call or op ------------------------------------------------------
def cost_lines(
    graph: Graph, call_id: str | None = None, node_id: str | None = None, skip: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """(label, text) rows: each recorded metric of a call (its totals) or an op, with its share of the model;
    the metrics in ``skip`` are left out (the module panel writes its parameters on a line of its own)."""
    rows = []
    for metric in METRICS:
        if metric in skip or not has_metric(graph, metric) or (metric == "params" and node_id is not None):
            continue
        values = values_of(graph, metric)
        v = values.of_calls((call_id,)) if call_id is not None else values.node.get(str(node_id))
        total = values.total
        if v is None:
            continue
        share = f" ({100.0 * v / total:.1f} %)" if total else ""
        rows.append((REGISTRY[metric].label, human(v, metric) + share))
    return rows


def heaviest_children(
    graph: Graph, call_id: str, metric: str = "flops", limit: int = 5
) -> list[tuple[str, str, float, float]]:
    """The calls directly inside ``call_id`` that cost the most: (qualname, cls, value, share of this
    call)."""
    if not has_metric(graph, metric):
        return []
    values = values_of(graph, metric)
    mine = values.call.get(call_id) or 0.0
    kids = []
    for cid in graph.children_calls.get(call_id, []):
        v = values.call.get(cid) or 0.0
        if v > 0:
            c = graph.call_by_id[cid]
            kids.append((c.qualname, c.cls, v, v / mine if mine else 0.0))
    kids.sort(key=lambda k: -k[2])
    return kids[:limit]
