"""The Trace facade as a user calls it: figure options reach the renderer, view options the view."""

from __future__ import annotations

import pytest
import torch
from support_models import MLP
from torch import nn

from torchvista_dash import load_trace, trace_model


def test_figure_takes_render_and_view_options(dot_binary):
    t = trace_model(MLP(), torch.randn(2, 8))
    fig = t.figure(depth=1, labels=True, details=True, highlight="mod:layers", show_params=True)
    ids = {c for tr in fig.data if tr.customdata is not None for c in tr.customdata}
    assert "mod:layers" in ids
    assert any(tr.name and "highlight" in tr.name for tr in fig.data)
    params = {n.id for n in t.graph.nodes if n.kind == "parameter"}
    every_op = t.figure(depth=None, show_params=True)
    shown = {c for tr in every_op.data if tr.customdata is not None for c in tr.customdata}
    assert params and params <= shown  # show_params reached the view
    hidden = {c for tr in t.figure(depth=None).data if tr.customdata is not None for c in tr.customdata}
    assert not params & hidden


def test_saved_trace_draws_without_retracing(tmp_path, dot_binary):
    t = trace_model(MLP(), torch.randn(2, 8))
    t2 = load_trace(t.save(tmp_path / "t.json"))
    assert t2.graph == t.graph and t2.id == t.id
    fig = t2.figure(depth=None)
    ids = {c for tr in fig.data if tr.customdata is not None for c in tr.customdata}
    assert {n.id for n in t.view(depth=None).nodes} <= ids


def test_raise_if_failed_on_a_loaded_failed_trace(tmp_path):
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat([x, x.T], dim=0)

    with pytest.warns(UserWarning):
        t = trace_model(Broken(), torch.randn(2, 3))
    with pytest.raises(RuntimeError):
        t.raise_if_failed()
    with pytest.warns(UserWarning, match="failed"):
        t2 = load_trace(t.save(tmp_path / "bad.json"))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match|cat"):
        t2.raise_if_failed()


def test_stats_as_frame_is_a_dataframe_of_the_same_rows_with_the_root_as_the_totals() -> None:
    import pandas as pd

    from torchvista_dash.demos import demo_trace

    t = demo_trace("gpt")
    rows = t.stats()
    frame = t.stats(as_frame=True)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [
        "qualname",
        "cls",
        "calls",
        "params",
        "param_bytes",
        "flops",
        "output_bytes",
        "time_ms",
    ]
    assert len(frame) == len(rows) and frame["qualname"].tolist() == [r["qualname"] for r in rows]
    root = frame.iloc[0]
    assert root["qualname"] == "" and root["cls"] == "TinyGPT"
    assert root["params"] == t.graph.total_params > 0
    assert root["flops"] == sum(n.flops for n in t.graph.nodes if n.flops) > 0
    blocks = frame[frame["cls"] == "GPTBlock"]
    assert len(blocks) == 4 and blocks["flops"].sum() < root["flops"]
    assert frame["time_ms"].isna().all()  # not timed


def test_stats_as_frame_without_pandas_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from torchvista_dash.demos import demo_trace

    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without pandas raises
    t = demo_trace("mlp")
    with pytest.raises(ImportError, match=r"needs pandas \(pip install pandas\)"):
        t.stats(as_frame=True)
    assert t.stats()[0]["qualname"] == ""


def test_a_graph_built_in_memory_is_checked_like_a_loaded_file() -> None:
    """A parent cycle made in code (not read from a file) is refused when it becomes a Trace or a ModelGraph,
    with the same message a file gets, instead of hanging the first view."""
    import dataclasses

    from support_graphs import nested_graph

    from torchvista_dash import Trace, TraceFormatError
    from torchvista_dash.app.component.component import ModelGraph

    g = nested_graph()
    assert Trace(g).graph is g  # a good graph passes
    root, last = g.module_calls[0], g.module_calls[-1]
    cyclic = dataclasses.replace(
        g, module_calls=(dataclasses.replace(root, parent=last.id), *g.module_calls[1:])
    )
    with pytest.raises(TraceFormatError, match="parent cycle"):
        Trace(cyclic)
    with pytest.raises(TraceFormatError, match="parent cycle"):
        ModelGraph(cyclic)
    dangling = dataclasses.replace(
        g, nodes=(g.nodes[0], dataclasses.replace(g.nodes[1], parent="mod:nosuch"), *g.nodes[2:])
    )
    with pytest.raises(TraceFormatError, match="unknown parent 'mod:nosuch'"):
        Trace(dangling)
    with pytest.raises(TypeError, match="Trace needs a Graph, not dict"):
        Trace({"nodes": []})  # type: ignore[arg-type]
