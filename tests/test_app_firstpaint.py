"""The first picture: the page's HTML carries the initial view as SVG, painted before Dash's scripts have run
(checked with JavaScript off), and hidden once plotly has drawn the interactive graph."""

from __future__ import annotations

from typing import Any

import pytest
import requests
from support_app import start, wait_drawn

from torchvista_dash.app.firstpaint import PICTURE_ID
from torchvista_dash.app.server import make_app
from torchvista_dash.demos import demo_trace


def test_page_html_carries_the_first_view_before_any_script(dot_binary, gallery_url: str) -> None:
    page = requests.get(f"{gallery_url}?demo=gpt", timeout=30).text
    start_at = page.index(f'id="{PICTURE_ID}"')
    assert start_at < page.index("<script src=")
    picture = page[start_at:page.index("</svg>", start_at)]
    assert "<svg" in picture and "lm_head" in picture and "GPT-style decoder" not in picture
    assert "GPT-style decoder" in page[start_at:]                     # the header line after the picture
    # the renderer's layout request starts with the page, not after the scripts
    assert '<link rel="preload" as="fetch" crossorigin="anonymous" href="/_dash-layout">' in page


def test_pages_without_a_graph_have_no_picture(dot_binary, gallery_url: str) -> None:
    for query in ("?trace=no-such-trace", "?demo=no-such-demo", "?depth=banana"):
        r = requests.get(gallery_url + query, timeout=30)
        assert r.status_code == 200 and PICTURE_ID not in r.text, query


@pytest.mark.browser
def test_picture_is_painted_without_javascript(browser: Any, gallery_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 1300, "height": 850}, java_script_enabled=False)
    try:
        page = ctx.new_page()
        page.goto(f"{gallery_url}?demo=resnet")
        svg = page.locator(f"#{PICTURE_ID} svg")
        box = svg.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 300
        graph = demo_trace("resnet").graph
        assert graph.model_name in page.inner_text(f"#{PICTURE_ID}")
        assert svg.locator("text").count() > 10                        # the boxes' labels are drawn
        assert page.locator(".js-plotly-plot").count() == 0             # nothing of Dash ran
    finally:
        ctx.close()


@pytest.mark.browser
def test_picture_gives_way_to_the_interactive_graph(page: Any, gallery_url: str) -> None:
    page.goto(f"{gallery_url}?demo=mlp&theme=dark")
    picture = page.locator(f"#{PICTURE_ID}")
    # the page, the picture and the figure share one theme table: the same dark background
    assert picture.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(17, 17, 17)"
    wait_drawn(page, "gallery")
    root = page.locator(".tvd-model-graph")
    assert root.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(17, 17, 17)"
    assert page.locator(".js-plotly-plot .main-svg rect.bg, .js-plotly-plot .main-svg").first.evaluate(
        "e => getComputedStyle(e).backgroundColor") in ("rgb(17, 17, 17)", "rgba(0, 0, 0, 0)")
    assert picture.evaluate("e => getComputedStyle(e).display") == "none"
    assert picture.evaluate("e => getComputedStyle(e).pointerEvents") == "none"


def test_too_big_a_picture_is_not_sent(dot_binary, monkeypatch) -> None:
    from torchvista_dash.app import firstpaint, registry

    tid = registry.register(demo_trace("mlp"))
    assert "<svg" in firstpaint.first_picture_html(tid)
    monkeypatch.setattr(firstpaint, "MAX_PICTURE_BYTES", 2_000)      # as if the view had thousands of boxes
    assert firstpaint.first_picture_html(tid) == ""


def test_an_app_can_go_without_the_picture(dot_binary) -> None:
    srv = start(make_app([demo_trace("mlp")], first_picture=False))
    try:
        page = requests.get(srv.url, timeout=30).text
        assert PICTURE_ID not in page and 'rel="preload" as="fetch"' in page
    finally:
        srv.stop()


@pytest.mark.browser
def test_picture_sits_where_the_graph_is_drawn(browser: Any, gallery_url: str) -> None:
    plain = start(make_app([demo_trace("mlp")]))
    try:
        for url in (plain.url, f"{gallery_url}?demo=mlp"):
            boxes = []
            for js in (False, True):
                ctx = browser.new_context(viewport={"width": 1300, "height": 850}, java_script_enabled=js)
                try:
                    page = ctx.new_page()
                    page.goto(url)
                    if js:
                        page.wait_for_selector(".js-plotly-plot .main-svg")
                    selector = ".js-plotly-plot" if js else f"#{PICTURE_ID} .tvd-picture"
                    boxes.append(page.locator(selector).first.bounding_box())
                finally:
                    ctx.close()
            picture, plot = boxes
            assert all(abs(picture[k] - plot[k]) <= 4 for k in ("x", "y", "width", "height")), (url, picture, plot)
    finally:
        plain.stop()
