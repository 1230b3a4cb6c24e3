"""Keyboard shortcuts: which action a key press is, and the bookmarks Shift+1-9 saves and 1-9 recalls.

Keys come from ``dash_extensions.EventListener`` (a maintained component library, no JavaScript of ours) as
the event's ``key``, ``code`` and modifiers. A key typed into a text field is the field's, not a shortcut.

A bookmark is the view as the page's address writes it (links.view_query) plus the axes' ranges, one short
query string per digit, kept in the address (``b1`` … ``b9``) so a reload or a shared link keeps them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode

from torchvista_dash.app.actions import links
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.model.graph import Graph
from torchvista_dash.model.options import depth_from_text
from torchvista_dash.render.viewport import Ranges
from torchvista_dash.view.types import ViewSpec

TYPING_TAGS = ("INPUT", "TEXTAREA", "SELECT")
BOOKMARK_KEYS = tuple(f"b{d}" for d in range(1, 10))  # in the page's address
MAX_BOOKMARK_CHARS = 4_000

# The keys, as the README lists them: (keys, what they do)
SHORTCUTS: tuple[tuple[str, str], ...] = (
    ("F or Space", "fit the whole view"),
    ("/ or Ctrl+F", "find: type, Enter goes to the first match"),
    ("N / Shift+N", "next / previous match"),
    ("Esc", "clear the selection"),
    ("Shift+1…9", "save the view as bookmark 1…9 (kept in the address)"),
    ("1…9", "go back to bookmark 1…9"),
)


def action_of(event: dict[str, Any] | None) -> tuple[str, Any] | None:
    """The action a keydown event asks for: ``(trigger, value)`` of a view change (``fit``, ``clear``,
    ``hit`` ±1, ``bookmark_save``/``bookmark`` with the digit), ``("open_find", None)`` to open the find box,
    ``("find_close", None)`` for Esc in a text field, or None (not a shortcut, or typed into a text field)."""
    if not isinstance(event, dict):
        return None
    key, code = event.get("key"), event.get("code")
    if not isinstance(key, str):
        return None
    ctrl = bool(event.get("ctrlKey") or event.get("metaKey"))
    if ctrl and key.lower() == "f":
        return ("open_find", None)
    if str(event.get("target.tagName", "")).upper() in TYPING_TAGS:
        return ("find_close", None) if key == "Escape" else None
    if ctrl or event.get("altKey"):
        return None
    if key in ("f", "F", " "):
        return ("fit", None)
    if key == "/":
        return ("open_find", None)
    if key == "Escape":
        return ("clear", None)
    if key in ("n", "N"):
        return ("hit", -1 if key == "N" or event.get("shiftKey") else 1)
    if isinstance(code, str) and code.startswith("Digit") and code[5:] in "123456789" and len(code) == 6:
        return ("bookmark_save" if event.get("shiftKey") else "bookmark", int(code[5:]))
    return None


def bookmark_text(graph: Graph, page: PageState, spec: ViewSpec, ranges: Ranges) -> str:
    """One bookmark: the view as the address writes it, and where it is on screen (rounded to a point)."""
    query = links.view_query(graph, PageState(page.trace, spec, page.draw, ranges))
    (x0, x1), (y0, y1) = ranges
    query.update({"x": f"{x0:.0f},{x1:.0f}", "y": f"{y0:.0f},{y1:.0f}"})
    return urlencode(query)


def bookmark_view(graph: Graph, text: str) -> tuple[ViewSpec, Ranges | None, str | None]:
    """A bookmark's view, ranges and direction (the ids checked against the trace: a ValueError if it names
    what the trace does not have)."""
    query = parse_qs(text[:MAX_BOOKMARK_CHARS])
    first = {k: v[0] for k, v in query.items() if v}
    depth = depth_from_text(first.get("depth", "1"))
    fold = first.get("fold_repeats", "1") != "0"
    params = first.get("show_params", "0") == "1"
    spec = links.spec_from_query(graph, query, depth, fold, params) or links.base_view(
        graph, depth, fold, params
    )
    ranges: Ranges | None = None
    try:
        xs = [float(v) for v in first["x"].split(",")]
        ys = [float(v) for v in first["y"].split(",")]
        if len(xs) == 2 and len(ys) == 2:
            ranges = [xs, ys]
    except (KeyError, ValueError):
        ranges = None
    rankdir = first.get("rankdir")
    return spec, ranges, rankdir if rankdir in ("TB", "LR") else None
