"""Shareable links: the page's address holds what is on screen, so reload, back/forward and a link sent to a
colleague show the same view.

``?demo=gpt&theme=dark&rankdir=LR&depth=1&open=mod:blocks.2&pin=mod:blocks.2``: the page (``trace``, ``demo``
or ``file``), the drawing options by their ``DrawOptions`` names, and the open modules as a difference from
the depth's view (``open``/``close``), with the folded runs opened (``unfold``) and members pinned (``pin``).
A view that is a depth's view is just ``depth=N``. Untrusted text: every id is checked against the trace
(``view.build.build_view`` refuses unknown ones) and the lists are bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.model.graph import Graph
from torchvista_dash.model.options import style_text
from torchvista_dash.view import build as view_mod
from torchvista_dash.view.types import ViewSpec

PAGE_KEYS = ("trace", "demo", "file", "root")  # which trace a page shows (server.py), or one module of it
VIEW_KEYS = ("open", "close", "unfold", "pin")
MAX_IDS = 2000  # ids per list in an address (a huge view is refused, not parsed)
_DRAW_KEYS = ("theme", "rankdir", "color_by", "style")


def _ids(text: str | None) -> frozenset[str]:
    items = [t for t in (text or "").split(",") if t]
    if len(items) > MAX_IDS:
        raise ValueError(f"the address names {len(items):,} modules; at most {MAX_IDS:,} are read")
    return frozenset(items)


def base_view(graph: Graph, depth: int | None, fold: bool, params: bool) -> ViewSpec:
    if depth is None:
        return view_mod.expand_everything(graph, fold_repeats=fold, show_params=params)
    return view_mod.make_spec(graph, depth=depth, fold_repeats=fold, show_params=params)


def view_query(graph: Graph, page: PageState) -> dict[str, str]:
    """The address's view part for a ModelGraph's state (see the module docstring)."""
    spec = page.spec
    out: dict[str, str] = {}
    for key in _DRAW_KEYS:
        value = getattr(page.draw, key)
        if value and value != {"theme": "light", "rankdir": "TB"}.get(key):
            out[key] = style_text(value) if key == "style" else str(value)
    if not spec.fold_repeats:
        out["fold_repeats"] = "0"
    if spec.show_params:
        out["show_params"] = "1"
    depth = view_mod.depth_of(graph, spec)
    if depth != view_mod.CUSTOM:
        if depth != 1:
            out["depth"] = str(depth)
        return out
    out["depth"] = "1"  # the base the differences are from, whatever the app's default
    base = base_view(graph, 1, spec.fold_repeats, spec.show_params)
    diffs = {
        "open": spec.expanded - base.expanded,
        "close": base.expanded - spec.expanded,
        "unfold": spec.unfolded,
        "pin": spec.pinned,
    }
    out.update({k: ",".join(sorted(v)) for k, v in diffs.items() if v})
    return out


def page_search(current: str | None, graph: Graph, page: PageState) -> str:
    """The address for the page now: its page keys kept from ``current``, the view from the page's state."""
    from urllib.parse import parse_qs

    query = parse_qs((current or "").lstrip("?"))
    keep = {k: query[k][0] for k in PAGE_KEYS if k in query}
    marks = {f"b{digit}": text for digit, text in page.bookmarks}  # Shift+1-9 (keys.py)
    return "?" + urlencode({**keep, **view_query(graph, page), **marks})


def spec_from_query(
    graph: Graph, query: Mapping[str, list[str]], depth: int | None, fold: bool, params: bool
) -> ViewSpec | None:
    """The view an address names, or None when it names none beyond its options (the depth's view then)."""
    if not any(k in query for k in VIEW_KEYS):
        return None
    texts = {k: query[k][0] if query.get(k) else "" for k in VIEW_KEYS}
    base = base_view(graph, depth, fold, params)
    spec = ViewSpec(
        expanded=(base.expanded | _ids(texts["open"])) - _ids(texts["close"]),
        fold_repeats=fold,
        unfolded=_ids(texts["unfold"]),
        show_params=params,
        pinned=_ids(texts["pin"]),
    )
    view_mod.check_spec(graph, spec)  # refuses ids the trace does not have (ValueError)
    return spec
