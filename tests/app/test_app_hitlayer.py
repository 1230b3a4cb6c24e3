"""The hit bars the app sends (app/actions/hitlayer.py, render/hits.py): only those near the viewport and big
enough to click, bounded whatever the view's size, renewed after a zoom or pan that leaves them, without
moving the user's zoom; in a real headless Chromium, a box far from where the view starts is clicked after
panning to it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import torch
from dash import no_update
from support_app import (
    css_id,
    displayed_ranges,
    graph_dom_id,
    ids_drawn,
    start,
    wait_drawn,
    wait_ids,
    wait_settled,
)
from support_models import Tower

from torchvista_dash import trace_model
from torchvista_dash.app.actions import exporting, hitlayer, viewstep
from torchvista_dash.app.server.server import make_app
from torchvista_dash.app.traces import registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.model.options import DrawOptions, ViewOptions
from torchvista_dash.render import hits, viewport

M = "main"


EVERY_OP = ViewOptions(depth=None, fold_repeats=False)


@pytest.fixture(scope="module")
def tower() -> Any:
    return trace_model(Tower(260), torch.zeros(2, 16))


@pytest.fixture(scope="module")
def sent(tower: Any) -> dict[str, Any]:
    """The tower's first view as the app sends it: its store, figure and hits record."""
    tid = registry.register(tower)
    spec = state.drawn_spec(tid, state.initial_spec(tid, EVERY_OP))
    draw = DrawOptions()
    ranges = state.start_ranges(state.layout_of(tid, spec, draw.rankdir))
    fig, record = hitlayer.sent_figure(tid, spec, draw, ranges, 0)
    data = PageState(trace=tid, spec=spec, draw=draw, ranges=ranges)
    return {
        "tid": tid,
        "spec": spec,
        "draw": draw,
        "ranges": ranges,
        "fig": fig,
        "hits": record,
        "data": data,
        "layout": state.layout_of(tid, spec, draw.rankdir),
        "vg": state.visible(tid, spec),
    }


def _grid_bars(n_side: int, w: float = 90.0, h: float = 36.0, gap: float = 20.0) -> list[dict[str, Any]]:
    boxes = [
        (i * (w + gap), j * (h + gap), i * (w + gap) + w, j * (h + gap) + h)
        for j in range(n_side)
        for i in range(n_side)
    ]
    return [hits.bars(hits.NODES, boxes, [f"n{k}" for k in range(len(boxes))], [""] * len(boxes))]


def _bar_boxes(data: list[dict[str, Any]]) -> dict[str, tuple[float, float, float, float]]:
    return {
        cid: (x - bw / 2, base, x + bw / 2, base + bh)
        for t in data
        if hits.is_hit_trace(t)
        for x, bw, base, bh, cid in zip(t["x"], t["width"], t["base"], t["y"], t["customdata"], strict=True)
    }


def test_the_bars_sent_are_bounded_for_a_huge_view() -> None:
    """250,000 boxes: at the whole view and at any zoom the figure carries at most MAX_BARS, and at a readable
    zoom every box overlapping the viewport that is drawn big enough to click is among them."""
    data = _grid_bars(500)
    side = 500 * 110.0
    whole = [[0.0, side], [0.0, side * 0.56]]
    out, record = hitlayer.culled(data, whole, 3)
    assert hits.count(out) <= hitlayer.MAX_BARS and record["rev"] == 3
    assert hitlayer.covers(record, whole, 3)
    for span_x in (20_000.0, 2_000.0, 1_100.0):
        view = [[10_000.0, 10_000.0 + span_x], [12_000.0, 12_000.0 + span_x * 0.64]]
        out, record = hitlayer.culled(data, view, 0)
        assert hits.count(out) <= hitlayer.MAX_BARS
        assert record["capped"] == (span_x > 10_000), "tens of thousands of equal boxes in view: none sent"
        if record["capped"]:
            continue
        floor = hitlayer.MIN_PX / viewport.scale(view, hitlayer.PLOT_PX)
        (x0, x1), (y0, y1) = view
        want = {
            cid
            for cid, b in _bar_boxes(data).items()
            if min(b[2] - b[0], b[3] - b[1]) >= floor
            and b[2] >= x0
            and b[0] <= x1
            and b[3] >= y0
            and b[1] <= y1
        }
        assert want <= set(_bar_boxes(out)), f"boxes in view missing at a view {span_x:.0f} points wide"
    assert hitlayer.culled(data, view, 0) == hitlayer.culled(data, view, 0)  # deterministic


def test_a_small_view_keeps_every_bar() -> None:
    data = _grid_bars(20)
    out, record = hitlayer.culled(data, [[0.0, 100.0], [0.0, 64.0]], 1)
    assert out is data and record == {"rev": 1, "all": True}
    assert hitlayer.covers(record, [[-1e6, 1e6], [-1e6, 1e6]], 1)


