"""The metric registry: a new colour-by metric is one entry; collapsed boxes combine their inside."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from support_models import ReuseNet

from torchvista_dash import trace_model
from torchvista_dash.model.metrics import REGISTRY, Metric, register, values_of


@pytest.fixture
def name_length() -> Iterator[Metric]:
    """A metric made up for the test: an op's name length, the longest inside for a call."""
    m = register(
        Metric(
            "name_length",
            "name length",
            lambda v: f"{v:.0f} chars",
            lambda g, n: float(len(n.name)),
            combine="worst",
            share=False,
            scale="linear",
        )
    )
    yield m
    del REGISTRY["name_length"]


def test_a_registered_metric_colours_a_figure_and_a_call_takes_the_worst_inside(name_length: Metric) -> None:
    t = trace_model(ReuseNet().eval(), torch.randn(3, 8))
    values = values_of(t.graph, "name_length")
    for c in t.graph.module_calls:
        inside = [
            len(n.name) for n in t.graph.nodes if n.kind == "op" and c.id in t.graph.ancestors(n.parent)
        ]
        assert values.call[c.id] == (max(inside) if inside else None), c.qualname
    fig = t.figure(color_by="name_length")
    bar = next(tr for tr in fig.data if tr.name == "colorbar").marker.colorbar
    assert bar.title.text == "name length" and all(txt.endswith(" chars") for txt in bar.ticktext)
    hover = next(tr for tr in fig.data if tr.name == "nodes:labels").hovertext
    assert any("name length:</b>" in h and "% of the model" not in h for h in hover)


def test_sums_match_stats_and_an_unknown_metric_names_the_known_ones() -> None:
    t = trace_model(ReuseNet().eval(), torch.randn(3, 8))
    rows = {r["qualname"]: r for r in t.stats()}
    assert values_of(t.graph, "flops").total == rows[""]["flops"] > 0
    assert values_of(t.graph, "params").total == rows[""]["params"] > 0
    with pytest.raises(ValueError, match="color_by must be one of flops, params, bytes, time"):
        t.figure(color_by="watts")
