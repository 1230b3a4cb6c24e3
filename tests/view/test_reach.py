"""A selection's reach and the paths between two boxes, on views of real traces (the MLP demo every op, and
a model with a branch and a skip), and the paint that lights them."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchvista_dash import trace_model
from torchvista_dash.demos import demo_trace
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.pipeline import paint_of
from torchvista_dash.view import build as view
from torchvista_dash.view.reach import around, lit, path


@pytest.fixture(scope="module")
def mlp():  # x → linear n:3 → relu n:4 → dropout n:5 → linear n:8 → relu n:9 → dropout n:10 → n:13 → out
    g = demo_trace("mlp").graph
    return view.build_view(g, view.expand_everything(g))


def test_one_step_lights_the_selection_its_inputs_and_outputs(mlp) -> None:
    r = around(mlp, "n:8")
    assert r.boxes == {"n:5", "n:8", "n:9"}
    assert r.edges == {("n:5", "n:8"), ("n:8", "n:9")}
    assert "mod:body.3" in r.clusters and "mod:(root)" in r.clusters  # the modules around it stay lit


def test_all_upstream_and_all_downstream(mlp) -> None:
    up = around(mlp, "n:8", "up")
    assert up.boxes == {"n:0", "n:3", "n:4", "n:5", "n:8"} and ("n:0", "n:3") in up.edges
    down = around(mlp, "n:8", "down")
    assert down.boxes == {"n:8", "n:9", "n:10", "n:13", "n:14"} and ("n:8", "n:9") in down.edges
    assert around(mlp, "n:8", "all").boxes == up.boxes | down.boxes


def test_an_open_module_is_selected_with_everything_inside_it(mlp) -> None:
    r = around(mlp, "mod:body.3")
    assert r.boxes == {"n:5", "n:8", "n:9"} and "mod:body.3" in r.clusters


def test_a_path_runs_either_way_and_through_closed_modules() -> None:
    g = demo_trace("mlp").graph
    every = view.build_view(g, view.expand_everything(g))
    p = path(every, "n:13", "n:4")  # given the wrong way round: still the path from n:4 to n:13
    assert p.boxes == {"n:4", "n:5", "n:8", "n:9", "n:10", "n:13"}
    assert p.edges == {("n:4", "n:5"), ("n:5", "n:8"), ("n:8", "n:9"), ("n:9", "n:10"), ("n:10", "n:13")}
    closed = view.build_view(g, view.make_spec(g, depth=1))  # body is one box now
    through = path(closed, "n:0", "n:14")
    assert "mod:body" in through.boxes and ("n:0", "mod:body") in through.edges


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.c = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x) + self.c(self.b(x))  # two paths from x to the sum, and b, c off a's path


def test_paths_light_every_branch_and_none_is_said_when_there_is_none() -> None:
    g = trace_model(Branchy(), torch.zeros(1, 4)).graph
    vg = view.build_view(g, view.make_spec(g, depth=1, fold_repeats=False))  # a, b, c fold otherwise
    ins = [n.id for n in vg.nodes if n.kind == "input"][0]
    add = next(n.id for n in vg.nodes if n.kind == "op")
    both = path(vg, ins, add)
    assert {"mod:a", "mod:b", "mod:c"} <= both.boxes
    none = path(vg, "mod:a", "mod:b")  # side by side: no path joins them
    assert not none.edges and "no path" in none.note
    assert lit(vg, None) == lit(vg, "not-drawn")  # nothing selected, or nothing there: nothing lit


def test_the_paint_fades_what_is_not_lit_and_colours_the_lit_edges(mlp) -> None:
    g = demo_trace("mlp").graph
    paint = paint_of(g, mlp, DrawOptions(selected="n:8"))
    assert paint is not None and paint.lit_edges == {("n:5", "n:8"), ("n:8", "n:9")}
    assert "n:0" in paint.faded and "n:8" not in paint.faded and "mod:body.0" in paint.faded
    both = paint_of(g, mlp, DrawOptions(selected="n:8", color_by="flops"))
    assert both is not None and both.boxes and both.lit_edges == paint.lit_edges  # over colour-by
    assert paint_of(g, mlp, DrawOptions()) is None
    with pytest.raises(ValueError, match="reach must be one of"):
        DrawOptions(reach="sideways")  # type: ignore[arg-type]
