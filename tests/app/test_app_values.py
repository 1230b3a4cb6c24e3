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


def test_first_nonfinite_button_opens_selects_and_centres_it(page) -> None:  # type: ignore[no-untyped-def]
    from support_app import (
        css_id,
        graph_dom_id,
        ids_drawn,
        screen_xy,
        start,
        wait_drawn,
        wait_settled,
    )
    from support_models import NaNTower

    from torchvista_dash.app.server.server import make_app

    torch.manual_seed(0)
    t = trace_model(NaNTower().eval(), torch.randn(2, 16), values=True)
    first = t.first_nonfinite()
    assert first is not None and first.qualname == "layers.7"
    srv = start(make_app([t], fold_repeats=False))
    try:
        page.goto(srv.url)
        wait_drawn(page, "main")
        wait_settled(page, "main")
        assert first.node not in ids_drawn(page, "main", "nodes:labels")  # inside a closed layer
        page.click(css_id("main", "first_nonfinite"))
        page.wait_for_function(
            "(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');"
            " const t = (gd.data || []).find(t => t.name === 'nodes:labels');"
            " return t && Array.from(t.customdata || []).includes(a[1]); }",
            arg=[graph_dom_id("main"), first.node],
            timeout=20_000,
        )
        wait_settled(page, "main")
        # selected: its details are shown, with its NaN/Inf counts
        page.wait_for_function(
            "(d) => document.getElementById(d).innerText.includes('Inf')",
            arg=graph_dom_id("main", "details"),
            timeout=20_000,
        )
        text = page.inner_text(css_id("main", "details"))
        assert "div" in text and "layers.7" in text and "NaN" in text
        # centred: the op's box sits in the middle of the plot
        x, y = screen_xy(page, "main", first.node)
        box = page.locator(css_id("main", "graph")).bounding_box()
        assert abs(x - (box["x"] + box["width"] / 2)) < 0.1 * box["width"]
        assert abs(y - (box["y"] + box["height"] / 2)) < 0.1 * box["height"]
        # colour by NaN/Inf from the menu: the picture is painted, with its colour bar
        page.click(css_id("main", "color_by"))
        page.get_by_text("colour by: NaN/Inf", exact=True).click()
        page.wait_for_function(
            "(d) => document.getElementById(d).querySelector('.js-plotly-plot').data"
            ".some(t => t.name === 'colorbar')",
            arg=graph_dom_id("main"),
            timeout=20_000,
        )
        assert "app-error" not in page.content()
        page.screenshot(path="/tmp/first_nonfinite.png")
    finally:
        srv.stop()


def test_the_colour_by_menu_offers_the_value_metrics_of_a_value_trace_only() -> None:
    from torchvista_dash.app.component.component import color_by_control

    def menu(t):  # type: ignore[no-untyped-def]
        return {
            o["label"]: o.get("disabled", False) for o in color_by_control({"id": 1}, t.graph, None).options
        }

    valued = menu(trace_model(InPlaceNet().eval(), torch.randn(2, 8), values=True))
    plain = menu(trace_model(InPlaceNet().eval(), torch.randn(2, 8)))
    for label in ("colour by: largest |value|", "colour by: std of values", "colour by: fraction of zeros"):
        assert valued[label] is False and plain[label] is True
    assert valued["colour by: NaN/Inf"] is False and valued["colour by: gradient norm"] is True
