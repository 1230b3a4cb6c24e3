"""App benchmark: first draw and click-to-drawn in headless Chromium, ours against torchvista, one run.

Command (from the repository root):
    .venv/bin/python bench/bench_app.py [--loads 5] [--clicks 10] [--models gpt2,bert,llama6] [--floor 1]

Models: GPT-2 small (GPT2Model(GPT2Config()): 12 layers, 768 wide) and BERT base (BertModel(BertConfig())),
random weights, 16 tokens. Both tools show about the same thing: torchvista's default view, and ours at
depth 2 with repeated blocks not folded (torchvista draws all 12). Same browser (Debian chromium via
Playwright, the test suite's flags), same machine, same run.

- First draw: a fresh browser context navigates to the page. Ours is measured twice: "first picture" is when
  the view's picture that our page's HTML carries by URL (app/server/firstpaint.py: the figure's own picture,
  not yet clickable) was painted, from the Element Timing API; "interactive" is ``performance.now()`` (ms
  since navigation start) at the first animation frame where plotly has drawn the graph (clickable) and every
  picture it shows has loaded (a click is timed to the same state). Ours is served by ``make_app`` from a
  thread of this process (the Dash server, as ``serve`` runs it); "cold" is the first load after the server
  started (which lays out and draws the first view in the background at start), "warm" the median of
  ``--loads`` later loads. torchvista's page is its own HTML export (file://), laid out in the browser each
  time, clickable when drawn: median of ``--loads``. Ours is also loaded, in turn, from a second server
  without the first picture (``make_app(first_picture=False)``): what the picture costs.
- Click-to-drawn: a real mouse click on a collapsed module's expand target (ours: the box; torchvista: its
  ⊕ button), timed from just before the click to the first animation frame showing the opened module; then
  a click on its collapse target, timed the same way. Median of ``--clicks`` of each.
Writes bench/results/app.md and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results" / "app.md"
COMMAND = ".venv/bin/python bench/bench_app.py"
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
AIO = "bench"
TIMEOUT_MS = 120_000

OURS_DRAWN = """(d) => { const h = document.getElementById(d);
  const gd = h && h.querySelector('.js-plotly-plot');
  return !!(gd && gd._fullLayout && gd.querySelector('.imagelayer image') &&
    gd.querySelector('.barlayer .trace')); }"""
OURS_HAS = """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
  const t = (gd.data || []).find(t => t.name === a[1]); const ids = t ? Array.from(t.customdata || []) : [];
  return a[3] ? ids.includes(a[2]) : !ids.includes(a[2]); }"""
OURS_XY = """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
  const t = gd.data.find(t => t.name === a[1]); const i = Array.from(t.customdata).indexOf(a[2]);
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const y = t.base ? t.base[i] + t.y[i] / 2 : t.y[i];
  return [r.left + fl._size.l + fl.xaxis.l2p(t.x[i]), r.top + fl._size.t + fl.yaxis.l2p(y)]; }"""
OURS_IDS = """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
  const t = (gd.data || []).find(t => t.name === a[1]); return t ? Array.from(t.customdata || []) : []; }"""
OURS_ZOOM_TO = """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
  const t = gd.data.find(t => t.name === 'clusters:headers');
  const i = Array.from(t.customdata).indexOf(a[1]);
  const w = t.width[i], cx = t.x[i], top = t.base[i] + t.y[i];
  return Plotly.relayout(gd, {'xaxis.range': [cx - 0.6 * w, cx + 0.6 * w],
    'yaxis.range': [top - 0.9 * w, top + 0.1 * w]}); }"""
OURS_HOVERED = """(a) => { const gd = document.getElementById(a[0]).querySelector('.js-plotly-plot');
  return (gd._hoverdata || []).some(p => p.customdata === a[1]); }"""
# when the first picture (the view's pictures as <img> in the page's HTML, app/server/firstpaint.py) was
# painted: the element timing of its last image to be painted
OURS_PICTURE = """() => new Promise(done => {
  new PerformanceObserver(list => {
    const t = list.getEntries().filter(e => e.identifier === 'tvd-first-picture')
      .map(e => e.renderTime || e.loadTime); done(t.length ? Math.max(...t) : null); })
    .observe({type: 'element', buffered: true});
  setTimeout(() => done(null), 2000); })"""
# every picture the plot draws (its layout images: a data URI or a URL of the picture route) is loaded and
# decoded:
# without it a click would count as done while a new view's picture is still on its way
OURS_PICTURES_READY = """(d) => { const h = document.getElementById(d);
  const gd = h && h.querySelector('.js-plotly-plot');
  const ims = gd ? Array.from(gd.querySelectorAll('.imagelayer image')) : [];
  if (!ims.length) return false;
  const seen = window.__tvdPictures = window.__tvdPictures || new Map();
  return ims.every(im => { const src = im.getAttribute('href') || im.getAttribute('xlink:href');
    if (!seen.has(src)) { seen.set(src, false); const i = new Image(); i.src = src;
      i.decode().then(() => seen.set(src, true), () => seen.set(src, true)); }
    return seen.get(src); }); }"""
TV_DRAWN = """() => { const s = document.querySelector('[id^="graph_"] svg');
  return !!(s && s.querySelectorAll('text').length > 5); }"""
# torchvista's ⊕ (on a collapsed module node) and ⊖ (on an open cluster) carry the module's graph name
TV_BUTTON = """(a) => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
  const sel = a[1] === 'expand' ? '.node_' + uid : '.boundary-box_' + uid;
  for (const g of document.querySelectorAll(sel)) {
    const d = g.__data__; const name = Array.isArray(d) ? d[0] : d;
    if (String(name) !== a[0]) continue;
    const b = g.querySelector('.collapse-button_' + uid); if (!b) continue;
    const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2];
  }
  return null; }"""
TV_CLUSTER_OPEN = """(a) => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
  const open = Array.from(document.querySelectorAll('.boundary-box_' + uid)).some(g => {
    const d = g.__data__; return String(Array.isArray(d) ? d[0] : d) === a[0]; });
  return open === a[1]; }"""


def build(name: str) -> tuple[Any, Any, str, list[str], list[str], int | None]:
    """(model, input ids, title, our click path, torchvista's click path, our depth): the path's last item is
    timed.

    The timed module is one torchvista's default view shows collapsed (GPT-2: the first block's attention,
    BERT: the first encoder layer); ours opens at depth 2, which shows the same level. Llama (6 layers, a
    transformers config, every op: about 400 boxes): ours starts with every op drawn and times closing and
    reopening the first decoder layer; torchvista, whose default view of it shows the decoder layers'
    children, times expanding the first layer's attention."""
    import torch

    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 16), generator=torch.Generator().manual_seed(0))
    if name == "gpt2":
        from transformers import GPT2Config, GPT2Model

        return GPT2Model(GPT2Config()).eval(), ids, "GPT-2 small", ["mod:h.0.attn"], ["GPT2Attention"], 2
    if name == "llama6":
        from transformers import LlamaConfig, LlamaModel

        cfg = LlamaConfig(
            num_hidden_layers=6,
            hidden_size=256,
            intermediate_size=512,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
        )
        return (
            LlamaModel(cfg).eval(),
            ids,
            "Llama 6 layers, every op",
            ["mod:layers.0"],
            ["LlamaAttention"],
            None,
        )
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig()).eval(), ids, "BERT base", ["mod:encoder.layer.0"], ["BertLayer"], 2


