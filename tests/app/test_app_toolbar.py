"""The toolbar as a user meets it, in a real headless Chromium against a real server: expand/collapse all and
the depth control, search, the dark page, the mode bar, shareable links."""

from __future__ import annotations

import re
from typing import Any

import pytest
from support_app import click_id, css_id, ids_drawn, open_demo, wait_drawn, wait_ids, wait_settled

from torchvista_dash.demos import demo_trace
from torchvista_dash.view import build as view

pytestmark = pytest.mark.browser

G = "gallery"


def depth_shown(page: Any) -> str:
    return page.inner_text(css_id(G, "depth")).strip()


def wait_depth(page: Any, text: str) -> None:
    page.wait_for_function(
        "(a) => document.querySelector(a[0]).innerText.trim() === a[1]",
        arg=[css_id(G, "depth"), text],
        timeout=20_000,
    )


def test_expand_all_opens_everything_and_the_depth_control_follows(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    graph = demo_trace("gpt").graph
    assert depth_shown(page) == "depth 1"
    click_id(page, G, "mod:lm_head")  # a click: no depth's view any more
    wait_ids(page, G, "clusters:headers", present=("mod:lm_head",))
    wait_depth(page, "custom")
    page.click(css_id(G, "expand_all"))  # everything, folded repeats too
    ops = [n.id for n in graph.nodes if n.kind == "op"]
    wait_ids(page, G, "nodes:labels", present=tuple(ops), absent=("fold:mod:blocks.0",))
    assert not [i for i in ids_drawn(page, G, "nodes:labels") if i.startswith("fold:")]
    wait_depth(page, "every op")
    page.click(css_id(G, "collapse_all"))  # its inverse: one box
    wait_ids(page, G, "nodes:labels", present=("mod:(root)",), absent=tuple(ops[:1]))
    assert [i for i in ids_drawn(page, G, "nodes:labels") if i.startswith("mod:")] == ["mod:(root)"]
    wait_depth(page, "depth 0")
    page.click(css_id(G, "depth"))  # the control itself still works
    page.get_by_role("option", name="depth 2").click()
    wait_ids(page, G, "clusters:headers", present=("mod:(root)",))
    wait_depth(page, "depth 2")
    assert view.depth_of(graph, view.make_spec(graph, depth=2)) == 2


def test_the_json_button_writes_a_trace_that_load_trace_and_serve_read(
    page: Any, gallery_url: str, tmp_path: Any
) -> None:
    from torchvista_dash import load_trace
    from torchvista_dash.cli import resolve_target

    open_demo(page, gallery_url, "broken")
    with page.expect_download() as dl:
        page.click(css_id(G, "export_json"))
    assert dl.value.suggested_filename == "Failing_model-trace.json"
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(path)
    with pytest.warns(UserWarning, match="forward pass failed"):
        loaded = load_trace(path)
    assert loaded.graph.to_json() == demo_trace("broken").graph.to_json()
    assert resolve_target(str(path)).graph.to_json() == loaded.graph.to_json()  # what `serve path` loads


def _type_in_search(page: Any, text: str) -> None:
    """What a person does: click the box, type at once (no waiting for the field to appear)."""
    page.click(".tvd-search")
    page.keyboard.type(text, delay=30)


def test_search_works_every_time_and_shows_no_internal_ids(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    _type_in_search(page, "ln_2")  # the first keystroke right after the click counts
    page.get_by_role("option", name="blocks.2.ln_2: LayerNorm").click()
    wait_ids(page, G, "clusters:headers", present=("mod:blocks.2",))
    page.wait_for_function(
        "(s) => document.querySelector(s).innerText.includes('blocks.2.ln_2: LayerNorm')",
        arg=css_id(G, "details"),
    )
    _type_in_search(page, "softmax")  # type again, after a choice
    page.get_by_role("option", name="softmax (op) in blocks.3.attn · 1×2×16×16").click()
    wait_ids(page, G, "clusters:headers", present=("mod:blocks.3.attn",))
    page.wait_for_function(
        "(s) => document.querySelector(s).innerText.includes('blocks.3.attn')", arg=css_id(G, "details")
    )
    _type_in_search(page, "lm_h")  # and a third time
    page.get_by_role("option", name="lm_head: Linear").wait_for(timeout=20_000)
    labels = page.get_by_role("option").all_inner_texts()
    assert not [t for t in labels if re.search(r"\b(n|mod):[\w.(]", t)], labels
    _type_in_search(page, "")


_BG = """(sel) => { let e = document.querySelector(sel);
  while (e) { const c = getComputedStyle(e).backgroundColor;
    if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; e = e.parentElement; }
  return 'rgb(255, 255, 255)'; }"""


def _luma(rgb: str) -> float:
    r, g, b = (float(v) for v in re.findall(r"[\d.]+", rgb)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _page_parts(page: Any) -> dict[str, float]:
    """The luminance of what a person sees behind each part of the page."""
    sels = {
        "page margin": "body",
        "gallery bar": ".tvd-gallery-bar",
        "gallery dropdown": "#tvd-demo",
        "depth dropdown": css_id(G, "depth"),
        "search box": ".tvd-search",
        "expand button": css_id(G, "expand_all"),
        "export button": css_id(G, "export_svg"),
    }
    return {name: _luma(page.evaluate(_BG, sel)) for name, sel in sels.items()}


def test_the_dark_theme_covers_the_whole_page(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "mlp")
    assert all(v > 0.8 for v in _page_parts(page).values()), _page_parts(page)
    page.get_by_label("dark").check()
    page.wait_for_function(
        "() => getComputedStyle(document.body).backgroundColor === 'rgb(17, 17, 17)'", timeout=20_000
    )
    dark = _page_parts(page)
    assert all(v < 0.25 for v in dark.values()), dark
    text = page.evaluate("(s) => getComputedStyle(document.querySelector(s)).color", css_id(G, "expand_all"))
    assert _luma(text) > 0.7  # light text on the dark buttons
    page.click(".tvd-search")  # an open menu is dark too
    menu = page.locator(".dash-dropdown-content").first
    menu.wait_for(timeout=20_000)
    assert _luma(menu.evaluate("e => getComputedStyle(e).backgroundColor")) < 0.25
    assert _luma(menu.evaluate("e => getComputedStyle(e).color")) > 0.7
    page.keyboard.press("Escape")
    page.get_by_label("light").check()  # and back
    page.wait_for_function(
        "() => getComputedStyle(document.body).backgroundColor !== 'rgb(17, 17, 17)'", timeout=20_000
    )
    assert all(v > 0.8 for v in _page_parts(page).values()), _page_parts(page)


@pytest.mark.parametrize("width", [1400, 800])
def test_the_mode_bar_is_trimmed_and_covers_no_app_button(browser: Any, gallery_url: str, width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = ctx.new_page()
        open_demo(page, gallery_url, "gpt")
        box = page.locator(css_id(G, "graph")).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # the bar shows on hover
        page.locator(".modebar").first.wait_for(state="visible", timeout=20_000)
        titles = page.evaluate(
            "Array.from(document.querySelectorAll('.modebar-btn')).map(b => b.getAttribute('data-title'))"
        )
        assert titles == ["Zoom", "Pan", "Zoom in", "Zoom out", "Reset axes"]
        bar = page.locator(".modebar").first.bounding_box()
        controls = page.locator(
            f"{css_id(G, 'root')} button:not(.modebar-btn), {css_id(G, 'root')} .dash-dropdown, "
            f"{css_id(G, 'root')} input, {css_id(G, 'details')}"
        )
        for i in range(controls.count()):
            c = controls.nth(i).bounding_box()
            if c is None:
                continue
            apart = (
                bar["x"] + bar["width"] <= c["x"]
                or c["x"] + c["width"] <= bar["x"]
                or bar["y"] + bar["height"] <= c["y"]
                or c["y"] + c["height"] <= bar["y"]
            )
            assert apart, (controls.nth(i).evaluate("e => e.outerHTML.slice(0, 120)"), bar, c)
    finally:
        ctx.close()


def _search_of(page: Any) -> str:
    return page.evaluate("window.location.search")


def test_the_address_holds_the_view_for_reload_back_forward_and_sharing(
    browser: Any, gallery_url: str
) -> None:
    from urllib.parse import parse_qs

    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = ctx.new_page()
        open_demo(page, gallery_url, "gpt")
        click_id(page, G, "fold:mod:blocks.0")  # unfold the ×4 group
        wait_ids(page, G, "nodes:labels", present=("mod:blocks.1",))
        page.wait_for_function("() => window.location.search.includes('unfold=')", timeout=20_000)
        wait_settled(page, G)
        click_id(page, G, "mod:blocks.1")  # open one block
        wait_ids(page, G, "clusters:headers", present=("mod:blocks.1",))
        page.get_by_label("dark").check()
        page.get_by_label("left→right").check()
        page.wait_for_function(
            "() => window.location.search.includes('rankdir=LR')"
            " && window.location.search.includes('theme=dark')",
            timeout=20_000,
        )
        query = parse_qs(_search_of(page).lstrip("?"))
        assert query["demo"] == ["gpt"] and query["open"] == ["mod:blocks.1"] and query["depth"] == ["1"]
        shared = page.url

        def shows_the_view(p: Any) -> None:
            wait_drawn(p, G)
            wait_ids(p, G, "clusters:headers", present=("mod:blocks.1",))
            wait_ids(
                p, G, "nodes:labels", present=("mod:blocks.0", "mod:blocks.2"), absent=("fold:mod:blocks.0",)
            )
            assert p.locator(css_id(G, "theme") + " input[value=dark]").is_checked()
            assert p.locator(css_id(G, "direction") + " input[value=LR]").is_checked()
            assert p.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(17, 17, 17)"

        page.reload()  # reload: the same view
        shows_the_view(page)
        other = ctx.new_page()  # a link sent to a colleague
        other.goto(shared)
        shows_the_view(other)
        other.close()
        page.go_back()  # back: one step earlier (before LR)
        page.wait_for_function("() => !window.location.search.includes('rankdir=LR')", timeout=20_000)
        page.wait_for_function(
            "(s) => document.querySelector(s + ' input[value=TB]').checked",
            arg=css_id(G, "direction"),
            timeout=20_000,
        )
        wait_ids(page, G, "clusters:headers", present=("mod:blocks.1",))
        page.go_forward()  # forward: the LR view again
        page.wait_for_function(
            "(s) => document.querySelector(s + ' input[value=LR]').checked",
            arg=css_id(G, "direction"),
            timeout=20_000,
        )
        page.click("#tvd-demo")  # another demo: its own address
        page.get_by_role("option", name="MLP — Three linear layers with ReLU and dropout.").click()
        page.wait_for_function("() => window.location.search === '?demo=mlp'", timeout=20_000)
        page.wait_for_function("() => document.querySelector('.tvd-header').innerText.includes('MLP')")
        page.go_back()  # and back to the GPT view
        page.wait_for_function(
            "() => document.querySelector('.tvd-header').innerText.includes('GPT')", timeout=20_000
        )
        shows_the_view(page)
        assert "GPT-style decoder" in page.inner_text("#tvd-demo")
    finally:
        ctx.close()


def test_a_bad_address_says_what_is_wrong(page: Any, gallery_url: str) -> None:
    page.goto(f"{gallery_url}?demo=gpt&open=mod:nowhere")
    page.wait_for_function("() => document.body.innerText.includes('cannot show this page')", timeout=20_000)
    assert "mod:nowhere" in page.inner_text("#tvd-page")


def test_a_notebook_wide_page_keeps_three_toolbar_rows_and_gives_the_graph_the_width(browser: Any) -> None:
    from torchvista_dash.app.server.notebook import url_for

    ctx = browser.new_context(viewport={"width": 800, "height": 760})  # a notebook output's width
    try:
        page = ctx.new_page()
        url = url_for(demo_trace("gpt"))  # the page show() puts in its iframe
        page.goto(url)
        aio = "trace-" + url.split("trace=")[1].split("&")[0]
        wait_drawn(page, aio)
        controls = page.locator(".tvd-toolbar > *")
        boxes = [controls.nth(i).bounding_box() for i in range(controls.count())]
        boxes = [b for b in boxes if b and b["height"] > 0]
        rows: list[float] = []
        for b in sorted(boxes, key=lambda b: b["y"]):
            centre = b["y"] + b["height"] / 2
            if not rows or centre - rows[-1] > 14:
                rows.append(centre)
        assert len(rows) == 3, rows  # the toolbar in three rows (the last: the selection's reach and path)
        assert all(b["x"] + b["width"] <= 800 for b in boxes)
        assert not page.locator(css_id(aio, "details")).is_visible()  # the panel folded away...
        plot = page.locator(css_id(aio, "graph")).bounding_box()
        assert plot["width"] > 0.9 * 800  # ...so the graph has the width
        click_id(page, aio, "mod:lm_head")  # until something is clicked
        page.wait_for_function(
            "(s) => document.querySelector(s).innerText.includes('lm_head: Linear')",
            arg=css_id(aio, "details"),
            timeout=20_000,
        )
        assert page.locator(css_id(aio, "details")).is_visible()
    finally:
        ctx.close()


def test_details_write_tensors_one_way_and_tracebacks_without_torch_frames(
    page: Any, gallery_url: str
) -> None:
    open_demo(page, gallery_url, "broken")
    text = page.inner_text(css_id(G, "details"))  # the failing op's details, shown at once
    assert "Traceback" in text and "demos.py" in text and "torch.cat([self.left(x)" in text
    assert "site-packages/torch" not in text and "inside torch hidden" in text
    assert "[2×24 float32, 2×8 float32]" in text and "Tensor[" not in text  # args as shapes elsewhere
    assert re.search(r"tensors\s+\[2×24 float32, 2×8 float32\]", text) and re.search(r"dim\s+0", text)
    assert "2×24 float32" in text
