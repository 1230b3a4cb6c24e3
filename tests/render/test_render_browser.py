"""The exported HTML in a real headless Chromium: it draws, hovers, and clicks carry the visible ids."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import torch
from support_models import build_clip, build_whisper
from support_picture import dark_rows, drawn_labels, label_faults
from support_render import TinyNet, grid_case

from torchvista_dash import trace_model
from torchvista_dash.render import SCROLL_CONFIG, make_figure
from torchvista_dash.render.static.html import HTML_DIV_ID
from torchvista_dash.render.svg.tiles import MIN_TILED_BOXES, OVERLAP, Grid

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
    page.wait_for_function(
        f"document.getElementById('{HTML_DIV_ID}')?._fullLayout?._size !== undefined", timeout=20000
    )
    page.wait_for_selector(".imagelayer image")
    yield page
    ctx.close()


def point_of(page, trace_name: str, item: str, fx: float = 0.5, fy: float = 0.5):
    """(x, y) data coordinates of a point inside the target (a bar) whose customdata is ``item`` in the named
    trace: ``fx``, ``fy`` of the way across and up (0.5, 0.5: its centre)."""
    return page.evaluate(
        """([id, name, item, fx, fy]) => {
      const t = document.getElementById(id).data.find((d) => d.name === name);
      const i = t.customdata.indexOf(item);
      return [t.x[i] + (fx - 0.5) * t.width[i], t.base[i] + fy * t.y[i]]; }""",
        [HTML_DIV_ID, trace_name, item, fx, fy],
    )


def _open_figure(browser: Any, fig: Any, path: Path) -> tuple[Any, Any]:
    """``fig`` written to ``path`` as a standalone page and opened at 1400 x 900 until its picture is
    placed."""
    fig.write_html(
        path, include_plotlyjs=True, div_id=HTML_DIV_ID, config=SCROLL_CONFIG, default_height="100vh"
    )
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    page.goto(path.as_uri())
    page.wait_for_selector(".imagelayer image")
    return ctx, page


def test_exported_html_renders_non_blank(loaded):
    shot = loaded.screenshot()
    stats = loaded.evaluate(COUNT_INK, base64.b64encode(shot).decode())
    assert stats["ink"] > 0.01 and stats["colours"] > 8, stats
    drawn = drawn_labels(loaded, HTML_DIV_ID)
    assert len(drawn["labels"]) >= 6, drawn  # node labels, headers, edge labels, in the picture
    # the figure is one picture and a few traces, not one element per node
    assert loaded.locator(".imagelayer image").count() == 1 and loaded.locator("g.trace").count() <= 3


def test_clicks_carry_visible_ids(loaded):
    loaded.evaluate(LISTEN, HTML_DIV_ID)
    targets = [
        ("clusters:headers", "mod:blocks", 0.03, 0.5),
        ("clusters:headers", "mod:blocks", 0.9, 0.5),
        ("nodes:labels", "mod:head", 0.12, 0.88),
        ("nodes:labels", "n:0", 0.9, 0.1),
    ]
    for name, item, fx, fy in targets:
        x, y = point_of(loaded, name, item, fx, fy)
        px, py = loaded.evaluate(TO_PIXELS, [HTML_DIV_ID, x, y])
        loaded.mouse.move(px, py)
        # plotly throttles hover: click once the pointer is over the point, as a user would
        loaded.wait_for_function("(item) => window.__hovered === item", arg=item, timeout=5000)
        loaded.mouse.click(px, py)
    clicks = loaded.evaluate("window.__clicks")
    assert clicks == [item for _, item, _, _ in targets]


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


def test_zoomed_out_view_draws_no_text_until_zoomed_in(browser, tmp_path):
    """A tall view fitted whole is too small to read: the picture draws no box text (its level of detail),
    only the model's name as an overview label; hover and clicks still work on every box; zoomed in, the
    labels are drawn."""
    g, vg, lay = grid_case(300, cols=2)
    fig = make_figure(g, vg, lay)
    path = tmp_path / "tall.html"
    ctx, page = _open_figure(browser, fig, path)
    try:
        assert drawn_labels(page, HTML_DIV_ID)["labels"], "it starts at a readable window on its top"
        # the whole view with a margin, as "fit to screen" shows it
        page.evaluate(
            "(id) => { const gd = document.getElementById(id),"
            " b = gd._fullLayout.meta.torchvista_dash.bounds;"
            " return Plotly.relayout(gd, {'xaxis.range': [b[0] - 12, b[2] + 12],"
            " 'yaxis.range': [b[1] - 12, b[3] + 12]}); }",
            HTML_DIV_ID,
        )
        whole = drawn_labels(page, HTML_DIV_ID)["labels"]  # only the model's name, as an overview label
        assert [lab["text"] for lab in whole if not lab["cls"].startswith("ov ")] == []
        assert [lab["text"] for lab in whole] == ["GridNet"]
        page.evaluate(LISTEN, HTML_DIV_ID)
        x, y = point_of(page, "nodes:labels", "n:100", 0.85, 0.85)
        px, py = page.evaluate(TO_PIXELS, [HTML_DIV_ID, x, y])
        page.mouse.move(px, py)
        page.wait_for_function("() => window.__hovered === 'n:100'", timeout=5000)
        page.mouse.click(px, py)
        assert page.evaluate("window.__clicks") == ["n:100"]
        cx, cy = point_of(page, "nodes:labels", "n:100")
        page.evaluate(
            "(a) => Plotly.relayout(a[0], {'xaxis.range': [a[1] - 300, a[1] + 300], "
            "'yaxis.range': [a[2] - 200, a[2] + 200]})",
            [HTML_DIV_ID, cx, cy],
        )
        labels = drawn_labels(page, HTML_DIV_ID)["labels"]
        assert any(lab["text"] == "linear" for lab in labels), labels
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


def test_a_big_view_is_tiles_and_a_label_across_their_border_is_drawn_whole(browser, tmp_path):
    """A view bigger than a tile is several images (render/svg/tiles.py); at the start only some are on
    screen, and zoomed in on a box that lies across two tiles, its label is drawn, with ink on both sides of
    the border."""
    g, vg, lay = grid_case(MIN_TILED_BOXES)
    meta = make_figure(g, vg, lay).layout.meta["torchvista_dash"]
    ext, bounds = tuple(meta["picture"]), tuple(meta["bounds"])

    def off_centre(tile: float) -> tuple[float, str, float]:
        """How far the box nearest to a border between columns of tiles has its centre from it."""
        grid = Grid.bounded(ext, bounds, tile, len(vg.nodes))
        borders = [grid.box((i, 0))[2] - OVERLAP for i in range(grid.nx - 1)]
        return min((abs((b[0] + b[2]) / 2 - x), vid, x) for vid, b in lay.nodes.items() for x in borders)

    tile = min(range(700, 1300, 10), key=lambda t: off_centre(float(t))[0])  # a border through a label
    _, vid, border = off_centre(float(tile))
    fig = make_figure(g, vg, lay, tile=float(tile))
    images = [(i.x, i.y - i.sizey, i.x + i.sizex, i.y) for i in fig.layout.images]
    assert len(images) >= 4
    path = tmp_path / "big.html"
    ctx, page = _open_figure(browser, fig, path)
    try:
        drawn = drawn_labels(page, HTML_DIV_ID)
        assert drawn["images"] == len(images)
        on_screen = page.evaluate("""() => {
          const p = document.querySelector('.nsewdrag').getBoundingClientRect();
          return Array.from(document.querySelectorAll('.imagelayer image')).filter((i) => {
            const r = i.getBoundingClientRect();
            return r.left < p.right && p.left < r.right &&
              r.top < p.bottom && p.top < r.bottom; }).length; }""")
        assert 1 <= on_screen < len(images)
        x0, y0, x1, y1 = lay.nodes[vid]
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        page.evaluate(
            "(a) => Plotly.relayout(a[0], {'xaxis.range': [a[1] - 150, a[1] + 150], "
            "'yaxis.range': [a[2] - 100, a[2] + 100]})",
            [HTML_DIV_ID, cx, cy],
        )
        page.wait_for_timeout(300)
        bx, top = page.evaluate(TO_PIXELS, [HTML_DIV_ID, border, y1])
        # only the left tile draws left of where the right one starts, and the other way round
        left_end = page.evaluate(TO_PIXELS, [HTML_DIV_ID, border - OVERLAP, y1])[0] - 1
        right_start = page.evaluate(TO_PIXELS, [HTML_DIV_ID, border + OVERLAP, y1])[0] + 1
        bottom = page.evaluate(TO_PIXELS, [HTML_DIV_ID, cx, y0])[1]
        label = next(
            lab
            for lab in drawn_labels(page, HTML_DIV_ID)["labels"]  # the box's own label
            if lab["cls"].startswith("t ") and lab["x0"] < bx < lab["x1"] and top < lab["y0"] < bottom
        )
        assert label["size"] >= 11.0, label
        h = label["y1"] - label["y0"]
        assert label["x0"] + 10 < left_end and right_start < label["x1"] - 10, (label, left_end, right_start)
        for left, right in ((label["x0"], left_end), (right_start, label["x1"])):
            rows = dark_rows(page, {"x": left, "y": label["y0"], "width": right - left, "height": h})
            assert len(rows) >= h / 3, (left, right, rows)
    finally:
        ctx.close()


@pytest.mark.parametrize("build", [build_whisper, build_clip], ids=["whisper", "clip"])
def test_real_models_labels_never_collide_at_any_zoom(browser, tmp_path, build):
    """Whisper with its KV cache on (eight cache edges side by side, each with a shape) and CLIP (two towers),
    from their configs, at their default view: at the start and zoomed out 1.5× to 16× about the centre, no
    drawn label overlaps another, no overview label covers a box it does not lie in, no box text leaves its
    box (DOM geometry of the drawn picture); zoomed out, the overview names something."""
    m, args, kwargs = build()
    t = trace_model(m, args, kwargs)
    ctx, page = _open_figure(browser, t.figure(), tmp_path / "model.html")
    try:
        assert drawn_labels(page, HTML_DIV_ID)["labels"]
        ranges = page.evaluate(
            "(id) => { const fl = document.getElementById(id)._fullLayout;"
            " return [fl.xaxis.range.slice(), fl.yaxis.range.slice()]; }",
            HTML_DIV_ID,
        )
        kinds = set()
        for f in (1.0, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0):
            (x0, x1), (y0, y1) = ranges
            cx, cy, hx, hy = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) * f / 2, (y1 - y0) * f / 2
            page.evaluate(
                "(a) => Plotly.relayout(a[0], {'xaxis.range': [a[1], a[2]], 'yaxis.range': [a[3], a[4]]})",
                [HTML_DIV_ID, cx - hx, cx + hx, cy - hy, cy + hy],
            )
            page.wait_for_timeout(150)
            assert label_faults(page, HTML_DIV_ID) == [], f
            kinds |= {lab["cls"].split()[0] for lab in drawn_labels(page, HTML_DIV_ID)["labels"]}
        assert {"el", "t", "ov"} <= kinds, kinds
    finally:
        ctx.close()
