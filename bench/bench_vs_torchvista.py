"""Every-op views, ours against torchvista, in one headless Chromium: time to draw and to open one block.

Command (from the repository root):
    .venv/bin/python bench/bench_vs_torchvista.py [--loads 3] [--clicks 3] [--models llama6,llama16,llama32]
        [--tv-timeout 180] [--baseline DIR]

Models (random weights, built from configs, 16 tokens, the KV cache left at its default): a Llama-style
decoder (``LlamaConfig``, hidden 256, 4 heads, 2 KV heads) with 6, 16 and 32 layers; ``llama80`` (80 layers,
the depth of Llama-3-70B, about 5,700 boxes: ours is built on the meta device, torchvista gets the same model
with real weights); ``gpt2`` (GPT-2 small) and ``bert`` (BERT base) on request. Torchvista gets
``--tv-timeout`` seconds for its export (in a process of its own) and again for its first draw; past either,
its row says so. ``--baseline DIR``: a checkout of this project (its torchvista_dash/ with this bench/) whose
server is measured too, in turn with ours (before/after in one run). Both tools show every op:

- ours: ``python -m torchvista_dash serve bench.bench_vs_torchvista:<model> --depth -1`` in its own process
  on 127.0.0.1, the page loaded as ``/?fold_repeats=0`` (every call open and repeated layers drawn one by one,
  as torchvista draws them; ``--depth -1`` alone folds the 6 to 32 identical layers into one "×N" box). "first
  picture" is when the server-drawn SVG in the
  page's HTML was painted (Element Timing), "interactive" the first frame where plotly has drawn the graph
  and every picture it shows has loaded;
  cold is the first load after the server answered, warm the median of the later loads.
- torchvista: its HTML export (``trace_model(..., export_format="html", collapse_modules_after_depth=100,
  forced_module_tracing_depth=100)``: every module open and traced into, so ``nn.Linear`` shows its
  ``linear`` op as ours does), loaded from file:// and laid out in the browser (viz.js) on each load; drawn is
  the first frame whose SVG holds the graph's text.
- opening one block: the first decoder layer (BERT: the first encoder layer) is closed once (not timed; ours
  first zooms onto it as a user must, since at the whole-model fit its header is a pixel tall), then a real
  mouse click on its collapsed box (ours: the box; torchvista: its ⊕ button) is timed until the opened layer's
  contents are drawn, and a click on its close target (ours: the header; torchvista: ⊖) until it is closed.
- Dash's floor in the same run (bench_dash_floor.measure: one two-point dcc.Graph and a click).

Writes bench/results/vs_torchvista.md and prints it, with the load average during the run.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_app import (  # noqa: E402  (the path above first)
    CHROMIUM_ARGS,
    OURS_IDS,
    OURS_PICTURE,
    OURS_ZOOM_TO,
    TV_DRAWN,
    _dom,
    _first,
    _ours_click,
    _tv_click,
    wait_ours_drawn,
)
from bench.bench_app import TIMEOUT_MS as TV_CLICK_WAIT_MS  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "vs_torchvista.md"
COMMAND = ".venv/bin/python bench/bench_vs_torchvista.py"
TIMEOUT_MS = 240_000
SERVE_TIMEOUT_S = 300
EVERY_OP_QUERY = (
    "?fold_repeats=0"  # the page's address unfolds (app/actions/links.py); `serve --no-fold-repeats` would
)
# lay that view out before the first load, and the "cold" column measures a load the server has not prepared
SLOW_MS = 10_000
VIEWPORT = {"width": 1400, "height": 900}
TV_RECURSION_LIMIT = 20_000
TV_EVERYTHING = {"collapse_modules_after_depth": 100, "forced_module_tracing_depth": 100}
# what torchvista draws, by kind: its op nodes, the parameter and scalar nodes it draws (ours hides
# parameters and constants by default), and its module clusters
TV_COUNTS = """() => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
  const names = Array.from(document.querySelectorAll('.node_' + uid)).map(g => { const d = g.__data__;
    return String(Array.isArray(d) ? d[0] : d); });
  const extra = names.filter(n => /^(param|scalar|scalars|tensor)_/.test(n)).length;
  return [names.length, extra, document.querySelectorAll('.boundary-box_' + uid).length,
          document.querySelectorAll('[id^="graph_"] svg *').length]; }"""
TV_NAMES = """() => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
  return Array.from(document.querySelectorAll('.boundary-box_' + uid)).map(g => { const d = g.__data__;
    return String(Array.isArray(d) ? d[0] : d); }); }"""
# the view's boxes and clusters (the figure's meta; a figure from before it said so carried every hit bar),
# and the hit bars the figure carries (the app sends only those near the viewport, app/actions/hitlayer.py)
OURS_COUNTS = """(d) => { const gd = document.getElementById(d).querySelector('.js-plotly-plot');
  const n = name => { const t = (gd.data || []).find(t => t.name === name);
    return t ? t.customdata.length : 0; };
  const m = ((gd.layout || {}).meta || {}).torchvista_dash || {};
  return [m.boxes ?? n('nodes:labels'), m.clusters ?? n('clusters:headers'),
          gd.querySelectorAll('svg *').length,
          n('nodes:labels') + n('clusters:headers')]; }"""


# ---- the models (also the serve targets: bench.bench_vs_torchvista:<name>) -------------------------
def _ids() -> Any:
    import torch

    return torch.randint(0, 1000, (1, 16), generator=torch.Generator().manual_seed(0))


def _llama(layers: int) -> tuple[Any, Any]:
    import torch
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    cfg = LlamaConfig(
        num_hidden_layers=layers,
        hidden_size=256,
        intermediate_size=512,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
    )
    return LlamaModel(cfg).eval(), _ids()


def llama6() -> tuple[Any, Any]:
    return _llama(6)


def llama16() -> tuple[Any, Any]:
    return _llama(16)


def llama32() -> tuple[Any, Any]:
    return _llama(32)


def llama80() -> tuple[Any, Any]:
    """The Llama-3-70B layer count (80) at the same small width, on the meta device: no weights in memory."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(
        num_hidden_layers=80,
        hidden_size=256,
        intermediate_size=512,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
    )
    with torch.device("meta"):
        model = LlamaModel(cfg).eval()
    return model, torch.zeros(1, 16, dtype=torch.long, device="meta")


