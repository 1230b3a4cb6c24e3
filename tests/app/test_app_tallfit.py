"""A stack of 200 layers, every op open, as a user meets it in the app (real Chromium, real server): the
layout wraps the stack into columns, so "fit to screen" shows it whole at a zoom where the layers' overview
labels are drawn at a readable size, instead of a sliver a few pixels wide."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support_app import css_id, displayed_ranges, graph_dom_id, start, wait_drawn, wait_settled
from support_models import Tower
from support_picture import drawn_labels

from torchvista_dash import trace_model
from torchvista_dash.app.server.server import make_app

pytestmark = pytest.mark.browser
M = "main"
LAYERS = 200


@pytest.fixture(scope="module")
def tall() -> Any:
    t = trace_model(Tower(LAYERS), torch.zeros(2, 16))
    srv = start(make_app([t], depth=None, fold_repeats=False))
    try:
        yield srv.url, t
    finally:
        srv.stop()


def test_fit_to_screen_shows_a_long_stack_whole_with_its_layers_named(page: Any, tall: Any) -> None:
    url, t = tall
    lay = t.layout(t.view(depth=None, fold_repeats=False))
    assert 0.3 < lay.width / lay.height < 3.0, (lay.width, lay.height)  # wrapped: no sliver
    page.goto(url)
    wait_drawn(page, M)
    wait_settled(page, M)
    page.locator(css_id(M, "fit")).click()
    page.wait_for_function(
        "(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');"
        " const r = gd._fullLayout.yaxis.range; return r[1] - r[0] >= a[1]; }",
        arg=[graph_dom_id(M), lay.height],
        timeout=20_000,
    )
    wait_settled(page, M)
    (x0, x1), (y0, y1) = displayed_ranges(page, M)
    assert x0 <= 0 and x1 >= lay.width and y0 <= 0 and y1 >= lay.height  # the whole drawing
    got = drawn_labels(page, graph_dom_id(M))
    plot = got["plot"]
    names = [
        lb
        for lb in got["labels"]
        if lb["cls"].startswith("ov") and plot["x0"] <= lb["x0"] and lb["x1"] <= plot["x1"]
    ]
    layers = {lb["text"] for lb in names if lb["text"].startswith("layers.")}
    # fitted, a row of the grid is tall enough on screen for a layer's name at the overview size: every row
    # is named (in one column, 200 layers were each a few pixels high)
    assert len(layers) >= 10, sorted(layers)[:5]
    assert min(lb["size"] for lb in names) >= 6.5
