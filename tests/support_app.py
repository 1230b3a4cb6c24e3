"""Helpers for the app's browser tests: a real server in a thread, and real clicks computed from the figure.

Points are located by reading plotly's own axis mapping of the drawn figure (``_fullLayout``) and
then clicked with ``page.mouse.click``: a real browser click, no callback is called directly.
"""

from __future__ import annotations

import json
import time
from typing import Any

import requests

from bench.serving import served_url  # noqa: F401 - the one reader of a served process's URL, for the tests
from torchvista_dash.app.server.server import BackgroundServer

TIMEOUT_MS = 20_000
DOUBLE_CLICK_S = 0.6
_last_click: dict[int, float] = {}


def graph_dom_id(aio_id: str, sub: str = "graph") -> str:
    """Dash renders a dict id as its JSON with sorted keys."""
    return json.dumps(
        {"aio_id": aio_id, "component": "ModelGraph", "subcomponent": sub},
        separators=(",", ":"),
        sort_keys=True,
    )


def css_id(aio_id: str, sub: str) -> str:
    return "[id='" + graph_dom_id(aio_id, sub) + "']"


def start(app: Any) -> BackgroundServer:
    """Serve ``app`` and wait for its first page (Dash sets an app up, and builds its layout once, then)."""
    srv = BackgroundServer(app)
    deadline = time.time() + 40
    while time.time() < deadline:
        try:
            if requests.get(srv.url, timeout=max(1.0, deadline - time.time())).status_code == 200:
                return srv
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.05)
    raise RuntimeError(f"server at {srv.url} never answered")


_GD = """(domId) => {
  const host = document.getElementById(domId);
  return host && (host.classList.contains('js-plotly-plot') ? host : host.querySelector('.js-plotly-plot'));
}"""


_PICTURE = """async (a) => {
  const host = a[0] === null ? document : document.getElementById(a[0]);
  const gd = host.classList && host.classList.contains('js-plotly-plot') ?
    host : host.querySelector('.js-plotly-plot');
  const src = gd.layout.images[a[1]].source;
  if (src.startsWith('data:'))
    return new TextDecoder().decode(Uint8Array.from(atob(src.split(',')[1]), c => c.charCodeAt(0)));
  return await (await fetch(src)).text();
}"""


def figure_picture(page: Any, aio_id: str | None = None, index: int = 0) -> str:
    """The SVG text of the browser's figure's layout image ``index`` (of the ModelGraph ``aio_id``; None: the
    page's first plot), whether its source is a data URI or the URL of the app's picture route."""
    return str(page.evaluate(_PICTURE, [None if aio_id is None else graph_dom_id(aio_id), index]))


def without_page_scripts(page: Any) -> None:
    """Refuse every script the page loads (Dash's, plotly's), so the page stays at what its HTML paints (the
    first picture) while the test's own page.evaluate still runs."""
    page.route(
        "**/*", lambda route: route.abort() if route.request.resource_type == "script" else route.continue_()
    )


def wait_drawn(page: Any, aio_id: str) -> None:
    page.wait_for_function(
        f"(d) => {{ const gd = ({_GD})(d); return gd && gd._fullData && gd._fullData.length > 0 "
        "&& gd.querySelector('.imagelayer image') && gd.querySelector('.barlayer .trace'); }",
        arg=graph_dom_id(aio_id),
        timeout=TIMEOUT_MS,
    )


def ids_drawn(page: Any, aio_id: str, trace_name: str) -> list[str]:
    """customdata ids of one named trace as the browser currently holds it."""
    return page.evaluate(
        f"(a) => {{ const gd = ({_GD})(a[0]); const t = (gd.data || []).find(t => t.name === a[1]);"
        " return t ? Array.from(t.customdata || []) : []; }",
        [graph_dom_id(aio_id), trace_name],
    )


