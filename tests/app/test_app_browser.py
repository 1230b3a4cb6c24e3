"""The app in a real headless Chromium against a real server: draw, click to open/close, search, details,
two graphs on one page, a failed model, theme and export. Clicks are real mouse clicks."""

from __future__ import annotations

import time
from typing import Any

import pytest
from dash import Dash, html
from support_app import (
    click_id,
    css_id,
    displayed_ranges,
    graph_dom_id,
    ids_drawn,
    open_demo,
    screen_xy,
    start,
    wait_drawn,
    wait_ids,
    wait_settled,
)
from support_picture import drawn_labels, target_boxes

from torchvista_dash.app import ModelGraph
from torchvista_dash.app.traces import registry, state
from torchvista_dash.demos import demo_trace
from torchvista_dash.render import plotlyjs
from torchvista_dash.view import build as view

pytestmark = pytest.mark.browser

G = "gallery"


def to_screen(page: Any, aio_id: str, x: float, y: float) -> tuple[float, float]:
    xy = page.evaluate(
        """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
        const fl = gd._fullLayout, r = gd.getBoundingClientRect();
        return [r.left + fl._size.l + fl.xaxis.l2p(a[1]), r.top + fl._size.t + fl.yaxis.l2p(a[2])]; }""",
        [graph_dom_id(aio_id), x, y],
    )
    return float(xy[0]), float(xy[1])