# ---- ours ----------------------------------------------------------------------------------
def ours(
    browser: Any, trace: Any, path: list[str], loads: int, clicks: int, depth: int | None = 2
) -> dict[str, Any]:
    from torchvista_dash.app.server.server import BackgroundServer, make_app
    from torchvista_dash.layout import clear_cache

    clear_cache()
    srv = BackgroundServer(make_app([trace], fold_repeats=False, depth=depth))
    plain = BackgroundServer(make_app([trace], fold_repeats=False, depth=depth, first_picture=False))
    url = srv.url
    try:
        draws, pictures, without = [], [], []
        for i in range(loads + 1):
            ctx = browser.new_context(viewport={"width": 1400, "height": 900})
            page = ctx.new_page()
            page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
            wait_ours_drawn(page)
            draws.append(page.evaluate("performance.now()"))
            pictures.append(page.evaluate(OURS_PICTURE))
            ctx.close()
            if i:  # the same page without the first picture, loaded in turn: what the picture costs
                ctx = browser.new_context(viewport={"width": 1400, "height": 900})
                page = ctx.new_page()
                page.goto(plain.url, wait_until="commit", timeout=TIMEOUT_MS)
                wait_ours_drawn(page)
                without.append(page.evaluate("performance.now()"))
                ctx.close()
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(url, timeout=TIMEOUT_MS)
        wait_ours_drawn(page)
        for vid in path[:-1]:
            _ours_click(page, vid, "nodes:labels", "clusters:headers", True)
        target = path[-1]
        opens, closes = [], []
        if target in page.evaluate(OURS_IDS, [_dom("main"), "clusters:headers"]):
            # drawn open (every op): the user zooms in on it (at the whole-model fit its header row is a pixel
            # tall), then closes it
            page.evaluate(OURS_ZOOM_TO, [_dom("main"), target])
            _ours_click(page, target, "clusters:headers", "clusters:headers", False)
        try:
            for _ in range(clicks):
                opens.append(_ours_click(page, target, "nodes:labels", "clusters:headers", True))
                closes.append(_ours_click(page, target, "clusters:headers", "clusters:headers", False))
        except Exception:
            print("page:", page.inner_text(".tvd-model-graph")[:400], opens, closes, file=sys.stderr)
            raise
        ctx.close()
    finally:
        srv.stop()
        plain.stop()
    return {
        "cold": draws[0],
        "warm": statistics.median(draws[1:]),
        "without_picture": statistics.median(without),
        "picture_cold": pictures[0],
        "picture": _median([p for p in pictures[1:] if p is not None]),
        "open": statistics.median(opens),
        "close": statistics.median(closes),
        "first_open": opens[0],
    }


