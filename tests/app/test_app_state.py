"""The app's logic without a browser: view transitions, keep-in-place, zoom tracking, search, details,
exports, the registry and the component's own checks. Real tracer, view, dot and renderer throughout."""

from __future__ import annotations

import base64
import re
from dataclasses import replace
from typing import Any

import dash
import pytest
from dash import html

from torchvista_dash.app import ModelGraph
from torchvista_dash.app.actions import search, viewstep
from torchvista_dash.app.actions.details import call_io, details, header
from torchvista_dash.app.actions.exporting import export_current_view
from torchvista_dash.app.server.server import make_app
from torchvista_dash.app.traces import registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.demos import demo_trace
from torchvista_dash.model.graph import TensorMeta
from torchvista_dash.view import build as view
from torchvista_dash.view.repeats import index_of


def store_for(name: str) -> dict[str, Any]:
    """The store a freshly created ModelGraph puts in the page."""
    return _find(ModelGraph(demo_trace(name), id=f"t-{name}"), "store").data


def page_for(name: str, **changes: Any) -> PageState:
    """The state a freshly created ModelGraph puts in the page, read back as the callbacks read it."""
    page = PageState.from_store(store_for(name))
    return replace(page, **changes) if changes else page


def next_view(trigger: str | None, value: Any, page: PageState, relayout: Any) -> viewstep.NextView | None:
    return viewstep.step(trigger, value, page, relayout)


def _find(component: Any, sub: str) -> Any:
    stack = [component]
    while stack:
        c = stack.pop()
        cid = getattr(c, "id", None)
        if isinstance(cid, dict) and cid.get("subcomponent") == sub:
            return c
        kids = getattr(c, "children", None)
        stack.extend(kids if isinstance(kids, list) else [kids] if kids is not None else [])
    raise AssertionError(f"no {sub} part")


def text_of(component: Any) -> str:
    if isinstance(component, (list, tuple)):
        return " ".join(text_of(c) for c in component)
    if isinstance(component, str | int | float):
        return str(component)
    return text_of(getattr(component, "children", None) or [])


def test_click_on_a_collapsed_module_opens_it_and_keeps_its_top_in_place() -> None:
    data = page_for("gpt", ranges=[[0.0, 200.0], [100.0, 300.0]], sent=())
    first = next_view("graph", "fold:mod:blocks.0", data, None)
    assert first is not None
    spec, ranges = first.spec, first.ranges
    assert "fold:mod:blocks.0" in spec.unfolded
    data2 = replace(data, spec=spec, ranges=ranges, sent=(ranges,))
    second = next_view("graph", "mod:blocks.1", data2, None)
    assert second is not None
    spec2, ranges2 = second.spec, second.ranges
    assert "mod:blocks.1" in spec2.expanded
    tid = data.trace
    before = state.anchor_of(state.layout_of(tid, spec, "TB"), "mod:blocks.1")
    after = state.anchor_of(state.layout_of(tid, spec2, "TB"), "mod:blocks.1")
    # same position relative to the viewport; the view zoomed out (about that point) to show what opened
    k = (ranges2[0][1] - ranges2[0][0]) / (ranges[0][1] - ranges[0][0])
    assert k > 1.0
    assert after[0] - ranges2[0][0] == pytest.approx(k * (before[0] - ranges[0][0]))
    assert after[1] - ranges2[1][0] == pytest.approx(k * (before[1] - ranges[1][0]))
    back = next_view("graph", "mod:blocks.1", replace(data2, spec=spec2), None)
    assert back is not None and "mod:blocks.1" not in back.spec.expanded


def test_click_on_an_op_selects_it_and_unknown_triggers_are_ignored() -> None:
    data = page_for("mlp")
    picked = next_view("graph", "n:0", data, None)  # the input box: selected, the view the same
    assert picked is not None and picked.spec == data.spec and picked.ranges == data.ranges
    assert picked.draw.selected == picked.draw.highlight == "n:0"
    assert next_view("graph", "n:0", replace(data, draw=picked.draw), None) is None  # already selected
    assert next_view("graph", "n:not-drawn", data, None) is None
    assert next_view(None, None, data, None) is None


def test_user_zoom_is_tracked_but_plotly_echoes_of_our_ranges_are_not() -> None:
    data = page_for("gpt", ranges=[[0.0, 100.0], [0.0, 100.0]], sent=([[0.0, 100.0], [0.0, 100.0]],))
    echo = {"xaxis.range": [-50.0, 150.0], "yaxis.range": [0.0, 100.0]}  # x stretched about its centre
    assert state.is_echo(echo, list(data.sent))

    def ranges_after(page: PageState, relayout: Any) -> Any:
        nv = next_view("theme", "dark", page, relayout)
        assert nv is not None
        return nv.ranges

    assert ranges_after(data, echo) == [[0.0, 100.0], [0.0, 100.0]]
    zoom = {"xaxis.range[0]": 10.0, "xaxis.range[1]": 30.0, "yaxis.range[0]": 40.0, "yaxis.range[1]": 60.0}
    assert ranges_after(data, zoom) == [[10.0, 30.0], [40.0, 60.0]]
    stale = replace(data, relayout=zoom)  # already seen: the stored ranges win
    assert ranges_after(stale, zoom) == [[0.0, 100.0], [0.0, 100.0]]
    full = state.full_ranges(state.layout_of(data.trace, data.spec, "TB"))
    assert ranges_after(data, {"xaxis.autorange": True}) == full


