"""The served page against hostile input: `serve FILE` in a real process, its page in a real headless
Chromium.

A trace whose model name and module names are markup must show as text (no script runs: a dialog handler
catches any ``alert``), and the server must not publish the current directory's ./assets or ./static.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import torch
from support_app import click_id, css_id, served_url, start, wait_drawn, wait_ids
from torch import nn

from bench.dash_client import DashClient, find_store, output_of
from torchvista_dash import trace_model
from torchvista_dash.app.server.server import make_app
from torchvista_dash.app.traces import firstview
from torchvista_dash.layout.graphviz import dotpool

TITLE_XSS = "</title><script>alert('title')</script><img src=x onerror=alert('title-img')>"
CLASS_XSS = "<img src=x onerror=alert('class')>"
QUALNAME_XSS = "<svg onload=alert('qualname')>"


def _hostile_model() -> nn.Module:
    inner = type(
        CLASS_XSS,
        (nn.Module,),
        {
            "__init__": lambda self: (nn.Module.__init__(self), setattr(self, "fc", nn.Linear(4, 4)))[0],
            "forward": lambda self, x: self.fc(x).relu(),
        },
    )
    outer = nn.Sequential()
    outer.add_module(QUALNAME_XSS, inner())
    outer.add_module("head", nn.Linear(4, 2))
    return outer


def _spawn(args: list[str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "serve", *args, "--port", "0"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        return proc, served_url(proc)
    except AssertionError:
        proc.kill()
        raise


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`serve hostile.json` started in a folder that also holds ./assets/*.js, ./assets/*.css and
    ./static/."""
    cwd = tmp_path_factory.mktemp("hostile")
    trace_model(_hostile_model(), torch.rand(2, 4), name=TITLE_XSS).save(cwd / "hostile.json")
    (cwd / "assets").mkdir()
    (cwd / "assets" / "evil.js").write_text("alert('assets');\n")
    (cwd / "assets" / "evil.css").write_text("body { background: red; }\n")
    (cwd / "static").mkdir()
    (cwd / "static" / "secret.txt").write_text("TOP-SECRET-CONTENT\n")
    proc, url = _spawn(["hostile.json"], cwd)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.browser
def test_markup_in_model_and_module_names_is_shown_as_text(page: Any, hostile_server: str) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.goto(hostile_server)
    wait_drawn(page, "main")
    assert page.title() == TITLE_XSS  # the name, as text, is the tab's title
    assert TITLE_XSS in page.inner_text(css_id("main", "header"))
    mod = f"mod:{QUALNAME_XSS}"
    click_id(page, "main", mod)  # open it: its class and name reach the details panel
    wait_ids(page, "main", "clusters:headers", present=(mod,))
    page.wait_for_function(
        "(a) => document.querySelector(a[0]).innerText.includes(a[1])",
        arg=[css_id("main", "details"), CLASS_XSS],
        timeout=20_000,
    )
    page.click(".tvd-search")  # search lists the hostile names too
    page.locator("input.dash-dropdown-search").press_sequentially("onerror")
    page.get_by_role("option", name=f"{QUALNAME_XSS}: {CLASS_XSS}").wait_for(timeout=20_000)
    page.wait_for_timeout(300)
    assert dialogs == [], f"script ran in the page: {dialogs}"
    assert page.evaluate("Array.from(document.scripts).every(s => !s.src.includes('evil'))")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 0, 0)"


def test_the_current_directory_is_not_published(hostile_server: str) -> None:
    page = requests.get(hostile_server, timeout=30)
    assert page.status_code == 200 and "evil" not in page.text
    files = {
        "assets/evil.js": "alert('assets')",
        "assets/evil.css": "background: red",
        "static/secret.txt": "TOP-SECRET-CONTENT",
        "hostile.json": '"schema"',
    }
    for path, content in files.items():
        r = requests.get(hostile_server + path, timeout=30)
        # a 404, or Dash's page for an unknown path: never the file
        assert r.status_code in (200, 404) and content not in r.text, (path, r.status_code, r.text[:200])