def llama80_cpu() -> tuple[Any, Any]:
    """The same model with real (random) weights, for torchvista, which runs the model on real tensors."""
    return _llama(80)


def gpt2() -> tuple[Any, Any]:
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    return GPT2Model(GPT2Config()).eval(), _ids()


def bert() -> tuple[Any, Any]:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig()).eval(), _ids()


# name → (title, our block's id, torchvista's block class)
MODELS = {
    "llama6": ("Llama 6 layers", "mod:layers.0", "LlamaDecoderLayer"),
    "llama16": ("Llama 16 layers", "mod:layers.0", "LlamaDecoderLayer"),
    "llama32": ("Llama 32 layers", "mod:layers.0", "LlamaDecoderLayer"),
    "llama80": ("Llama 80 layers (70B depth)", "mod:layers.0", "LlamaDecoderLayer"),
    "gpt2": ("GPT-2 small", "mod:h.0", "GPT2Block"),
    "bert": ("BERT base", "mod:encoder.layer.0", "BertLayer"),
}


TV_BUILD = {"llama80": "llama80_cpu"}  # torchvista's model, where ours is built on the meta device


# ---- ours: the CLI's server in its own process --------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(name: str, code: Path = ROOT) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``serve bench.bench_vs_torchvista:<name> --depth -1`` from the checkout ``code`` and wait until
    its
    page answers 200."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchvista_dash",
            "serve",
            f"bench.bench_vs_torchvista:{name}",
            "--depth",
            "-1",
            "--port",
            str(port),
        ],
        cwd=code,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"serve {name} exited {proc.returncode}: {proc.stderr.read().decode()[-2000:]}"
            )
        try:
            with urllib.request.urlopen(base + "_dash-layout", timeout=5) as r:
                if r.status == 200:
                    return proc, base + EVERY_OP_QUERY
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"serve {name} did not answer within {SERVE_TIMEOUT_S} s")


def _load_ours(browser: Any, url: str) -> tuple[Any, Any, float, float | None]:
    ctx = browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    page.goto(url, wait_until="commit", timeout=TIMEOUT_MS)
    wait_ours_drawn(page)
    return ctx, page, page.evaluate("performance.now()"), page.evaluate(OURS_PICTURE)


