"""make_figure through the real pipeline: a traced model, the real view and a real Graphviz layout."""

from __future__ import annotations

import pytest
import torch
from support_render import Broken, TinyNet, picture_of, picture_texts

from torchvista_dash import trace_model
from torchvista_dash.render import make_figure


@pytest.fixture(scope="module")
def tiny(dot_binary):
    torch.manual_seed(0)
    return trace_model(TinyNet(), torch.randn(2, 8))


@pytest.fixture(scope="module")
def broken(dot_binary):
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="raised RuntimeError"):
        return trace_model(Broken(), torch.randn(2, 8))


def label_trace(fig):
    return next(t for t in fig.data if t.name == "nodes:labels")


@pytest.mark.parametrize("depth", [0, 1, 2, None])
def test_figure_ids_match_the_view(tiny, depth):
    vg = tiny.view(depth=depth)
    fig = tiny.figure(depth=depth)
    labels = label_trace(fig)
    assert list(labels.customdata) == [n.id for n in vg.nodes]
    headers = [t for t in fig.data if t.name == "clusters:headers"]
    assert [list(t.customdata) for t in headers] == ([[c.id for c in vg.clusters]] if vg.clusters else [])
    assert len(fig.data) <= 25


def test_every_op_view_shows_graph_nodes_and_shapes(tiny):
    fig = tiny.figure(depth=None, fold_repeats=False)
    labels = label_trace(fig)
    ops = {n.id for n in tiny.graph.nodes if n.kind == "op"}
    assert ops <= set(labels.customdata)
    assert "2×16" in picture_texts(picture_of(fig), "el")
    hover = dict(zip(labels.customdata, labels.hovertext, strict=True))
    some_op = next(n for n in tiny.graph.nodes if n.kind == "op" and n.name == "linear")
    assert "(Linear)" in hover[some_op.id] and "float32" in hover[some_op.id]


def test_folded_blocks_show_their_count(tiny):
    vg = tiny.view(depth=1, expanded=["blocks"])  # nn.Sequential is built in: opened explicitly
    folded = [n for n in vg.nodes if n.kind == "folded"]
    assert folded, "three identical Blocks should fold"
    drawn = picture_texts(picture_of(make_figure(tiny.graph, vg, tiny.layout(vg))), "m")
    assert any(f"×{folded[0].count}" in t for t in drawn), drawn


def test_failed_trace_centres_on_the_failure_and_is_red(broken):
    vg = broken.view(depth=1)
    lay = broken.layout(vg)
    fig = make_figure(broken.graph, vg, lay)
    failed = [n.id for n in vg.nodes if n.failed]
    assert failed
    x0, y0, x1, y1 = lay.nodes[failed[0]]
    (xa, xb), (ya, yb) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert abs((xa + xb) / 2 - (x0 + x1) / 2) < 1 and abs((ya + yb) / 2 - (y0 + y1) / 2) < 1
    svg = picture_of(fig)
    assert any((e.get("class") or "").endswith("f") and (e.get("class") or "").startswith("k") for e in svg)
    every = broken.figure(depth=None)
    hover = dict(zip(label_trace(every).customdata, label_trace(every).hovertext, strict=True))
    assert "cannot be multiplied" in hover[broken.graph.error.node]


def test_rankdir_lr_and_dark_theme(tiny):
    fig = tiny.figure(depth=1, theme="dark", rankdir="LR")
    assert fig.layout.template.layout.paper_bgcolor == "rgb(17,17,17)"
    bounds = fig.layout.meta["torchvista_dash"]["bounds"]
    assert bounds[2] - bounds[0] > bounds[3] - bounds[1]  # left to right: wider than tall
