"""TorchScript modules are drawn as one opaque call with its inputs and outputs (item 17)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchvista_dash import trace_model

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit itself is deprecated


class WithScripted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(3, 3)
        self.body = torch.jit.script(nn.Sequential(nn.Linear(3, 4), nn.ReLU()))
        self.post = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.post(self.body(self.pre(x)))


def test_a_scripted_submodule_is_one_opaque_call_between_its_neighbours() -> None:
    t = trace_model(WithScripted(), torch.rand(2, 3))
    g = t.graph
    assert t.error is None
    body = g.call_by_id["mod:body"]
    assert body.cls == "Sequential" and "TorchScript" in body.extra_repr and "opaque" in body.extra_repr
    assert body.num_params == 16
    assert "mod:body.0" not in g.call_by_id  # its inside is not seen
    (op,) = [n for n in g.nodes if n.parent == "mod:body"]
    assert op.kind == "op" and op.name == "Sequential (TorchScript)" and op.outputs[0].shape == (2, 4)
    pre = next(n for n in g.nodes if n.parent == "mod:pre" and n.kind == "op")
    post = next(n for n in g.nodes if n.parent == "mod:post" and n.kind == "op")
    assert any(e.src == pre.id and e.dst == op.id for e in g.edges)  # input connected
    assert any(e.src == op.id and e.dst == post.id for e in g.edges)  # output connected
    v = t.view(depth=1)
    assert any(e.src == "mod:body" and e.dst == "mod:post" for e in v.edges)


def test_a_scripted_or_traced_model_is_traced_as_one_call() -> None:
    x = torch.rand(2, 3)
    for model in (torch.jit.script(nn.Linear(3, 2)), torch.jit.trace(nn.Linear(3, 2), x)):
        t = trace_model(model, x)
        g = t.graph
        assert t.error is None and g.model_name == "Linear"
        # the input is named after the scripted forward's own argument (its schema; no Python signature)
        assert [(n.kind, n.name) for n in g.nodes] == [
            ("input", "input"),
            ("op", "Linear (TorchScript)"),
            ("output", "output"),
        ]
        assert g.root is not None and "TorchScript" in g.root.extra_repr
        assert [(e.src, e.dst) for e in g.edges] == [("n:0", "n:1"), ("n:1", "n:2")]


def test_a_scripted_model_is_left_as_it_was() -> None:
    model = torch.jit.script(nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trace_model(model, torch.rand(4, 3))
    assert model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
