"""Progress of a slow view change, in real headless Chromium against a real server.

A view that really takes seconds: Graphviz is reached through a wrapper ($TVD_DOT) that holds each laid-out
graph back a moment before passing it on, so every module piece costs time whatever the machine's speed.
The user clicks "Expand all"; the page must say which stage runs and how many of how many modules are laid
out, and the line must be gone once the new graph is drawn. A fast click must not poll at all.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from dash import Dash, html
from plotly.utils import PlotlyJSONEncoder
from support_app import css_id, graph_dom_id, ids_drawn, start, wait_drawn, wait_ids
from torch import nn

from torchvista_dash import layout, trace_model
from torchvista_dash.app import ModelGraph
from torchvista_dash.app.traces import progress, registry, state
from torchvista_dash.layout.graphviz import dotpool

pytestmark = pytest.mark.browser

SLOW_DOT = """\
import os, subprocess, sys, threading, time
delay = float(os.environ.get("TVD_TEST_DOT_DELAY", "0.25"))
p = subprocess.Popen([os.environ["TVD_TEST_REAL_DOT"], *sys.argv[1:]],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def feed():
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        p.stdin.write(chunk)
        p.stdin.flush()
    p.stdin.close()
threading.Thread(target=feed, daemon=True).start()
# a file: graphs (but each process's first, the pool's probe) wait for it
gate = os.environ.get("TVD_TEST_DOT_GATE")
buf = b""
sent = 0
while True:
    chunk = os.read(p.stdout.fileno(), 65536)
    if not chunk:
        break
    buf += chunk
    while (i := buf.find(b"\\n}\\n")) >= 0:       # one laid-out graph: held back, then passed on
        while gate and sent and not os.path.exists(gate):
            time.sleep(0.05)
        time.sleep(delay)
        os.write(1, buf[:i + 3])
        buf = buf[i + 3:]
        sent += 1
os.write(1, buf)
sys.exit(p.wait())
"""


class Stage(nn.Module):
    """Stage ``i`` runs ``i + 1`` ops of its own: no two stages share an interior layout."""

    def __init__(self, i: int) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.n = i + 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        for _ in range(self.n):
            y = torch.tanh(y) + x
        return y


class Slow(nn.Module):
    def __init__(self, n: int = 10) -> None:
        super().__init__()
        self.stages = nn.ModuleList(Stage(i) for i in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for s in self.stages:
            x = s(x)
        return x


@pytest.fixture()
def slow_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    real = shutil.which("dot")
    assert real is not None
    script = tmp_path / "slow_dot"
    script.write_text(f"#!{sys.executable}\n{SLOW_DOT}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("TVD_TEST_REAL_DOT", real)
    monkeypatch.setenv("TVD_DOT", str(script))
    layout.clear_cache()
    yield str(script)
    dotpool.shut_down()
    layout.clear_cache()


def _progress_text(page: Any, aio_id: str = "slow") -> str:
    """The progress line as shown ('' while it is hidden)."""
    return page.evaluate(
        "(d) => { const e = document.getElementById(d); "
        "return e && getComputedStyle(e).display !== 'none' ? e.innerText : ''; }",
        graph_dom_id(aio_id, "progress"),
    )


def test_a_slow_expand_shows_stage_and_modules_then_clears(
    page: Any, slow_dot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = trace_model(Slow(), torch.randn(2, 6))
    app = Dash(__name__)
    app.layout = html.Div([ModelGraph(t, id="slow", height="500px", depth=0)])
    srv = start(app)
    polls: list[str] = []  # the poll callback's answers, counted in the server
    answer = progress.text

    def counted(key: str, now: float | None = None) -> str:
        out = answer(key, now)
        polls.append(out)
        return out

    monkeypatch.setattr(progress, "text", counted)
    try:
        page.goto(srv.url)
        wait_drawn(page, "slow")
        state.precomputer.wait_idle(60)  # the neighbours of the first view are laid out: the floor is quiet
        # a fast action (the theme: no layout) answers before the first poll tick: nothing polls
        page.click(f"{css_id('slow', 'theme')} input[value='dark']")
        page.wait_for_function(
            "(d) => document.getElementById(d).className.includes('tvd-dark')",
            arg=graph_dom_id("slow", "root"),
            timeout=20_000,
        )
        time.sleep(2 * progress.POLL_MS / 1000)
        assert polls == [], "a fast answer must not poll"
        page.click(css_id("slow", "expand_all"))
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            txt = _progress_text(page)
            if txt:
                seen.append(txt)
            if "mod:stages.9" in ids_drawn(page, "slow", "clusters:headers"):
                break
            time.sleep(0.05)
        assert seen, "no progress was shown while the view laid out"
        assert any(re.search(r"laying out modules: \d+ of \d+", s, re.I) for s in seen), seen
        counts = [tuple(map(int, m.groups())) for s in seen if (m := re.search(r"(\d+) of (\d+)", s))]
        assert len({n for _, n in counts}) == 1 and counts[0][1] >= 10, counts  # one total: every module
        assert [d for d, _ in counts] == sorted(d for d, _ in counts), "progress went backwards"
        wait_ids(page, "slow", "clusters:headers", present=("mod:stages.9",))
        page.wait_for_function(
            "(d) => getComputedStyle(document.getElementById(d)).display === 'none'",
            arg=graph_dom_id("slow", "progress"),
            timeout=5_000,
        )
        assert _progress_text(page) == ""
        assert polls, "the slow view was never polled"
        n_polls = len(polls)
        time.sleep(3 * progress.POLL_MS / 1000)
        assert len(polls) <= n_polls + 1, "polling went on after the answer"  # one tick may be in flight
        assert progress.in_flight() == 0
        # and the page goes on as before
        page.click(css_id("slow", "collapse_all"))
        wait_ids(page, "slow", "nodes:labels", present=("mod:(root)",))
        assert _progress_text(page) == ""
    finally:
        srv.stop()
        registry.clear_caches()


def test_progress_text_waits_then_names_the_work() -> None:
    """The record without a browser: nothing before SHOW_AFTER_S, then the layout's own report, then
    nothing."""
    key = progress.request_key("g", {"trace": "t"}, None)
    assert (
        key
        == progress.request_key("g", {"trace": "t"}, None)
        != progress.request_key("h", {"trace": "t"}, None)
    )
    with progress.request(key):
        start_t = time.monotonic()
        assert progress.text(key, now=start_t) == ""
        with progress.waiting_for(("w",), "laying out"):
            later = start_t + progress.SHOW_AFTER_S + 1
            assert progress.text(key, now=later).startswith("Laying out (")
            progress.reporter(("w",))("modules", 3, 12)
            assert progress.text(key, now=later).startswith("Laying out modules: 3 of 12 (")
            progress.finished(("w",))
        progress.stage("drawing 40 boxes")
        assert progress.text(key, now=later).startswith("Drawing 40 boxes (")
    assert progress.text(key) == "" and progress.in_flight() == 0


def _walk(component: Any) -> Any:
    yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children] if children is not None else []:
        if hasattr(child, "children") or hasattr(child, "id"):
            yield from _walk(child)


def _watch_first_view(
    page: Any, aio_id: str, header: str, timeout_s: float = 120
) -> tuple[list[str], list[str]]:
    """Until ``header`` is drawn: the progress lines and the plot's placeholder text seen on the way."""
    seen: list[str] = []
    placeholder: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        txt = _progress_text(page, aio_id)
        if txt:
            seen.append(txt)
        note = page.evaluate(
            "(d) => { const e = document.getElementById(d); const a = e && "
            "e.querySelector('.annotation-text'); return a ? a.textContent : ''; }",
            graph_dom_id(aio_id),
        )
        if note:
            placeholder.append(note)
        try:
            if header in ids_drawn(page, aio_id, "clusters:headers"):
                return seen, placeholder
        except Exception:  # the placeholder has no such trace yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"{header} was never drawn; progress seen: {seen[-3:]}")


def _wait_progress(page: Any, aio_id: str, timeout_s: float = 60) -> str:
    """The first progress line the page shows."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        txt = _progress_text(page, aio_id)
        if txt:
            return str(txt)
        time.sleep(0.05)
    raise AssertionError("the page never showed progress while its first view was laid out")


def _modules_counted(seen: list[str]) -> None:
    assert any(re.search(r"laying out modules: \d+ of \d+", s, re.I) for s in seen), seen
    counts = [tuple(map(int, m.groups())) for s in seen if (m := re.search(r"(\d+) of (\d+)", s))]
    assert len({n for _, n in counts}) == 1 and counts[0][1] >= 10, counts  # one total: every module
    assert [d for d, _ in counts] == sorted(d for d, _ in counts), "progress went backwards"


def test_a_slow_first_view_in_a_users_app_shows_progress_then_the_graph(
    page: Any, slow_dot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ModelGraph(trace, depth=None)` in the user's own layout (a layout function: made when a page asks):
    making it does not wait for the whole layout, and the page says how far that layout has got until the
    graph is drawn."""
    t = trace_model(Slow(), torch.randn(2, 6))
    state.precomputer.wait_idle(60)  # nothing left from an earlier test lays these pieces out meanwhile
    dotpool.shut_down()
    layout.clear_cache()
    gate = Path(slow_dot).parent / "gate"
    monkeypatch.setenv("TVD_TEST_DOT_GATE", str(gate))  # the layout waits until the page is up (below)
    app = Dash(__name__)
    made: list[Any] = []

    def page_layout() -> Any:
        made.append(ModelGraph(t, id="slow", height="500px", depth=None))
        return html.Div([made[-1]])

    app.layout = page_layout
    srv = start(app)
    try:
        page.goto(srv.url)
        first = _wait_progress(page, "slow")  # the page is up while the layout has not moved on: it says so
        gate.touch()
        seen, _ = _watch_first_view(page, "slow", "mod:stages.9")
        _modules_counted([first, *seen])
        # the page's ModelGraph went without its figure: a placeholder that names the model
        plot = next(c for c in _walk(made[0]) if getattr(c, "id", None) == ModelGraph.ids.graph("slow"))
        assert [a["text"] for a in plot.figure["layout"]["annotations"]] == ["Laying out Slow…"]
        wait_drawn(page, "slow")
        page.wait_for_function(
            "(d) => getComputedStyle(document.getElementById(d)).display === 'none'",
            arg=graph_dom_id("slow", "progress"),
            timeout=5_000,
        )
        assert progress.in_flight() == 0
        # it works as any other view, and the next page finds it made
        page.click(css_id("slow", "collapse_all"))
        wait_ids(page, "slow", "nodes:labels", present=("mod:(root)",))
        page.reload()
        wait_ids(page, "slow", "clusters:headers", present=("mod:stages.9",))
        assert "annotations" not in json.dumps(made[-1].to_plotly_json(), cls=PlotlyJSONEncoder)
    finally:
        srv.stop()
        registry.clear_caches()


SLOW_MODEL = """
import torch
from torch import nn
from test_app_progress import Slow

def slow():
    return Slow(), torch.randn(2, 6)
"""


def test_serve_of_a_slow_first_view_sends_the_page_at_once_and_shows_progress(
    page: Any, slow_dot: str, tmp_path: Path
) -> None:
    """`python -m torchvista_dash serve module:fn --depth -1`, a browser opening it while the server still
    lays out the first view: the page's HTML is not held back for it (no first picture), and the page shows
    which stage runs and how many of how many modules are done, then the graph."""
    import os
    import subprocess

    from support_app import served_url

    (tmp_path / "tvd_slow_models.py").write_text(SLOW_MODEL)
    gate = tmp_path / "gate"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "TVD_TEST_DOT_GATE": str(gate),
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[i]) for i in (2, 1, 0)]),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchvista_dash",
            "serve",
            "tvd_slow_models:slow",
            "--depth",
            "-1",
            "--port",
            "0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = served_url(proc)
        page.goto(url)  # the server is laying out the first view (its warm-up)
        assert "tvd-first-picture" not in page.content()
        first = _wait_progress(page, "main")
        gate.touch()
        seen, _ = _watch_first_view(page, "main", "mod:stages.9")
        _modules_counted([first, *seen])
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
