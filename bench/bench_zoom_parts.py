"""Where a zoom or pan step of the picture spends its time in the browser: our figure whole, its hit bars
alone (no picture), its picture alone (no bars), the picture without any text, the picture cut into tiles, and
the tiles under the hit bars the app sends (only those near the viewport, app/actions/hitlayer.py); one run,
headless Chromium.

Command (from the repository root):
    .venv/bin/python bench/bench_zoom_parts.py [--sizes 400,2300,5600] [--repeat 3] [--tiles 800,1200,1600]
        [--only-hits]

Beside them, the same figure with its picture cut into tiles of --tiles points (render/svg/tiles.py), one
layout image each. Views: the hand-built grid layouts of bench_render.py (tests/support_render.py), the same
step as there (``Plotly.relayout`` of both ranges until the frame after it has painted; median of 6 steps,
median of --repeat), at the view the figure starts at and at the whole view (every tile on screen). All
variants of a size are open at once and measured in turn, repeat by repeat, so a change of load hits them
alike. No server: for every figure but the culled one a step runs no Dash callback, so this is the whole cost
of a step. The culled figure (the app's, for views of 1,000 bars or more) starts with the bars the app sends
at its start ranges; most steps need no new bars (the column "renewing the bars" then says "-"); a step that
leaves what they cover is answered by the server with the bars of the new view, which the browser redraws once
more: that column is such a step (in 4x and back, or 1.5 views down and back) plus that redraw
(``Plotly.react`` with the bars the server's cull gives for the step's ranges, as Dash does with the Patch),
without Dash's round trip (bench/results/dash_floor.md). ``--only-hits``: only the tiles with every hit bar
and with the culled ones (the before/after of the cull). Writes bench/results/zoom_parts.md (with --only-hits:
zoom_hits.md) and prints it.
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

from torchvista_dash.app.actions import hitlayer  # noqa: E402
from torchvista_dash.render import make_figure  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "zoom_parts.md"
RESULTS_HITS = ROOT / "bench" / "results" / "zoom_hits.md"  # --only-hits
WHOLE = "(a) => Plotly.relayout(document.getElementById(a[0]), {'xaxis.range': a[1], 'yaxis.range': a[2]})"
RANGES = """(d) => { const fl = document.getElementById(d)._fullLayout; return [fl.xaxis.range.slice(),
  fl.yaxis.range.slice()]; }"""
# Steps far enough to need new bars (zoom: in 4x and back; pan: 1.5 views down and back), each followed by the
# bars the server sends for its ranges when it sends any (a[3][i]: {trace index: trace}, or null)
RENEW_STEPS = {"zoom": (0.25, 0.0), "pan": (1.0, 1.5)}  # kind: (zoom factor, shift in views)
STEP_RENEW = """async (a) => { const [id, zf, sh, renew] = a; const gd = document.getElementById(id);
  const xr = gd._fullLayout.xaxis.range.slice(), yr = gd._fullLayout.yaxis.range.slice(); const times = [];
  for (let i = 0; i < 6; i++) {
    const f = i % 2 ? 1.0 : zf, shift = i % 2 ? 0 : sh;
    const cx = (xr[0] + xr[1]) / 2, cy = (yr[0] + yr[1]) / 2 - shift * (yr[1] - yr[0]);
    const hx = (xr[1] - xr[0]) * f / 2, hy = (yr[1] - yr[0]) * f / 2;
    const t0 = performance.now();
    await Plotly.relayout(gd, {'xaxis.range': [cx - hx, cx + hx], 'yaxis.range': [cy - hy, cy + hy]});
    if (renew[i]) { const data = gd.data.slice(); for (const k in renew[i]) data[+k] = renew[i][k];
      await Plotly.react(gd, data, gd.layout); }
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    if (renew[i]) times.push(performance.now() - t0);
  }
  if (!times.length) return null;
  times.sort((a, b) => a - b); return times[Math.floor(times.length / 2)]; }"""
CULLED = "tiles + culled hit bars"


def view_of(size: str) -> tuple[object, object, object]:
    """A hand-built grid of ``size`` boxes, or a Llama of bench_vs_torchvista (``llama32``) every op,
    unfolded:
    a tall column on a canvas widened to the plot, as real models are."""
    if size.isdigit():
        return grid_case(int(size))
    import bench_vs_torchvista as bt

    from torchvista_dash import trace_model

    model, ids = getattr(bt, size)()
    t = trace_model(model, ids)
    vg = t.view(depth=None, fold_repeats=False)
    return t.graph, vg, t.layout(vg)


_FULL: dict[int, list[dict]] = {}  # id of a culled figure → the data of the figure it was culled from


def culled_figure(fig: object) -> object:
    """``fig`` with the hit bars the app sends at its start ranges (app/actions/hitlayer.py)."""
    out = copy.deepcopy(fig)
    data = [t.to_plotly_json() for t in fig.data]
    kept, _ = hitlayer.culled(data, [list(fig.layout.xaxis.range), list(fig.layout.yaxis.range)], 0)
    out.data = []
    out.add_traces(kept)
    _FULL[id(out)] = data
    return out


def renewals(fig: object, ranges: list[list[float]], kind: str) -> list[dict[int, dict] | None]:
    """For each of STEP_RENEW's six steps from ``ranges`` (the plot's, as drawn): the hit traces the server
    sends after it (as hitlayer.renew decides: None when the bars the browser holds still cover the view)."""
    data = _FULL[id(fig)]
    (x0, x1), (y0, y1) = ranges
    kept, record = hitlayer.culled(data, [list(fig.layout.xaxis.range), list(fig.layout.yaxis.range)], 0)
    out: list[dict[int, dict] | None] = []
    zf, sh = RENEW_STEPS[kind]
    for i in range(6):
        f, shift = (1.0, 0.0) if i % 2 else (zf, sh)
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2 - shift * (y1 - y0)
        hx, hy = (x1 - x0) * f / 2, (y1 - y0) * f / 2
        step = [[cx - hx, cx + hx], [cy - hy, cy + hy]]
        if hitlayer.covers(record, step, 0):
            out.append(None)
            continue
        kept, record = hitlayer.culled(data, step, 0)
        out.append(
            {k: t for k, t in enumerate(kept) if t.get("name") in ("nodes:labels", "clusters:headers")}
        )
    return out


def variants(size: str, tiles: list[float], only_hits: bool = False) -> dict[str, object]:
    g, vg, lay = view_of(size)
    if only_hits:
        tiled = make_figure(g, vg, lay, tile=tiles[0])
        return {
            f"tiles of {tiles[0]:,.0f} pt ({len(tiled.layout.images)} images) + every hit bar": tiled,
            CULLED: culled_figure(tiled),
        }
    fig = make_figure(g, vg, lay, tile=None)
    bars = copy.deepcopy(fig)
    bars.layout.images = []
    pic = copy.deepcopy(fig)
    pic.data = []
    bare = make_figure(g, vg, lay, labels=False, tile=None)
    bare.data = []
    out = {
        "one image + hit bars": fig,
        "hit bars only": bars,
        "one image only": pic,
        "one image without text": bare,
    }
    for t in tiles:
        tiled = make_figure(g, vg, lay, tile=t)
        out[f"tiles of {t:,.0f} pt ({len(tiled.layout.images)} images) + hit bars"] = tiled
    out[CULLED] = culled_figure(tiled)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--sizes", default="400,2300,5600", help="boxes of hand-built grids, or Llama views (llama32)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--tiles",
        default="800,1200,1600",
        help="tile sizes (points) to measure beside one image (the culled figure uses the last)",
    )
    ap.add_argument("--only-hits", action="store_true", help="only the tiles with every hit bar and culled")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    load0 = os.getloadavg()
    rows = []
    tmp = Path(tempfile.mkdtemp())
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=br.CHROMIUM_ARGS)
        for n in args.sizes.split(","):
            sizes = [float(t) for t in args.tiles.split(",") if t]
            figs = variants(n, sizes[-1:] if args.only_hits else sizes, args.only_hits)
            meta = next(iter(figs.values())).layout.meta["torchvista_dash"]
            label = f"{int(n):,}" if n.isdigit() else f"{n} ({meta['boxes']:,} boxes)"
            pages = []
            for i, fig in enumerate(figs.values()):  # every variant open at once, measured in turn
                path = br.write_html(fig, tmp / f"{n}_{i}.html")
                page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
                page.goto(path.as_uri())
                page.wait_for_function(br.FIRST_DRAW_EMPTY % br.DIV, timeout=120_000)
                pages.append(page)
            pages[-1].wait_for_timeout(500)
            times: dict[str, list[list[float]]] = {name: [[], [], [], [], []] for name in figs}
            for _ in range(args.repeat):  # interleaved: load changes hit every variant alike
                for name, page in zip(figs, pages, strict=True):
                    page.bring_to_front()
                    times[name][0].append(page.evaluate(br.STEP, [br.DIV, "zoom", False]))
                    times[name][1].append(page.evaluate(br.STEP, [br.DIV, "pan", False]))
                    if name == CULLED:
                        for col, kind in ((3, "zoom"), (4, "pan")):
                            renew = renewals(figs[name], page.evaluate(RANGES, br.DIV), kind)
                            ms = page.evaluate(STEP_RENEW, [br.DIV, *RENEW_STEPS[kind], renew])
                            if ms is not None:
                                times[name][col].append(ms)
            for fig, page in zip(figs.values(), pages, strict=True):
                ext = fig.layout.meta["torchvista_dash"]["picture"]  # the whole view: every tile on screen
                page.evaluate(WHOLE, [br.DIV, [ext[0], ext[2]], [ext[1], ext[3]]])
            pages[-1].wait_for_timeout(300)
            for _ in range(args.repeat):
                for name, page in zip(figs, pages, strict=True):
                    page.bring_to_front()
                    times[name][2].append(page.evaluate(br.STEP, [br.DIV, "zoom", False]))
            for name, (zoom, pan, whole, rzoom, rpan) in times.items():
                bars = sum(
                    len(t.x) for t in figs[name].data if t.name in ("nodes:labels", "clusters:headers")
                )
                rows.append(
                    f"| {label} | {name} | {bars:,} | {statistics.median(zoom):,.0f} "
                    f"| {statistics.median(pan):,.0f} | {statistics.median(whole):,.0f} "
                    f"| {_ms(rzoom)} / {_ms(rpan)} |"
                )
                print(rows[-1], file=sys.stderr, flush=True)
            for page in pages:
                page.context.close()
        browser.close()
    load1 = os.getloadavg()
    md = "\n".join(
        [
            "# Zoom and pan step of the picture, by part (headless Chromium)",
            "",
            f"Command: `.venv/bin/python bench/bench_zoom_parts.py --sizes {args.sizes} "
            f"--repeat {args.repeat} "
            f"--tiles {args.tiles}{' --only-hits' if args.only_hits else ''}`",
            "",
            "| view | figure | hit bars | zoom step ms | pan step ms | zoom step ms, whole view "
            "| zoom / pan step renewing the bars, ms |",
            "|---:|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Load average (1, 5, 15 min) at the start: {', '.join(f'{v:.1f}' for v in load0)}; at the end: "
            f"{', '.join(f'{v:.1f}' for v in load1)} (2 cores).",
            "",
        ]
    )
    (RESULTS_HITS if args.only_hits else RESULTS).write_text(md)
    print(md)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f}" if values else "-"


if __name__ == "__main__":
    main()