def screen_xy(
    page: Any, aio_id: str, vid: str, trace_names: tuple[str, ...] = ("nodes:labels",)
) -> tuple[float, float]:
    """Page coordinates of the point carrying ``vid`` in one of ``trace_names`` (a bar's: its centre)."""
    xy = page.evaluate(
        f"""(a) => {{
      const gd = ({_GD})(a[0]);
      for (const t of gd.data) {{
        if (!a[2].includes(t.name) || !t.customdata) continue;
        const i = Array.from(t.customdata).indexOf(a[1]);
        if (i < 0) continue;
        const fl = gd._fullLayout, r = gd.getBoundingClientRect();
        const y = t.base ? t.base[i] + t.y[i] / 2 : t.y[i];     // a bar (a box's click target): its centre
        return [r.left + fl._size.l + fl.xaxis.l2p(t.x[i]), r.top + fl._size.t + fl.yaxis.l2p(y)];
      }}
      return null;
    }}""",
        [graph_dom_id(aio_id), vid, list(trace_names)],
    )
    if xy is None:
        raise AssertionError(f"{vid} is not drawn in {trace_names}")
    return float(xy[0]), float(xy[1])


def click_id(
    page: Any, aio_id: str, vid: str, trace_names: tuple[str, ...] = ("nodes:labels",)
) -> tuple[float, float]:
    """Hover, wait for plotly to register the hovered point (its click handler reads it), then click.

    Clicks are kept 0.6 s apart: two clicks within the browser's double-click time (500 ms) are a double click
    (and keep-in-place puts an opened module's header right where its box was clicked)."""
    wait = DOUBLE_CLICK_S - (time.time() - _last_click.get(id(page), 0.0))
    if wait > 0:
        time.sleep(wait)
    x, y = screen_xy(page, aio_id, vid, trace_names)
    page.mouse.move(x - 3, y)
    page.mouse.move(x, y)
    page.wait_for_function(
        f"(a) => {{ const gd = ({_GD})(a[0]); const h = gd._hoverdata || [];"
        " return h.some(p => p.customdata === a[1]); }",
        arg=[graph_dom_id(aio_id), vid],
        timeout=TIMEOUT_MS,
    )
    page.mouse.click(x, y)
    _last_click[id(page)] = time.time()
    return x, y


def wait_ids(
    page: Any, aio_id: str, trace_name: str, present: tuple[str, ...] = (), absent: tuple[str, ...] = ()
) -> None:
    """Wait until the browser's figure shows ``present`` and not ``absent`` in one named trace."""
    try:
        _wait_ids(page, aio_id, trace_name, present, absent)
    except Exception as exc:  # say what the page said (an error in the notes line) rather than just "timeout"
        notes = page.inner_text(css_id(aio_id, "notes"))
        raise AssertionError(
            f"{trace_name} never showed {present} without {absent}; "
            f"now {ids_drawn(page, aio_id, trace_name)}; page notes: {notes!r}"
        ) from exc


def _wait_ids(
    page: Any, aio_id: str, trace_name: str, present: tuple[str, ...], absent: tuple[str, ...]
) -> None:
    page.wait_for_function(
        f"""(a) => {{
      const gd = ({_GD})(a[0]); if (!gd || !gd.data) return false;
      const t = gd.data.find(t => t.name === a[1]); const ids = t ? Array.from(t.customdata || []) : [];
      return a[2].every(i => ids.includes(i)) && a[3].every(i => !ids.includes(i));
    }}""",
        arg=[graph_dom_id(aio_id), trace_name, list(present), list(absent)],
        timeout=TIMEOUT_MS,
    )


def displayed_ranges(page: Any, aio_id: str) -> list[list[float]]:
    return page.evaluate(
        f"(d) => {{ const fl = ({_GD})(d)._fullLayout; return [fl.xaxis.range, fl.yaxis.range]; }}",
        graph_dom_id(aio_id),
    )


def wait_settled(page: Any, aio_id: str, quiet_s: float = 0.15, timeout_s: float = 10.0) -> None:
    """Wait until the plot's axis ranges stop changing (a figure update fully applied)."""
    last = displayed_ranges(page, aio_id)
    stable_since = time.time()
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        time.sleep(0.03)
        cur = displayed_ranges(page, aio_id)
        if cur != last:
            last, stable_since = cur, time.time()
        elif time.time() - stable_since >= quiet_s:
            return
    raise AssertionError("the plot never settled")


def open_demo(page: Any, url: str, demo: str, aio_id: str = "gallery") -> None:
    """Load one gallery demo and wait until its graph is drawn and still."""
    page.goto(f"{url}?demo={demo}")
    wait_drawn(page, aio_id)
    wait_settled(page, aio_id)
