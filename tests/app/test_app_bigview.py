"""A view too tall to read whole, as a user meets it in the app (real Chromium, real server): it opens
readable at the top of the graph, "fit to screen" shows it whole, and a click at a box's corner there still
selects it."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support_app import (
    css_id,
    displayed_ranges,
    graph_dom_id,
    start,
    wait_drawn,
    wait_settled,
    without_page_scripts,
)
from support_models import Tower
from support_picture import drawn_labels, first_picture_labels, target_boxes

from torchvista_dash import trace_model
from torchvista_dash.app.server.firstpaint import PICTURE_ID
from torchvista_dash.app.server.server import make_app

pytestmark = pytest.mark.browser
M = "main"


@pytest.fixture(scope="module")
def tower() -> Any:
    t = trace_model(Tower(), torch.zeros(2, 16))
    srv = start(make_app([t], depth=None, fold_repeats=False))
    try:
        yield srv.url, {n.id for n in t.graph.nodes if n.kind == "input"}
    finally:
        srv.stop()


def _ops_in_plot(page: Any) -> list[dict[str, Any]]:
    got = drawn_labels(page, graph_dom_id(M))
    p = got["plot"]
    return [
        lb
        for lb in got["labels"]
        if " o " in f" {lb['cls']} "
        and p["x0"] <= lb["x0"]
        and lb["x1"] <= p["x1"]
        and p["y0"] <= lb["y0"]
        and lb["y1"] <= p["y1"]
    ]


def test_a_tall_view_opens_readable_at_its_top_and_fits_whole_on_request(page: Any, tower: Any) -> None:
    url, input_ids = tower
    page.goto(url)
    wait_drawn(page, M)
    wait_settled(page, M)
    ops = _ops_in_plot(page)
    assert len(ops) >= 5, "op names are drawn in the first view"
    assert min(lb["size"] for lb in ops) >= 8.0, "at a size a person reads"
    inputs = [b for b in target_boxes(page, graph_dom_id(M), "nodes:labels") if b["id"] in input_ids]
    plot = drawn_labels(page, graph_dom_id(M))["plot"]
    assert any(plot["y0"] <= (b["y0"] + b["y1"]) / 2 <= plot["y1"] for b in inputs), "the input is on screen"
    start_span = displayed_ranges(page, M)[1]

    page.locator(css_id(M, "fit")).click()
    page.wait_for_function(
        "(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');"
        " const r = gd._fullLayout.yaxis.range; return r[1] - r[0] > 3 * a[1]; }",
        arg=[graph_dom_id(M), start_span[1] - start_span[0]],
        timeout=20_000,
    )
    wait_settled(page, M)
    (x0, x1), (y0, y1) = displayed_ranges(page, M)
    boxes = target_boxes(page, graph_dom_id(M), "nodes:labels")
    assert boxes and not _ops_in_plot(page), "whole, the tower is too small for op names"
    # every box is inside the plot now
    assert all(plot["y0"] - 1 <= b["y0"] and b["y1"] <= plot["y1"] + 1 for b in boxes)
    assert y1 - y0 > 3 * (start_span[1] - start_span[0])


def test_the_first_picture_shows_the_same_readable_window(browser: Any, tower: Any) -> None:
    """The server-drawn picture painted before Dash runs starts where the figure will: readable, at the
    top."""
    url, _ = tower
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = ctx.new_page()
        without_page_scripts(page)  # Dash never draws: what shows is the page's own picture
        page.goto(url)
        got = first_picture_labels(page, f"#{PICTURE_ID}")
        p = got["plot"]
        shown = [
            lb
            for lb in got["labels"]
            if " o " in f" {lb['cls']} " and p["y0"] <= lb["y0"] and lb["y1"] <= p["y1"]
        ]
        assert len(shown) >= 5 and min(lb["size"] for lb in shown) >= 8.0
        assert page.locator(".js-plotly-plot").count() == 0
    finally:
        ctx.close()
