"""The metrics a picture can be coloured by: one registry entry each (pure data, no torch).

A metric says what it is called, how its values read, which graph nodes carry one, and how a module call's
value is made from what is inside it (``combine``): FLOPs, bytes and time add up over the ops inside; a
value statistic takes the worst of the ops inside (a collapsed box holding one exploding activation is as
bad as that activation). ``values_of(graph, name)`` computes every op's and every call's value once per
graph and metric; the colour-by paint, the details panel and ``stats()`` read them from there. A new metric
is one ``register(Metric(...))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from torchvista_dash.model.graph import Graph, ModuleCall, Node, numel
from torchvista_dash.model.values import ValueStats, nonfinite_marks

Combine = Literal["sum", "max", "worst"]


def scaled(unit: str, compact: bool = False) -> Callable[[float], str]:
    """``5.44 GFLOP``, ``3.15 MB`` (or, ``compact``, ``124M params``): a count with an SI prefix."""

    def fmt(value: float) -> str:
        for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= scale:
                return (
                    f"{value / scale:.3g}{prefix}{unit}" if compact else f"{value / scale:.3g} {prefix}{unit}"
                )
        return f"{value:.0f} {unit}"

    return fmt


def _plain(value: float) -> str:
    return f"{value:.4g}"


def _percent(value: float) -> str:
    return f"{100.0 * value:.3g} %"


@dataclass(frozen=True)
class Metric:
    """One thing boxes can be coloured by.

    ``node_value`` gives a graph node's own value (None: it has none); ``kinds`` are the node kinds that
    carry one. A call's value combines its ops' and its inner calls' (``combine``), unless ``call_value``
    gives it directly (a call's parameters are its module's, not its ops'). ``empty`` is the value of a call
    with nothing inside that has one. ``needs`` names what ``Graph.measured`` must hold for the trace to have
    this metric, ``missing`` says how to get it. ``share``: hover shows a box's share of the model's total
    (only for a metric that adds up). ``scale``: "log" for costs spanning orders of magnitude, "linear" for
    a bounded one (a fraction).
    """

    name: str
    label: str
    format: Callable[[float], str]
    node_value: Callable[[Graph, Node], float | None]
    combine: Combine = "sum"
    kinds: tuple[str, ...] = ("op",)
    call_value: Callable[[Graph, ModuleCall], float | None] | None = None
    call_covers_inside: bool = True  # a ``call_value`` already counts what is inside the call (params)
    empty: float | None = 0.0
    needs: str | None = None
    missing: str = ""
    share: bool = True
    scale: Literal["log", "linear"] = "log"
    higher_is_worse: bool = True  # for ``combine="worst"``
    edge_widths: bool = False  # edges drawn as wide as the bytes they carry
    levels: tuple[
        float, ...
    ] = ()  # a metric of a few named values (``format`` names them): its key lists them

    def combined(self, values: Iterable[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        if not known:
            return self.empty
        if self.combine == "sum":
            return float(sum(known))
        if self.combine == "max" or self.higher_is_worse:
            return max(known)
        return min(known)


REGISTRY: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` (or replace the one of that name): figures, the app's menu and the CLI offer it."""
    REGISTRY[metric.name] = metric
    return metric


def metric_names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get_metric(name: str) -> Metric:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"color_by must be one of {', '.join(REGISTRY)}, not {name!r}") from None


def has_metric(graph: Graph, name: str) -> bool:
    """Did this trace record what ``name`` needs? (Older traces have no FLOPs; only timed ones have times.)"""
    need = get_metric(name).needs
    return need is None or need in graph.measured


def check_metric(graph: Graph, name: str) -> Metric:
    """The metric ``name`` if this graph can be coloured by it; else a clear error that says what to do."""
    metric = get_metric(name)
    if not has_metric(graph, name):
        raise ValueError(f"color_by={name!r}: this trace has no {metric.label} recorded; {metric.missing}")
    return metric


class MetricValues:
    """One metric's value for every node that has one, every call and the model, computed once."""

    def __init__(self, graph: Graph, metric: Metric) -> None:
        self.metric = metric
        kinds = metric.kinds
        self.node: dict[str, float | None] = {
            n.id: metric.node_value(graph, n) for n in graph.nodes if n.kind in kinds
        }
        inside: dict[str | None, list[float | None]] = {}
        for n in graph.nodes:
            if n.kind in kinds:
                inside.setdefault(n.parent, []).append(self.node[n.id])
        self.call: dict[str, float | None] = {}
        own = metric.call_value
        covers = own is not None and metric.call_covers_inside
        for c in reversed(graph.module_calls):  # a call is recorded before the calls inside it
            v = own(graph, c) if own is not None else None
            self.call[c.id] = metric.combined(inside.get(c.id, ())) if v is None and not covers else v
            if c.parent is not None and not covers:
                inside.setdefault(c.parent, []).append(self.call[c.id])
        tops = [self.call[cid] for cid in graph.children_calls.get(None, [])]
        self.total = metric.combined([*tops, *([] if covers else inside.get(None, ()))])

    def of_calls(self, call_ids: Iterable[str]) -> float | None:
        """The value of a box standing for these calls (a folded run: all its members); ids that are no
        call (a grouped input or output) have none."""
        found = [self.call[c] for c in call_ids if c in self.call]
        return self.metric.combined(found) if found else None


