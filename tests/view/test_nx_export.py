"""Trace.to_networkx: every op at depth=None; collapsed module nodes whose edges are the boundary tensors."""

from __future__ import annotations

import networkx as nx
import pytest
import torch
from support_models import REAL_MODELS, FailingNet, build_synthetic

from torchvista_dash import load_trace, trace_model


def test_every_op_graph_matches_trace() -> None:
    model, args, kwargs = build_synthetic("skip")
    t = trace_model(model, args, kwargs=kwargs)
    g = t.to_networkx()
    assert isinstance(g, nx.MultiDiGraph)
    assert set(g.nodes) == {n.id for n in t.graph.nodes}
    assert g.number_of_edges() == len(t.graph.edges)
    lin = next(n for n in t.graph.nodes if n.name == "linear")
    assert g.nodes[lin.id]["kind"] == "op" and g.nodes[lin.id]["label"] == "linear"
    assert g.nodes[lin.id]["qualname"] == "block.fc" and g.nodes[lin.id]["cls"] == "Linear"
    assert g.nodes[lin.id]["error"] is None
    for _, _, d in g.edges(data=True):
        assert isinstance(d["shape"], tuple) and d["dtype"] == "float32"
    assert nx.is_directed_acyclic_graph(g)


def test_depth_collapses_calls_and_keeps_boundary_tensors() -> None:
    model, args, kwargs = REAL_MODELS["gpt2"]()
    t = trace_model(model, args, kwargs=kwargs)
    g1 = t.to_networkx(depth=1)
    kinds = {d["kind"] for _, d in g1.nodes(data=True)}
    assert kinds <= {"input", "output", "op", "parameter", "constant", "module"}
    modules = {n: d for n, d in g1.nodes(data=True) if d["kind"] == "module"}
    assert {d["qualname"] for d in modules.values()} >= {"wte", "wpe", "drop", "h.0", "h.1", "ln_f"}
    assert modules["mod:h.0"]["cls"] == "GPT2Block"
    # the block's edges are exactly the tensors crossing its boundary
    (into,) = list(g1.in_edges("mod:h.1", data=True))
    (out_of,) = list(g1.out_edges("mod:h.1", data=True))
    assert into[0] == "mod:h.0" and into[2]["shape"] == (1, 8, 64)
    assert out_of[1] == "mod:ln_f" and out_of[2]["shape"] == (1, 8, 64)
    assert nx.has_path(g1, "n:0", next(n for n, d in g1.nodes(data=True) if d["kind"] == "output"))
    # depth 0: the whole model is one node between inputs and outputs
    g0 = t.to_networkx(depth=0)
    assert sorted(d["kind"] for _, d in g0.nodes(data=True)) == ["input", "module", "output"]
    assert g0.number_of_edges() == 2
    # deeper depth: more nodes; None: everything
    assert len(g1) < len(t.to_networkx(depth=2)) < len(t.to_networkx(depth=None))


def test_failed_trace_marks_error_and_works_after_load(tmp_path) -> None:
    with pytest.warns(UserWarning):
        t = trace_model(FailingNet(), torch.randn(2, 8))
    path = t.save(tmp_path / "f.json")
    with pytest.warns(UserWarning):
        loaded = load_trace(path)
    g = loaded.to_networkx(depth=1)
    assert "Sizes of tensors" in g.nodes["mod:outer"]["error"]
    assert g.nodes["mod:stem"]["error"] is None
    full = loaded.to_networkx()
    assert "Sizes of tensors" in full.nodes[t.graph.error.node]["error"]


def test_bad_depth() -> None:
    t = trace_model(build_synthetic("mlp")[0], torch.randn(2, 8))
    with pytest.raises(ValueError, match="depth must be a non-negative int or None"):
        t.to_networkx(depth=-1)


@pytest.mark.parametrize("depth", [0, 1, 2, None])
def test_a_builtin_root_collapses_as_the_view_does(depth) -> None:
    """An nn.Sequential model is a built-in root: the view opens it at depth 1, and so does to_networkx."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 2))
    )
    t = trace_model(model, torch.randn(3, 4))
    v = t.view(depth=depth, fold_repeats=False, show_params=True)
    g = t.to_networkx(depth=depth)
    assert set(g.nodes) == {n.id for n in v.nodes}
    assert {(u, w) for u, w, _ in g.edges(keys=True)} == {(e.src, e.dst) for e in v.edges}