def ours(browser: Any, name: str, block: str, loads: int, clicks: int, code: Path = ROOT) -> dict[str, Any]:
    proc, url = serve(name, code)
    try:
        draws, pictures = [], []
        for i in range(loads + 1):  # the first is cold (the server's first page); the last is clicked
            ctx, page, drawn, picture = _load_ours(browser, url)
            draws.append(drawn)
            pictures.append(picture)
            if i < loads:
                ctx.close()
        boxes, clusters, svg, bars = page.evaluate(OURS_COUNTS, _dom("main"))
        if block not in page.evaluate(OURS_IDS, [_dom("main"), "clusters:headers"]):
            raise RuntimeError(f"our every-op view of {name} does not show {block} open")
        page.evaluate(OURS_ZOOM_TO, [_dom("main"), block])  # as a user must: zoom in on it, then close it
        _ours_click(page, block, "clusters:headers", "clusters:headers", False)
        opens, closes = [], []
        calls: list[Any] = []  # the click's finished callback requests
        fetched: list[Any] = []  # and the pictures it fetched (app/traces/pictures.py's route)
        page.on(
            "requestfinished",
            lambda r: (
                calls.append(r)
                if "_dash-update-component" in r.url
                else fetched.append(r)
                if "/_tvd/picture/" in r.url
                else None
            ),
        )
        split: list[
            tuple[float, float, int, int]
        ] = []  # per click: ms, its largest answer's wait and size, pictures
        for _ in range(clicks):
            for closing in (False, True):
                del calls[:], fetched[:]
                on = "clusters:headers" if closing else "nodes:labels"
                ms = _ours_click(page, block, on, "clusters:headers", not closing)
                (closes if closing else opens).append(ms)
                wait, size = max((_call_cost(r) for r in calls), key=lambda c: c[1], default=(0.0, 0))
                split.append((ms, wait, size, sum(_call_cost(r)[1] for r in fetched)))
        ctx.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    warm_pictures = [p for p in pictures[1:] if p is not None]
    return {
        "cold": draws[0],
        "warm": statistics.median(draws[1:]),
        "picture_cold": pictures[0],
        "picture": statistics.median(warm_pictures) if warm_pictures else None,
        "open": statistics.median(opens),
        "close": statistics.median(closes),
        "boxes": boxes,
        "clusters": clusters,
        "svg": svg,
        "bars": bars,
        "click_server": statistics.median(sp[1] for sp in split),
        "click_bytes": statistics.median(sp[2] for sp in split),
        "click_picture_bytes": statistics.median(sp[3] for sp in split),
    }


def _call_cost(request: Any) -> tuple[float, int]:
    """A finished callback request: the server's wait (request sent → first byte) and the answer's size."""
    timing = request.timing
    return timing["responseStart"] - timing["requestStart"], int(request.sizes()["responseBodySize"])


# ---- torchvista: its HTML export ------------------------------------------------------------------
def export_torchvista(model: Any, inputs: Any, out: Path) -> Path:
    """torchvista's HTML export of ``model`` with every module open and traced into (see the docstring)."""
    import contextlib
    import io

    import torchvista

    limit = sys.getrecursionlimit()
    # its graph clean-up walks the graph recursively, one frame per op along the path: the default limit
    # (1,000) raises RecursionError on the 32-layer Llama, so it is raised for the export, as a user would
    sys.setrecursionlimit(max(limit, TV_RECURSION_LIMIT))
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints a notebook display object
            torchvista.trace_model(model, inputs, export_format="html", export_path=str(out), **TV_EVERYTHING)
    finally:
        sys.setrecursionlimit(limit)
    return out


def export_bounded(name: str, out: Path, timeout_s: float) -> Path | None:
    """torchvista's export of model ``name`` (TV_BUILD: its real-weights twin) in a process of its own, which
    is stopped after ``timeout_s``: None then."""
    build = TV_BUILD.get(name, name)
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from pathlib import Path; "
        f"import bench.bench_vs_torchvista as b; b.export_torchvista(*b.{build}(), Path({str(out)!r}))"
    )
    try:
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            timeout=timeout_s,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"torchvista's export of {name} failed: {exc.stderr.decode()[-2000:]}") from None
    return out


def _load_tv(browser: Any, html: Path, timeout_ms: float = TIMEOUT_MS) -> tuple[Any, Any, float]:
    ctx = browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    page.goto(html.as_uri(), wait_until="commit", timeout=TIMEOUT_MS)
    try:
        page.wait_for_function(TV_DRAWN, polling="raf", timeout=timeout_ms)
    except Exception:
        ctx.close()
        raise
    return ctx, page, page.evaluate("performance.now()")


def not_measured(why: str) -> dict[str, Any]:
    """torchvista's row when its export or first draw ran past the time bound."""
    return {
        "warm": None,
        "open": None,
        "close": None,
        "timed_out": False,
        "why": why,
        "repeats": (0, 0),
        "nodes": None,
        "extra": None,
        "clusters": None,
        "svg": None,
        "bytes": None,
    }


