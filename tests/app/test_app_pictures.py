"""Pictures at their own URL (app/traces/pictures.py): the route answers a stored picture gzipped and
cacheable, refuses bad keys and keeps a bounded store; a big view's page carries its first picture by URL and
paints it before Dash has drawn; a click's answer carries the hit layer, not the picture (real Chromium, real
server, real clicks)."""

from __future__ import annotations

import gc
import json
import random
import re
import time
from typing import Any
from urllib.parse import quote

import dash
import pytest
import requests
import torch
from support_app import click_id, graph_dom_id, start, wait_drawn, wait_ids, wait_settled
from test_app_bigview import Tower

import torchvista_dash
from torchvista_dash import ModelGraph, trace_model
from torchvista_dash.app.actions import exporting
from torchvista_dash.app.http import picture_routes
from torchvista_dash.app.server.server import make_app
from torchvista_dash.app.traces import pictures, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.demos import demo_trace

M = "main"
OLD_LIMIT = 600_000  # the first picture used to be left out of pages over this many bytes of SVG
SRC = re.compile(r'<img src="(/_tvd/picture/([0-9a-f]{32})\.svg)"')


def _svg(i: int, noise: int = 0) -> bytes:
    """A small SVG; ``noise`` random hex digits make it that incompressible."""
    text = random.Random(i).randbytes(noise // 2).hex()
    return f'<svg xmlns="http://www.w3.org/2000/svg"><text>{i} {text}</text></svg>'.encode()


# ---- the store and the route ------------------------------------------------------------------------------
def test_the_store_is_bounded_and_keeps_what_figures_hold() -> None:
    s = pictures.Store(max_bytes=10**9, max_pictures=3)
    held = s.put(_svg(0))  # a cached figure would hold it
    keys = [s.put(_svg(i)).key for i in range(1, 6)]
    assert len(s) == 3 and s.get(keys[0]) is None and s.get(keys[-1]) is not None
    assert s.get(held.key) is held  # out of the LRU, still answered while something holds it
    key = held.key
    del held
    gc.collect()
    s.get(keys[-1])
    for i in range(6, 10):
        s.put(_svg(i))
    assert s.get(key) is None  # nothing holds it any more: gone
    assert s.put(_svg(9)).key == s.put(_svg(9)).key  # the same bytes, the same key
    by_bytes = pictures.Store(max_bytes=10_000, max_pictures=1000)
    for i in range(50):
        by_bytes.put(_svg(i, noise=4_000))  # about 2,200 bytes gzipped each
    assert 0 < by_bytes.nbytes <= 10_000 and 1 <= len(by_bytes) <= 4


@pytest.mark.parametrize(
    "key",
    [
        "z" * 32,
        "0" * 31,
        "0" * 33,
        "A" * 32,
        "0" * 32 + "\n",
        "٠" * 32,
        "0" * 16 + "\x00" + "0" * 15,
        "0" * 4000,
        "0" * 32 + ".svg",
    ],
)
def test_the_route_refuses_bad_keys(picture_server: Any, key: str) -> None:
    r = requests.get(f"{picture_server.url}_tvd/picture/{quote(key)}.svg", timeout=10)
    assert r.status_code == 400 and "32 hex digits" in r.text, (key, r.status_code)


def test_no_path_outside_the_route_serves_a_file(picture_server: Any) -> None:
    for path in (
        "_tvd/picture/..%2f..%2f..%2fetc%2fpasswd",
        "_tvd/picture/%2e%2e/%2e%2e/etc/passwd",
        "_tvd/picture/",
        "_tvd/picture/.svg",
    ):
        r = requests.get(picture_server.url + path, timeout=10)
        assert "svg" not in r.headers.get("Content-Type", "") and b"root:" not in r.content, path


def test_the_route_answers_a_stored_picture_gzipped_and_cacheable(picture_server: Any) -> None:
    page = requests.get(picture_server.url, timeout=30).text
    src, key = SRC.search(page).groups()
    url = picture_server.url.rstrip("/") + src
    r = requests.get(url, timeout=10)  # requests asks for gzip, and unpacks it
    assert r.status_code == 200 and r.headers["Content-Encoding"] == "gzip" and r.content.startswith(b"<svg")
    assert pictures.key_of(r.content) == key  # the key is the hash of the bytes
    assert r.headers["Content-Type"] == "image/svg+xml" and "immutable" in r.headers["Cache-Control"]
    assert (
        r.headers["X-Content-Type-Options"] == "nosniff"
        and "default-src 'none'" in r.headers["Content-Security-Policy"]
    )
    plain = requests.get(url, headers={"Accept-Encoding": "identity"}, timeout=10)
    assert "Content-Encoding" not in plain.headers and plain.content == r.content
    again = requests.get(url, headers={"If-None-Match": r.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and not again.content
    unknown = requests.get(url.replace(key, "0" * 32), timeout=10)
    assert unknown.status_code == 404 and "reload the page" in unknown.text


@pytest.fixture(scope="module")
def picture_server(dot_binary: str) -> Any:
    srv = start(make_app([demo_trace("gpt")]))
    try:
        yield srv
    finally:
        srv.stop()


# ---- figures: URLs in a request of an app with the route, data URIs to stand alone
# --------------------------
def test_figures_name_the_url_under_the_apps_prefix_and_exports_stand_alone(dot_binary: str) -> None:
    trace = demo_trace("mlp")
    app = make_app([trace], requests_pathname_prefix="/user/me/proxy/8050/")  # as behind Jupyter's proxy
    client = app.server.test_client()
    layout = client.get("/_dash-layout", headers={"Accept-Encoding": "identity"}).get_data(as_text=True)
    found = re.search(
        r'"source":"(\\u002fuser\\u002fme\\u002fproxy\\u002f8050\\u002f_tvd\\u002fpicture'
        r'\\u002f([0-9a-f]{32})\.svg)"',
        layout,
    )
    assert found, "the figure names its picture by the URL the browser reaches through the proxy"
    assert "data:image" not in layout
    served = client.get(f"/_tvd/picture/{found.group(2)}.svg")  # the proxy strips its prefix
    assert served.status_code == 200 and served.get_data().startswith(b"<svg")

    store = next(
        p["data"]
        for p in _props(json.loads(layout))
        if isinstance(p.get("id"), dict) and p["id"].get("subcomponent") == "store"
    )
    with app.server.test_request_context("/_dash-update-component", method="POST"):
        page = PageState.from_store(store)
        exported = exporting.current_figure(page)
        live = state.figure_with_ranges(
            page.trace,
            page.spec,
            page.draw,
            page.ranges,
            picture_base=picture_routes.base_url(app),
        )
    assert exported["layout"]["images"][0]["source"].startswith("data:image/svg+xml;base64,")
    assert live["layout"]["images"][0]["source"].startswith("/user/me/proxy/8050/_tvd/picture/")


def test_a_model_graph_in_a_users_app_gets_urls_once_installed(dot_binary: str) -> None:
    trace = demo_trace("mlp")
    plain = dash.Dash(__name__)  # not installed: it works, its pictures travel inside the figures
    plain.layout = lambda: ModelGraph(trace, id="user", app=plain)
    layout = plain.server.test_client().get("/_dash-layout").get_data(as_text=True)
    assert "_tvd\\u002fpicture" not in layout and "data:image\\u002fsvg+xml;base64," in layout
    no_route = plain.server.test_client().get(f"/_tvd/picture/{'0' * 32}.svg")
    assert no_route.content_type.startswith("text/html")  # Dash's page for any other path: no route
    app = torchvista_dash.install(dash.Dash(__name__))
    app.layout = lambda: ModelGraph(trace, id="user", app=app)
    client = app.server.test_client()
    layout = client.get("/_dash-layout").get_data(as_text=True)
    key = re.search(r"_tvd\\u002fpicture\\u002f([0-9a-f]{32})\.svg", layout).group(1)
    assert client.get(f"/_tvd/picture/{key}.svg").status_code == 200
    # a layout built without its app: its figure stands alone
    built = ModelGraph(trace, id="static")
    graph = next(c for c in _walk(built) if getattr(c, "id", None) == ModelGraph.ids.graph("static"))
    assert graph.figure["layout"]["images"][0]["source"].startswith("data:image/svg+xml;base64,")


def _walk(component: Any) -> Any:
    """Every component in a Dash component tree."""
    yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if isinstance(child, dash.development.base_component.Component):
            yield from _walk(child)


def _props(node: Any) -> Any:
    """Every component's props in a layout as JSON."""
    if isinstance(node, dict):
        if "props" in node and "type" in node:
            yield node["props"]
        for v in node.values():
            yield from _props(v)
    elif isinstance(node, list):
        for v in node:
            yield from _props(v)


# ---- a big view in the browser
# ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big(dot_binary: str) -> Any:
    """340 residual layers, every op open: about 1,360 boxes, a picture over the old 600 KB limit (the stack
    is wrapped into columns, whose fitted view needs fewer bands of overview labels than one tall column)."""
    t = trace_model(Tower(340), torch.zeros(2, 16))
    srv = start(make_app([t], depth=None, fold_repeats=False))
    try:
        yield srv.url
    finally:
        srv.stop()


FIRST_PAINT = """() => new Promise(done => {
  new PerformanceObserver(list => {
    const e = list.getEntries().find(e => e.identifier === 'tvd-first-picture');
    if (e) done(e.renderTime || e.loadTime); }).observe({type: 'element', buffered: true});
  setTimeout(() => done(null), 20000); })"""


@pytest.mark.browser
def test_a_big_views_first_picture_is_on_screen_before_dash_draws(browser: Any, big: str) -> None:
    html = requests.get(big, timeout=60).text
    layout = requests.get(big + "_dash-layout", timeout=60).text
    keys = set(re.findall(r"_tvd\\u002fpicture\\u002f([0-9a-f]{32})\.svg", layout))
    assert sum(pictures.store.get(k).size for k in keys) > OLD_LIMIT  # the view's whole picture (its tiles)
    assert SRC.search(html) and len(html.encode()) < 60_000, (
        "the page references the picture, it does not carry it"
    )
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(big, wait_until="commit")
        page.wait_for_function(
            "(d) => { const h = document.getElementById(d);"
            " return h && h.querySelector('.js-plotly-plot .main-svg'); }",
            arg=graph_dom_id(M),
            polling="raf",
            timeout=60_000,
        )
        dash_drawn = page.evaluate("performance.now()")
        painted = page.evaluate(FIRST_PAINT)
        assert painted is not None, "the first picture was painted"
        assert painted < dash_drawn, (painted, dash_drawn)
        wait_drawn(page, M)
        loaded = page.evaluate(
            "() => performance.getEntriesByType('resource').filter(e => e.name.includes("
            "'/_tvd/picture/')).map(e => e.name)"
        )
        first = {m.group(1) for m in SRC.finditer(html)}
        assert len(loaded) == len(set(loaded)), (
            "each picture fetched once: plotly drew the first's from the cache"
        )
        assert all(any(u.endswith(f) for u in loaded) for f in first)
    finally:
        ctx.close()


@pytest.mark.browser
def test_a_clicks_answer_carries_the_hit_layer_not_the_picture(page: Any, big: str) -> None:
    page.goto(big)
    wait_drawn(page, M)
    wait_settled(page, M)
    answers: list[Any] = []
    page.on("requestfinished", lambda r: answers.append(r) if "_dash-update-component" in r.url else None)
    fetched: list[Any] = []
    page.on("response", lambda r: fetched.append(r) if "/_tvd/picture/" in r.url else None)
    click_id(page, M, "mod:layers.0", ("clusters:headers",))  # close the first layer
    wait_ids(page, M, "nodes:labels", present=("mod:layers.0",))
    deadline = time.time() + 20
    while not fetched and time.time() < deadline:
        page.wait_for_timeout(50)
    figure = max(answers, key=lambda r: r.sizes()["responseBodySize"])
    body = figure.response().text()
    assert '"figure"' in body and "data:image" not in body
    picture = fetched[-1]
    assert picture.status == 200 and picture.headers.get("content-encoding") == "gzip"
    keys = set(re.findall(r"picture(?:/|\\u002f)([0-9a-f]{32})\.svg", body))
    assert keys and all(pictures.store.get(k) is not None for k in keys)
    svg_bytes = sum(pictures.store.get(k).size for k in keys)  # the new view's whole picture, its tiles
    on_wire = figure.sizes()["responseBodySize"]
    assert on_wire < svg_bytes / 4, (on_wire, svg_bytes)  # what it used to carry, base64'd, besides the rest
    assert figure.response().headers.get("content-encoding") == "gzip"