def test_what_the_bars_cover_and_when_they_are_renewed() -> None:
    data = _grid_bars(100)
    view = [[1000.0, 2100.0], [1000.0, 1700.0]]
    _, record = hitlayer.culled(data, view, 5)
    assert hitlayer.covers(record, view, 5)
    assert not hitlayer.covers(record, view, 6), "a newer figure's bars are not these"
    assert hitlayer.covers(record, [[1500.0, 2600.0], [1300.0, 2000.0]], 5), "half a view away: still covered"
    assert not hitlayer.covers(record, [[4000.0, 5100.0], [1000.0, 1700.0]], 5), "three views away"
    assert not hitlayer.covers(record, [[1500.0, 1600.0], [1300.0, 1364.0]], 5), "zoomed in 11x"
    assert not hitlayer.covers(None, view, 5)


def test_the_apps_figure_carries_the_bars_near_its_start_and_exports_carry_all(sent: dict[str, Any]) -> None:
    vg, fig = sent["vg"], sent["fig"]
    total = len(vg.nodes) + len(vg.clusters)
    assert len(vg.nodes) >= 1000 and total >= hitlayer.MIN_CULLED
    assert 0 < hits.count(fig["data"]) < total / 5
    assert fig["layout"]["uirevision"] == state.uirevision(0)
    x0, x1 = sorted(sent["ranges"][0])
    y0, y1 = sorted(sent["ranges"][1])
    in_view = {
        vid
        for vid, b in sent["layout"].nodes.items()
        if b[2] >= x0 and b[0] <= x1 and b[3] >= y0 and b[1] <= y1
    }
    assert in_view and in_view <= set(_bar_boxes(fig["data"]))
    assert json.dumps(fig, sort_keys=True) == json.dumps(
        hitlayer.sent_figure(sent["tid"], sent["spec"], sent["draw"], sent["ranges"], 0)[0], sort_keys=True
    )
    # an exported page has no server behind it: every bar
    page = exporting.current_figure(sent["data"])
    assert hits.count(page["data"]) == total


def test_a_far_pan_is_answered_with_the_bars_there_and_nothing_else(sent: dict[str, Any]) -> None:
    data, record = sent["data"], sent["hits"]
    (x0, x1), (y0, y1) = sent["ranges"]
    h = y1 - y0
    assert hitlayer.renew(None, data, record) == (no_update, no_update), "the figure just sent is covered"
    near = {
        "xaxis.range[0]": x0,
        "xaxis.range[1]": x1,
        "yaxis.range[0]": y0 - h / 2,
        "yaxis.range[1]": y1 - h / 2,
    }
    assert hitlayer.renew(near, data, record) == (no_update, no_update)
    # the view's far corner from where it starts (the foot of the tower's last column), however its stack is
    # wrapped: a view of the start's size there, several views away from the start
    lay = sent["layout"]
    fx0, fy0 = lay.width - (x1 - x0), min(b[1] for b in lay.nodes.values())
    fx1, fy1 = fx0 + (x1 - x0), fy0 + h
    assert not hitlayer.covers(record, [[fx0, fx1], [fy0, fy1]], 0), "the far corner is not near the start"
    far = {"xaxis.range[0]": fx0, "xaxis.range[1]": fx1, "yaxis.range[0]": fy0, "yaxis.range[1]": fy1}
    fig, new = hitlayer.renew(far, data, record)
    ops = fig.to_plotly_json()["operations"]
    assert ops and all(op["location"][0] == "data" for op in ops), "the Patch touches the hit traces only"
    shown = _bar_boxes([op["params"]["value"] for op in ops])
    there = {
        vid for vid, b in lay.nodes.items() if b[2] >= fx0 and b[0] <= fx1 and b[1] <= fy1 and b[3] >= fy0
    }
    assert there and there <= set(shown) and not there & set(_bar_boxes(sent["fig"]["data"]))
    assert hitlayer.covers(new, [[fx0, fx1], [fy0, fy1]], 0)


def test_a_view_change_that_only_moves_the_ranges_sends_the_bars_there(sent: dict[str, Any]) -> None:
    """ "Fit to screen": a Patch of the ranges, a new uirevision (the ranges win over the user's zoom) and the
    hit bars at the whole view."""
    out = viewstep.answer("fit", 1, sent["data"], None)
    new_data, record = PageState.from_store(out.store), out.hits
    ops = {tuple(op["location"]): op["params"]["value"] for op in out.figure.to_plotly_json()["operations"]}
    assert ops[("layout", "uirevision")] == state.uirevision(1) and new_data.rev == 1
    assert any(loc[0] == "data" for loc in ops)
    assert record["rev"] == 1 and hitlayer.covers(record, new_data.ranges, 1)


# ---- in the browser ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tower_url(tower: Any) -> Any:
    srv = start(make_app([tower], depth=None, fold_repeats=False))
    try:
        yield srv.url
    finally:
        srv.stop()