def torchvista_times(
    browser: Any, html: Path, block_cls: str, loads: int, clicks: int, draw_timeout_ms: float = TIMEOUT_MS
) -> dict[str, Any]:
    """Its first draw and one block's open/close. Every draw and click of it lays the whole view out again in
    the browser, so once a draw takes over SLOW_MS it is loaded once and clicked once (the run stays bounded);
    a click that does not finish within bench_app's wait is reported as over that wait, a first draw over
    ``draw_timeout_ms`` is not measured."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    draws: list[float] = []
    while True:
        try:
            ctx, page, drawn = _load_tv(browser, html, draw_timeout_ms)
        except PlaywrightTimeout:
            return not_measured(f"not drawn within {draw_timeout_ms / 1000:.0f} s")
        draws.append(drawn)
        if len(draws) >= loads or drawn > SLOW_MS:
            break
        ctx.close()
    slow = max(draws) > SLOW_MS
    nodes, extra, clusters, svg = page.evaluate(TV_COUNTS)
    target = _first(page.evaluate(TV_NAMES), block_cls)
    opens: list[float] = []
    closes: list[float] = []
    timed_out = False
    try:
        _tv_click(page, target, "collapse")  # open in the every-op view: close it once, not timed
        for _ in range(1 if slow else clicks):
            opens.append(_tv_click(page, target, "expand"))
            closes.append(_tv_click(page, target, "collapse"))
    except PlaywrightTimeout:
        timed_out = True
    ctx.close()
    return {
        "warm": statistics.median(draws),
        "open": statistics.median(opens) if opens else None,
        "close": statistics.median(closes) if closes else None,
        "timed_out": timed_out,
        "repeats": (len(draws), len(opens)),
        "nodes": nodes,
        "extra": extra,
        "clusters": clusters,
        "svg": svg,
        "bytes": html.stat().st_size,
    }


# ---- the run and its table --------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--clicks", type=int, default=3)
    ap.add_argument("--models", default="llama6,llama16,llama32")
    ap.add_argument(
        "--tv-timeout",
        type=float,
        default=180.0,
        help="seconds torchvista gets for its export, and again for its first draw, per model",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="a checkout of this project (torchvista_dash/ and this bench/) whose server is measured "
        "too, in turn with ours: before/after in one run",
    )
    args = ap.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    warnings.filterwarnings("ignore")
    from playwright.sync_api import sync_playwright

    from bench.bench_dash_floor import measure as dash_floor

    started, loadavg = time.monotonic(), [os.getloadavg()]
    rows, before = [], []
    with tempfile.TemporaryDirectory() as tmpdir:
        htmls = {n: export_bounded(n, Path(tmpdir) / f"{n}.html", args.tv_timeout) for n in names}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            for n in names:
                title, block, block_cls = MODELS[n]
                if args.baseline is not None:
                    before.append((title, ours(browser, n, block, args.loads, args.clicks, args.baseline)))
                    loadavg.append(os.getloadavg())
                o = ours(browser, n, block, args.loads, args.clicks)
                loadavg.append(os.getloadavg())
                html = htmls[n]
                t = (
                    not_measured(f"export not done within {args.tv_timeout:.0f} s")
                    if html is None
                    else torchvista_times(
                        browser, html, block_cls, args.loads, args.clicks, args.tv_timeout * 1000
                    )
                )
                loadavg.append(os.getloadavg())
                rows.append((title, o, t))
                print(f"{title}: ours {o}\n  torchvista {t}", file=sys.stderr, flush=True)
            browser.close()
    floor_loads, floor_clicks, _ = dash_floor(args.loads, max(args.clicks, 5))
    loadavg.append(os.getloadavg())
    floor = (statistics.median(floor_loads), statistics.median(floor_clicks))
    md = render(rows, floor, loadavg, time.monotonic() - started, args, before)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(md, encoding="utf-8")
    print(md)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _tv_ms(t: dict[str, Any], key: str) -> str:
    if t[key] is None and t.get("why"):
        return t["why"]
    if t[key] is None and t["timed_out"]:
        return f"> {TV_CLICK_WAIT_MS / 1000:.0f} s"
    return _ms(t[key])


def _ratio(ours_ms: float | None, theirs_ms: float | None) -> str:
    return "-" if ours_ms is None or theirs_ms is None else f"{ours_ms / theirs_ms:.2f}"


def _count(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def render(
    rows: list[tuple[str, dict[str, Any], dict[str, Any]]],
    floor: tuple[float, float],
    loadavg: list[tuple[float, float, float]],
    seconds: float,
    args: argparse.Namespace,
    before: list[tuple[str, dict[str, Any]]] = (),
) -> str:
    import torch

    one = [la[0] for la in loadavg]
    command = f"{COMMAND} --loads {args.loads} --clicks {args.clicks} --models {args.models}"
    if getattr(args, "tv_timeout", None) is not None:
        command += f" --tv-timeout {args.tv_timeout:.0f}"
    if getattr(args, "baseline", None) is not None:
        command += " --baseline DIR"
    lines = [
        "# Every-op views: ours vs torchvista (headless Chromium, one run)",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"torch {torch.__version__}; 1-minute load average during the run {min(one):.1f}-{max(one):.1f} "
        f"(the run took {seconds:.0f} s). Times in ms, medians; ratio = ours / torchvista "
        "(below 1: ours is "
        "faster). Ours: `serve --depth -1`; torchvista: its HTML export with every module open. "
        "Ours is drawn "
        "(interactive, or a click done) when plotly has drawn the hit layer and every picture it shows "
        "is loaded.",
        "",
        "| model | boxes: ours | torchvista (of them params/scalars) | clusters: ours / tv "
        "| first picture: ours cold / warm | interactive: ours cold / warm | torchvista drawn "
        "| ratio picture (warm) | ratio interactive (warm) | open one block: ours | tv | ratio "
        "| close it: ours | tv | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for title, o, t in rows:
        pic = o["picture"]
        lines.append(
            f"| {title} | {o['boxes']:,} | {_count(t['nodes'])} ({_count(t['extra'])}) | {o['clusters']} / "
            f"{_count(t['clusters'])} | {_ms(o['picture_cold'])} / {_ms(pic)} "
            f"| {_ms(o['cold'])} / {_ms(o['warm'])} "
            f"| {_tv_ms(t, 'warm')} | {_ratio(pic, t['warm'])} | {_ratio(o['warm'], t['warm'])} "
            f"| {_ms(o['open'])} | {_tv_ms(t, 'open')} | {_ratio(o['open'], t['open'])} "
            f"| {_ms(o['close'])} | {_tv_ms(t, 'close')} | {_ratio(o['close'], t['close'])} |"
        )
    lines += [
        "",
        f"Dash's floor in the same run (bench_dash_floor.py: one two-point dcc.Graph): first draw "
        f"{floor[0]:.0f} ms, click → new figure drawn {floor[1]:.0f} ms.",
        "",
        "Repeats (loads, open/close pairs) of torchvista, fewer once a draw takes over "
        f"{SLOW_MS / 1000:.0f} s: "
        + "; ".join(f"{title}: {t['repeats'][0]}, {t['repeats'][1]}" for title, _, t in rows)
        + f"; ours: {args.loads} warm loads after the cold one, {args.clicks} pairs.",
        "",
        "Where our click's time goes (median over every open and close click): "
        "the largest callback answer's "
        "server wait (request sent → first byte: view, layout, figure) and its size on the wire, "
        "and the pictures "
        "the click fetched (their URLs, app/pictures.py); the rest of the click is the transfer, "
        "the browser's "
        "work with the new figure and Dash's round trips: "
        + "; ".join(
            f"{title}: click {statistics.median([o['open'], o['close']]):,.0f} ms, server "
            f"{o['click_server']:,.0f} ms, answer {_mb(o['click_bytes'])}, pictures "
            f"{_mb(o.get('click_picture_bytes', 0))}, hit bars in the first figure {o.get('bars', 0):,}"
            for title, o, _ in rows
        )
        + ".",
        "",
        "SVG elements on the page after the first draw: "
        + "; ".join(
            f"{title}: ours {o['svg']:,}, torchvista {_count(t['svg'])}"
            + ("" if t["bytes"] is None else f" ({t['bytes'] / 1e6:.1f} MB HTML)")
            for title, o, t in rows
        )
        + ".",
        "",
    ]
    if before:
        lines += [
            "Ours before/after, in turn in the same run (before: the `--baseline` checkout's server):",
            "",
            "| model | interactive warm: before / after | cold: before / after | open: before / after "
            "| close: before / after | click answer: before / after | click's pictures: before / after "
            "| hit bars sent first: before / after |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        now = {title: o for title, o, _ in rows}
        for title, b in before:
            o = now[title]
            lines.append(
                f"| {title} | {_ms(b['warm'])} / {_ms(o['warm'])} | {_ms(b['cold'])} / {_ms(o['cold'])} "
                f"| {_ms(b['open'])} / {_ms(o['open'])} | {_ms(b['close'])} / {_ms(o['close'])} "
                f"| {_mb(b['click_bytes'])} / {_mb(o['click_bytes'])} "
                f"| {_mb(b['click_picture_bytes'])} / {_mb(o['click_picture_bytes'])} "
                f"| {b.get('bars', 0):,} / {o.get('bars', 0):,} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
