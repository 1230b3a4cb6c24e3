"""What a value trace records per tensor: a fixed-size summary of its values (pure data, no torch).

``trace_model(..., values=True)`` fills one ``ValueStats`` per output of every input, op and constant node
(``Node.values``, beside ``Node.outputs``); the tensor's dtype is its ``TensorMeta``'s. Integer and bool
tensors have no mean, std, NaN or Inf (None); a tensor with no values to read (the meta device, sparse) has
no summary at all (None in ``Node.values``). Numbers are kept to 7 significant digits, so a summary saved
and loaded again is the same summary.

``sample`` holds the values at up to ``SAMPLE_SIZE`` fixed positions, evenly spread over the flattened
tensor: two runs of one model can then be compared element by element there (``compare.py``), which the
summary alone (min, max, mean, std) cannot do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from torchvista_dash.model.checks import FieldError, list_of, read_int, record

SAMPLE_SIZE = 8
DIGITS = 7  # significant digits kept: float32's precision


@dataclass(frozen=True)
class ValueStats:
    """A summary of one tensor's values. ``nan``/``inf`` count elements; ``zeros`` is the fraction of exact
    zeros; min, max, mean and std are over the finite elements (None when there are none, or for a dtype
    that has no such thing); ``sample`` holds elements at fixed positions (None where one is not finite)."""

    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    nan: int | None = None
    inf: int | None = None
    zeros: float | None = None
    sample: tuple[float | None, ...] = ()

    @property
    def absmax(self) -> float | None:
        """The largest absolute finite value."""
        if self.min is None or self.max is None:
            return None
        return max(abs(self.min), abs(self.max))

    @property
    def nonfinite(self) -> int:
        """How many elements are NaN or ±Inf."""
        return (self.nan or 0) + (self.inf or 0)


def kept(value: float | None) -> float | None:
    """``value`` to ``DIGITS`` significant digits; None for NaN and ±Inf (JSON has no such numbers)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{DIGITS}g}")


def sample_positions(numel: int) -> list[int]:
    """The flat positions ``sample`` reads: every element of a small tensor, else evenly spread ones."""
    if numel <= SAMPLE_SIZE:
        return list(range(numel))
    step = (numel - 1) / (SAMPLE_SIZE - 1)
    return [round(i * step) for i in range(SAMPLE_SIZE)]


def stats_to_dict(s: ValueStats | None) -> dict[str, Any] | None:
    """A summary as JSON: fields that are None are left out (an integer tensor has no mean)."""
    if s is None:
        return None
    d: dict[str, Any] = {}
    for k in ("min", "max", "mean", "std", "nan", "inf", "zeros"):
        v = getattr(s, k)
        if v is not None:
            d[k] = v
    if s.sample:
        d["sample"] = list(s.sample)
    return d


def read_number(value: Any) -> float | None:
    """A finite JSON number or null (a bool is no number)."""
    if value is None:
        return None
    if type(value) in (int, float) and math.isfinite(value):
        return float(value)
    raise FieldError(f"must be a finite number or null, got {str(value)[:40]}")


def _read_count(value: Any) -> int | None:
    return None if value is None else read_int(value)


def _read_fraction(value: Any) -> float | None:
    v = read_number(value)
    if v is not None and not 0.0 <= v <= 1.0:
        raise FieldError(f"must be a fraction from 0 to 1, got {v}")
    return v


def _read_sample(value: Any) -> tuple[float | None, ...]:
    items = list_of(read_number)(value)
    if len(items) > SAMPLE_SIZE:
        raise FieldError(f"must hold at most {SAMPLE_SIZE} numbers, got {len(items)}")
    return items


_read_stats = record(
    ValueStats,
    (
        ("min", read_number, None),
        ("max", read_number, None),
        ("mean", read_number, None),
        ("std", read_number, None),
        ("nan", _read_count, None),
        ("inf", _read_count, None),
        ("zeros", _read_fraction, None),
        ("sample", _read_sample, ()),
    ),
    "value summary",
)


def read_stats(value: Any) -> ValueStats | None:
    return None if value is None else _read_stats(value)


read_node_values = list_of(read_stats)


def read_grads(value: Any) -> tuple[tuple[str, float | None], ...]:
    """``[["layers.0.fc.weight", 0.031], ["head.bias", null], ...]``: a gradient norm per parameter name."""
    out = []
    for item in list_of(lambda v: v)(value):
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str:
            raise FieldError(f"must be a list of [name, number or null] pairs, got {str(item)[:60]}")
        norm = read_number(item[1])
        if norm is not None and norm < 0:
            raise FieldError(f"a gradient norm is never negative, got {norm}")
        out.append((item[0], norm))
    return tuple(out)


