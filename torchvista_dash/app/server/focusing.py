"""One module as its own graph on a served page (``?root=layers.3.mlp``): a link that opens the module last
clicked that way, and one back to the whole model. Both are plain links the page's address follows (the
server's route callback draws what an address names), in a corner over the page so nothing moves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

import dash
from dash import ALL, Input, Output, State, dcc, html

from torchvista_dash.app.actions import links
from torchvista_dash.app.component.ids import ids

BAR_ID = "tvd-focus"
STYLE = {
    "position": "absolute",
    "top": "6px",
    "right": "12px",
    "display": "flex",
    "gap": "14px",
    "fontSize": "13px",
    "fontFamily": "system-ui, sans-serif",
    "zIndex": "5",
}


def _address(query: Mapping[str, list[str]], root: str | None) -> str:
    """The page (its trace, demo or file) with ``root`` focused, or the whole model for None."""
    keep = {k: query[k][0] for k in links.PAGE_KEYS if k in query and query[k] and k != "root"}
    return "?" + urlencode({**keep, **({"root": root} if root else {})})


def bar(query: Mapping[str, list[str]], root: str | None) -> html.Div:
    """The corner above the graph: "← whole model" on a focused page, and the open link (filled in by the
    callback when a module is clicked)."""
    back = (
        [dcc.Link(f"← {root}: back to the whole model", href=_address(query, None), className="tvd-back")]
        if root
        else []
    )
    return html.Div([*back, html.Span(id=BAR_ID)], className="tvd-focus-bar", style=STYLE)


def register(app: dash.Dash) -> None:
    """The open link follows what was last clicked (``ModelGraph.ids.selected``): a module or folded run."""

    @app.callback(
        Output(BAR_ID, "children"),
        Input(ids.selected(ALL), "data"),
        State("tvd-url", "search"),
        prevent_initial_call=True,
    )
    def open_link(selected: list[Any] | None, search: str | None) -> Any:
        chosen = (selected or [None])[0]
        if not isinstance(chosen, dict) or chosen.get("kind") not in ("module", "folded"):
            return []
        qualname = chosen.get("qualname")
        if not isinstance(qualname, str) or not qualname:
            return []  # the root module: the whole model is already shown
        query = parse_qs((search or "").lstrip("?"))
        return dcc.Link(
            f"Open {qualname} as its own graph", href=_address(query, qualname), className="tvd-open-root"
        )
