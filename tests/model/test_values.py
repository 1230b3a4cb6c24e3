"""Queries on a value trace: where NaN/Inf first appears, and colouring by it and by value statistics."""

from __future__ import annotations

import pytest
import torch
from support_models import NaNTower, ReuseNet

from torchvista_dash import load_trace, trace_model
from torchvista_dash.model.metrics import values_of


def _nan_trace():  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    return trace_model(NaNTower().eval(), torch.randn(2, 16), values=True)


def test_first_nonfinite_is_the_division_by_zero_in_layer_7(tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = _nan_trace()
    first = t.first_nonfinite()
    assert first is not None
    assert (first.name, first.kind, first.qualname) == ("div", "op", "layers.7")
    node = t.graph.node_by_id[first.node]
    assert node.values[0].nonfinite == first.nan + first.inf == 32
    assert "div" in str(first) and "layers.7" in str(first)
    # every op before it is finite; the same answer from the saved trace
    order = [n.id for n in t.graph.nodes]
    before = [n for n in t.graph.nodes[: order.index(first.node)] if n.values]
    assert before and all(s is None or not s.nonfinite for n in before for s in n.values)
    assert load_trace(t.save(tmp_path / "nan.json")).first_nonfinite() == first


def test_a_finite_model_has_none_and_a_plain_trace_says_to_record_values() -> None:
    t = trace_model(ReuseNet().eval(), torch.randn(3, 8), values=True)
    assert t.first_nonfinite() is None
    with pytest.raises(ValueError, match=r"values=True"):
        trace_model(ReuseNet().eval(), torch.randn(3, 8)).first_nonfinite()
    with pytest.raises(ValueError, match=r"values=True"):
        trace_model(ReuseNet().eval(), torch.randn(3, 8)).figure(color_by="absmax")


def test_colour_by_nonfinite_marks_it_and_everything_downstream() -> None:
    t = _nan_trace()
    marks = values_of(t.graph, "nonfinite")
    first = t.first_nonfinite()
    assert first is not None and marks.node[first.node] == 2.0
    calls = {c.qualname: marks.call[c.id] for c in t.graph.module_calls}
    assert all(calls[f"layers.{i}"] == 0.0 for i in range(7))
    assert calls["layers.7"] == 2.0 and all(calls[f"layers.{i}"] == 1.0 for i in range(8, 12))
    assert calls["head"] == 1.0 and calls[""] == 2.0  # a box takes the worst of its inside
    fig = t.figure(color_by="nonfinite", fold_repeats=False)
    labels = next(tr for tr in fig.data if tr.name == "nodes:labels")
    hover = dict(zip(labels.customdata, labels.hovertext, strict=True))
    assert "first NaN/Inf" in hover["mod:layers.7"] and "downstream of it" in hover["mod:layers.9"]
    assert "finite" in hover["mod:layers.2"]


def test_colour_by_value_statistics_takes_the_worst_inside() -> None:
    t = _nan_trace()
    for metric in ("absmax", "std", "zeros"):
        v = values_of(t.graph, metric)
        layer0 = t.graph.call_by_id["mod:layers.0"]
        inside = [
            v.node.get(n.id)
            for n in t.graph.nodes
            if n.parent == layer0.id or (n.parent and layer0.id in t.graph.ancestors(n.parent))
        ]
        assert v.call[layer0.id] == max(x for x in inside if x is not None), metric
        fig = t.figure(color_by=metric)
        assert next(tr for tr in fig.data if tr.name == "colorbar").marker.showscale