def test_buttons_depth_options_direction_and_fit() -> None:
    data = page_for("gpt")
    graph = demo_trace("gpt").graph

    def spec_after(trigger: str, value: Any) -> Any:
        nv = next_view(trigger, value, data, None)
        return None if nv is None else nv.spec

    every = spec_after("expand_all", 1)
    assert every == view.expand_everything(graph) and every.unfolded == frozenset(
        index_of(graph).runs
    )  # repeats too
    assert not any(n.kind == "folded" for n in view.build_view(graph, every).nodes)
    assert spec_after("depth", -1) == every
    assert spec_after("collapse_all", 1) == view.make_spec(graph, depth=0)
    assert spec_after("depth", view.CUSTOM) is None
    assert spec_after("depth", 2) == view.make_spec(graph, depth=2)
    opts = spec_after("options", ["params"])
    assert opts.show_params and not opts.fold_repeats
    turned = next_view("direction", "LR", data, None)
    assert turned is not None and turned.rankdir == "LR"
    assert turned.ranges == state.full_ranges(state.layout_of(data.trace, turned.spec, "LR"))
    fitted = next_view("fit", 1, replace(data, ranges=[[5, 6], [5, 6]]), None)
    assert fitted is not None
    assert fitted.ranges == state.full_ranges(state.layout_of(data.trace, data.spec, "TB"))


def test_search_lists_matches_then_expands_centres_and_highlights() -> None:
    graph = demo_trace("gpt").graph
    found = search.search(graph, "LN_2")
    assert [o["value"] for o in found][:4] == [f"mod:blocks.{i}.ln_2" for i in range(4)]
    assert all("ln_2" in o["search"] for o in found)
    assert search.search(graph, "") == []
    assert search.search(graph, "CausalSelf")[0]["label"] == "blocks.0.attn: CausalSelfAttention"
    soft = search.search(graph, "softmax")
    assert any(o["value"].startswith("n:") for o in soft)
    assert soft[0]["label"] == "softmax (op) in blocks.0.attn · 1×2×16×16"  # no internal id in a label
    every = search.search(graph, "a")
    assert not any(re.search(r"\b(n|mod):[\w.(]", o["label"]) for o in every)
    assert len({o["label"] for o in every}) == len(every)  # twins get #2, #3
    data = page_for("gpt", ranges=[[0.0, 100.0], [0.0, 100.0]])
    nv = next_view("search", "mod:blocks.2.ln_2", data, None)
    assert nv is not None
    spec, highlight, ranges = nv.spec, nv.highlight, nv.ranges
    assert highlight == "mod:blocks.2.ln_2" and "mod:blocks.2" in spec.expanded
    box = state.layout_of(data.trace, spec, "TB").nodes[highlight]
    assert (ranges[0][0] + ranges[0][1]) / 2 == pytest.approx((box[0] + box[2]) / 2)
    assert (ranges[1][0] + ranges[1][1]) / 2 == pytest.approx((box[1] + box[3]) / 2)


def test_details_for_module_op_failure_and_fold() -> None:
    tid = registry.register(demo_trace("gpt"))
    text = text_of(details(tid, "mod:lm_head"))
    assert "lm_head: Linear" in text and "in_features=32, out_features=64, bias=False" in text
    assert "weight" in text and "64×32" in text and "float32" in text and "2,048 in total" in text
    ins, outs = call_io(tid, "mod:blocks.0")
    assert ins == [TensorMeta((1, 16, 32), "float32", "cpu", 2048)] and outs == ins
    op = next(n for n in demo_trace("gpt").graph.nodes if n.name == "softmax")
    assert "softmax" in text_of(details(tid, op.id)) and "1×2×16×16 float32" in text_of(details(tid, op.id))
    assert "4 repeated calls of GPTBlock" in text_of(
        details(tid, "fold:mod:blocks.0", tuple(f"mod:blocks.{i}" for i in range(4)))
    )
    btid = registry.register(demo_trace("broken"))
    failing = demo_trace("broken").graph.error.node
    ftext = text_of(details(btid, failing))
    assert "RuntimeError: Sizes of tensors must match" in ftext and "Traceback" in ftext
    assert "Forward pass failed (in cat, fusion)" in text_of(header(demo_trace("broken").graph))


def test_failed_trace_opens_on_its_failing_op() -> None:
    data = page_for("broken")
    graph = demo_trace("broken").graph
    assert data.draw.highlight == graph.error.node
    vg = state.visible(data.trace, data.spec)
    assert graph.error.node in {n.id for n in vg.nodes}


