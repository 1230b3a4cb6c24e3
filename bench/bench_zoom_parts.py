"""Where a zoom or pan step of the picture spends its time in the browser: our figure whole, its hit bars alone
(no picture), its picture alone (no bars), the picture without any text, and the picture cut into tiles; one run,
headless Chromium.

Command (from the repository root):
    .venv/bin/python bench/bench_zoom_parts.py [--sizes 400,2300,5600] [--repeat 3] [--tiles 800,1200,1600]

Beside them, the same figure with its picture cut into tiles of --tiles points (render/tiles.py), one layout
image each. Views: the hand-built grid layouts of bench_render.py (tests/support_render.py), the same step as
there (``Plotly.relayout`` of both ranges until the frame after it has painted; median of 6 steps, median of
--repeat), at the view the figure starts at and at the whole view (every tile on screen). All variants of a
size are open at once and measured in turn, repeat by repeat, so a change of load hits them alike. No server: a pure zoom or pan runs no Dash callback (``relayoutData`` is only read as a State when
the user clicks), so this is the whole cost of a step. Writes bench/results/zoom_parts.md and prints it.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import bench_render as br  # noqa: E402
from support_render import grid_case  # noqa: E402

from torchvista_dash.render import make_figure  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "zoom_parts.md"
WHOLE = "(a) => Plotly.relayout(document.getElementById(a[0]), {'xaxis.range': a[1], 'yaxis.range': a[2]})"


def view_of(size: str) -> tuple[object, object, object]:
    """A hand-built grid of ``size`` boxes, or a Llama of bench_vs_torchvista (``llama32``) every op, unfolded:
    a tall column on a canvas widened to the plot, as real models are."""
    if size.isdigit():
        return grid_case(int(size))
    import bench_vs_torchvista as bt

    from torchvista_dash import trace_model

    model, ids = getattr(bt, size)()
    t = trace_model(model, ids)
    vg = t.view(depth=None, fold_repeats=False)
    return t.graph, vg, t.layout(vg)


def variants(size: str, tiles: list[float]) -> dict[str, object]:
    g, vg, lay = view_of(size)
    fig = make_figure(g, vg, lay, tile=None)
    bars = copy.deepcopy(fig)
    bars.layout.images = []
    pic = copy.deepcopy(fig)
    pic.data = []
    bare = make_figure(g, vg, lay, labels=False, tile=None)
    bare.data = []
    out = {"one image + hit bars": fig, "hit bars only": bars, "one image only": pic,
           "one image without text": bare}
    for t in tiles:
        tiled = make_figure(g, vg, lay, tile=t)
        out[f"tiles of {t:,.0f} pt ({len(tiled.layout.images)} images) + hit bars"] = tiled
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="400,2300,5600", help="boxes of hand-built grids, or Llama views (llama32)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tiles", default="800,1200,1600", help="tile sizes (points) to measure beside one image")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    load0 = os.getloadavg()
    rows = []
    tmp = Path(tempfile.mkdtemp())
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=br.CHROMIUM_ARGS)
        for n in args.sizes.split(","):
            figs = variants(n, [float(t) for t in args.tiles.split(",") if t])
            label = f"{int(n):,}" if n.isdigit() else f"{n} ({len(next(iter(figs.values())).data[0].x):,} boxes)"
            pages = []
            for i, fig in enumerate(figs.values()):      # every variant open at once, measured in turn
                path = br.write_html(fig, tmp / f"{n}_{i}.html")
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                page.goto(path.as_uri())
                page.wait_for_function(br.FIRST_DRAW_EMPTY % br.DIV, timeout=120_000)
                pages.append(page)
            pages[-1].wait_for_timeout(500)
            times: dict[str, list[list[float]]] = {name: [[], [], []] for name in figs}
            for _ in range(args.repeat):           # interleaved: load changes hit every variant alike
                for name, page in zip(figs, pages, strict=True):
                    page.bring_to_front()
                    times[name][0].append(page.evaluate(br.STEP, [br.DIV, "zoom", False]))
                    times[name][1].append(page.evaluate(br.STEP, [br.DIV, "pan", False]))
            for fig, page in zip(figs.values(), pages, strict=True):
                ext = fig.layout.meta["torchvista_dash"]["picture"]     # the whole view: every tile on screen
                page.evaluate(WHOLE, [br.DIV, [ext[0], ext[2]], [ext[1], ext[3]]])
            pages[-1].wait_for_timeout(300)
            for _ in range(args.repeat):
                for name, page in zip(figs, pages, strict=True):
                    page.bring_to_front()
                    times[name][2].append(page.evaluate(br.STEP, [br.DIV, "zoom", False]))
            for name, (zoom, pan, whole) in times.items():
                rows.append(f"| {label} | {name} | {statistics.median(zoom):,.0f} | {statistics.median(pan):,.0f} "
                            f"| {statistics.median(whole):,.0f} |")
                print(rows[-1], file=sys.stderr, flush=True)
            for page in pages:
                page.context.close()
        browser.close()
    load1 = os.getloadavg()
    md = "\n".join([
        "# Zoom and pan step of the picture, by part (headless Chromium)", "",
        f"Command: `.venv/bin/python bench/bench_zoom_parts.py --sizes {args.sizes} --repeat {args.repeat} "
        f"--tiles {args.tiles}`", "",
        "| view | figure | zoom step ms | pan step ms | zoom step ms, whole view |", "|---:|---|---:|---:|---:|",
        *rows, "",
        f"Load average (1, 5, 15 min) at the start: {', '.join(f'{v:.1f}' for v in load0)}; at the end: "
        f"{', '.join(f'{v:.1f}' for v in load1)} (2 cores).", ""])
    RESULTS.write_text(md)
    print(md)


if __name__ == "__main__":
    main()
