"""Screenshots of the app for the README, taken in headless Chromium from a real gallery server.

Command (from the repository root):
    .venv/bin/python docs/make_images.py        # or: make images

Writes docs/img/gallery.png (default view), docs/img/expanded.png (one module opened by a click),
docs/img/failed.png (the failing demo), docs/img/dark.png (dark theme), docs/img/first_picture.png (what
the page shows before Dash's scripts have run: taken with JavaScript off), and two static exports:
docs/img/cost_flops.png (the GPT demo coloured by FLOPs), docs/img/diff_gpt2.png (GPT-2 from its config,
2 against 3 layers) and docs/img/exported_gpt.png (the GPT demo read from its torch.export program, its
first block opened).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "img"
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
DOM = json.dumps(
    {"aio_id": "gallery", "component": "ModelGraph", "subcomponent": "graph"}, separators=(",", ":")
)
GD = f"(document.getElementById({json.dumps(DOM)}) || document).querySelector('.js-plotly-plot')"


def drawn(page: Any) -> None:
    page.wait_for_function(
        f"() => {{ const gd = {GD}; return gd && gd.querySelector('.imagelayer image'); }}", timeout=60_000
    )
    page.wait_for_timeout(400)


def click(page: Any, vid: str) -> None:
    """A real click on the box carrying ``vid``, then wait for the view to change."""
    xy = page.evaluate(
        f"""(v) => {{ const gd = {GD}; const t = gd.data.find(t => t.name === 'nodes:labels');
        const i = Array.from(t.customdata).indexOf(v);
        const fl = gd._fullLayout, r = gd.getBoundingClientRect();
        const y = t.base[i] + t.y[i] / 2;    // the box's target is a bar: its centre
        return [r.left + fl._size.l + fl.xaxis.l2p(t.x[i]), r.top + fl._size.t + fl.yaxis.l2p(y)]; }}""",
        vid,
    )
    page.mouse.move(xy[0] - 3, xy[1])
    page.mouse.move(*xy)
    page.wait_for_timeout(200)
    page.mouse.click(*xy)
    page.wait_for_function(
        f"""(v) => {{ const gd = {GD}; const t = gd.data.find(t => t.name === 'clusters:headers');
        return t && Array.from(t.customdata).includes(v); }}""",
        arg=vid,
        timeout=60_000,
    )
    page.mouse.move(5, 5)
    page.wait_for_timeout(600)


def exports() -> None:
    """The README's static pictures, written by the exports themselves (Trace.export, Diff.export)."""
    import warnings

    import torch
    from transformers import GPT2Config, GPT2Model

    from torchvista_dash import compare, trace_model
    from torchvista_dash.demos import demo_trace

    demo_trace("gpt").export(OUT / "cost_flops.png", color_by="flops")

    def gpt2(n_layer: int) -> Any:
        torch.manual_seed(0)
        cfg = GPT2Config(
            n_layer=n_layer,
            n_embd=64,
            n_head=2,
            vocab_size=128,
            n_positions=64,
            bos_token_id=0,
            eos_token_id=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return trace_model(GPT2Model(cfg).eval(), (torch.randint(0, 128, (1, 8)),), {"use_cache": False})

    compare(gpt2(2), gpt2(3)).export(OUT / "diff_gpt2.png", fold_repeats=False)
    demo_trace("gpt-export").export(OUT / "exported_gpt.png", expanded=["mod:blocks.0", "mod:blocks.0.attn"])


def main() -> None:
    from playwright.sync_api import sync_playwright

    from torchvista_dash.app.server.server import BackgroundServer, make_app

    OUT.mkdir(parents=True, exist_ok=True)
    srv = BackgroundServer(make_app(gallery=True))
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 860})
            page.goto(srv.url + "?demo=gpt")
            drawn(page)
            page.screenshot(path=str(OUT / "gallery.png"))
            page.goto(srv.url + "?demo=resnet")
            drawn(page)
            click(page, "mod:layer2")
            page.screenshot(path=str(OUT / "expanded.png"))
            page.goto(srv.url + "?demo=broken")
            drawn(page)
            page.screenshot(path=str(OUT / "failed.png"))
            page.goto(srv.url + "?demo=unet&theme=dark")
            drawn(page)
            page.screenshot(path=str(OUT / "dark.png"))
            no_js = browser.new_context(viewport={"width": 1400, "height": 860}, java_script_enabled=False)
            first = no_js.new_page()
            first.goto(srv.url + "?demo=gpt")
            first.wait_for_function(
                "() => Array.from(document.querySelectorAll('#tvd-first-picture img'))"
                ".every(i => i.complete && i.naturalWidth > 0)"
            )  # the view's pictures, by URL
            first.screenshot(path=str(OUT / "first_picture.png"))
            no_js.close()
            browser.close()
    finally:
        srv.stop()
    exports()
    time.sleep(0.1)
    shots = ("gallery", "expanded", "failed", "dark", "first_picture", "cost_flops", "diff_gpt2")
    shots += ("exported_gpt",)
    for name in shots:
        print(OUT / f"{name}.png")


if __name__ == "__main__":
    main()
