"""One view change, worked out from the browser's state: the next view (``step``, a pure function of the
store, tested without a browser) and the outputs update_view sends for it (``answer``: a new figure, or a
Patch when only the ranges move, and only what changed besides).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dash import Patch, html, no_update

from torchvista_dash.app.actions import hitlayer, zoom
from torchvista_dash.app.actions.details import details, selection
from torchvista_dash.app.traces import registry, state
from torchvista_dash.model.options import depth_from_text
from torchvista_dash.render.style import get_theme
from torchvista_dash.view import build as view_mod
from torchvista_dash.view.types import ViewSpec


def clicked_id(click: dict[str, Any] | None) -> str | None:
    """The visible id carried in ``customdata`` by the clicked point, if any."""
    if not click or not click.get("points"):
        return None
    cd = click["points"][0].get("customdata")
    if isinstance(cd, (list, tuple)):
        cd = cd[0] if cd else None
    return cd if isinstance(cd, str) and cd else None


def root_style(theme: str) -> dict[str, str]:
    """The ModelGraph's own box: the theme's page colours (the figure's), padding and font."""
    return {**get_theme(theme).page_style(), "padding": "8px", "fontFamily": "system-ui, sans-serif"}


def root_class(theme: str) -> str:
    """The ModelGraph's classes: ``tvd-dark`` lets the stylesheet (assets/tvd.css) dress the toolbar's
    controls and, on a served page, the whole page in the theme."""
    return f"tvd-model-graph tvd-{theme}"


@dataclass(frozen=True)
class NextView:
    """The view after one user action. ``zoom_back``: the zoom to return to when the module that an open click
    zoomed out for is closed again without the user moving meanwhile (``{"id", "before", "after"}``)."""

    spec: ViewSpec
    rankdir: str
    theme: str
    highlight: str | None
    ranges: state.Ranges
    zoom_back: dict[str, Any] | None = None


def next_view(
    trigger: str | None, value: Any, data: dict[str, Any], relayout: dict[str, Any] | None
) -> tuple[ViewSpec, str, str, str | None, state.Ranges] | None:
    """The view after one user action: (spec, rankdir, theme, highlight, ranges); None if nothing changes.

    A pure function of the browser's state, so it is tested without a browser.
    """
    nv = step(trigger, value, data, relayout)
    return None if nv is None else (nv.spec, nv.rankdir, nv.theme, nv.highlight, nv.ranges)


def step(
    trigger: str | None,
    value: Any,
    data: dict[str, Any],
    relayout: dict[str, Any] | None,
    click: dict[str, Any] | None = None,
) -> NextView | None:
    """``next_view`` with the zoom memory; ``click`` (plotly's clickData) tells the plot's scale."""
    tid = data["trace"]
    graph = registry.get(tid).graph
    spec = state.spec_from_store(data)
    rankdir, theme, highlight = data.get("rankdir", "TB"), data.get("theme", "light"), data.get("highlight")
    old_layout = state.layout_of(tid, spec, rankdir)
    sent = data.get("sent") or [data["ranges"]]
    fresh = relayout != data.get("relayout") and not state.is_echo(relayout, sent)
    seen = relayout if fresh else None  # a stale event, or plotly echoing our own ranges, is not a zoom
    ranges = state.ranges_from_relayout(seen, data["ranges"], state.full_ranges(old_layout))
    new_spec, fit, zoom_back = spec, False, None
    if trigger == "graph":
        vid = value
        vg = state.visible(tid, spec)
        boxes = {n.id: n for n in vg.nodes}
        clusters = {c.id for c in vg.clusters}
        if vid not in clusters and (vid not in boxes or boxes[vid].kind not in ("module", "folded")):
            return None  # an op, input or output: details only
        new_spec = view_mod.toggle(graph, spec, vid)
        new_layout = state.layout_of(tid, new_spec, rankdir)
        before = state.anchor_of(old_layout, vid)
        opened = vid if vid in new_layout.clusters else None
        after = state.anchor_of(new_layout, vid)
        if after is None and vid in boxes and boxes[vid].members:  # an unfolded group: its first call
            opened = boxes[vid].members[0] if boxes[vid].members[0] in new_layout.clusters else None
            after = state.anchor_of(new_layout, boxes[vid].members[0])
        back = data.get("zoom_back") or {}
        if (
            vid in clusters
            and back.get("id") == vid
            and not fresh
            and zoom.same_ranges(back.get("after"), ranges)
        ):
            ranges = back["before"]  # closed where it was opened: the user's own zoom
        elif before is not None and after is not None:
            seen_ranges = ranges
            ranges = state.shift(ranges, after[0] - before[0], after[1] - before[1])
            if opened is not None:
                scale = zoom.clicked_scale(click, old_layout.nodes.get(vid))
                ranges, k = zoom.fit_opened(ranges, after, new_layout.clusters[opened], scale)
                ranges = state.keep_inside(ranges, after)
                if k > 1.0:
                    zoom_back = {"id": opened, "before": seen_ranges, "after": ranges}
            else:
                ranges = state.keep_inside(ranges, after)
        highlight = None
    elif trigger in ("expand_all", "collapse_all", "depth"):
        if trigger == "depth" and value == view_mod.CUSTOM:
            return None
        depth = (
            {"expand_all": None, "collapse_all": 0}.get(trigger)
            if trigger != "depth"
            else depth_from_text(value)
        )
        opts: dict[str, Any] = {"fold_repeats": spec.fold_repeats, "show_params": spec.show_params}
        new_spec = (
            view_mod.expand_everything(graph, **opts)
            if depth is None  # folded repeats too
            else view_mod.make_spec(graph, depth=depth, **opts)
        )
        fit = True
    elif trigger == "options":
        value = value or []
        new_spec = replace(spec, fold_repeats="fold" in value, show_params="params" in value)
        fit = True
    elif trigger == "direction":
        rankdir, fit = value, True
    elif trigger == "theme":
        theme = value
    elif trigger == "search":
        if not value:
            highlight = None
        else:
            new_spec = view_mod.expand_to(graph, spec, value)
            highlight = view_mod.visible_id_of(graph, state.visible(tid, new_spec), value)
            ranges = state.centre_on(ranges, state.layout_of(tid, new_spec, rankdir), highlight)
    elif trigger == "fit":
        return NextView(new_spec, rankdir, theme, highlight, state.full_ranges(old_layout), zoom_back)
    elif trigger == "color_by":
        pass  # the same view, painted otherwise (``_apply`` sets it)
    elif trigger == "first_view":  # a first view the constructor left to the page (firstview.py)
        if not data.get("pending"):
            return None
        fit = True
    else:
        return None
    if fit:
        ranges = state.start_ranges(state.layout_of(tid, new_spec, rankdir))
    return NextView(new_spec, rankdir, theme, highlight, ranges, zoom_back)


def with_controls(
    data: dict[str, Any], options: list[str] | None, direction: str | None, theme: str | None
) -> dict[str, Any]:
    """The store with the toolbar's current values: they are always current in the browser, while the store
    may predate an action whose answer has not arrived yet (two quick actions would otherwise lose one)."""
    out = dict(data)
    if options is not None:
        out["fold"], out["params"] = "fold" in options, "params" in options
    if direction in ("TB", "LR"):
        out["rankdir"] = direction
    if theme in ("light", "dark"):
        out["theme"] = theme
    return out


def answer(
    trigger: str | None,
    value: Any,
    data: dict[str, Any],
    relayout: dict[str, Any] | None,
    current: dict[str, Any] | None = None,
    shown_depth: Any = None,
    click: dict[str, Any] | None = None,
    *,
    picture_base: str | None = None,
) -> tuple:
    """The first seven outputs of ``update_view`` for one action (the last, the search box, is its own:
    figure, store, notes, style, depth, class, hits); ``data`` is the store as the browser last drew it,
    ``current`` the same with the toolbar's current values, ``shown_depth`` the depth control's value,
    ``click`` the clickData of a click (its box's drawn size tells the plot's scale), ``picture_base`` where
    the app serves pictures (None: inside the figure)."""
    result = step(trigger, value, current if current is not None else data, relayout, click)
    if result is None:
        return no_update, no_update, no_update, no_update, no_update, no_update, no_update
    spec, rankdir, theme, highlight, ranges = (
        result.spec,
        result.rankdir,
        result.theme,
        result.highlight,
        result.ranges,
    )
    tid = data["trace"]
    spec = state.drawn_spec(tid, spec)
    old_draw = state.draw_from_store(data)
    draw = state.draw_from_store(
        data,
        rankdir=rankdir,
        theme=theme,
        highlight=highlight,
        **({"color_by": value or None} if trigger == "color_by" else {}),
    )
    rev = int(data.get("rev", 0)) + 1  # this answer's ranges win over the user's zoom (state.uirevision)
    new_data = {
        **data,
        **state.spec_to_store(spec),
        **state.draw_to_store(draw),
        "ranges": ranges,
        "rev": rev,
        "relayout": relayout,
        "zoom_back": result.zoom_back,
        "found": value if trigger == "search" and value else None,  # its details follow (show_found)
        "sent": ([ranges] + list(data.get("sent") or [data["ranges"]]))[:4],
    }
    pending = new_data.pop("pending", False)  # the placeholder goes, whatever the action
    old_spec = state.spec_from_store(data)
    if (spec, draw) == (old_spec, old_draw) and not pending:
        fig: Any = Patch()  # only the ranges move: two numbers, and the hit bars there
        fig["layout"]["xaxis"]["range"] = ranges[0]
        fig["layout"]["yaxis"]["range"] = ranges[1]
        fig["layout"]["uirevision"] = state.uirevision(rev)
        hits = hitlayer.patch(tid, spec, draw, ranges, rev, fig)[1]
    else:
        fig, hits = hitlayer.sent_figure(tid, spec, draw, ranges, rev, picture_base=picture_base)
    # unchanged outputs are not sent: each one sent costs the browser a React update on every click
    new_notes = state.visible(tid, spec).notes
    notes = no_update if new_notes == state.visible(tid, old_spec).notes else [html.Div(n) for n in new_notes]
    same_theme = draw.theme == old_draw.theme
    style = no_update if same_theme else root_style(draw.theme)
    css_class = no_update if same_theme else root_class(draw.theme)
    state.precompute_neighbours(tid, spec, draw)
    depth = view_mod.depth_of(registry.get(tid).graph, spec)  # the control shows the view's state ("custom")
    return fig, new_data, notes, style, (no_update if depth == shown_depth else depth), css_class, hits


def details_for(trigger: str | None, value: Any, data: dict[str, Any]) -> tuple[Any, Any]:
    """The details panel and the ``selected`` store after one action: the clicked box or the chosen search
    hit (no_update otherwise)."""
    if trigger not in ("graph", "search") or not value:
        return no_update, no_update
    tid = data["trace"]
    members: tuple[str, ...] = ()
    if value.startswith(view_mod.FOLD_PREFIX):
        node = next((n for n in state.visible(tid, state.spec_from_store(data)).nodes if n.id == value), None)
        members = node.members if node is not None else ()
    return details(tid, value, members), selection(tid, value, members)