def _drag(page: Any, fraction: float) -> None:
    """Pan like a user: press in the plot, move up by ``fraction`` of its height in steps, release."""
    plot = page.locator(css_id(M, "graph") + " .nsewdrag").first.bounding_box()
    x, y = plot["x"] + plot["width"] * 0.5, plot["y"] + plot["height"] * 0.9
    page.mouse.move(x, y)
    page.mouse.down()
    for i in range(1, 11):
        page.mouse.move(x, y - plot["height"] * fraction * i / 10)
    page.mouse.up()
    wait_settled(page, M, quiet_s=0.3)


def _bar_centre(page: Any, trace: str, vid: str) -> tuple[float, float] | None:
    return page.evaluate(
        """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
      const t = gd.data.find(t => t.name === a[1]); const i = t ? Array.from(t.customdata).indexOf(a[2]) : -1;
      if (i < 0) return null; const fl = gd._fullLayout, r = gd.getBoundingClientRect();
      return [r.left + fl._size.l + fl.xaxis.l2p(t.x[i]),
              r.top + fl._size.t + fl.yaxis.l2p(t.base[i] + t.y[i] / 2)];
    }""",
        [graph_dom_id(M), trace, vid],
    )


def _hover_click(page: Any, xy: tuple[float, float], vid: str) -> None:
    page.mouse.move(xy[0] - 2, xy[1])
    page.mouse.move(*xy)
    page.wait_for_function(
        "(a) => (document.getElementById(a[0]).querySelector('.js-plotly-plot')._hoverdata || [])"
        ".some(p => p.customdata === a[1])",
        arg=[graph_dom_id(M), vid],
        timeout=20_000,
    )
    page.mouse.click(*xy)


@pytest.mark.browser
def test_after_panning_far_a_box_there_is_clickable(page: Any, tower_url: str, tower: Any) -> None:
    """The first figure has no bars a few views below where it starts; dragging the view there brings them
    (the user's zoom stays where the drag left it), and clicking a box there selects it, clicking a layer's
    header there closes that layer."""
    page.goto(tower_url, timeout=60_000)
    page.wait_for_function(
        "(d) => { const h = document.getElementById(d); const gd = h && h.querySelector("
        "'.js-plotly-plot'); return !!(gd && gd.querySelector('.barlayer .trace')); }",
        arg=graph_dom_id(M),
        timeout=60_000,
    )
    wait_drawn(page, M)
    wait_settled(page, M)
    first = set(ids_drawn(page, M, "nodes:labels")) | set(ids_drawn(page, M, "clusters:headers"))
    vg = tower.view(depth=None, fold_repeats=False)
    assert 0 < len(first) < (len(vg.nodes) + len(vg.clusters)) / 5
    for _ in range(4):  # about three and a half views down the column
        _drag(page, 0.85)
    ranges = displayed_ranges(page, M)
    deadline = time.time() + 20
    while time.time() < deadline:  # the server's new bars arrive after the drag
        new = set(ids_drawn(page, M, "nodes:labels")) - first
        if new:
            break
        page.wait_for_timeout(100)
    assert new, "no bars arrived for the part of the graph panned to"
    page.wait_for_timeout(300)
    assert displayed_ranges(page, M) == ranges, "the new bars moved the view"
    names = {n.id: n for n in vg.nodes}
    op = next(
        v
        for v in sorted(new, key=lambda v: (_bar_centre(page, "nodes:labels", v) or (0, 1e9))[1])
        if names[v].kind == "op" and _in_plot(page, _bar_centre(page, "nodes:labels", v))
    )
    _hover_click(page, _bar_centre(page, "nodes:labels", op), op)
    page.wait_for_function(
        "(a) => document.querySelector(a[0]).innerText.includes(a[1])",
        arg=[css_id(M, "details"), op],
        timeout=20_000,
    )  # its id row: selected
    page.wait_for_timeout(700)  # never a double click
    headers = [
        v
        for v in ids_drawn(page, M, "clusters:headers")
        if v not in first and v.count(".") == 1 and _in_plot(page, _bar_centre(page, "clusters:headers", v))
    ]
    assert headers, "no layer header among the new bars"
    layer = headers[0]
    _hover_click(page, _bar_centre(page, "clusters:headers", layer), layer)
    wait_ids(page, M, "nodes:labels", present=(layer,))
    assert layer not in ids_drawn(page, M, "clusters:headers")


def _in_plot(page: Any, xy: tuple[float, float] | None) -> bool:
    if xy is None:
        return False
    plot = page.locator(css_id(M, "graph") + " .nsewdrag").first.bounding_box()
    return (
        plot["x"] + 10 < xy[0] < plot["x"] + plot["width"] - 10
        and plot["y"] + 10 < xy[1] < plot["y"] + plot["height"] - 10
    )
