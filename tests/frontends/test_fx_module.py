"""from_fx: a torch.fx GraphModule (symbolic_trace, a compiler pass) drawn like a live trace; without shape
metadata it draws without shapes and says so."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.shape_prop import ShapeProp

from torchvista_dash import from_fx, trace_model
from torchvista_dash.demos import build_demo
from torchvista_dash.frontends.fx.module import NO_SHAPES_NOTE
from torchvista_dash.model.graph import tensor_shape_text


def _tree(g: object) -> list[tuple[str, str, str, str | None]]:
    return [(c.id, c.qualname, c.cls, c.parent) for c in g.module_calls]  # type: ignore[attr-defined]


def test_symbolic_trace_with_shapes_matches_the_live_trace() -> None:
    model, inputs = build_demo("resnet")
    gm = torch.fx.symbolic_trace(model)
    ShapeProp(gm).propagate(*inputs)
    g = from_fx(gm).graph
    live = trace_model(model, inputs).graph
    assert _tree(g) == _tree(live)  # call_module nodes (nn.Identity too) are calls, nested as in the model
    assert sum(n.flops for n in g.nodes) == sum(n.flops for n in live.nodes)  # the same formulas
    conv = next(n for n in g.nodes if n.parent == "mod:stem.0")
    assert (conv.name, dict(conv.args)["target"]) == ("conv2d", "stem.0 (Conv2d).forward")
    assert conv.outputs[0].shape == (1, 16, 32, 32)
    assert g.notes == ()
    out = [n for n in g.nodes if n.kind == "output"]
    assert [(n.name, n.outputs[0].shape) for n in out] == [("output", (1, 10))]


def test_without_shape_metadata_it_draws_without_shapes_and_says_so() -> None:
    model, inputs = build_demo("resnet")
    t = from_fx(torch.fx.symbolic_trace(model))
    assert t.graph.notes == (NO_SHAPES_NOTE,)
    assert all(tensor_shape_text(e.meta) == "" for e in t.graph.edges)
    vg = t.view(depth=None)
    assert NO_SHAPES_NOTE in vg.notes  # the app's notes line shows every view's notes
    assert all(e.label == "" for e in vg.edges)
    assert sum(n.flops for n in t.graph.nodes) == 0  # nothing to count with
    t.figure(depth=2)  # and it draws


def test_a_compiler_pass_graph_loads() -> None:
    """make_fx gives an aten-level graph with ``meta["val"]`` and no module stacks: drawn under the root."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    gm = make_fx(model)(torch.randn(3, 4))
    g = from_fx(gm).graph
    assert [c.id for c in g.module_calls] == ["mod:(root)"]
    ops = [n for n in g.nodes if n.kind == "op"]
    assert ops and all(n.parent == "mod:(root)" for n in ops)
    assert any(n.name in ("addmm", "mm") and n.flops == 2 * 3 * 4 * 8 for n in ops)
    assert [n.outputs[0].shape for n in g.nodes if n.kind == "output"] == [(3, 2)]
    assert sum(1 for n in g.nodes if n.kind == "parameter") == 4


def test_a_module_called_twice_in_fx_is_two_calls() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(self.fc(x))

    g = from_fx(torch.fx.symbolic_trace(Twice())).graph
    assert [c.id for c in g.module_calls] == ["mod:(root)", "mod:fc", "mod:fc#1"]


def test_from_fx_refuses_what_is_not_a_graph_module() -> None:
    with pytest.raises(TypeError, match="from_fx needs a torch.fx.GraphModule"):
        from_fx(nn.Linear(2, 2))
