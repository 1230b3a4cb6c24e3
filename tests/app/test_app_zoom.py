"""The picture at any zoom, in a real headless Chromium against the gallery server, with real mouse clicks and
wheel zooms: whole boxes and header rows are the targets, labels follow the zoom and never collide, and
opening a module that does not fit zooms out to show it (and back when it is closed)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from support_app import css_id, displayed_ranges, graph_dom_id, ids_drawn, wait_drawn, wait_ids, wait_settled
from support_picture import dark_rows, drawn_labels, in_plot, overlapping_pairs, target_boxes

from torchvista_dash.app.traces import registry, state
from torchvista_dash.demos import DEMOS, demo_trace
from torchvista_dash.view import build as view

pytestmark = pytest.mark.browser

G = "gallery"
_last = [0.0]


def open_demo(page: Any, url: str, demo: str) -> None:
    page.goto(f"{url}?demo={demo}")
    wait_drawn(page, G)
    wait_settled(page, G)


def hover_click(page: Any, x: float, y: float, vid: str) -> None:
    """Point at (x, y), wait until plotly's hover reports ``vid`` there, click; clicks 0.6 s apart (never a
    double click)."""
    time.sleep(max(0.0, 0.6 - (time.time() - _last[0])))
    page.mouse.move(x - 2, y)
    page.mouse.move(x, y)
    page.wait_for_function(
        "(a) => { const h = document.getElementById(a[0]).querySelector('.js-plotly-plot')"
        "._hoverdata || []; return h.some(p => p.customdata === a[1]); }",
        arg=[graph_dom_id(G), vid],
        timeout=10_000,
    )
    page.mouse.click(x, y)
    _last[0] = time.time()


def box_of(page: Any, trace: str, vid: str) -> dict[str, Any]:
    return next(b for b in target_boxes(page, graph_dom_id(G), trace) if b["id"] == vid)


def wheel(page: Any, notches: int, at: tuple[float, float] | None = None) -> None:
    """Scroll-zoom like a user: ``notches`` wheel steps (negative: in), then wait for plotly's redraw."""
    if at is None:
        plot = page.locator(css_id(G, "graph") + " .nsewdrag").first.bounding_box()
        at = (plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] / 2)
    page.mouse.move(*at)
    for _ in range(abs(notches)):
        page.mouse.wheel(0, 100 if notches > 0 else -100)
        page.wait_for_timeout(15)
    wait_settled(page, G, quiet_s=0.4)


def span(page: Any) -> float:
    r = displayed_ranges(page, G)
    return r[0][1] - r[0][0]


def test_clicks_anywhere_inside_a_box_and_along_a_header_row(page: Any, gallery_url: str) -> None:
    """15 % inside each corner of several module boxes opens that module; points along the opened
    cluster's header row close it again."""
    open_demo(page, gallery_url, "gpt")
    modules = ["mod:lm_head", "mod:wte", "fold:mod:blocks.0"]
    assert set(modules) <= set(ids_drawn(page, G, "nodes:labels"))
    along = [0.04, 0.3, 0.6, 0.95]
    for m, vid in enumerate(modules[:2]):
        for c, (fx, fy) in enumerate([(0.15, 0.15), (0.85, 0.15), (0.15, 0.85), (0.85, 0.85)]):
            b = box_of(page, "nodes:labels", vid)
            hover_click(page, b["x0"] + fx * (b["x1"] - b["x0"]), b["y0"] + fy * (b["y1"] - b["y0"]), vid)
            wait_ids(page, G, "clusters:headers", present=(vid,))
            wait_settled(page, G)
            h = box_of(page, "clusters:headers", vid)
            f = along[(m + c) % len(along)]
            hover_click(page, h["x0"] + f * (h["x1"] - h["x0"]), (h["y0"] + h["y1"]) / 2, vid)
            wait_ids(page, G, "nodes:labels", present=(vid,))
            assert vid not in ids_drawn(page, G, "clusters:headers")
            wait_settled(page, G)
    # a folded run: its corner unfolds it
    b = box_of(page, "nodes:labels", modules[2])
    hover_click(page, b["x1"] - 0.15 * (b["x1"] - b["x0"]), b["y1"] - 0.15 * (b["y1"] - b["y0"]), modules[2])
    wait_ids(page, G, "nodes:labels", present=("mod:blocks.0", "mod:blocks.3"), absent=(modules[2],))


