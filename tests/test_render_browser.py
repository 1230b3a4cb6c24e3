"""The exported HTML in a real headless Chromium: it draws, hovers, and clicks carry the visible ids."""

from __future__ import annotations

import base64

import pytest
import torch
from support_render import TinyNet, grid_case

from torchvista_dash import trace_model
from torchvista_dash.render import SCROLL_CONFIG, make_figure
from torchvista_dash.render.export import HTML_DIV_ID

pytestmark = pytest.mark.browser

# Decodes a screenshot in the page itself (no image library needed) and counts non-background pixels.
COUNT_INK = """async (b64) => {
  const img = new Image(); img.src = 'data:image/png;base64,' + b64; await img.decode();
  const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, c.width, c.height).data;
  let ink = 0; const colours = new Set();
  for (let i = 0; i < d.length; i += 4) {
    if (Math.abs(d[i] - d[0]) + Math.abs(d[i+1] - d[1]) + Math.abs(d[i+2] - d[2]) > 30) ink++;
    if (i % 40 === 0) colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
  }
  return {ink: ink / (d.length / 4), colours: colours.size};
}"""

# Pixel position (page coordinates) of a data point of the plotly graph div.
TO_PIXELS = """([id, x, y]) => {
  const gd = document.getElementById(id); const fl = gd._fullLayout; const r = gd.getBoundingClientRect();
  return [r.left + fl._size.l + fl.xaxis.l2p(x), r.top + fl._size.t + fl.yaxis.l2p(y)];
}"""

LISTEN = """(id) => { window.__clicks = []; window.__hovered = null; const gd = document.getElementById(id);
  gd.on('plotly_hover', (e) => { window.__hovered = e.points[0].customdata; });
  gd.on('plotly_click', (e) => window.__clicks.push(e.points[0].customdata)); }"""


@pytest.fixture(scope="module")
def html_file(tmp_path_factory, dot_binary):
    torch.manual_seed(0)
    t = trace_model(TinyNet(), torch.randn(2, 8))
    path = tmp_path_factory.mktemp("html") / "tiny.html"
    t.to_html(path, depth=1, expanded=["blocks"])
    return path


@pytest.fixture(scope="module")
def loaded(browser, html_file):
    """The exported file opened once for the module (loading 4.8 MB of plotly.js is the slow part)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    page.goto(html_file.as_uri())
    page.wait_for_function(f"document.getElementById('{HTML_DIV_ID}')?._fullLayout?._size !== undefined",
                           timeout=20000)
    page.wait_for_selector(".textpoint")
    yield page
    ctx.close()


def point_of(page, trace_name: str, item: str):
    """(x, y) data coordinates of the point whose customdata is ``item`` in the named trace."""
    return page.evaluate("""([id, name, item]) => {
      const t = document.getElementById(id).data.find((d) => d.name === name);
      const i = t.customdata.indexOf(item); return [t.x[i], t.y[i]]; }""", [HTML_DIV_ID, trace_name, item])


def test_exported_html_renders_non_blank(loaded):
    shot = loaded.screenshot()
    stats = loaded.evaluate(COUNT_INK, base64.b64encode(shot).decode())
    assert stats["ink"] > 0.01 and stats["colours"] > 8, stats
    assert loaded.locator(".textpoint").count() >= 6             # node labels, headers, toggles, edge labels
    # the figure is one path per style, not one element per node
    assert loaded.locator("g.trace.scatter").count() <= 25


def test_clicks_carry_visible_ids(loaded):
    loaded.evaluate(LISTEN, HTML_DIV_ID)
    targets = [("clusters:toggles", "mod:blocks"), ("clusters:headers", "mod:blocks"),
               ("nodes:labels", "mod:head"), ("nodes:labels", "n:0")]
    for name, item in targets:
        x, y = point_of(loaded, name, item)
        px, py = loaded.evaluate(TO_PIXELS, [HTML_DIV_ID, x, y])
        loaded.mouse.move(px, py)
        # plotly throttles hover: click once the pointer is over the point, as a user would
        loaded.wait_for_function("(item) => window.__hovered === item", arg=item, timeout=5000)
        loaded.mouse.click(px, py)
    clicks = loaded.evaluate("window.__clicks")
    assert clicks == [item for _, item in targets]


def test_hover_shows_module_details(loaded):
    x, y = point_of(loaded, "nodes:labels", "mod:head")
    px, py = loaded.evaluate(TO_PIXELS, [HTML_DIV_ID, x, y])
    loaded.evaluate(LISTEN, HTML_DIV_ID)
    loaded.mouse.move(5, 5)
    loaded.mouse.move(px, py)
    loaded.wait_for_function("() => window.__hovered === 'mod:head'", timeout=5000)
    hover = loaded.locator(".hoverlayer .hovertext")
    hover.wait_for(timeout=5000)
    text = hover.text_content()
    assert "module: head (Linear)" in text and "2×4 float32" in text


def test_zoomed_out_view_hides_labels_until_the_labels_button(browser, tmp_path):
    """A tall view starts without text (it would only overlap); hover and clicks still work; the
    plotly "labels" button shows the labels and hides them again."""
    g, vg, lay = grid_case(300, cols=2)
    fig = make_figure(g, vg, lay)
    path = tmp_path / "tall.html"
    fig.write_html(path, include_plotlyjs=True, div_id=HTML_DIV_ID, config=SCROLL_CONFIG, default_height="100vh")
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(path.as_uri())
        page.wait_for_selector(".updatemenu-button")
        n_labels = 'document.querySelectorAll(".textpoint").length'
        assert page.evaluate(n_labels) == len(vg.clusters)                 # only the ⊖ toggles have text
        page.evaluate(LISTEN, HTML_DIV_ID)
        x, y = point_of(page, "nodes:labels", "n:100")
        px, py = page.evaluate(TO_PIXELS, [HTML_DIV_ID, x, y])
        page.mouse.move(px, py)
        page.wait_for_function("() => window.__hovered === 'n:100'", timeout=5000)
        page.mouse.click(px, py)
        assert page.evaluate("window.__clicks") == ["n:100"]
        button = page.locator(".updatemenu-button").bounding_box()
        bx, by = button["x"] + button["width"] / 2, button["y"] + button["height"] / 2
        page.mouse.click(bx, by)
        page.wait_for_function(f"() => {n_labels} >= {len(vg.nodes)}", timeout=5000)
        page.mouse.click(bx, by)
        page.wait_for_function(f"() => {n_labels} == {len(vg.clusters)}", timeout=5000)
    finally:
        ctx.close()


def test_equal_aspect_and_whole_graph_in_view(loaded):
    """One data unit is as many pixels across as up (boxes never stretch), and every box is on screen."""
    fl = loaded.evaluate(f"""() => {{ const fl = document.getElementById('{HTML_DIV_ID}')._fullLayout;
      return {{mx: fl.xaxis._m, my: fl.yaxis._m, xr: fl.xaxis.range, yr: fl.yaxis.range,
               bounds: fl.meta.torchvista_dash.bounds}}; }}""")
    assert abs(abs(fl["mx"]) - abs(fl["my"])) < 1e-6 * abs(fl["mx"])
    x0, y0, x1, y1 = fl["bounds"]
    assert fl["xr"][0] <= x0 and x1 <= fl["xr"][1] and fl["yr"][0] <= y0 and y1 <= fl["yr"][1]