@pytest.mark.parametrize("fmt, magic", [("html", "Plotly.newPlot"), ("svg", "<svg"), ("png", None)])
def test_exports_of_the_current_view(fmt: str, magic: str | None) -> None:
    data = page_for("mlp")
    nv = next_view("graph", "mod:body", data, None)
    assert nv is not None
    payload = export_current_view(replace(data, spec=nv.spec), fmt)
    assert payload["filename"] == f"MLP-view.{fmt}"
    content = base64.b64decode(payload["content"]) if payload["base64"] else payload["content"].encode()
    if fmt == "png":
        assert content[:8] == b"\x89PNG\r\n\x1a\n" and len(content) > 1000
    else:
        text = content.decode()
        assert magic in text and "1: ReLU" in text  # the opened module's children are in the file


def test_the_json_export_is_the_trace() -> None:
    payload = export_current_view(page_for("mlp"), "json")
    assert payload["filename"] == "MLP-trace.json"
    assert base64.b64decode(payload["content"]) == demo_trace("mlp").graph.to_bytes()


def test_registry_and_component_checks() -> None:
    t = demo_trace("mlp")
    assert registry.register(t) == registry.register(t) == t.id
    with pytest.raises(registry.UnknownTrace, match="restarted"):
        registry.get("0" * 16)
    with pytest.raises(TypeError, match="needs a Trace"):
        ModelGraph("model.pt")
    with pytest.raises(ValueError, match="theme"):
        ModelGraph(t, theme="blue")
    with pytest.raises(ValueError, match="rankdir"):
        ModelGraph(t, rankdir="BT")
    a, b = ModelGraph(t, id="a"), ModelGraph(t, id="b")
    assert _find(a, "graph").id != _find(b, "graph").id
    assert _find(a, "store").data["trace"] == _find(b, "store").data["trace"]
    assert "MLP" in text_of(_find(a, "header"))


def test_callbacks_reach_every_app_in_one_process() -> None:
    """One set per app, whatever the order: the package's apps register theirs (app.callback) at their first
    request, users' apps get the All-in-One dash.callback set, a fresh one for each app started."""
    first = make_app([demo_trace("mlp")])
    second = dash.Dash(__name__)
    second.layout = html.Div([ModelGraph(demo_trace("mlp"), id="x")])
    fourth = dash.Dash(__name__)
    third = make_app(gallery=True)
    for app in (first, second, third):
        app.server.test_client().get("/")
    fourth.layout = html.Div([ModelGraph(demo_trace("mlp"), id="y")])  # after the others took theirs
    fourth.server.test_client().get("/")
    for app in (first, second, third, fourth):
        client = app.server.test_client()
        outputs = [d["output"] for d in client.get("/_dash-dependencies").get_json()]
        figures = [o for o in outputs if '"subcomponent":"graph"}.figure' in o]
        assert sum('"subcomponent":"graph"}.figure@' not in o for o in figures) == 1, (
            outputs
        )  # exactly one set
        assert len(figures) == 2, outputs  # and its hit-bar renewal (app/actions/hitlayer.py)
        assert sum('"subcomponent":"selected"}.data' in o for o in outputs) == 2  # a click's and a search's


def test_pages_by_url() -> None:
    t = demo_trace("unet")
    tid = registry.register(t)
    client = make_app().server.test_client()
    layout = client.get(
        "/_dash-layout", headers={"Referer": f"http://x/?trace={tid}&depth=2&theme=dark"}
    ).get_data(as_text=True)
    assert "U-Net" in layout and '"theme":"dark"' in layout.replace(" ", "")
    missing = client.get("/_dash-layout", headers={"Referer": "http://x/?trace=ffff"}).get_data(as_text=True)
    assert "no trace with id" in missing
    bad = client.get("/_dash-layout", headers={"Referer": f"http://x/?trace={tid}&depth=x"}).get_data(
        as_text=True
    )
    assert "cannot show this page" in bad


def test_toolbar_values_override_a_store_that_predates_them() -> None:
    data = page_for("gpt")
    current = viewstep.with_controls(data, ["params"], "LR", "dark")
    assert (
        current.spec.fold_repeats,
        current.spec.show_params,
        current.draw.rankdir,
        current.draw.theme,
    ) == (
        False,
        True,
        "LR",
        "dark",
    )
    assert viewstep.with_controls(data, None, None, None) == data
    nv = next_view("expand_all", 1, current, None)
    assert nv is not None
    assert nv.spec.show_params and not nv.spec.fold_repeats and (nv.rankdir, nv.theme) == ("LR", "dark")
    out = viewstep.answer("expand_all", 1, data, None, current)
    assert out.depth == -1  # the depth control follows
    new_data = PageState.from_store(out.store)
    assert new_data.spec.show_params and new_data.draw.rankdir == "LR"
    assert isinstance(out.figure, dict)  # a whole new figure