def test_labels_grow_with_zoom_and_drop_out_far_away(page: Any, gallery_url: str) -> None:
    open_demo(page, gallery_url, "gpt")
    plot = page.locator(css_id(G, "graph") + " .nsewdrag").first.bounding_box()
    at = (plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] / 2)
    start = drawn_labels(page, graph_dom_id(G))
    names = {lab["text"]: lab["size"] for lab in start["labels"] if lab["cls"].startswith("t ")}
    assert names, start
    s0 = span(page)
    notches = 0
    while span(page) > s0 / 4 and notches < 40:
        wheel(page, -2, at)
        notches += 2
    assert span(page) <= s0 / 4 * 1.05
    zoomed = drawn_labels(page, graph_dom_id(G))
    grown = [
        lab["size"] / names[lab["text"]]
        for lab in zoomed["labels"]
        if lab["text"] in names and lab["cls"].startswith("t ")
    ]
    assert grown and min(grown) >= 2.0, grown
    # far out: no box text (the boxes are a few pixels), only overview labels of modules, readable; back to
    # the start: every label again
    wheel(page, notches, at)
    far = 0
    while box_text(drawn_labels(page, graph_dom_id(G))) and far < 80:
        wheel(page, 4, at)
        far += 4
    out = drawn_labels(page, graph_dom_id(G))
    assert box_text(out) == [] and span(page) > s0
    assert all(lab["cls"].startswith("ov") and lab["y1"] - lab["y0"] >= 10 for lab in out["labels"]), out
    wheel(page, -far, at)
    back = drawn_labels(page, graph_dom_id(G))
    assert {lab["text"] for lab in back["labels"]} == {lab["text"] for lab in start["labels"]}


def box_text(drawn: dict[str, Any]) -> list[dict[str, Any]]:
    """The labels drawn in boxes and header rows (not the zoomed-out overview labels)."""
    return [lab for lab in drawn["labels"] if not lab["cls"].startswith("ov")]


@pytest.mark.parametrize("demo", list(DEMOS))
def test_no_label_overlaps_another_or_leaves_its_box(page: Any, gallery_url: str, demo: str) -> None:
    open_demo(page, gallery_url, demo)
    drawn = drawn_labels(page, graph_dom_id(G))
    labels = [lab for lab in drawn["labels"] if in_plot(lab, drawn["plot"])]
    assert labels, drawn
    assert overlapping_pairs(labels) == []
    boxes = target_boxes(page, graph_dom_id(G), "nodes:labels")
    rows = target_boxes(page, graph_dom_id(G), "clusters:headers")
    for lab in labels:
        cx, cy = (lab["x0"] + lab["x1"]) / 2, (lab["y0"] + lab["y1"]) / 2
        if lab["cls"].startswith("h"):  # a header: within its cluster's width, within its header row
            row = next(
                r for r in rows if r["x0"] <= lab["x0"] <= r["x1"] and r["y0"] - 2 <= cy <= r["y1"] + 2
            )
            assert lab["x1"] <= row["x1"] + 0.5, (lab, row)
            continue
        if lab["cls"].startswith(
            ("el", "ov")
        ):  # an edge label, an overview label: checked for overlaps above
            continue
        box = next(b for b in boxes if b["x0"] <= cx <= b["x1"] and b["y0"] <= cy <= b["y1"])
        assert box["x0"] - 0.5 <= lab["x0"] and lab["x1"] <= box["x1"] + 0.5, (lab, box)
        assert box["y0"] - 0.5 <= lab["y0"] and lab["y1"] <= box["y1"] + 0.5, (lab, box)


