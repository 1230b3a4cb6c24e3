"""One module as its own graph: its ops and sub-calls, the tensors entering as inputs and leaving as outputs;
through ``Trace.figure(root=)``, ``export(root=)`` and the CLI's ``export --root``."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchvista_dash.demos import demo_trace
from torchvista_dash.model.focus import focus
from torchvista_dash.view import build as view


def test_a_module_becomes_a_graph_with_its_own_inputs_and_outputs() -> None:
    g = demo_trace("gpt").graph
    f = focus(g, "blocks.1.mlp")
    f.validate()  # a graph like any other: every id it names exists, depths agree with parents
    roots = [c for c in f.module_calls if c.parent is None]
    assert [c.id for c in roots] == ["mod:blocks.1.mlp"] and roots[0].depth == 0
    assert {c.qualname for c in f.module_calls} == {"blocks.1.mlp", *(f"blocks.1.mlp.{i}" for i in range(3))}
    ins = [n for n in f.nodes if n.kind == "input"]
    outs = [n for n in f.nodes if n.kind == "output"]
    assert [n.name for n in ins] == ["blocks.1.ln_2.layer_norm"]  # named for where its tensor comes from
    assert len(outs) == 1 and f.model_name == "GPT-style decoder.blocks.1.mlp"
    ops = {n.id for n in f.nodes if n.kind == "op"}
    assert ops == {
        n.id for n in g.nodes if n.kind == "op" and (n.parent or "").startswith("mod:blocks.1.mlp")
    }
    assert focus(g, "") is g  # the root is the whole model
    drawn = view.build_view(f, view.make_spec(f, depth=None))
    assert drawn.clusters[0].label == "blocks.1.mlp: Sequential"  # the focused root says which module it is


def test_a_module_called_twice_is_focused_by_call_id_and_unknown_names_are_refused() -> None:
    g = demo_trace("gpt").graph
    with pytest.raises(ValueError, match=r"not a module of GPT-style decoder.*did you mean 'blocks.1.mlp'"):
        focus(g, "blocks.1.mpl")
    assert focus(g, "mod:blocks.2").model_name.endswith("blocks.2")


def test_figure_and_export_draw_the_focused_module(tmp_path: Path) -> None:
    t = demo_trace("gpt")
    fig = t.figure(root="blocks.1", depth=1)
    ids = {i for tr in fig.data if tr.customdata is not None for i in tr.customdata}
    assert "mod:blocks.1.attn" in ids and "mod:blocks.2" not in ids and "fold:mod:blocks.0" not in ids
    svg = t.export(tmp_path / "b.svg", root="blocks.1", depth=1).read_text()
    assert "attn: CausalSelfAttention" in svg and "blocks.0.add" in svg  # the input names its producer
    with pytest.raises(TypeError, match="root must be"):
        t.figure(root=3)
