"""The colour-by menu and a served diff, in real headless Chromium against a real server (real clicks)."""

from __future__ import annotations

from typing import Any

import pytest
from support_app import click_id, css_id, figure_picture, graph_dom_id, start, wait_drawn, wait_settled

from torchvista_dash import compare, trace_model
from torchvista_dash.app.server.server import make_app
from torchvista_dash.render.colorby import step_colours

pytestmark = pytest.mark.browser

G = "gallery"


def _names(page: Any, aio_id: str) -> list[str]:
    return page.evaluate(
        "(d) => document.getElementById(d).querySelector('.js-plotly-plot').data.map(t => t.name)",
        graph_dom_id(aio_id),
    )


def test_colour_by_flops_from_the_menu_and_details_list_the_heaviest(page: Any, gallery_url: str) -> None:
    page.goto(f"{gallery_url}?demo=gpt")
    wait_drawn(page, G)
    wait_settled(page, G)
    assert "colorbar" not in _names(page, G)
    page.click(css_id(G, "color_by"))
    page.get_by_text("colour by: FLOPs", exact=True).click()
    page.wait_for_function(
        "(d) => document.getElementById(d).querySelector('.js-plotly-plot').data"
        ".some(t => t.name === 'colorbar')",
        arg=graph_dom_id(G),
        timeout=20_000,
    )
    svg = figure_picture(page, G)
    assert any(f"fill:{c};" in svg for c in step_colours())  # the picture's boxes are painted by FLOPs
    # time was not measured for the demo: its entry is there but disabled
    page.click(css_id(G, "color_by"))
    page.get_by_text("colour by: time", exact=True).click(force=True)
    page.keyboard.press("Escape")
    assert "colour by: FLOPs" in page.inner_text(css_id(G, "color_by"))
    assert "app-error" not in page.content()
    # a module's details: its FLOPs and share of the model
    click_id(page, G, "mod:lm_head")
    page.wait_for_function(
        "(d) => document.getElementById(d).innerText.includes('FLOPs')",
        arg=graph_dom_id(G, "details"),
        timeout=20_000,
    )
    text = page.inner_text(css_id(G, "details"))
    assert "FLOP" in text and "%" in text


def test_served_diff_draws_the_added_block(page: Any) -> None:
    from support_models import build_gpt2

    m2, a2, k2 = build_gpt2(n_layer=2)
    m3, a3, k3 = build_gpt2(n_layer=3)
    d = compare(trace_model(m2, a2, kwargs=k2), trace_model(m3, a3, kwargs=k3))
    srv = start(make_app([d.trace], fold_repeats=False))
    try:
        page.goto(srv.url)
        page.wait_for_function(
            "() => { const gd = document.querySelector('.js-plotly-plot');"
            " return gd && gd._fullData && gd._fullData.length > 0; }",
            timeout=20_000,
        )
        svg = figure_picture(page)
        assert "stroke:#2f9e44" in svg
        assert "diff: +12 added" in page.inner_text("body")
    finally:
        srv.stop()


def test_details_of_a_call_list_its_heaviest_children() -> None:
    from dash import html

    from torchvista_dash.app.actions.details import details
    from torchvista_dash.app.traces import registry
    from torchvista_dash.demos import demo_trace

    t = demo_trace("gpt")
    tid = registry.register(t)
    panel = html.Div(details(tid, "mod:(root)"))
    text = str(panel.to_plotly_json())
    assert "heaviest inside (FLOPs)" in text
    rows = {r["qualname"]: r for r in t.stats()}
    top = max((q for q in rows if q.count(".") == 0 and q), key=lambda q: rows[q]["flops"])
    assert top.rsplit(".", 1)[-1] in text and "100.0 %" in text


def test_heaviest_children_are_named_inside_the_call_not_by_their_last_part() -> None:
    """A decoder's layers sit in a ModuleList (no call of its own): `layers.0`, not a bare `0`."""
    from dash import html

    from torchvista_dash.app.actions.details import details
    from torchvista_dash.app.traces import registry
    from torchvista_dash.demos import demo_trace

    t = demo_trace("gpt")
    tid = registry.register(t)
    items = [li["props"]["children"] for li in _items(html.Div(details(tid, "mod:(root)")).to_plotly_json())]
    assert items and any(i.startswith("blocks.0 (GPTBlock)") for i in items), items
    assert not any(i[:1].isdigit() for i in items), items


def _items(tree: object) -> list[dict]:
    """The <li> elements of a Dash component tree (as plain JSON)."""
    out: list[dict] = []
    if isinstance(tree, dict):
        if tree.get("type") == "Li":
            out.append(tree)
        for v in tree.values():
            out += _items(v)
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            out += _items(v)
    elif hasattr(tree, "to_plotly_json"):
        out += _items(tree.to_plotly_json())
    return out


def test_show_with_color_by_serves_a_coloured_page(capsys: Any) -> None:
    import requests

    from torchvista_dash.demos import demo_trace

    demo_trace("gpt").show(mode="external", color_by="flops")
    url = capsys.readouterr().out.split("torchvista_dash: ", 1)[1].strip()
    assert "color_by=flops" in url
    root = url.split("?", 1)[0]
    layout = requests.get(root + "_dash-layout", headers={"Referer": url}, timeout=60).text
    assert '"colorbar"' in layout and "coloured by FLOPs" in layout


def test_module_details_write_parameters_on_one_line_with_the_share() -> None:
    from dash import html

    from torchvista_dash.app.actions.details import details
    from torchvista_dash.app.traces import registry
    from torchvista_dash.demos import demo_trace

    t = demo_trace("gpt")
    tid = registry.register(t)
    labels: list[str] = []

    def walk(c: Any) -> None:
        if isinstance(c, html.Th):
            labels.append(str(c.children))
        for k in (
            c.children if isinstance(getattr(c, "children", None), list) else [getattr(c, "children", None)]
        ):
            if k is not None and not isinstance(k, str):
                walk(k)

    for item in details(tid, "mod:lm_head"):
        walk(item)
    assert labels.count("parameters") == 1 and "FLOPs" in labels
    text = str(html.Div(details(tid, "mod:lm_head")).to_plotly_json())
    share = 100.0 * 2048 / t.graph.total_params
    assert f"2,048 in total ({share:.1f} % of the model), 2,048 its own" in text
