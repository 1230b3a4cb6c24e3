"""The floor under any Dash page's first draw and click: one dcc.Graph with two points, our plotly bundle.

Command (from the repository root):
    .venv/bin/python bench/bench_dash_floor.py --loads 7 --clicks 15

Our app's first draw and click (bench_app.py) minus this floor is what torchvista_dash itself adds; the
floor is Dash's own page (React, dash-renderer, dcc and its async graph chunk, the layout round trip) and,
for a click, Dash's own round trip: plotly's click event, the callback request, the answer's figure given to
``Plotly.react``. The click is a real mouse click on a point, timed as bench_app.py times ours.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def measure(loads: int, clicks: int) -> tuple[list[float], list[float], bool]:
    import dash
    import plotly.graph_objects as go
    from dash import dcc, html
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from torchvista_dash.app.server.server import use_basic_plotly

    app = dash.Dash("dash_floor")
    basic = use_basic_plotly(app)

    def figure(k: int) -> go.Figure:
        return go.Figure(
            go.Scatter(x=[0, 1], y=[0, 1], mode="markers", marker={"size": 30}, customdata=[k, k]),
            layout={"xaxis": {"range": [-1, 2]}, "yaxis": {"range": [-1, 2]}},
        )

    app.layout = html.Div([dcc.Graph(id="g", figure=figure(0))])

    @app.callback(dash.Output("g", "figure"), dash.Input("g", "clickData"), prevent_initial_call=True)
    def flip(click: dict) -> go.Figure:  # a new figure on each click, as a view change sends one
        return figure(1 - int(click["points"][0]["customdata"]))

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    times: list[float] = []
    click_times: list[float] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            for _ in range(loads + 1):  # the first load warms the browser's caches; it is dropped
                ctx = browser.new_context()
                page = ctx.new_page()
                page.goto(f"http://127.0.0.1:{srv.server_port}/")
                page.wait_for_function("document.querySelector('.js-plotly-plot .scatterlayer .point')")
                times.append(page.evaluate("performance.now()"))
                ctx.close()
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{srv.server_port}/")
            page.wait_for_function("document.querySelector('.js-plotly-plot .scatterlayer .point')")
            for i in range(clicks + 2):  # two warm-up clicks are dropped
                page.wait_for_timeout(600)  # never a double click
                x, y = page.evaluate(POINT_XY)
                page.mouse.move(x - 3, y)
                page.mouse.move(x, y)
                t0 = time.perf_counter()
                page.mouse.click(x, y)
                page.wait_for_function(DRAWN_K, arg=(i + 1) % 2, polling="raf")
                click_times.append((time.perf_counter() - t0) * 1000)
            browser.close()
    finally:
        srv.shutdown()
    return times[1:], click_times[2:], basic


POINT_XY = """() => { const gd = document.querySelector('.js-plotly-plot'), fl = gd._fullLayout;
  const r = gd.getBoundingClientRect();
  return [r.left + fl._size.l + fl.xaxis.l2p(1), r.top + fl._size.t + fl.yaxis.l2p(1)]; }"""
DRAWN_K = """(k) => { const gd = document.querySelector('.js-plotly-plot');
  return gd.calcdata && gd.calcdata[0][0].data === k && !!gd.querySelector('.scatterlayer .point'); }"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=7)
    ap.add_argument("--clicks", type=int, default=15)
    args = ap.parse_args()
    times, clicks, basic = measure(args.loads, args.clicks)
    table = "\n".join(
        [
            "# Dash's own first-draw floor",
            "",
            f"Command: `.venv/bin/python bench/bench_dash_floor.py --loads {args.loads} "
            f"--clicks {args.clicks}`",
            "",
            "First draw: navigation start → the plot's first point drawn, headless Debian Chromium; "
            "median of the loads after a warm-up load. Click: a mouse click on a point → the callback's "
            "new figure drawn (a callback on clickData returns a new 2-point figure); median of the clicks "
            "after two warm-up clicks.",
            "",
            "| page | plotly.js | first draw ms (median) | min | max "
            "| click → new figure drawn, ms (median) | min | max |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
            f"| Dash + one dcc.Graph, 2 points | {'scatter-only basic' if basic else 'full'} | "
            f"{statistics.median(times):.0f} | {min(times):.0f} | {max(times):.0f} | "
            f"{statistics.median(clicks):.0f} | {min(clicks):.0f} | {max(clicks):.0f} |",
            "",
        ]
    )
    out = ROOT / "bench" / "results" / "dash_floor.md"
    out.write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
