"""A real notebook, executed by nbclient on the python3 kernel: show() twice gives two live iframes.

While the kernel is still alive, both iframes' URLs are opened in headless Chromium and must draw
their graph; a failed trace's show() draws the partial graph and re-raises the model's error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import nbformat
import pytest
import requests
from nbclient import NotebookClient
from support_app import graph_dom_id, ids_drawn, wait_drawn

CELLS = [
    "from torchvista_dash import trace_model\nfrom torchvista_dash.demos import build_demo",
    "t1 = trace_model(*build_demo('mlp'), name='first MLP')\nt1.show()",
    "t2 = trace_model(*build_demo('gpt'), name='second GPT')\nt2.show(height=500)",
    "t1.show()   # re-running / showing again keeps working",
    "trace_model(*build_demo('broken'), name='broken one').show()",
]


PICTURES_SERVED = """async (d) => { const gd = document.getElementById(d).querySelector('.js-plotly-plot');
  return await Promise.all(gd.layout.images.map(async im => { const r = await fetch(im.source);
    return [im.source, r.status, r.headers.get('content-type')]; })); }"""


def _iframe_src(output: dict[str, Any]) -> str:
    html = output.get("data", {}).get("text/html", "")
    m = re.search(r'<iframe[^>]*src="([^"]+)"', html)
    assert m, f"no iframe in output: {output}"
    return m.group(1)


@pytest.mark.browser
def test_notebook_show_twice_gives_two_live_iframes(tmp_path: Path, page: Any) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.cells[-1].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
    )
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        srcs = [_iframe_src(nb.cells[i].outputs[0]) for i in (1, 2, 3)]
        assert srcs[0] != srcs[1] and srcs[0] == srcs[2]  # same trace, same page
        assert srcs[0].split("?")[0] == srcs[1].split("?")[0]  # one server hosts both
        assert 'height="500"' in nb.cells[2].outputs[0]["data"]["text/html"]

        outputs = nb.cells[4].outputs
        failed = [o for o in outputs if o["output_type"] == "display_data"]
        assert failed and "<iframe" in failed[0]["data"]["text/html"]
        err = [o for o in outputs if o["output_type"] == "error"]
        assert outputs.index(failed[0]) < outputs.index(err[0])  # drawn first, then re-raised
        assert err and err[0]["ename"] == "RuntimeError" and "Sizes of tensors must match" in err[0]["evalue"]

        for src, model in (
            (srcs[0], "first MLP"),
            (srcs[1], "second GPT"),
            (_iframe_src(failed[0]), "broken one"),
        ):
            assert requests.get(src, timeout=30).status_code == 200
            tid = parse_qs(urlsplit(src).query)["trace"][0]
            page.goto(src)
            wait_drawn(page, f"trace-{tid}")
            assert model in page.inner_text(".tvd-header")
            assert ids_drawn(page, f"trace-{tid}", "nodes:labels")
            # the picture comes from the notebook's server by URL (app/traces/pictures.py), and it answers
            served = page.evaluate(PICTURES_SERVED, graph_dom_id(f"trace-{tid}"))
            assert served and all(
                src.startswith("/_tvd/picture/") and status == 200 and "svg" in kind
                for src, status, kind in served
            ), served


def test_show_external_prints_a_live_url_and_rejects_bad_modes(capsys: pytest.CaptureFixture[str]) -> None:
    from torchvista_dash.app.server.notebook import show
    from torchvista_dash.demos import demo_trace

    show(demo_trace("mlp"), mode="external", depth=2)
    url = capsys.readouterr().out.strip().split("torchvista_dash: ")[1]
    assert "depth=2" in url
    layout = requests.get(url.split("?")[0] + "_dash-layout", headers={"Referer": url}, timeout=30).text
    assert "MLP" in layout and '"nodes:labels"' in layout
    with pytest.raises(ValueError, match="mode must be one of inline, external, tab"):
        show(demo_trace("mlp"), mode="popup")
    with pytest.raises(TypeError, match="unknown option.*colour.*options are: depth"):
        show(demo_trace("mlp"), mode="external", colour="red")
    with pytest.raises(
        RuntimeError, match="Sizes of tensors must match"
    ):  # partial graph served, then raised
        show(demo_trace("broken"), mode="external")
    assert "torchvista_dash: http://" in capsys.readouterr().out


SAVED_CELLS = [
    "from torchvista_dash import trace_model\nfrom torchvista_dash.demos import build_demo",
    "trace_model(*build_demo('gpt'), name='saved GPT').show(theme='dark')",
    "broken = trace_model(*build_demo('broken'), name='broken again')\nbroken.show()",
    "broken.show()",
    "broken.show()",
]


def test_a_saved_notebook_keeps_a_picture_and_re_raises_the_same_error(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in SAVED_CELLS]
    for cell in nb.cells[2:]:
        cell.metadata["tags"] = ["raises-exception"]
    NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    path = tmp_path / "saved.ipynb"
    nbformat.write(nb, path)
    saved = nbformat.read(path, as_version=4)  # what GitHub / nbviewer / a closed kernel get
    (shown,) = [o for o in saved.cells[1].outputs if o["output_type"] == "display_data"]
    assert "<iframe" in shown["data"]["text/html"]  # the live graph, for a running kernel
    svg = shown["data"]["image/svg+xml"]  # and the picture, saved beside it
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "lm_head: Linear" in svg and "GPTBlock" in svg
    failed = [o for o in saved.cells[2].outputs if o["output_type"] == "display_data"]
    assert "image/svg+xml" in failed[0]["data"]  # a failed trace's partial graph too
    errors = [next(o for o in c.outputs if o["output_type"] == "error") for c in saved.cells[2:]]
    assert [e["ename"] for e in errors] == ["RuntimeError"] * 3
    lengths = [len(e["traceback"]) for e in errors]
    assert len(set(lengths)) == 1, lengths  # each re-raise as long as the first


SLOW_CELL = """
import torch
from torch import nn
from torchvista_dash import trace_model

