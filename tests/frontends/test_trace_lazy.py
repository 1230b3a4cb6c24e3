"""Lazy modules trace: a module's facts are read when its call ends, after it materialised (item 16)."""

from __future__ import annotations

import warnings

import torch
from torch import nn

from torchvista_dash import trace_model


class LazyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.LazyConv2d(4, 3)
        self.bn = nn.LazyBatchNorm2d()
        self.head = nn.LazyLinear(2)
        self.unused = nn.LazyLinear(5)  # never called: stays lazy, must not break the trace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.bn(self.conv(x)).flatten(1))


def test_lazy_linear_in_a_sequential_traces() -> None:
    model = nn.Sequential(nn.LazyLinear(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # materialising is not an in-place write of a weight
        t = trace_model(model, torch.rand(2, 3))
    assert t.error is None
    assert [n.name for n in t.graph.nodes if n.kind == "op"] == ["linear"]  # the init ops are not drawn
    (call,) = [c for c in t.graph.module_calls if c.qualname == "0"]
    assert {p.name: p.shape for p in call.params} == {"weight": (4, 3), "bias": (4,)}
    assert call.num_params == 16 and t.graph.total_params == 16
    (lin,) = [n for n in t.graph.nodes if n.name == "linear"]
    weights = [t.graph.node_by_id[e.src] for e in t.graph.edges if e.dst == lin.id][1:]
    assert [(w.kind, w.outputs[0].shape) for w in weights] == [("parameter", (4, 3)), ("parameter", (4,))]


def test_lazy_conv_batchnorm_and_an_uncalled_lazy_module() -> None:
    model = LazyNet().eval()
    t = trace_model(model, torch.rand(1, 2, 6, 6))
    assert t.error is None
    calls = {c.qualname: c for c in t.graph.module_calls}
    assert {p.name: p.shape for p in calls["conv"].params} == {"weight": (4, 2, 3, 3), "bias": (4,)}
    assert ("running_mean", (4,)) in {(p.name, p.shape) for p in calls["bn"].params}
    assert {p.name: p.shape for p in calls["head"].params} == {"weight": (2, 64), "bias": (2,)}
    assert "unused" not in calls
    # the model is materialised, as after any first forward pass, and a second trace draws the same graph
    assert model.head.weight.shape == (2, 64)
    assert trace_model(model, torch.rand(1, 2, 6, 6)).graph.to_json() == t.graph.to_json()