def test_opening_a_module_that_does_not_fit_zooms_out_and_closing_zooms_back(
    page: Any, gallery_url: str
) -> None:
    open_demo(page, gallery_url, "gpt")
    b = box_of(page, "nodes:labels", "fold:mod:blocks.0")
    hover_click(page, (b["x0"] + b["x1"]) / 2, (b["y0"] + b["y1"]) / 2, "fold:mod:blocks.0")
    wait_ids(page, G, "nodes:labels", present=("mod:blocks.1",))
    wait_settled(page, G)
    b = box_of(page, "nodes:labels", "mod:blocks.1")
    wheel(page, -10, ((b["x0"] + b["x1"]) / 2, (b["y0"] + b["y1"]) / 2))  # the user zooms in on it
    before = displayed_ranges(page, G)
    b = box_of(page, "nodes:labels", "mod:blocks.1")
    hover_click(page, (b["x0"] + b["x1"]) / 2, (b["y0"] + b["y1"]) / 2, "mod:blocks.1")
    wait_ids(page, G, "clusters:headers", present=("mod:blocks.1",))
    wait_settled(page, G)

    tid = registry.register(demo_trace("gpt"))
    graph = demo_trace("gpt").graph
    spec = view.toggle(
        graph, view.toggle(graph, state.initial_spec(tid), "fold:mod:blocks.0"), "mod:blocks.1"
    )
    x0, y0, x1, y1 = state.layout_of(tid, spec, "TB").clusters["mod:blocks.1"]
    (rx0, rx1), (ry0, ry1) = after = displayed_ranges(page, G)
    assert rx1 - rx0 > (before[0][1] - before[0][0]) * 1.2  # it zoomed out ...
    assert rx0 <= x0 and x1 <= rx1 and ry0 <= y0 and y1 <= ry1  # ... to show the whole opened module
    h = box_of(page, "clusters:headers", "mod:blocks.1")
    hover_click(page, h["x0"] + 0.5 * (h["x1"] - h["x0"]), (h["y0"] + h["y1"]) / 2, "mod:blocks.1")
    wait_ids(page, G, "nodes:labels", present=("mod:blocks.1",))
    wait_settled(page, G)
    back = displayed_ranges(page, G)
    assert sum(back, []) == pytest.approx(sum(before, []), rel=1e-3, abs=0.5), (before, after, back)


def test_the_drawn_image_shows_what_the_replica_measures(page: Any, gallery_url: str) -> None:
    """The label geometry above is read from a replica of the picture; a screenshot of the real image shows
    the same: text where the replica has it, of its height (the zoom cap included), and none where it has
    none."""
    open_demo(page, gallery_url, "mlp")
    plot = page.locator(css_id(G, "graph") + " .nsewdrag").first.bounding_box()
    at = (plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] / 2)
    for notches in (0, -12, -12, 60):  # the default view, zoomed in, further in (text capped), far out
        wheel(page, notches, at) if notches else None
        drawn = drawn_labels(page, graph_dom_id(G))
        pl = drawn["plot"]
        boxes = []  # the boxes' visible parts (a zoomed-in box may be larger than the plot)
        for b in target_boxes(page, graph_dom_id(G)):
            v = {
                "id": b["id"],
                "x0": max(b["x0"], pl["x0"]),
                "x1": min(b["x1"], pl["x1"]),
                "y0": max(b["y0"], pl["y0"]),
                "y1": min(b["y1"], pl["y1"]),
            }
            if v["x1"] - v["x0"] > 8 and v["y1"] - v["y0"] > 8:
                boxes.append(v)
        if not drawn["labels"]:  # far out: no text anywhere in the plot
            assert (
                dark_rows(
                    page,
                    {
                        "x": pl["x0"],
                        "y": pl["y0"],
                        "width": pl["x1"] - pl["x0"],
                        "height": pl["y1"] - pl["y0"],
                    },
                )
                == []
            ), notches
            continue
        assert boxes, drawn
        for b in boxes[:3]:
            clip = {
                "x": b["x0"] + 2,
                "y": b["y0"] + 2,
                "width": b["x1"] - b["x0"] - 4,
                "height": b["y1"] - b["y0"] - 4,
            }
            rows = dark_rows(page, clip)
            inside = [lab for lab in drawn["labels"] if in_plot(lab, b)]
            if not inside:
                assert rows == [], (notches, b, rows[:5])
                continue
            top, bottom = (
                min(lab["y0"] for lab in inside) - clip["y"],
                max(lab["y1"] for lab in inside) - clip["y"],
            )
            assert rows and top - 2 <= rows[0] and rows[-1] <= bottom + 2, (
                notches,
                b["id"],
                rows,
                top,
                bottom,
            )
            assert rows[-1] - rows[0] >= 0.4 * (bottom - top), (notches, b["id"], rows, top, bottom)
    assert drawn["labels"] == []  # far out, and the screenshot showed no text either
