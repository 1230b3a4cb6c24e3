"""Render benchmark: figure build time and JSON size per node; first draw and zoom in headless Chromium.

Command (from the repository root):
    .venv/bin/python bench/bench_render.py [--repeat 5] [--sizes 500,2000,5000]

All in one run, same machine, same browser (Debian chromium driven by Playwright, the test suite's flags):
  1. Python side, views of 500 / 2,000 / 5,000 boxes (hand-built grid layouts from tests/support_render.py,
     so the numbers are the renderer's alone): ``make_figure`` time (median of --repeat), ``fig.to_json()``
     bytes per node, and the same for the naive figure DESIGN.md warns about (one layout shape + one
     annotation per node) as the peer ratio.
  2. Browser side, each as a standalone HTML (plotly.js embedded): time from navigation to the first drawn
     figure, and the median time of a zoom step and of a pan step (``Plotly.relayout`` of both axis ranges,
     until the frame after it has painted), for our figure (the picture: SVG layout images, one under 1,000
     boxes and tiles above, render/svg/tiles.py, under invisible box targets; a standalone figure carries them
     as data URIs, the app serves each by URL), for the way the issue's option (a) would do it (plotly text
     labels, re-sized after each zoom: the relayout plus the ``textfont.size`` restyle that the server's Patch
     would cause; add Dash's round trip from bench/results/dash_floor.md), and for the naive
     shapes+annotations figure.
  3. Real models (GPT-2 small, a 6-layer Llama from a transformers config; random weights): our HTML export
     (every op) against torchvista's own HTML export of the same model and input, opened in the same browser;
     plus the build time of the every-op figure as a ratio of its Graphviz layout time.
Writes bench/results/render.md and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import plotly  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
from conftest import CHROMIUM_ARGS  # noqa: E402
from support_render import grid_case  # noqa: E402

from torchvista_dash.render import SCROLL_CONFIG, make_figure  # noqa: E402
from torchvista_dash.render.static.html import HTML_DIV_ID as DIV  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "render.md"
COMMAND = ".venv/bin/python bench/bench_render.py"

FIRST_DRAW_OURS = """() => { const gd = document.getElementById('%s');
  return !!(gd && gd._fullLayout && gd._fullLayout._size &&
    gd.querySelector('.imagelayer image, .textpoint, .annotation')); }"""
FIRST_DRAW_EMPTY = """() => { const gd = document.getElementById('%s');
  return !!(gd && gd._fullLayout && gd._fullLayout._size); }"""
FIRST_DRAW_TV = """() => { const s = document.querySelector('[id^="graph_"] svg');
  return !!(s && s.querySelectorAll('text').length > 5); }"""
# One zoom (or pan) step: relayout, then (option (a) only) the label re-size the server would send, then wait
# until the frame after it has painted. Median of 6 (in and out alternately, or right and back).
STEP = """async (a) => { const [id, kind, resize] = a; const gd = document.getElementById(id);
  const xr = gd._fullLayout.xaxis.range.slice(), yr = gd._fullLayout.yaxis.range.slice(); const times = [];
  const base = resize ? gd.data.filter(t => t.mode === 'text').map(t => t.textfont.size) : [];
  const idx = resize ? gd.data.map((t, i) => t.mode === 'text' ? i : -1).filter(i => i >= 0) : [];
  for (let i = 0; i < 6; i++) {
    const f = kind === 'zoom' ? (i % 2 ? 1.0 : 0.5) : 1.0;
    const shift = kind === 'pan' ? (i % 2 ? 0 : 0.2) : 0;
    const cx = (xr[0] + xr[1]) / 2 + shift * (xr[1] - xr[0]), cy = (yr[0] + yr[1]) / 2;
    const hx = (xr[1] - xr[0]) * f / 2, hy = (yr[1] - yr[0]) * f / 2;
    const t0 = performance.now();
    await Plotly.relayout(gd, {'xaxis.range': [cx - hx, cx + hx], 'yaxis.range': [cy - hy, cy + hy]});
    if (resize && idx.length) await Plotly.restyle(gd, {'textfont.size': base.map(s => s / f)}, idx);
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b); return times[Math.floor(times.length / 2)]; }"""


def text_figure(n: int) -> go.Figure:
    """Option (a) of the issue, what this package drew before the picture: boxes as one filled path, labels as
    one plotly text trace (fixed pixel size, so a zoom must re-size them: the server's Patch)."""
    _, vg, lay = grid_case(n)
    xs: list = []
    ys: list = []
    for v in vg.nodes:
        x0, y0, x1, y1 = lay.nodes[v.id]
        xs += [x0, x1, x1, x0, x0, None]
        ys += [y0, y0, y1, y1, y0, None]
    ex: list = []
    ey: list = []
    for e in lay.edges:
        ex += [p[0] for p in e.points] + [None]
        ey += [p[1] for p in e.points] + [None]
    centres = [lay.nodes[v.id] for v in vg.nodes]
    return go.Figure(
        data=[
            go.Scatter(x=ex, y=ey, mode="lines", hoverinfo="skip"),
            go.Scatter(x=xs, y=ys, mode="lines", fill="toself", hoverinfo="skip"),
            go.Scatter(
                x=[(b[0] + b[2]) / 2 for b in centres],
                y=[(b[1] + b[3]) / 2 for b in centres],
                mode="text",
                text=[v.label for v in vg.nodes],
                textfont={"size": 11},
                customdata=[v.id for v in vg.nodes],
            ),
        ],
        layout={
            "showlegend": False,
            "template": "plotly_white",
            "xaxis": {"visible": False},
            "yaxis": {"visible": False, "scaleanchor": "x"},
        },
    )


def naive_figure(n: int) -> go.Figure:
    """The slow way DESIGN.md measured: one layout shape and one annotation per node (edges as one trace)."""
    _, vg, lay = grid_case(n)
    shapes = []
    annotations = []
    for v in vg.nodes:
        x0, y0, x1, y1 = lay.nodes[v.id]
        shapes.append(
            {
                "type": "rect",
                "x0": x0,
                "y0": y0,
                "x1": x1,
                "y1": y1,
                "fillcolor": "#dbe9f6",
                "line": {"color": "#4a78a8", "width": 1},
                "layer": "below",
            }
        )
        annotations.append(
            {
                "x": (x0 + x1) / 2,
                "y": (y0 + y1) / 2,
                "text": v.label,
                "showarrow": False,
                "font": {"size": 11},
            }
        )
    xs: list = []
    ys: list = []
    for e in lay.edges:
        for x, y in e.points:
            xs.append(x)
            ys.append(y)
        xs.append(None)
        ys.append(None)
    return go.Figure(
        data=[go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip")],
        layout={
            "shapes": shapes,
            "annotations": annotations,
            "showlegend": False,
            "template": "plotly_white",
            "xaxis": {"visible": False},
            "yaxis": {"visible": False, "scaleanchor": "x"},
        },
    )


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0, out


def write_html(fig: go.Figure, path: Path) -> Path:
    fig.write_html(
        path, include_plotlyjs=True, full_html=True, config=SCROLL_CONFIG, div_id=DIV, default_height="100vh"
    )
    return path


def browser_times(
    browser: Any, path: Path, repeat: int, ours: bool | None = True, resize: bool = False
) -> tuple[float, float | None, float | None]:
    """(median ms to first draw, median ms per zoom step, per pan step) of a standalone HTML file.

    ``ours``: True for plotly figures, False for torchvista's page, None for a figure with nothing in it;
    ``resize``: each step also re-sizes the text traces (option (a))."""
    draws = []
    zoom = pan = None
    for i in range(repeat):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(path.as_uri(), wait_until="commit", timeout=180000)
        ready = {True: FIRST_DRAW_OURS % DIV, False: FIRST_DRAW_TV, None: FIRST_DRAW_EMPTY % DIV}[ours]
        page.wait_for_function(ready, polling="raf", timeout=180000)
        draws.append(page.evaluate("performance.now()"))
        if ours and i == 0:
            zoom = page.evaluate(STEP, [DIV, "zoom", resize])
            pan = page.evaluate(STEP, [DIV, "pan", resize])
        ctx.close()
    return statistics.median(draws), zoom, pan


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}"


def gpt2_rows(browser: Any, tmp: Path, repeat: int) -> list[list[str]]:
    import torch
    import torchvista
    from transformers import GPT2Config, GPT2Model

    from torchvista_dash import trace_model
    from torchvista_dash.layout import clear_cache

    rows = []
    from transformers import LlamaConfig, LlamaModel

    configs = [
        ("GPT-2 small", lambda: GPT2Model(GPT2Config(vocab_size=1000, n_positions=64))),
        (
            "Llama 6 layers",
            lambda: LlamaModel(
                LlamaConfig(
                    num_hidden_layers=6,
                    hidden_size=256,
                    intermediate_size=512,
                    num_attention_heads=4,
                    num_key_value_heads=2,
                    vocab_size=1000,
                )
            ),
        ),
    ]
    for mname, make in configs:
        torch.manual_seed(0)
        model = make().eval()
        ids = torch.randint(0, 1000, (1, 16))
        t = trace_model(model, (ids,))
        views = [({"depth": None, "fold_repeats": False}, "every op")]
        for opts, label in views:
            vg = t.view(**opts)

            def lay(vg=vg, t=t):
                clear_cache()
                return t.layout(vg)

            try:
                lay_ms, layout = timed(lay, repeat)
            except Exception as exc:  # e.g. dot past its time budget: say so in the table, keep the run
                rows.append(
                    [
                        mname,
                        f"torchvista_dash, {label}",
                        str(len(vg.nodes)),
                        f"failed: {str(exc).split('.')[0]}",
                        "—",
                        "—",
                        "—",
                        "—",
                        "—",
                        "—",
                    ]
                )
                continue
            fig_ms, fig = timed(lambda vg=vg, layout=layout, g=t.graph: make_figure(g, vg, layout), repeat)
            path = tmp / f"ours_{len(rows)}.html"
            t.to_html(path, **opts)
            draw, zoom, pan = browser_times(browser, path, repeat)
            rows.append(
                [
                    mname,
                    f"torchvista_dash, {label}",
                    str(len(vg.nodes)),
                    f"{lay_ms:.0f}",
                    f"{fig_ms:.1f}",
                    f"{fig_ms / lay_ms:.2f}",
                    f"{path.stat().st_size / 1e6:.1f}",
                    f"{draw:.0f}",
                    _ms(zoom),
                    _ms(pan),
                ]
            )
        for depth, label in [(1, "default view"), (99, "every module open")]:
            tv_path = tmp / f"torchvista_{len(rows)}.html"
            torchvista.trace_model(
                model, ids, export_format="html", export_path=str(tv_path), collapse_modules_after_depth=depth
            )
            draw, _, _ = browser_times(browser, tv_path, repeat, ours=False)
            rows.append(
                [
                    mname,
                    f"torchvista, {label}",
                    "—",
                    "—",
                    "—",
                    "—",
                    f"{tv_path.stat().st_size / 1e6:.1f}",
                    f"{draw:.0f}",
                    "—",
                    "—",
                ]
            )
        print(f"done {mname}", file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="500,2000,5000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    from playwright.sync_api import sync_playwright

    load_before = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    py_rows = []
    br_rows = []
    with tempfile.TemporaryDirectory() as td, sync_playwright() as pw:
        tmp = Path(td)
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        empty = write_html(go.Figure(layout={"template": "plotly_white"}), tmp / "empty.html")
        br_rows.append(
            [
                "0",
                "empty figure: plotly.js load + parse only",
                f"{browser_times(browser, empty, max(1, args.repeat // 2), ours=None)[0]:.0f}",
                "—",
                "—",
            ]
        )
        for n in sizes:
            case = grid_case(n)
            ours_ms, fig = timed(lambda case=case: make_figure(*case), args.repeat)
            naive_ms, naive = timed(lambda n=n: naive_figure(n), args.repeat)
            ours_json = len(fig.to_json())
            naive_json = len(naive.to_json())
            py_rows.append(
                [
                    str(n),
                    str(len(fig.data)),
                    f"{ours_ms:.0f}",
                    f"{naive_ms:.0f}",
                    f"{naive_ms / ours_ms:.1f}×",
                    f"{ours_json / n:.0f}",
                    f"{naive_json / n:.0f}",
                ]
            )
            variants = [
                (f"picture: {len(fig.layout.images)} SVG image(s) + box targets (ours)", fig, False),
                ("(a) plotly text labels, re-sized per step (browser part)", text_figure(n), True),
            ]
            if n <= 2000:
                variants.append(("naive: shape + annotation per node", naive, False))
            for name, f, resize in variants:
                path = write_html(f, tmp / f"{n}_{len(br_rows)}.html")
                draw, zoom, pan = browser_times(browser, path, max(1, args.repeat // 2), resize=resize)
                br_rows.append([str(n), name, f"{draw:.0f}", _ms(zoom), _ms(pan)])
            print(f"done {n}", file=sys.stderr)
        gpt_rows = gpt2_rows(browser, tmp, max(1, args.repeat // 2))
        browser.close()
    load_after = " / ".join(f"{v:.1f}" for v in os.getloadavg())

    def table(header: list[str], rows: list[list[str]]) -> str:
        return "\n".join(
            ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows]
        )

    md = (
        f"""# Render benchmark

Command: `{COMMAND} --repeat {args.repeat} --sizes {args.sizes}`

Machine: {platform.platform()}, Python {platform.python_version()}, plotly {plotly.__version__},
headless Debian Chromium (Playwright), viewport 1400×900; load average {load_before} at the start, \
{load_after} at
the end (the 2 cores are shared). Medians. Compare rows within one table (one
run, same conditions); absolute times move by ±30 % when other work shares the 2 cores.

## Figure build (Python) and JSON size — hand-built grid views

| boxes | traces | make_figure ms | naive figure ms | naive / ours | JSON B/node (ours) \
| JSON B/node (naive) |
|---|---|---|---|---|---|---|
"""
        + "\n".join("| " + " | ".join(r) + " |" for r in py_rows)
        + f"""

## In the browser — standalone HTML (plotly.js embedded)

These are standalone HTML files (what `Trace.to_html` writes): the full 4.8 MB plotly.js embedded and the
picture's images as data URIs in the figure. The app's pages differ (plotly's 1.2 MB scatter-only bundle, each
image fetched by URL, no server work on zoom): their times are in bench/results/app.md and zoom_parts.md.

First draw = navigation start → figure drawn (includes parsing the 4.8 MB plotly.js). Zoom / pan step = one
`Plotly.relayout` of both axis ranges (zoom: ×2 in and out; pan: 20 % right and back) until the frame after it
has painted, median of 6. For (a) the step includes re-sizing the text trace (`Plotly.restyle` of
`textfont.size`), which the server's Patch would cause after each zoom, but not the round trip to the server
itself (Dash's floor: bench/results/dash_floor.md).

{table(["boxes", "figure", "first draw ms", "zoom step ms", "pan step ms"], br_rows)}

## Real models (random weights, 16 tokens): ours against torchvista's HTML export in the same browser

torchvista lays out in the browser (Graphviz compiled to wasm) and draws with d3; its first draw is when its
SVG holds the graph's text. Ours: plotly.js parse + figure draw (layout was done in Python, column 4).

{
            table(
                [
                    "model",
                    "figure",
                    "boxes",
                    "dot layout ms",
                    "make_figure ms",
                    "make_figure / layout",
                    "HTML MB",
                    "first draw ms",
                    "zoom step ms",
                    "pan step ms",
                ],
                gpt_rows,
            )
        }
"""
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(md, encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
