"""The served app's doors for traces brought at run time: the push route and the drop zone on the page.

A trace pushed (``python -m torchvista_dash push``) or dropped on the page (``dcc.Upload``) is checked as an
untrusted file (app/http/push.py), registered, and so published to the shared store when there is one: its
link, ``/?trace=<id>``, opens on any worker or host that shares the store.
"""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, dcc, html

from torchvista_dash.app.actions.details import error_text
from torchvista_dash.app.http import push
from torchvista_dash.app.traces import registry

UPLOAD_STYLE = {
    "border": "1px dashed #8a94a6",
    "borderRadius": "6px",
    "padding": "8px 12px",
    "margin": "8px",
    "fontFamily": "system-ui, sans-serif",
    "fontSize": "13px",
    "color": "#5a6475",
    "cursor": "pointer",
}


def add_push_route(app: dash.Dash, token: str | None) -> None:
    """``POST <prefix>_tvd/push`` on ``app``: traces pushed with ``token`` (None: every push refused)."""
    from flask import jsonify, request

    def receive() -> Any:
        status, body = push.handle(
            token,
            request.headers.get("Authorization", ""),
            request.get_data(cache=False),
            request.headers.get("Content-Encoding", ""),
        )
        if status == 201:
            body["url"] = f"{app.config.requests_pathname_prefix or '/'}?trace={body['id']}"
        return jsonify(body), status

    routes = app.config.routes_pathname_prefix or "/"
    app.server.add_url_rule(routes + push.ROUTE, endpoint="tvd_push", view_func=receive, methods=["POST"])


def drop_zone() -> html.Div:
    """Where a user drops or chooses a trace file; the note under it says what became of it."""
    return html.Div(
        [
            dcc.Upload(
                id="tvd-upload",
                children=html.Div(
                    [
                        "Drop a trace .json here, or ",
                        html.A("choose one", style={"textDecoration": "underline"}),
                        f" (up to {push.upload_cap() / 2**20:.1f} MB; push bigger ones),",
                        " to show it with a link anyone can open",
                    ]
                ),
                multiple=False,
                max_size=push.upload_cap(),  # the browser keeps bigger files: the text says how to push them
                style=UPLOAD_STYLE,
            ),
            html.Div(id="tvd-upload-note", style={"margin": "0 8px", "fontFamily": "system-ui, sans-serif"}),
        ],
        className="tvd-drop-zone",
    )


def add_upload_callback(app: dash.Dash) -> None:
    """A dropped file: checked, registered, and the page goes to its link; or one message why not."""

    @app.callback(
        Output("tvd-url", "search", allow_duplicate=True),
        Output("tvd-upload-note", "children"),
        Input("tvd-upload", "contents"),
        State("tvd-upload", "filename"),
        prevent_initial_call=True,
    )
    def uploaded(contents: str | None, filename: str | None) -> Any:
        if not contents:
            return dash.no_update, dash.no_update
        try:
            trace = push.trace_from_upload(contents, filename)
        except push.PushError as exc:
            return dash.no_update, error_text(f"cannot show {str(filename or 'this file')[:120]}: {exc}")
        tid = registry.register(trace)
        link = f"?trace={tid}"
        note = html.Div(
            [
                f"{trace.graph.model_name or 'model'} ({trace.graph.op_count:,} ops): shown above;",
                " its link is ",
                html.A(link, href=link, className="tvd-upload-link"),
            ],
            style={"fontSize": "13px"},
        )
        return link, note
