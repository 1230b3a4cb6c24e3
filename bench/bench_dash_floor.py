"""The floor under any Dash page's first draw: one dcc.Graph with two points, with our plotly bundle.

Command (from the repository root):
    .venv/bin/python bench/bench_dash_floor.py --loads 7

Our app's first draw (bench_app.py) minus this floor is what torchvista_dash itself adds; the floor is
Dash's own page (React, dash-renderer, dcc and its async graph chunk, the layout round trip).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def measure(loads: int) -> tuple[list[float], bool]:
    import dash
    import plotly.graph_objects as go
    from dash import dcc, html
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server

    from torchvista_dash.app.server import use_basic_plotly

    app = dash.Dash("dash_floor")
    basic = use_basic_plotly(app)
    app.layout = html.Div([dcc.Graph(id="g", figure=go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="markers")))])
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    times: list[float] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            for _ in range(loads + 1):          # the first load warms the browser's caches; it is dropped
                ctx = browser.new_context()
                page = ctx.new_page()
                page.goto(f"http://127.0.0.1:{srv.server_port}/")
                page.wait_for_function("document.querySelector('.js-plotly-plot .scatterlayer .point')")
                times.append(page.evaluate("performance.now()"))
                ctx.close()
            browser.close()
    finally:
        srv.shutdown()
    return times[1:], basic


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=7)
    args = ap.parse_args()
    times, basic = measure(args.loads)
    table = "\n".join([
        "# Dash's own first-draw floor",
        "",
        f"Command: `.venv/bin/python bench/bench_dash_floor.py --loads {args.loads}`",
        "",
        "Navigation start → the plot's first point drawn, headless Debian Chromium; median of the loads after a "
        "warm-up load.",
        "",
        "| page | plotly.js | first draw ms (median) | min | max |",
        "|---|---|---:|---:|---:|",
        f"| Dash + one dcc.Graph, 2 points | {'scatter-only basic' if basic else 'full'} | "
        f"{statistics.median(times):.0f} | {min(times):.0f} | {max(times):.0f} |",
        "",
    ])
    out = ROOT / "bench" / "results" / "dash_floor.md"
    out.write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