def _median(values: list[float]) -> float | None:
    """None when there is nothing to take it of (a view over the first picture's size has no first
    picture)."""
    return statistics.median(values) if values else None


def _dom(aio: str) -> str:
    return json.dumps(
        {"aio_id": aio, "component": "ModelGraph", "subcomponent": "graph"}, separators=(",", ":")
    )


OURS_RANGES = """(d) => { const fl = document.getElementById(d).querySelector('.js-plotly-plot')._fullLayout;
  return JSON.stringify([fl.xaxis.range, fl.yaxis.range]); }"""


def _settle(page: Any, quiet_ms: int = 200) -> None:
    """Wait until the plot's ranges stop changing (the previous update fully applied)."""
    last, since = page.evaluate(OURS_RANGES, _dom("main")), time.perf_counter()
    while (time.perf_counter() - since) * 1000 < quiet_ms:
        page.wait_for_timeout(40)
        cur = page.evaluate(OURS_RANGES, _dom("main"))
        if cur != last:
            last, since = cur, time.perf_counter()


_last_click = [0.0]
DOUBLE_CLICK_S = (
    0.6  # two clicks within the browser's double-click time (500 ms) near one spot are a double click
)


def _ours_click(page: Any, vid: str, on: str, check: str, opened: bool) -> float:
    _settle(page)
    wait = DOUBLE_CLICK_S - (time.perf_counter() - _last_click[0])
    if wait > 0:
        page.wait_for_timeout(wait * 1000)
    x, y = page.evaluate(OURS_XY, [_dom("main"), on, vid])
    page.mouse.move(x - 3, y)
    page.mouse.move(x, y)
    page.wait_for_function(OURS_HOVERED, arg=[_dom("main"), vid], timeout=30_000)
    t0 = _last_click[0] = time.perf_counter()
    page.mouse.click(x, y)
    page.wait_for_function(
        OURS_HAS, arg=[_dom("main"), check, vid, opened], polling="raf", timeout=TIMEOUT_MS
    )
    wait_ours_drawn(page)
    return (time.perf_counter() - t0) * 1000


def wait_ours_drawn(page: Any, timeout_ms: float = TIMEOUT_MS) -> None:
    """Until plotly has drawn our graph (hit layer and image elements) and every picture it draws is
    loaded."""
    page.wait_for_function(OURS_DRAWN, arg=_dom("main"), polling="raf", timeout=timeout_ms)
    page.wait_for_function(OURS_PICTURES_READY, arg=_dom("main"), polling="raf", timeout=timeout_ms)


# ---- torchvista ----------------------------------------------------------------------------
def torchvista_times(
    browser: Any, model: Any, ids: Any, path: list[str], tmp: Path, loads: int, clicks: int
) -> dict[str, Any]:
    import torchvista

    html = tmp / "torchvista.html"
    torchvista.trace_model(model, ids, export_format="html", export_path=str(html))
    draws = []
    for _ in range(loads):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(html.as_uri(), wait_until="commit")
        page.wait_for_function(TV_DRAWN, polling="raf", timeout=TIMEOUT_MS)
        draws.append(page.evaluate("performance.now()"))
        ctx.close()
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    page.goto(html.as_uri())
    page.wait_for_function(TV_DRAWN, polling="raf", timeout=TIMEOUT_MS)
    names = page.evaluate("""() => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
        return Array.from(document.querySelectorAll('.node_' + uid)).map(g => { const d = g.__data__;
        return String(Array.isArray(d) ? d[0] : d); }); }""")
    for prefix in path[:-1]:
        _tv_click(page, _first(names, prefix), "expand")
        names = page.evaluate("""() => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
            return Array.from(document.querySelectorAll('.node_' + uid)).map(g => { const d = g.__data__;
            return String(Array.isArray(d) ? d[0] : d); }); }""")
    target = _first(names, path[-1])
    opens, closes = [], []
    for _ in range(clicks):
        opens.append(_tv_click(page, target, "expand"))
        closes.append(_tv_click(page, target, "collapse"))
    ctx.close()
    return {
        "warm": statistics.median(draws),
        "open": statistics.median(opens),
        "close": statistics.median(closes),
        "first_open": opens[0],
        "bytes": html.stat().st_size,
    }


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def _first(names: list[str], prefix: str) -> str:
    found = sorted((n for n in names if n.startswith(prefix + "_")), key=lambda n: int(n.rsplit("_", 1)[1]))
    if not found:
        raise RuntimeError(f"torchvista shows no {prefix} node; it shows {names[:20]}")
    return found[0]


