"""The page's state: ``PageState`` round-trips through its store, and a store it did not write (hostile, or
from another version) is a clear message in the page, over real HTTP and in a real browser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support_app import css_id, start, wait_drawn

from bench.dash_client import DashClient, find_store, output_of
from torchvista_dash.app.server.server import BackgroundServer, make_app
from torchvista_dash.app.traces.page_state import VERSION, PageState, PageStateError, ZoomBack
from torchvista_dash.demos import demo_trace
from torchvista_dash.model.errors import TorchvistaDashError
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.view.types import ViewSpec

RANGES = [[0.0, 100.0], [-5.0, 50.0]]


def _page() -> PageState:
    return PageState(
        trace="abc",
        spec=ViewSpec(
            expanded=frozenset({"mod:a", "mod:b"}), fold_repeats=False, pinned=frozenset({"mod:c"})
        ),
        draw=DrawOptions(theme="dark", rankdir="LR", highlight="mod:a", color_by="flops"),
        ranges=RANGES,
        rev=3,
        relayout={"xaxis.range[0]": 1.0, "xaxis.range[1]": 2.0},
        sent=(RANGES, [[1.0, 2.0], [3.0, 4.0]]),
        found="mod:b",
        zoom_back=ZoomBack("mod:a", RANGES, [[1.0, 2.0], [3.0, 4.0]]),
    )


def test_a_page_state_survives_its_store_as_json() -> None:
    page = _page()
    store = json.loads(json.dumps(page.to_store()))
    assert PageState.from_store(store) == page
    assert store["v"] == VERSION and store["expanded"] == [
        "mod:a",
        "mod:b",
    ]  # sorted: the same view, one store
    fresh = PageState(trace="abc", spec=ViewSpec(), draw=DrawOptions(), ranges=RANGES)
    assert fresh.sent == (RANGES,)  # what was sent first is what the page shows


BAD_STORES: list[tuple[Any, str]] = [
    ("not a dict", "expected an object"),
    ({"trace": "abc", "ranges": RANGES}, "another version"),  # written before stores had a version
    ({"v": VERSION + 1}, "another version"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "evil": 1}, "unknown key"),
    ({"v": VERSION, "trace": 7, "ranges": RANGES}, "trace must be"),
    ({"v": VERSION, "trace": "abc", "ranges": [[0, 1]]}, "ranges must be"),
    ({"v": VERSION, "trace": "abc", "ranges": [[0, float("nan")], [0, 1]]}, "ranges must be"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "expanded": "mod:a"}, "expanded must be a list"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "expanded": [{"x": 1}]}, "expanded must hold ids"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "pinned": ["x"] * 300_000}, "at most"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "fold": "yes"}, "fold must be true or false"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "theme": "neon"}, "theme must be one of"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "highlight": "x" * 10_000}, "highlight must be"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "rev": -1}, "rev must be"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "relayout": {"a": {"b": 1}}}, "relayout"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "sent": [RANGES] * 50}, "sent must be"),
    ({"v": VERSION, "trace": "abc", "ranges": RANGES, "zoom_back": {"id": "m", "before": 1}}, "zoom_back"),
]


@pytest.mark.parametrize("store, words", BAD_STORES)
def test_a_store_this_version_did_not_write_is_refused_with_what_to_do(store: Any, words: str) -> None:
    with pytest.raises(PageStateError, match=words) as err:
        PageState.from_store(store)
    assert "reload the page" in str(err.value)
    assert isinstance(err.value, TorchvistaDashError) and isinstance(err.value, ValueError)


# ---- over HTTP, as a hostile client sends it ------------------------------------------------------------
@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    srv = start(make_app([demo_trace("mlp")]))
    try:
        yield srv
    finally:
        srv.stop()


def _text(node: Any) -> str:
    return json.dumps(node)


@pytest.mark.parametrize(
    "change",
    [
        {"ranges": "everything"},
        {"v": None},
        {"expanded": ["x"] * 300_000},
        {"trace": "0" * 16},  # a trace this server does not hold
        {"expanded": ["mod:not-in-the-model"]},
    ],
    ids=["ranges", "old", "huge", "gone-trace", "unknown-id"],
)
def test_every_callback_answers_a_hostile_store_with_a_message(
    server: BackgroundServer, change: dict
) -> None:
    client = DashClient(server.url)
    store = find_store(client.layout(), "main")
    assert store is not None
    bad = {**store, **change}
    box = next(c.id for c in demo_trace("mlp").graph.module_calls if c.depth == 1)
    click = {"graph.clickData": {"points": [{"customdata": box}]}, "store.data": bad}
    view = client.call('"graph"}.figure', "main", click, "graph.clickData")
    assert view.status_code == 200, view.text[:300]
    notes = _text(output_of(view, "main", "notes", "children"))
    assert "tvd-app-error" in notes and "Traceback" not in notes
    assert any(w in notes for w in ("reload the page", "restarted", "not in this trace", "unknown")), notes
    details = client.call('"details"}.children', "main", click, "graph.clickData")
    assert details.status_code == 200 and "Traceback" not in details.text
    hits = client.call('"hits"}.data', "main", {"store.data": bad}, "store.data")
    assert hits.status_code in (200, 204), hits.text[:300]  # nothing changes: the view says why
    options = client.call(
        '"search"}.options', "main", {"search.search_value": "lin", **click}, "search.search_value"
    )
    assert options.status_code == 200 and "Traceback" not in options.text
    if "ranges" in change or "v" in change:
        assert "reload the page" in notes


# ---- in a browser: the store the page sends is replaced on its way ---------------------------------------
def test_a_page_whose_store_was_tampered_with_says_to_reload(server: BackgroundServer, page: Any) -> None:
    def tamper(route: Any) -> None:
        body = json.loads(route.request.post_data or "{}")
        for arg in body.get("state", []) + body.get("inputs", []):
            if isinstance(arg, dict) and isinstance(arg.get("id"), dict):
                if arg["id"].get("subcomponent") == "store" and isinstance(arg.get("value"), dict):
                    arg["value"] = {**arg["value"], "v": 0}  # as a tab left open across an upgrade sends it
        route.continue_(post_data=json.dumps(body))

    page.goto(server.url)
    wait_drawn(page, "main")
    page.route(lambda url: "/_dash-update-component" in url, tamper)
    page.click(css_id("main", "fit"))
    notes = page.locator(css_id("main", "notes"))
    notes.get_by_text("reload the page", exact=False).wait_for(timeout=20_000)
    assert "another version of torchvista_dash" in notes.inner_text()
    page.screenshot(path="/tmp/nav-tampered-store.png")
