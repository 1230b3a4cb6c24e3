"""The details panel's rows for a value trace: each output's summary (min, max, mean, std, NaN, Inf, zeros).

Plain (label, text) pairs, so ``details.py`` lays them out as it lays out the rest; nothing here for a trace
made without ``values=True``.
"""

from __future__ import annotations

from collections.abc import Mapping

from torchvista_dash.app.traces import registry
from torchvista_dash.model.graph import Graph, Node, TensorMeta
from torchvista_dash.model.metrics import grad_lines
from torchvista_dash.model.values import describe, first_nonfinite, tensor_values

MAX_ROWS = 6  # outputs summarised in the panel; the rest are counted


def _label(k: int, n: int) -> str:
    return "values" if n == 1 else f"values [{k}]"


def node_value_rows(graph: Graph, node: Node) -> list[tuple[str, str]]:
    """A node's outputs' summaries (a parameter is a weight: none are recorded for it)."""
    if "values" not in graph.measured or node.kind == "parameter":
        return []
    stats = node.values or (None,) * len(node.outputs)
    return _rows([(s, m) for s, m in zip(stats, node.outputs, strict=False)])


def output_value_rows(graph: Graph, outputs: Mapping[str, TensorMeta]) -> list[tuple[str, str]]:
    """The summaries of the tensors leaving a module call (tensor name → its metadata)."""
    if "values" not in graph.measured:
        return []
    values = tensor_values(graph)
    return _rows([(values.get(name), meta) for name, meta in outputs.items()])


def _rows(pairs: list) -> list[tuple[str, str]]:
    rows = [(_label(k, len(pairs)), describe(s, m.device)) for k, (s, m) in enumerate(pairs[:MAX_ROWS])]
    if len(pairs) > MAX_ROWS:
        rows.append(("values", f"… and {len(pairs) - MAX_ROWS} more outputs"))
    return rows


def first_nonfinite_id(trace_id: str) -> str | None:
    """The node the "first NaN/Inf" button goes to (None: nothing to go to)."""
    graph = registry.get(trace_id).graph
    if "values" not in graph.measured:
        return None
    first = first_nonfinite(graph)
    return None if first is None else first.node


def first_nonfinite_title(graph: Graph) -> tuple[str, bool]:
    """The button's tooltip and whether it is enabled."""
    if "values" not in graph.measured:
        return "trace with trace_model(model, inputs, values=True) to find the first NaN/Inf", False
    first = first_nonfinite(graph)
    if first is None:
        return "every recorded value is finite", False
    return f"go to where NaN/Inf first appears: {first}", True


def grad_rows(graph: Graph, qualname: str) -> list[tuple[str, str]]:
    """A module's gradient norm and the parameters under it that got none (a trace made with ``grads=``)."""
    return grad_lines(graph, qualname, limit=40) if "grads" in graph.measured else []