@dataclass(frozen=True)
class UserValues:
    """Numbers from the user per module (qualname or call id) or node id, ``color_by={"layers.0.mlp": 0.93}``
    (a quantisation error computed elsewhere). A box without a number of its own takes the largest inside."""

    pairs: tuple[tuple[str, float], ...]
    label: str = "user value"

    @classmethod
    def of(cls, data: Mapping[Any, Any]) -> UserValues:
        bad = [k for k, v in data.items() if not isinstance(k, str) or not _is_number(v)]
        if bad:
            raise ValueError(
                "color_by as a mapping takes module qualnames or node ids to finite numbers; "
                f"not these: {', '.join(repr(k) for k in bad[:8])}"
            )
        return cls(tuple(sorted((k, float(v)) for k, v in data.items())))

    def metric(self, graph: Graph) -> Metric:
        """The metric these numbers make on ``graph``; keys it does not know are one error naming them."""
        by_key = dict(self.pairs)
        known = set(graph.calls_by_qualname) | set(graph.call_by_id) | set(graph.node_by_id)
        unknown = sorted(k for k in by_key if k not in known)
        if unknown:
            shown = ", ".join(repr(k) for k in unknown[:8]) + (
                f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""
            )
            raise ValueError(
                f"color_by: no module or node {shown} in this trace; keys are module qualnames "
                "(as in model.named_modules(), e.g. 'layers.0.mlp'), module call ids or node ids"
            )
        return Metric(
            "user",
            self.label,
            _plain,
            lambda g, n: by_key.get(n.id),
            combine="max",
            kinds=_NODE_KINDS,
            call_value=lambda g, c: by_key.get(c.id, by_key.get(c.qualname)),
            call_covers_inside=False,
            empty=None,
            share=False,
            scale="linear",
        )


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_NODE_KINDS = ("op", "input", "output", "constant", "parameter")


def resolve(graph: Graph, color_by: str | UserValues) -> tuple[Metric, MetricValues]:
    """The metric ``color_by`` names (checked against what the trace recorded) and its values on ``graph``."""
    if isinstance(color_by, UserValues):
        metric = color_by.metric(graph)
        return metric, MetricValues(graph, metric)
    return check_metric(graph, color_by), values_of(graph, color_by)


def values_of(graph: Graph, name: str) -> MetricValues:
    """The MetricValues of ``name`` on ``graph``, computed once and kept on it (graphs are immutable)."""
    kept = graph.__dict__.setdefault("_metric_values", {})
    v = kept.get(name)
    if v is None or v.metric is not REGISTRY.get(name):
        v = kept[name] = MetricValues(graph, get_metric(name))
    return v


def human(value: float | None, name: str) -> str:
    """How a value of metric ``name`` reads in hover and details (``5.44 GFLOP``, ``124M params``)."""
    return "–" if value is None else get_metric(name).format(value)


# ---- the costs ---------------------------------------------------------------------------------------------
def _is_work(n: Node) -> bool:
    """The recorder's ``identity`` nodes hand tensors on and do no work of their own."""
    return n.kind == "op" and not (n.name == "identity" and not n.flops)


def _param_numel(graph: Graph, n: Node) -> int:
    """A parameter node's element count, from its module's ParamInfo (the node's name is its qualname)."""
    owner, _, pname = n.name.rpartition(".")
    for c in graph.calls_by_qualname.get(owner, ()):
        for p in c.params:
            if p.name == pname:
                return numel(p.shape)
    return 0


register(
    Metric(
        "flops",
        "FLOPs",
        scaled("FLOP"),
        lambda g, n: float(n.flops) if _is_work(n) else 0.0,
        needs="flops",
        missing="trace the model again with this version (this trace was saved before FLOPs were recorded)",
    )
)
register(
    Metric(
        "params",
        "parameters",
        scaled("params", compact=True),
        lambda g, n: float(_param_numel(g, n)) if n.kind == "parameter" else 0.0,
        kinds=("op", "parameter"),
        call_value=lambda g, c: float(c.num_params),
    )
)
register(
    Metric(
        "bytes",
        "output bytes",
        scaled("B"),
        lambda g, n: float(sum(m.nbytes for m in n.outputs)) if _is_work(n) else 0.0,
        edge_widths=True,
    )
)
register(
    Metric(
        "time",
        "time",
        lambda v: f"{v:.3g} ms",
        lambda g, n: n.time_ms if _is_work(n) else None,
        empty=None,
        needs="time",
        missing="trace with trace_model(..., timing=True)",
    )
)
COST_METRICS = ("flops", "params", "bytes", "time")  # the stats() columns among the metrics