def _tv_click(page: Any, name: str, action: str) -> float:
    page.wait_for_timeout(DOUBLE_CLICK_S * 1000)
    xy = page.evaluate(TV_BUTTON, [name, action])
    if xy is None:
        raise RuntimeError(f"torchvista has no {action} button for {name}")
    page.mouse.move(xy[0], xy[1])
    t0 = time.perf_counter()
    page.mouse.click(xy[0], xy[1])
    page.wait_for_function(TV_CLUSTER_OPEN, arg=[name, action == "expand"], polling="raf", timeout=TIMEOUT_MS)
    page.wait_for_function(TV_DRAWN, polling="raf")
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--clicks", type=int, default=10)
    ap.add_argument("--models", default="gpt2,bert,llama6")
    ap.add_argument("--floor", type=int, default=1, help="measure Dash's floor in the same run (0: skip)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    load_before = os.getloadavg()
    from playwright.sync_api import sync_playwright

    from torchvista_dash import trace_model

    rows = []
    with tempfile.TemporaryDirectory() as tmpdir, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for name in args.models.split(","):
            model, ids, title, our_path, tv_path, depth = build(name)
            trace = trace_model(model, ids, name=title)
            o = ours(browser, trace, our_path, args.loads, args.clicks, depth)
            t = torchvista_times(browser, model, ids, tv_path, Path(tmpdir), args.loads, args.clicks)
            rows.append((title, trace.graph.op_count, o, t))
            print(f"{title}: ours {o}  torchvista {t}", file=sys.stderr, flush=True)
        browser.close()
    floor = None
    if args.floor:
        from bench.bench_dash_floor import measure

        draws, clicks, _basic = measure(max(3, args.loads), max(5, args.clicks))
        floor = (statistics.median(draws), statistics.median(clicks))
    md = render(rows, args, floor, (load_before, os.getloadavg()))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(md)
    print(md)


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def render(
    rows: list[tuple[str, int, dict[str, Any], dict[str, Any]]],
    args: argparse.Namespace,
    floor: tuple[float, float] | None = None,
    load: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> str:
    import torch

    lines = [
        "# App: first draw and click-to-drawn, ours vs torchvista (headless Chromium)",
        "",
        f"Command: `{COMMAND} --loads {args.loads} --clicks {args.clicks} --models {args.models}`",
        "",
        f"Machine: {platform.machine()}, {platform.system()}, Python {platform.python_version()}, "
        f"torch {torch.__version__}; one run, same browser. Times in ms; ratio = ours / torchvista "
        "(below 1.0: ours is faster).",
        "",
        "| model | ops | first picture: ours cold | ours warm | interactive: ours cold | ours warm "
        "| interactive without the picture (warm) | torchvista first draw | ratio first picture (warm) "
        "| ratio interactive (warm) | open click: ours | torchvista | ratio "
        "| close click: ours | torchvista | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for title, ops, o, t in rows:
        lines.append(
            f"| {title} | {ops} | {_ms(o['picture_cold'])} | {_ms(o['picture'])} "
            f"| {o['cold']:.0f} | {o['warm']:.0f} "
            f"| {o['without_picture']:.0f} "
            f"| {t['warm']:.0f} | {_ratio(o['picture'], t['warm'])} | {o['warm'] / t['warm']:.2f} "
            f"| {o['open']:.0f} | {t['open']:.0f} | {o['open'] / t['open']:.2f} "
            f"| {o['close']:.0f} | {t['close']:.0f} | {o['close'] / t['close']:.2f} |"
        )
    lines += [
        "",
        "Medians: first draw over the warm loads, clicks over the repeated open/close pairs. "
        "First open click (nothing cached but what the background precompute prepared): "
        + "; ".join(
            f"{title}: ours {o['first_open']:.0f}, torchvista {t['first_open']:.0f}"
            for title, _, o, t in rows
        )
        + ".",
        "",
    ]
    if floor is not None:
        lines += [
            "Dash's floor in the same run (bench/bench_dash_floor.py's page: "
            "one dcc.Graph with two points): "
            f"interactive after {floor[0]:.0f} ms, a click's new figure drawn after {floor[1]:.0f} ms.",
            "",
        ]
    if load is not None:
        lines += [
            f"Load average (1, 5, 15 min) at the start: {', '.join(f'{v:.1f}' for v in load[0])}; "
            "at the end: "
            f"{', '.join(f'{v:.1f}' for v in load[1])} (2 cores; above about 1, other work shared them).",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
