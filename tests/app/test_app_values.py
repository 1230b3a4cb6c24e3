"""A value trace in the app: the details panel lists each output's summary."""

from __future__ import annotations

import torch
from support_models import InPlaceNet

from torchvista_dash import trace_model


def _text(vid: str, t) -> str:  # type: ignore[no-untyped-def]
    from dash import html

    from torchvista_dash.app.actions.details import details
    from torchvista_dash.app.traces import registry

    return str(html.Div(details(registry.register(t), vid)).to_plotly_json())


def test_details_of_an_op_and_a_module_list_their_values() -> None:
    torch.manual_seed(0)
    t = trace_model(InPlaceNet().eval(), torch.randn(2, 8), values=True)
    linear = next(n for n in t.graph.nodes if n.name == "linear")
    s = linear.values[0]
    text = _text(linear.id, t)
    assert "'values'" in text and f"min {s.min:.4g}, max {s.max:.4g}" in text and "zeros 0 %" in text
    assert "min " in _text("mod:fc", t)  # the call's output
    plain = trace_model(InPlaceNet().eval(), torch.randn(2, 8))
    assert "'values'" not in _text(linear.id, plain)
