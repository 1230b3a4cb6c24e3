"""One view change, worked out from the browser's state: the next view (``step``, a pure function of the
``PageState``, tested without a browser) and the outputs update_view sends for it (``answer``, a
``ViewAnswer``: a new figure, or a Patch when only the ranges move, and only what changed besides).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, cast

from dash import Patch, html, no_update

from torchvista_dash.app.actions import hitlayer, keys, zoom
from torchvista_dash.app.actions.details import details, selection
from torchvista_dash.app.actions.search import search
from torchvista_dash.app.traces import registry, state
from torchvista_dash.app.traces.page_state import MAX_SENT, PageState, ZoomBack
from torchvista_dash.model.options import (
    REACH_MODES,
    THEMES,
    DrawOptions,
    Rankdir,
    ThemeName,
    depth_from_text,
    style_rules,
)
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
    """The view after one user action: what is drawn, how, and where. ``zoom_back``: the zoom to return to
    when the module that an open click zoomed out for is closed again without the user moving meanwhile."""

    spec: ViewSpec
    draw: DrawOptions
    ranges: state.Ranges
    zoom_back: ZoomBack | None = None
    # the find box's matches and the one shown, the bookmarks: None where they stay as they were
    hits: tuple[str, ...] | None = None
    hit: int | None = None
    bookmarks: tuple[tuple[int, str], ...] | None = None

    @property
    def rankdir(self) -> Rankdir:
        return self.draw.rankdir

    @property
    def theme(self) -> ThemeName:
        return self.draw.theme

    @property
    def highlight(self) -> str | None:
        return self.draw.highlight


def _selected(draw: DrawOptions, vid: str | None) -> DrawOptions:
    """``draw`` with ``vid`` selected (its reach lit, outlined) or nothing selected (None)."""
    return replace(draw, selected=vid, highlight=vid, path_to=None)


def _shown(
    tid: str, spec: ViewSpec, draw: DrawOptions, ranges: state.Ranges, target: str
) -> tuple[ViewSpec, DrawOptions, state.Ranges]:
    """The view with ``target`` (a graph id) on screen: its modules opened, it outlined and centred."""
    graph = registry.get(tid).graph
    new_spec = view_mod.expand_to(graph, spec, target)
    highlight = view_mod.visible_id_of(graph, state.visible(tid, new_spec), target)
    ranges = state.centre_on(ranges, state.layout_of(tid, new_spec, draw.rankdir), highlight)
    return new_spec, replace(draw, highlight=highlight), ranges


def step(
    trigger: str | None,
    value: Any,
    page: PageState,
    relayout: dict[str, Any] | None,
    click: dict[str, Any] | None = None,
    *,
    shift: bool = False,
) -> NextView | None:
    """The view after one user action (None if nothing changes): a pure function of the browser's state, so
    it is tested without a browser. ``click`` (plotly's clickData) tells the plot's scale; ``shift``: the
    click was made with Shift held (a path from the selection to the box clicked)."""
    tid = page.trace
    graph = registry.get(tid).graph
    spec, draw = page.spec, page.draw
    old_layout = state.layout_of(tid, spec, draw.rankdir)
    fresh = relayout != page.relayout and not state.is_echo(relayout, list(page.sent))
    seen = relayout if fresh else None  # a stale event, or plotly echoing our own ranges, is not a zoom
    ranges = state.ranges_from_relayout(seen, page.ranges, state.full_ranges(old_layout))
    new_spec, fit, zoom_back = spec, False, None
    if trigger == "graph":
        vid = value
        vg = state.visible(tid, spec)
        boxes = {n.id: n for n in vg.nodes}
        clusters = {c.id for c in vg.clusters}
        if vid not in clusters and vid not in boxes:
            return None
        if shift and draw.selected is not None and vid != draw.selected:
            draw = replace(draw, path_to=vid)  # every path between the selection and this box
        elif vid not in clusters and boxes[vid].kind not in ("module", "folded"):
            if vid == draw.selected and draw.path_to is None:
                return None  # already selected
            draw = _selected(draw, vid)  # an op, input or output: selected, its inputs and outputs lit
        else:
            new_spec = view_mod.toggle(graph, spec, vid)
            new_layout = state.layout_of(tid, new_spec, draw.rankdir)
            before = state.anchor_of(old_layout, vid)
            opened = vid if vid in new_layout.clusters else None
            after = state.anchor_of(new_layout, vid)
            if after is None and vid in boxes and boxes[vid].members:  # an unfolded group: its first call
                opened = boxes[vid].members[0] if boxes[vid].members[0] in new_layout.clusters else None
                after = state.anchor_of(new_layout, boxes[vid].members[0])
            back = page.zoom_back
            if (
                vid in clusters
                and back is not None
                and back.id == vid
                and not fresh
                and zoom.same_ranges(back.after, ranges)
            ):
                ranges = back.before  # closed where it was opened: the user's own zoom
            elif before is not None and after is not None:
                seen_ranges = ranges
                ranges = state.shift(ranges, after[0] - before[0], after[1] - before[1])
                if opened is not None:
                    scale = zoom.clicked_scale(click, old_layout.nodes.get(vid))
                    ranges, k = zoom.fit_opened(ranges, after, new_layout.clusters[opened], scale)
                    ranges = state.keep_inside(ranges, after)
                    if k > 1.0:
                        zoom_back = ZoomBack(opened, seen_ranges, ranges)
                else:
                    ranges = state.keep_inside(ranges, after)
            draw = replace(draw, highlight=None)
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
        draw, fit = replace(draw, rankdir=value), True
    elif trigger == "theme":
        draw = replace(draw, theme=value)
    elif trigger == "search":
        if not value:
            draw = replace(draw, highlight=None)
        else:
            new_spec, draw, ranges = _shown(tid, spec, draw, ranges, value)
    elif trigger == "find":  # the find box's text: its matches, the first shown (N / Shift+N: the others)
        hits = tuple(o["value"] for o in search(graph, value or ""))
        if not hits:
            return None
        new_spec, draw, ranges = _shown(tid, spec, draw, ranges, hits[0])
        return NextView(new_spec, draw, ranges, hits=hits, hit=0)
    elif trigger == "hit":
        if not page.hits:
            return None
        at = (page.hit + (value or 1)) % len(page.hits)
        new_spec, draw, ranges = _shown(tid, spec, draw, ranges, page.hits[at])
        return NextView(new_spec, draw, ranges, hit=at)
    elif trigger == "bookmark_save":
        marks = dict(page.bookmarks)
        marks[int(value)] = keys.bookmark_text(graph, page, spec, ranges)
        return NextView(spec, draw, ranges, bookmarks=tuple(sorted(marks.items())))
    elif trigger == "bookmark":
        text = dict(page.bookmarks).get(int(value))
        if text is None:
            return None
        new_spec, marked, rankdir = keys.bookmark_view(graph, text)
        draw = replace(draw, rankdir=cast(Rankdir, rankdir) if rankdir else draw.rankdir)
        layout = state.layout_of(tid, new_spec, draw.rankdir)
        ranges = marked if marked is not None else state.start_ranges(layout)
    elif trigger == "fit":
        return NextView(new_spec, draw, state.full_ranges(old_layout), zoom_back)
    elif trigger == "style":  # rules typed in the page: a bad one is said in the notes line
        draw = replace(draw, style=style_rules(value))
    elif trigger == "color_by":
        draw = replace(draw, color_by=value or None)  # the same view, painted otherwise
    elif trigger == "reach":
        if value not in REACH_MODES or value == draw.reach:
            return None
        draw = replace(draw, reach=value, path_to=None)
    elif trigger == "path_to":
        if not value:  # the control emptied: the selection's reach again
            if draw.path_to is None:
                return None
            draw = replace(draw, path_to=None)
        elif draw.selected is None:
            return None
        else:
            target = view_mod.visible_id_of(graph, state.visible(tid, spec), value)
            if target is None or target == draw.selected:
                return None
            draw = replace(draw, path_to=target)
    elif trigger == "clear":
        if draw.selected is None and draw.highlight is None:
            return None
        draw = _selected(draw, None)
    elif trigger == "first_view":  # a first view the constructor left to the page (firstview.py)
        if not page.pending:
            return None
        fit = True
    else:
        return None
    if fit:
        ranges = state.start_ranges(state.layout_of(tid, new_spec, draw.rankdir))
    return NextView(new_spec, draw, ranges, zoom_back)


def with_controls(
    page: PageState, options: list[str] | None, direction: str | None, theme: str | None
) -> PageState:
    """The state with the toolbar's current values: they are always current in the browser, while the store
    may predate an action whose answer has not arrived yet (two quick actions would otherwise lose one)."""
    spec, draw = page.spec, page.draw
    if options is not None:
        spec = replace(spec, fold_repeats="fold" in options, show_params="params" in options)
    if direction in ("TB", "LR"):
        draw = replace(draw, rankdir=cast(Rankdir, direction))
    if theme in THEMES:
        draw = replace(draw, theme=cast(ThemeName, theme))
    return replace(page, spec=spec, draw=draw)


@dataclass(frozen=True)
class ViewAnswer:
    """What ``update_view`` sends for one action, by output (callbacks.py wires each name to its component);
    ``no_update`` where nothing changed: each output sent costs the browser a React update."""

    figure: Any = no_update  # a whole figure, or a Patch of its ranges and hit bars
    store: Any = no_update  # the new PageState, as its store
    notes: Any = no_update  # the notes line under the toolbar
    style: Any = no_update  # the ModelGraph's own style (its theme's colours)
    depth: Any = no_update  # the depth control, following the view ("custom")
    css_class: Any = no_update  # the ModelGraph's classes (its theme)
    hits: Any = no_update  # what the figure's hit bars cover (hitlayer.py)
    search: Any = no_update  # the search box (emptied after a chosen hit)

    def outputs(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def answer(
    trigger: str | None,
    value: Any,
    page: PageState,
    relayout: dict[str, Any] | None,
    current: PageState | None = None,
    shown_depth: Any = None,
    click: dict[str, Any] | None = None,
    *,
    shift: bool = False,
    picture_base: str | None = None,
) -> ViewAnswer:
    """``update_view``'s answer to one action but the search box's (its own); ``page`` is the state as the
    browser last drew it, ``current`` the same with the toolbar's current values, ``shown_depth`` the depth
    control's value, ``click`` the clickData of a click (its box's drawn size tells the plot's scale),
    ``picture_base`` where the app serves pictures (None: inside the figure)."""
    result = step(trigger, value, current if current is not None else page, relayout, click, shift=shift)
    if result is None:
        return ViewAnswer()
    tid = page.trace
    spec = state.drawn_spec(tid, result.spec)
    old_draw = page.draw
    draw = result.draw
    rev = page.rev + 1  # this answer's ranges win over the user's zoom (state.uirevision)
    ranges = result.ranges
    new_page = replace(
        page,
        spec=spec,
        draw=draw,
        ranges=ranges,
        rev=rev,
        relayout=relayout,
        zoom_back=result.zoom_back,
        # its details follow (show_found)
        found=_found(trigger, value, page, result),
        sent=((ranges,) + page.sent)[:MAX_SENT],
        pending=False,  # the placeholder goes, whatever the action
        hits=page.hits if result.hits is None else result.hits,
        hit=page.hit if result.hit is None else result.hit,
        bookmarks=page.bookmarks if result.bookmarks is None else result.bookmarks,
    )
    if (spec, draw) == (page.spec, old_draw) and not page.pending:
        fig: Any = Patch()  # only the ranges move: two numbers, and the hit bars there
        fig["layout"]["xaxis"]["range"] = ranges[0]
        fig["layout"]["yaxis"]["range"] = ranges[1]
        fig["layout"]["uirevision"] = state.uirevision(rev)
        hits = hitlayer.patch(tid, spec, draw, ranges, rev, fig)[1]
    else:
        fig, hits = hitlayer.sent_figure(tid, spec, draw, ranges, rev, picture_base=picture_base)
    # unchanged outputs are not sent: each one sent costs the browser a React update on every click
    new_notes = state.visible(tid, spec).notes
    same_notes = new_notes == state.visible(tid, page.spec).notes
    same_theme = draw.theme == old_draw.theme
    state.precompute_neighbours(tid, spec, draw)
    depth = view_mod.depth_of(registry.get(tid).graph, spec)  # the control shows the view's state ("custom")
    return ViewAnswer(
        figure=fig,
        store=new_page.to_store(),
        notes=no_update if same_notes else [html.Div(n) for n in new_notes],
        style=no_update if same_theme else root_style(draw.theme),
        depth=no_update if depth == shown_depth else depth,
        css_class=no_update if same_theme else root_class(draw.theme),
        hits=hits,
    )


def _found(trigger: str | None, value: Any, page: PageState, result: NextView) -> str | None:
    """The graph id a search, the find box or N / Shift+N just showed (its details follow the view)."""
    if trigger == "search":
        return value or None
    if trigger == "find" and result.hits:
        return result.hits[0]
    if trigger == "hit" and result.hit is not None and page.hits:
        return page.hits[result.hit]
    return None


def details_for(trigger: str | None, value: Any, page: PageState) -> tuple[Any, Any]:
    """The details panel and the ``selected`` store after one action: the clicked box or the chosen search
    hit (no_update otherwise)."""
    if trigger not in ("graph", "search") or not value:
        return no_update, no_update
    tid = page.trace
    members: tuple[str, ...] = ()
    if value.startswith(view_mod.FOLD_PREFIX):
        node = next((n for n in state.visible(tid, page.spec).nodes if n.id == value), None)
        members = node.members if node is not None else ()
    return details(tid, value, members), selection(tid, value, members)
