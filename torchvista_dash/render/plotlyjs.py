"""Which plotly.js our own pages load: plotly's scatter-only "basic" bundle when it is installed.

We draw nothing but ``scatter`` traces, and parsing the full 4.8 MB plotly.js is most of a page's
first draw: plotly's own ``plotly.js-basic-dist-min`` (1.2 MB, same version) draws a figure several times
sooner in headless Chromium (bench/bench_app.py and bench/bench_dash_floor.py load their pages with it).

The bundle is plotly's own build, fetched from npm by ``make`` (``make plotly-basic``) at exactly the
plotly.js version that the installed Python ``plotly`` ships, into ``render/assets/``; ``$TVD_PLOTLY_JS``
may name another copy. Without it, or with a version that doesn't match, everything falls back to the
full bundle that plotly/Dash carry, so a plain ``pip install`` works unchanged, only slower to first draw.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from pathlib import Path

import plotly.offline

BUNDLE_NAME = "plotly-basic.min.js"
STATIC_DIR = Path(__file__).resolve().parent / "assets"
URL_PATH = "_torchvista_dash/plotly-basic.min.js"  # where our Dash apps serve it, below their prefix


def expected_version() -> str:
    """The plotly.js version the installed Python plotly builds figures for."""
    return plotly.offline.get_plotlyjs_version()


@functools.lru_cache(maxsize=4)
def _checked(path: str, mtime: float) -> bool:
    with open(path, "rb") as f:
        head = f.read(400).decode("utf-8", "replace")
    found = re.search(r"plotly\.js[^\n]*? v(\d+\.\d+\.\d+)", head)
    want = f"plotly.js v{expected_version()}"
    if found is None or found.group(1) != expected_version():
        warnings.warn(
            f"{path} is not {want} (the version the installed plotly needs); using the full bundle. "
            "Run `make plotly-basic` to fetch the matching one.",
            stacklevel=3,
        )
        return False
    return True


def basic_bundle() -> Path | None:
    """The scatter-only bundle if it is installed and matches plotly's version, else None."""
    env = os.environ.get("TVD_PLOTLY_JS")
    path = Path(env) if env else STATIC_DIR / BUNDLE_NAME
    if not path.is_file():
        return None
    return path if _checked(str(path), path.stat().st_mtime) else None


def script_tag() -> str | None:
    """The basic bundle as an inline ``<script>`` for a standalone HTML page, or None to use plotly's own."""
    path = basic_bundle()
    if path is None:
        return None
    return f'<script type="text/javascript">{path.read_text(encoding="utf-8")}</script>'
