"""The first picture: the page's HTML carries the initial view (the figure's own picture, by URL), painted
before Dash's scripts have run (checked with JavaScript off), and hidden once plotly has drawn the interactive
graph."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from support_app import start, wait_drawn
from support_picture import dark_rows

from torchvista_dash.app.server.firstpaint import PICTURE_ID
from torchvista_dash.app.server.server import make_app
from torchvista_dash.demos import demo_trace


def test_page_html_carries_the_first_view_before_any_script(dot_binary, gallery_url: str) -> None:
    page = requests.get(f"{gallery_url}?demo=gpt", timeout=30).text
    start_at = page.index(f'id="{PICTURE_ID}"')
    assert start_at < page.index("<script src=")
    src = re.search(r'<img src="(/_tvd/picture/[0-9a-f]{32}\.svg)"', page[start_at:]).group(1)
    svg = requests.get(gallery_url.rstrip("/") + src, timeout=30).text  # the picture, at its own URL
    assert svg.startswith("<svg") and "lm_head" in svg and "GPT-style decoder" not in svg
    assert "GPT-style decoder" in page[start_at:]  # the header line after the picture
    # the renderer's layout request starts with the page, not after the scripts
    assert '<link rel="preload" as="fetch" crossorigin="anonymous" href="/_dash-layout">' in page
    # and the figure Dash draws names the same picture, so the browser fetches it once
    layout = requests.get(
        gallery_url + "_dash-layout", headers={"Referer": f"{gallery_url}?demo=gpt"}, timeout=30
    )
    assert src.replace("/", "\\u002f") in layout.text or src in layout.text


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
        img = page.locator(f"#{PICTURE_ID} img")
        page.wait_for_function(
            "(sel) => { const i = document.querySelector(sel); return i.complete && i.naturalWidth > 0; }",
            arg=f"#{PICTURE_ID} img",
            timeout=20_000,
        )
        box = img.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 300
        graph = demo_trace("resnet").graph
        assert graph.model_name in page.inner_text(f"#{PICTURE_ID}")
        plot = page.locator(f"#{PICTURE_ID} .tvd-plot").bounding_box()
        inside = {"x": max(box["x"], plot["x"]), "y": max(box["y"], plot["y"])}
        inside["width"] = min(box["x"] + box["width"], plot["x"] + plot["width"]) - inside["x"]
        inside["height"] = min(box["y"] + box["height"], plot["y"] + plot["height"]) - inside["y"]
        assert len(dark_rows(page, inside)) > 20  # the boxes' labels are painted
        assert page.locator(".js-plotly-plot").count() == 0  # nothing of Dash ran
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
        "e => getComputedStyle(e).backgroundColor"
    ) in ("rgb(17, 17, 17)", "rgba(0, 0, 0, 0)")
    assert picture.evaluate("e => getComputedStyle(e).display") == "none"
    assert picture.evaluate("e => getComputedStyle(e).pointerEvents") == "none"


def test_no_picture_without_a_url_for_it(dot_binary) -> None:
    from torchvista_dash.app.server import firstpaint
    from torchvista_dash.app.traces import registry

    tid = registry.register(demo_trace("mlp"))
    # outside a request of an app serving the picture route, the picture could only be inlined: not sent
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
                    else:
                        page.wait_for_function(
                            "(s) => document.querySelector(s).complete", arg=f"#{PICTURE_ID} img"
                        )
                    selector = ".js-plotly-plot" if js else f"#{PICTURE_ID} .tvd-picture"
                    image = ".js-plotly-plot .imagelayer image" if js else f"#{PICTURE_ID} img"
                    boxes.append(
                        (
                            page.locator(selector).first.bounding_box(),
                            page.locator(image).first.bounding_box(),
                        )
                    )
                finally:
                    ctx.close()
            (picture, image), (plot, drawn) = boxes
            assert all(abs(picture[k] - plot[k]) <= 4 for k in ("x", "y", "width", "height")), (
                url,
                picture,
                plot,
            )
            # the picture's image is where plotly draws the same image, at the same size
            assert all(abs(image[k] - drawn[k]) <= 3 for k in ("x", "y", "width", "height")), (
                url,
                image,
                drawn,
            )
    finally:
        plain.stop()