class Stage(nn.Module):
    def __init__(self, i):
        super().__init__()
        self.lin, self.n = nn.Linear(6, 6), i + 1
    def forward(self, x):
        y = self.lin(x)
        for _ in range(self.n):
            y = torch.tanh(y) + x
        return y

class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(Stage(i) for i in range(10))
    def forward(self, x):
        for s in self.stages:
            x = s(x)
        return x

trace_model(Slow(), torch.randn(2, 6)).show(depth=None)
"""


def test_show_of_a_slow_first_view_says_how_far_its_layout_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """show() lays the first view out in the kernel before the output appears; with a dot that takes seconds,
    the cell says which stage runs and how many of how many modules are done, then that it is done."""
    import shutil
    import stat
    import sys

    from test_app_progress import SLOW_DOT

    script = tmp_path / "slow_dot"
    script.write_text(f"#!{sys.executable}\n{SLOW_DOT}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("TVD_TEST_REAL_DOT", str(shutil.which("dot")))
    monkeypatch.setenv("TVD_DOT", str(script))  # the kernel inherits it
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SLOW_CELL)]
    NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = nb.cells[0].outputs
    err = "".join(
        o.get("text", "") for o in outputs if o["output_type"] == "stream" and o["name"] == "stderr"
    )
    frames = [f.strip() for f in err.split("\r") if f.strip()]
    counts = [tuple(map(int, m.groups())) for f in frames if (m := re.search(r"modules: (\d+) of (\d+)", f))]
    assert counts and len({n for _, n in counts}) == 1 and counts[0][1] >= 10, frames
    assert [d for d, _ in counts] == sorted(d for d, _ in counts), frames  # it counts up
    assert frames[-1].startswith("Laid out the first view in"), frames
    assert any(o["output_type"] == "display_data" and "<iframe" in o["data"]["text/html"] for o in outputs)


SCRIPT = """
from torchvista_dash import trace_model
from torchvista_dash.demos import build_demo
trace_model(*build_demo('mlp')).show()
print('after show', flush=True)
"""


def test_show_in_a_plain_script_opens_a_tab_and_serves_until_ctrl_c(tmp_path: Path) -> None:
    # outside a notebook there is no cell to draw in, and the script's end would stop the server thread: like
    # plt.show(), show() opens a browser tab and serves until Ctrl-C, then the script goes on
    import os
    import signal
    import subprocess
    import sys
    import time

    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "BROWSER": str(browser),
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        line = ""
        deadline = time.time() + 120
        while "serving http" not in line and time.time() < deadline:
            line = proc.stdout.readline() if proc.stdout else ""
            assert line or proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        url = line.split("serving ")[1].split(" ")[0]
        while not opened.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert opened.read_text().strip() == url  # the tab was asked for that page
        time.sleep(1.0)
        assert proc.poll() is None  # still serving after the script's last line
        layout = requests.get(url.split("?")[0] + "_dash-layout", headers={"Referer": url}, timeout=30).text
        assert "MLP" in layout
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "stopped serving" in out and "after show" in out  # Ctrl-C stops serving; the script goes on
    finally:
        if proc.poll() is None:
            proc.kill()
