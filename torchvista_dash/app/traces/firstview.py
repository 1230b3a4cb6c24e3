"""A first view that takes long to lay out is drawn by the page itself, with progress, not by a blocked page.

A ModelGraph draws its first view when it is made: in a user's app at start-up, on a served page while Dash
builds the page's layout (and ``serve``'s first picture while it builds the page's HTML). For an every-op view
of a big model that is seconds, during which the browser shows nothing at all. So the work goes to a thread
of its own (one per view, however many ask), and whoever asks waits at most ``WAIT_S``. If it is not done by
then, the ModelGraph starts with a placeholder and a one-shot ``dcc.Interval`` that makes the page ask for the
view through the view callback, whose ``running=`` shows its progress like any slow view change (progress.py);
that request finds the thread's work in the caches and waits for it. A view that fails in the thread raises
its error to the one who asked, who reports it as any view's error.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

from torchvista_dash.app.traces import registry, state
from torchvista_dash.cache import Cache
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.render.style import get_theme
from torchvista_dash.view.types import ViewSpec

WAIT_S = 0.6  # what a page's HTML or layout request waits for a first view before it goes without
TICK_MS = 50  # the one-shot interval that asks for a first view the constructor did not finish
PENDING_RANGES = [[0.0, 1.0], [0.0, 1.0]]  # the placeholder's axes, until the view's own arrive
MAX_KEPT = 64  # finished preparations remembered (their results live in the registry's caches)


class _Preparation:
    """One view's layout and figure, made by one thread; events say how far it got."""

    def __init__(self) -> None:
        self.laid_out = threading.Event()
        self.done = threading.Event()
        self.error: Exception | None = None

    def run(self, trace_id: str, spec: ViewSpec, draw: DrawOptions) -> None:
        try:
            state.layout_of(trace_id, spec, draw.rankdir)
            self.laid_out.set()
            state.drawn_figure(trace_id, spec, draw)
        except Exception as exc:  # raised to the one who asks (prepared), who reports it as ever
            self.error = exc
        finally:
            self.laid_out.set()
            self.done.set()


_lock = threading.Lock()  # one preparation per view: looked up and started under it
_preparations: Cache[Hashable, _Preparation] = Cache(MAX_KEPT)


def prepared(
    trace_id: str, spec: ViewSpec, draw: DrawOptions, wait_s: float | None = None, *, figure: bool = True
) -> bool:
    """Whether the view's figure (``figure=False``: only its layout) is ready within ``wait_s`` (default
    ``WAIT_S``); if not, it goes on being made in the background for the request that will ask for it."""
    wait_s = WAIT_S if wait_s is None else wait_s
    key = (trace_id, spec, draw)
    with _lock:
        if _cached(trace_id, spec, draw, figure):
            return True
        prep = _preparations.peek(key)
        if prep is None or prep.done.is_set():  # none yet, or one whose result failed or was evicted since
            prep = _Preparation()
            _preparations.put(key, prep)
            threading.Thread(
                target=prep.run, args=(trace_id, spec, draw), name="tvd-first-view", daemon=True
            ).start()
    ready = (prep.done if figure else prep.laid_out).wait(wait_s)
    if ready and prep.error is not None:
        with _lock:  # reported once; whoever asks next tries again
            if _preparations.peek(key) is prep:
                _preparations.pop(key)
        raise prep.error
    return ready


def _cached(trace_id: str, spec: ViewSpec, draw: DrawOptions, figure: bool) -> bool:
    entry = registry.entry(trace_id)
    return (spec, draw) in entry.figures if figure else (spec, draw.rankdir) in entry.layouts


def placeholder_figure(theme: str, text: str) -> dict[str, Any]:
    """What the plot shows while its first view is laid out (``text``: "Laying out GPT2Model…"; the progress
    line under the toolbar says how far it got), or when that failed: the theme's background and one line."""
    colours = get_theme(theme).page_style()
    axis = {"visible": False, "range": [0.0, 1.0], "fixedrange": True}
    return {
        "data": [],
        "layout": {
            "xaxis": axis,
            "yaxis": axis,
            "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
            "paper_bgcolor": colours["background"],
            "plot_bgcolor": colours["background"],
            "annotations": [
                {
                    "text": text,
                    "showarrow": False,
                    "x": 0.5,
                    "y": 0.5,
                    "xref": "paper",
                    "yref": "paper",
                    "font": {"color": colours["color"], "size": 14},
                }
            ],
        },
    }