def test_serve_answers_for_an_allowed_host_name(tmp_path: Path) -> None:
    proc, url = _spawn(["mlp", "--allow-host", "viz.lan"], tmp_path)
    try:
        assert requests.get(url, headers={"Host": "viz.lan:8050"}, timeout=30).status_code == 200
        refused = requests.get(url, headers={"Host": "rebound.example"}, timeout=30)
        assert refused.status_code == 400 and "--allow-host NAME" in refused.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ---- errors are said in the page, never a blank page or a silent HTTP 500 ---------------------------
def _failing_dot(folder: Path, read_input: bool = True) -> Path:
    """A real program in dot's place that fails the way a broken Graphviz does (``read_input=False``: at once,
    without reading its input, as a dot that cannot start)."""
    exe = folder / "dot"
    exe.write_text(
        "#!/bin/sh\n"
        + ("cat > /dev/null\n" if read_input else "")
        + "echo 'Error: <stdin>: syntax error in line 1' >&2\nexit 1\n"
    )
    exe.chmod(0o755)
    return exe


def _fresh_trace(width: int) -> Any:
    return trace_model(nn.Sequential(nn.Linear(width, 3), nn.Tanh()), torch.rand(1, width))


@pytest.mark.browser
def test_a_first_view_that_fails_after_the_page_came_says_so(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first view not ready in time is asked for by the page (firstview.py); when its layout fails, the page
    says why, and the placeholder stops saying it is being laid out."""
    monkeypatch.setenv("TVD_DOT", str(_failing_dot(tmp_path, read_input=False)))
    monkeypatch.setenv("TVD_DOT_TIMEOUT", "10")
    monkeypatch.setattr(firstview, "WAIT_S", 0.0)  # every first view is left to the page
    from torchvista_dash import layout as layout_mod

    dotpool.shut_down()
    layout_mod.clear_cache()
    srv = start(make_app([_fresh_trace(16)], first_picture=False))
    try:
        page.goto(srv.url)
        page.wait_for_selector(".tvd-app-error", timeout=30_000)
        assert "syntax error in line 1" in page.inner_text("#tvd-page")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.annotation-text')].some("
            "a => a.textContent.includes('could not be drawn'))",
            timeout=10_000,
        )
    finally:
        srv.stop()
        dotpool.shut_down()


@pytest.mark.browser
def test_a_layout_failure_on_the_first_page_is_shown_in_the_page(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a dot that fails at once: one reading until its input ends would wait out the dot pool's probe of each
    # new process (10 s a layout), as no real dot does
    monkeypatch.setenv("TVD_DOT", str(_failing_dot(tmp_path, read_input=False)))
    from torchvista_dash import layout as layout_mod

    dotpool.shut_down()
    layout_mod.clear_cache()  # pieces are cached by structure: a model like one laid out before needs no dot
    monkeypatch.setattr(
        firstview, "WAIT_S", 60.0
    )  # the page's layout waits for the failure however slow dot is
    srv = start(make_app([_fresh_trace(13)]))
    try:
        layout = requests.get(srv.url + "_dash-layout", headers={"Referer": srv.url}, timeout=60)
        assert layout.status_code == 200
        assert (
            "cannot draw this graph: GraphvizError" in layout.text and "syntax error in line 1" in layout.text
        )
        page.goto(srv.url)
        page.wait_for_selector(".tvd-app-error", timeout=20_000)
        assert "syntax error in line 1" in page.inner_text("#tvd-page")
    finally:
        srv.stop()
    monkeypatch.delenv("TVD_DOT")
    monkeypatch.setenv("TVD_DOT_TIMEOUT", "abc")
    srv = start(make_app([_fresh_trace(14)]))
    try:
        text = requests.get(srv.url + "_dash-layout", headers={"Referer": srv.url}, timeout=60).text
        assert "$TVD_DOT_TIMEOUT='abc' is not a number of seconds above 0" in text
    finally:
        srv.stop()


def test_search_on_a_page_whose_trace_the_server_no_longer_has_says_so(tmp_path: Path) -> None:
    srv = start(make_app([_fresh_trace(15)]))
    try:
        client = DashClient(srv.url)
        store = {**find_store(client.layout(), "main"), "trace": "0" * 16}  # as after a server restart
        r = client.call(
            '"search"}.options',
            "main",
            {"search.search_value": "lin", "store.data": store},
            "search.search_value",
        )
        assert r.status_code == 200
        [option] = output_of(r, "main", "search", "options")
        assert "no trace with id" in option["label"] and option["disabled"]
    finally:
        srv.stop()