# ---- value statistics (a value trace: trace_model(..., values=True)) --------------------------------------
_NEEDS_VALUES = "trace with trace_model(model, inputs, values=True)"


def _worst_output(read: Callable[[ValueStats], float | None]) -> Callable[[Graph, Node], float | None]:
    """A node's value: the largest of ``read`` over its outputs' summaries (None without any)."""

    def value(graph: Graph, n: Node) -> float | None:
        got = [v for v in (read(s) for s in n.values if s is not None) if v is not None]
        return max(got) if got else None

    return value


_VALUE_NODES = ("op", "input", "constant")
for _name, _label, _read, _format, _scale in (
    ("absmax", "largest |value|", lambda s: s.absmax, _plain, "log"),
    ("std", "std of values", lambda s: s.std, _plain, "log"),
    ("zeros", "fraction of zeros", lambda s: s.zeros, _percent, "linear"),
):
    register(
        Metric(
            _name,
            _label,
            _format,
            _worst_output(_read),
            combine="worst",
            kinds=_VALUE_NODES,
            empty=None,
            needs="values",
            missing=_NEEDS_VALUES,
            share=False,
            scale=_scale,  # type: ignore[arg-type]
        )
    )

_NONFINITE_TEXT = {2.0: "first NaN/Inf", 1.0: "downstream of it", 0.0: "finite"}
register(
    Metric(
        "nonfinite",
        "NaN/Inf",
        lambda v: _NONFINITE_TEXT.get(v, f"{v:g}"),
        lambda g, n: nonfinite_marks(g).get(n.id),
        combine="worst",
        kinds=_VALUE_NODES,
        needs="values",
        missing=_NEEDS_VALUES,
        share=False,
        scale="linear",
        levels=(0.0, 1.0, 2.0),
    )
)


# ---- gradient flow (trace_model(..., grads=loss_fn)) -------------------------------------------------------
def grad_index(graph: Graph) -> dict[str, float | None]:
    """Parameter name → its gradient norm (None: no gradient), for a trace made with ``grads=``."""
    found = graph.__dict__.get("_grad_index")
    if found is None:
        found = graph.__dict__["_grad_index"] = dict(graph.grads)
    return found


def _norm(norms: Iterable[float | None]) -> float | None:
    """The norm of several gradients together (None if none of them has one)."""
    known = [v for v in norms if v is not None]
    return math.sqrt(sum(v * v for v in known)) if known else None


def _subtree_norms(graph: Graph) -> dict[str, float | None]:
    """Module qualname → the norm of every gradient of the parameters in its subtree."""
    found = graph.__dict__.get("_subtree_grads")
    if found is None:
        sq: dict[str, float] = {}
        have: set[str] = set()
        for name, norm in graph.grads:
            prefix: str | None = name.rpartition(".")[0]
            while prefix is not None:
                have.add(prefix)
                if norm is not None:
                    sq[prefix] = sq.get(prefix, 0.0) + norm * norm
                prefix = None if prefix == "" else prefix.rpartition(".")[0]
        found = {q: (math.sqrt(sq[q]) if q in sq else None) for q in have}
        graph.__dict__["_subtree_grads"] = found
    return found


def no_gradient(graph: Graph, qualname: str | None = None) -> list[str]:
    """Trainable parameters the loss did not reach (all, or those under the module ``qualname``)."""
    prefix = "" if not qualname else qualname + "."
    return [q for q, norm in graph.grads if norm is None and q.startswith(prefix)]


register(
    Metric(
        "grad_norm",
        "gradient norm",
        _plain,
        lambda g, n: (
            grad_index(g).get(n.name)
            if n.kind == "parameter"
            else _norm(grad_index(g).get(p) for p in n.params)
        ),
        combine="max",
        kinds=("op", "parameter"),
        call_value=lambda g, c: _subtree_norms(g).get(c.qualname),  # its subtree's parameters
        empty=None,
        needs="grads",
        missing="trace with trace_model(model, inputs, grads=lambda out: <a scalar loss of the output>)",
        share=False,
    )
)


def grad_lines(graph: Graph, qualname: str, limit: int = 6) -> list[tuple[str, str]]:
    """(label, text) for a module of a ``grads=`` trace: its subtree's gradient norm and, marked, the
    parameters under it that got no gradient."""
    norm = _subtree_norms(graph).get(qualname)
    rows = [("gradient norm", "–" if norm is None else _plain(norm))]
    missing = no_gradient(graph, qualname)
    if missing:
        shown = ", ".join(missing[:limit]) + (
            f" and {len(missing) - limit} more" if len(missing) > limit else ""
        )
        rows.append(("no gradient", f"{len(missing)}: {shown}"))
    return rows