def test_gallery_draws_the_graph_with_its_header(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    graph = demo_trace("gpt").graph
    labels = ids_drawn(page, G, "nodes:labels")
    assert "fold:mod:blocks.0" in labels and "mod:lm_head" in labels
    assert ids_drawn(page, G, "clusters:headers") == ["mod:(root)"]
    header = page.inner_text(css_id(G, "header"))
    assert "GPT-style decoder" in header
    loaded = page.evaluate("performance.getEntriesByType('resource').map(e => e.name.split('/').pop())")
    bundles = [n for n in loaded if n.startswith("plotly") and n.endswith(".js")]
    # one plotly.js: the scatter-only bundle when installed (`make plotly-basic`), else Dash's full one
    assert bundles == (["plotly-basic.min.js"] if plotlyjs.basic_bundle() else ["plotly.min.js"]), bundles
    assert f"{graph.total_params:,} parameters" in header and f"{graph.op_count:,} ops" in header


def test_click_opens_in_place_and_cluster_header_or_toggle_closes(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    click_id(page, G, "fold:mod:blocks.0")  # unfold the ×4 group
    wait_ids(page, G, "nodes:labels", present=("mod:blocks.0", "mod:blocks.3"), absent=("fold:mod:blocks.0",))
    wait_settled(page, G)

    tid = registry.register(demo_trace("gpt"))
    graph = demo_trace("gpt").graph
    spec = view.toggle(graph, state.initial_spec(tid), "fold:mod:blocks.0")
    before_box = state.layout_of(tid, spec, "TB").nodes["mod:blocks.1"]
    after_box = state.layout_of(tid, view.toggle(graph, spec, "mod:blocks.1"), "TB").clusters["mod:blocks.1"]
    top_before = to_screen(page, G, (before_box[0] + before_box[2]) / 2, before_box[3])
    zoom_before = displayed_ranges(page, G)

    click_id(page, G, "mod:blocks.1")  # open a collapsed module
    wait_ids(page, G, "clusters:headers", present=("mod:blocks.1",))
    wait_ids(
        page, G, "nodes:labels", present=("mod:blocks.1.attn", "mod:blocks.1.mlp"), absent=("mod:blocks.1",)
    )
    wait_settled(page, G)
    top_after = to_screen(page, G, (after_box[0] + after_box[2]) / 2, after_box[3])
    assert abs(top_after[0] - top_before[0]) < 2 and abs(top_after[1] - top_before[1]) < 2, (
        top_before,
        top_after,
    )
    zoom_after = displayed_ranges(page, G)  # the same zoom, or zoomed out (about that point) to show it all
    assert zoom_after[0][1] - zoom_after[0][0] >= (zoom_before[0][1] - zoom_before[0][0]) * 0.999

    click_id(page, G, "mod:blocks.1", ("clusters:headers",))  # its header closes it again
    wait_ids(page, G, "nodes:labels", present=("mod:blocks.1",), absent=("mod:blocks.1.attn",))
    assert "mod:blocks.1" not in ids_drawn(page, G, "clusters:headers")
    wait_settled(page, G)

    click_id(page, G, "mod:blocks.2")
    wait_ids(page, G, "clusters:headers", present=("mod:blocks.2",))
    wait_settled(page, G)
    row = next(
        b for b in target_boxes(page, graph_dom_id(G), "clusters:headers") if b["id"] == "mod:blocks.2"
    )
    x, y = row["x0"] + 8, (row["y0"] + row["y1"]) / 2  # and so does its ⊖, at the row's left end
    page.mouse.move(x, y)
    page.wait_for_function(
        "(a) => (document.getElementById(a[0]).querySelector('.js-plotly-plot')._hoverdata || [])"
        ".some(p => p.customdata === a[1])",
        arg=[graph_dom_id(G), "mod:blocks.2"],
    )
    time.sleep(0.6)
    page.mouse.click(x, y)
    wait_ids(page, G, "nodes:labels", present=("mod:blocks.2",), absent=("mod:blocks.2.attn",))


def test_search_expands_centres_and_highlights(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    page.click(".tvd-search")
    page.locator("input.dash-dropdown-search").press_sequentially("ln_2")  # the open dropdown's search box
    page.get_by_role("option", name="blocks.2.ln_2: LayerNorm").click()
    wait_ids(page, G, "clusters:headers", present=("mod:blocks.2",))
    # the found block is pinned in its run of four: the blocks before it stay folded, the one after is a box
    assert {"fold:mod:blocks.0", "mod:blocks.3"} <= set(ids_drawn(page, G, "nodes:labels"))
    page.wait_for_function(
        "(d) => document.getElementById(d).querySelector('.js-plotly-plot').data"
        ".some(t => t.name === 'highlight')",
        arg=graph_dom_id(G),
    )
    wait_settled(page, G)
    x, y = screen_xy(page, G, "mod:blocks.2.ln_2")
    box = page.locator(css_id(G, "graph") + " .js-plotly-plot .nsewdrag").first.bounding_box()
    assert abs(x - (box["x"] + box["width"] / 2)) < 3 and abs(y - (box["y"] + box["height"] / 2)) < 3
    page.wait_for_function(
        "(d) => document.getElementById(d).innerText.includes('blocks.2.ln_2: LayerNorm')",
        arg=graph_dom_id(G, "details"),
    )


def test_details_panel_shows_a_modules_parameters(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    click_id(page, G, "mod:lm_head")
    page.wait_for_function(
        "(d) => document.getElementById(d).innerText.includes('lm_head: Linear')",
        arg=graph_dom_id(G, "details"),
    )
    text = page.inner_text(css_id(G, "details"))
    assert "in_features=32, out_features=64, bias=False" in text
    assert "weight" in text and "64×32" in text and "float32" in text and "yes" in text
    assert "2,048 in total" in text
    assert "1×16×32 float32" in text and "1×16×64 float32" in text  # input and output shapes


def test_failed_model_shows_its_error_and_partial_graph(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "broken")
    err = page.locator(css_id(G, "header") + " .tvd-error")
    assert "Sizes of tensors must match" in err.inner_text() and "cat" in err.inner_text()
    assert err.evaluate("e => getComputedStyle(e).color") == "rgb(214, 39, 40)"
    failing = demo_trace("broken").graph.error.node
    assert failing in ids_drawn(page, G, "nodes:labels")
    failed = [
        lab["text"] for lab in drawn_labels(page, graph_dom_id(G))["labels"] if "kopft" in lab["cls"]
    ]  # drawn in red
    assert failed == [demo_trace("broken").graph.node_by_id[failing].name]
    assert "Traceback" in page.inner_text(css_id(G, "details"))


def test_theme_switch_and_export_buttons(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "mlp")
    light = page.evaluate(
        "(d) => document.getElementById(d).querySelector('.js-plotly-plot')._fullLayout.paper_bgcolor",
        graph_dom_id(G),
    )
    page.get_by_label("dark").check()
    page.wait_for_function(
        "(a) => document.getElementById(a[0]).querySelector('.js-plotly-plot')._fullLayout"
        ".paper_bgcolor !== a[1]",
        arg=[graph_dom_id(G), light],
    )
    with page.expect_download() as dl:
        page.click(css_id(G, "export_svg"))
    svg = open(dl.value.path(), encoding="utf-8").read()
    assert "<svg" in svg and "body: Sequential" in svg
    with page.expect_download() as dl:
        page.click(css_id(G, "export_html"))
    assert dl.value.suggested_filename.endswith(".html")
    assert "Plotly.newPlot" in open(dl.value.path(), encoding="utf-8").read()


def test_two_model_graphs_on_one_page_act_independently(page: Any) -> None:
    mlp = demo_trace("mlp")
    app = Dash(__name__)
    app.layout = html.Div([ModelGraph(mlp, id="a", height="330px"), ModelGraph(mlp, id="b", height="330px")])
    srv = start(app)
    try:
        page.goto(srv.url)
        wait_drawn(page, "a")
        wait_drawn(page, "b")
        assert "mod:body" in ids_drawn(page, "a", "nodes:labels")
        click_id(page, "a", "mod:body")
        wait_ids(page, "a", "clusters:headers", present=("mod:body",))
        page.wait_for_function(
            "(d) => document.getElementById(d).innerText.includes('body: Sequential')",
            arg=graph_dom_id("a", "details"),
        )
        assert "mod:body" not in ids_drawn(page, "b", "clusters:headers")
        assert "mod:body" in ids_drawn(page, "b", "nodes:labels")
        assert "body: Sequential" not in page.inner_text(css_id("b", "details"))
        click_id(page, "b", "mod:head")
        wait_ids(page, "b", "clusters:headers", present=("mod:head",))
        assert "mod:head" not in ids_drawn(page, "a", "clusters:headers")
        assert "mod:body" in ids_drawn(page, "a", "clusters:headers")
    finally:
        srv.stop()


def test_a_user_callback_listens_to_the_selected_module(page: Any) -> None:
    """ModelGraph.ids.selected(aio_id) is a dcc.Store a user's own callback can take as Input, like
    dash-cytoscape's tapNodeData: a real click on a box gives the callback its qualname and class."""
    from dash import Input, Output, callback

    app = Dash(__name__)
    app.layout = html.Div([ModelGraph(demo_trace("mlp"), id="sel", height="400px"), html.Div(id="picked")])

    @callback(Output("picked", "children"), Input(ModelGraph.ids.selected("sel"), "data"))
    def picked(sel: dict[str, Any] | None) -> str:
        return "nothing" if sel is None else f"{sel['kind']} {sel['qualname']} ({sel['cls']})"

    srv = start(app)
    try:
        page.goto(srv.url)
        wait_drawn(page, "sel")
        page.wait_for_function("() => document.getElementById('picked').innerText === 'nothing'")
        click_id(page, "sel", "mod:body")
        page.wait_for_function(
            "() => document.getElementById('picked').innerText === 'module body (Sequential)'", timeout=20_000
        )
        wait_ids(page, "sel", "clusters:headers", present=("mod:body",))  # the click opened it as before
        op = next(i for i in ids_drawn(page, "sel", "nodes:labels") if i.startswith("n:"))
        node = demo_trace("mlp").graph.node_by_id[op]
        click_id(page, "sel", op)
        page.wait_for_function(
            "(t) => document.getElementById('picked').innerText.startsWith(t)",
            arg=f"{node.kind} ",
            timeout=20_000,
        )
    finally:
        srv.stop()


def test_toolbar_options_direction_depth_and_fit(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "mlp")
    graph = demo_trace("mlp").graph
    params = [n.id for n in graph.nodes if n.kind == "parameter"]
    page.get_by_label("parameters/constants").check()  # two actions in quick succession:
    page.click(css_id(G, "expand_all"))  # neither may be lost
    wait_ids(page, G, "clusters:headers", present=("mod:body.0",))  # expand all opens built-ins too
    wait_ids(page, G, "nodes:labels", present=tuple(params))
    page.get_by_label("left→right").check()
    page.wait_for_function(
        "(d) => { const fl = document.getElementById(d).querySelector('.js-plotly-plot')"
        "._fullLayout; const b = fl.meta && fl.meta.torchvista_dash.bounds;"
        " return b && (b[2] - b[0]) > (b[3] - b[1]); }",
        arg=graph_dom_id(G),
    )
    page.click(css_id(G, "collapse_all"))
    wait_ids(page, G, "nodes:labels", present=("mod:(root)",), absent=tuple(params[:1]))
    wait_settled(page, G)
    full = displayed_ranges(page, G)
    box = page.locator(css_id(G, "graph") + " .js-plotly-plot .nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(4):  # a real scroll-zoom
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(80)
    wait_settled(page, G)
    zoomed = displayed_ranges(page, G)
    assert zoomed[0][1] - zoomed[0][0] < 0.8 * (full[0][1] - full[0][0])
    page.click(css_id(G, "fit"))
    page.wait_for_function(
        "(a) => { const r = document.getElementById(a[0]).querySelector('.js-plotly-plot')"
        "._fullLayout.xaxis.range; return Math.abs((r[1] - r[0]) - a[1]) < 1; }",
        arg=[graph_dom_id(G), full[0][1] - full[0][0]],
    )


def test_gallery_dropdown_switches_models(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "mlp")
    page.click("#tvd-demo")
    page.get_by_role(
        "option", name="U-Net — Two down and two up stages joined by skip connections (torch.cat)."
    ).click()
    page.wait_for_function("() => document.querySelector('.tvd-header').innerText.includes('U-Net')")
    wait_drawn(page, G)
    assert "mod:down1" in ids_drawn(page, G, "nodes:labels")


def test_two_tabs_on_one_graph_do_not_interfere(browser: Any, gallery_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        one, two = ctx.new_page(), ctx.new_page()
        for p in (one, two):
            p.bring_to_front()
            open_demo(p, gallery_url, "mlp")
        one.bring_to_front()  # background tabs get no animation frames
        click_id(one, G, "mod:body")
        wait_ids(one, G, "clusters:headers", present=("mod:body",))
        two.bring_to_front()
        two.reload()  # a fresh load of the other tab: still the default view
        wait_drawn(two, G)
        assert "mod:body" not in ids_drawn(two, G, "clusters:headers")
        click_id(two, G, "mod:head")
        wait_ids(two, G, "clusters:headers", present=("mod:head",), absent=("mod:body",))
        one.bring_to_front()
        assert "mod:head" not in ids_drawn(one, G, "clusters:headers")
    finally:
        ctx.close()
