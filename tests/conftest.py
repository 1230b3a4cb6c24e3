"""Shared fixtures: real Graphviz, real headless Chromium. Missing in CI ⇒ failure, never a silent skip."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

STRICT = bool(os.environ.get("CI") or os.environ.get("TVD_REQUIRE_BROWSER"))

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


def _missing(what: str) -> None:
    if STRICT:
        pytest.fail(f"{what} is required in CI but missing (run `make test`, which installs it)")
    pytest.skip(f"{what} not installed")


@pytest.fixture(scope="session")
def dot_binary() -> str:
    path = shutil.which("dot")
    if path is None:
        _missing("Graphviz `dot`")
    return path  # type: ignore[return-value]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Debian Chromium for the session, driven by Playwright."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        _missing("Chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser: object) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    p = ctx.new_page()
    try:
        yield p
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def gallery_url() -> Iterator[str]:
    """The demo gallery served from a thread of the test process (a real Dash server)."""
    from support_app import start

    from torchvista_dash.app.server.server import make_app

    srv = start(make_app(gallery=True))
    try:
        yield srv.url
    finally:
        srv.stop()