def _num(v: float) -> str:
    return f"{v:.4g}"


def describe(s: ValueStats | None, device: str = "") -> str:
    """One line for hover and details: ``min -1.25, max 1.01, mean -0.153, std 0.792, zeros 37.5 %`` (NaN and
    Inf counts first when there are any); a tensor without a summary says why."""
    if s is None:
        if device == "meta":
            return "no values: a meta-device tensor holds none (trace with real tensors to see them)"
        return "no values recorded for this tensor"
    parts = []
    if s.nonfinite:
        parts.append(f"NaN {s.nan or 0:,}, Inf {s.inf or 0:,}")
    if s.min is not None and s.max is not None:
        parts.append(f"min {_num(s.min)}, max {_num(s.max)}")
    if s.mean is not None and s.std is not None:
        parts.append(f"mean {_num(s.mean)}, std {_num(s.std)}")
    if s.zeros is not None:
        parts.append(f"zeros {100.0 * s.zeros:.3g} %")
    return ", ".join(parts) or "empty tensor"


def tensor_values(graph: Any) -> dict[str, ValueStats | None]:
    """Tensor name (an edge's ``tensor``, ``n:3/0``) → its summary, for a value trace; computed once."""
    found = graph.__dict__.get("_tensor_values")
    if found is None:
        found = graph.__dict__["_tensor_values"] = {
            f"{n.id}/{k}": s for n in graph.nodes for k, s in enumerate(n.values)
        }
    return found


# ---- the first non-finite value ----------------------------------------------------------------------------
@dataclass(frozen=True)
class FirstNonfinite:
    """Where NaN or Inf first appears: the node (an op, or an input that held it already), its module."""

    node: str  # the node id (``n:412``)
    name: str  # the op's name (``div``) or the input's
    kind: str  # "op", "input" or "constant"
    call: str | None  # the innermost module call's id, None at the top level
    qualname: str  # that module's qualname ("" for the root or the top level)
    nan: int
    inf: int

    def __str__(self) -> str:
        where = f"in {self.qualname}" if self.qualname else "at the top level"
        return f"{self.name} ({self.node}) {where}: {self.nan:,} NaN, {self.inf:,} Inf"


def require_values(graph: Any, what: str) -> None:
    if "values" not in graph.measured:
        raise ValueError(
            f"{what} needs a value trace: trace with trace_model(model, inputs, values=True) "
            "(this trace holds no values)"
        )


def first_nonfinite(graph: Any) -> FirstNonfinite | None:
    """The first node, in execution order, whose output holds a NaN or an Inf while none of its inputs did
    (an op; or a model input or constant that already held one); None if every value is finite. Inputs with
    no summary (parameters: weights are not summarised) count as finite."""
    require_values(graph, "first_nonfinite()")
    found = graph.__dict__.get("_first_nonfinite", False)
    if found is not False:
        return found
    values = tensor_values(graph)
    bad_in: set[str] = set()  # nodes with a non-finite input
    for e in graph.edges:
        s = values.get(e.tensor)
        if s is not None and s.nonfinite:
            bad_in.add(e.dst)
    found = None
    for n in graph.nodes:
        if n.kind in ("output", "parameter") or n.id in bad_in:
            continue
        hit = [s for s in n.values if s is not None and s.nonfinite]
        if hit:
            call = graph.call_by_id.get(n.parent) if n.parent is not None else None
            found = FirstNonfinite(
                node=n.id,
                name=n.name,
                kind=n.kind,
                call=n.parent,
                qualname=call.qualname if call is not None else "",
                nan=sum(s.nan or 0 for s in hit),
                inf=sum(s.inf or 0 for s in hit),
            )
            break
    graph.__dict__["_first_nonfinite"] = found
    return found


def downstream_of(graph: Any, node_id: str) -> set[str]:
    """Every node reachable from ``node_id`` along the graph's edges (itself included)."""
    out_edges: dict[str, list[str]] = {}
    for e in graph.edges:
        out_edges.setdefault(e.src, []).append(e.dst)
    seen = {node_id}
    todo = [node_id]
    while todo:
        for d in out_edges.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def nonfinite_marks(graph: Any) -> dict[str, float]:
    """``color_by="nonfinite"``: 2 for where NaN/Inf first appears, 1 for every op downstream of it, 0 for the
    rest (computed once per graph)."""
    marks = graph.__dict__.get("_nonfinite_marks")
    if marks is None:
        first = first_nonfinite(graph)
        below = downstream_of(graph, first.node) if first is not None else set()
        marks = {n.id: 1.0 if n.id in below else 0.0 for n in graph.nodes}
        if first is not None:
            marks[first.node] = 2.0
        graph.__dict__["_nonfinite_marks"] = marks
    return marks
