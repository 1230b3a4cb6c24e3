"""Embedding ModelGraph in an existing, multi-component Dash dashboard.

    python apps/embed_example.py                    # http://127.0.0.1:8051
    TVD_STORE=redis://127.0.0.1:6379/0 gunicorn --chdir apps embed_example:server -w 4 --threads 8

Two ModelGraphs (an encoder/decoder and a GPT-style decoder) sit next to the dashboard's own
components: a summary table, a model picker and a note. ModelGraph needs no setup: create it and
put it in the layout. Its parts have pattern-matching ids (``ModelGraph.ids.graph("enc")``), so the
dashboard can listen to them too, as the callback below does with the graph's clicks.
"""

from __future__ import annotations

import os

from dash import Dash, Input, Output, dcc, html

from torchvista_dash import ModelGraph, install
from torchvista_dash.app.server.server import use_basic_plotly
from torchvista_dash.demos import DEMOS, demo_trace

LEFT, RIGHT = "transformer", "gpt"

app = Dash(__name__, title="Model review dashboard")
install(app)  # optional: pictures at their own URL (lighter clicks), the callbacks on this app
use_basic_plotly(app)  # optional: plotly's scatter-only bundle when installed (a faster first draw)
server = app.server

rows = [
    {
        "model": d.title,
        "parameters": f"{demo_trace(n).graph.total_params:,}",
        "ops": demo_trace(n).graph.op_count,
        "status": "failed" if demo_trace(n).failed else "ok",
    }
    for n, d in DEMOS.items()
]

app.layout = html.Div(
    [
        html.H2("Model review dashboard"),
        html.Table(
            [html.Tr([html.Th(k) for k in rows[0]])]
            + [html.Tr([html.Td(str(r[k]), style={"padding": "2px 10px"}) for k in r]) for r in rows],
            id="summary",
        ),
        html.Div(
            [
                html.Div(
                    [
                        html.H3("Encoder/decoder"),
                        ModelGraph(demo_trace(LEFT), id="enc", height="60vh", app=app),
                    ],
                    style={"flex": "1", "minWidth": "0"},
                ),
                html.Div(
                    [
                        html.H3("Decoder"),
                        dcc.Dropdown(
                            id="right-model",
                            value=RIGHT,
                            clearable=False,
                            options=[{"label": d.title, "value": n} for n, d in DEMOS.items()],
                        ),
                        html.Div(
                            ModelGraph(demo_trace(RIGHT), id="dec", height="60vh", app=app), id="right-slot"
                        ),
                    ],
                    style={"flex": "1", "minWidth": "0"},
                ),
            ],
            style={"display": "flex", "gap": "16px"},
        ),
        html.Div(id="last-click", style={"marginTop": "8px", "fontFamily": "monospace"}),
    ],
    style={"fontFamily": "system-ui, sans-serif", "padding": "12px"},
)


@app.callback(Output("right-slot", "children"), Input("right-model", "value"), prevent_initial_call=True)
def swap_model(name: str) -> ModelGraph:
    """The dashboard replaces a ModelGraph like any other component."""
    return ModelGraph(demo_trace(name), id="dec", height="60vh", app=app)


@app.callback(Output("last-click", "children"), Input(ModelGraph.ids.graph("enc"), "clickData"))
def report_click(click: dict | None) -> str:
    """The dashboard reads the encoder graph's clicks (each point carries its id in customdata)."""
    if not click:
        return "Click a box in the encoder/decoder graph."
    return f"last clicked in the encoder/decoder graph: {click['points'][0].get('customdata')}"


if __name__ == "__main__":
    app.run(host=os.environ.get("HOST", "127.0.0.1"), port=int(os.environ.get("PORT", "8051")), debug=False)
