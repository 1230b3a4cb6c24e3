"""The view state a browser holds for one ModelGraph: a frozen, validated ``PageState``, kept in the page as a
JSON dict in a ``dcc.Store`` (``to_store`` / ``from_store``).

The store holds only what the browser must remember between callbacks: which trace, the view (``ViewSpec``),
how it is drawn (``DrawOptions``), where it is on screen and what was last sent. Everything else is derived
from it on the server and cached per trace (registry.py), so two tabs on one graph never interfere.

The store comes back from the browser with every callback, so it is untrusted input: ``from_store`` checks
every key's type and bounds, and a store it cannot read (hand-edited, or written by another version of this
package, e.g. a tab left open across an upgrade) is a ``PageStateError`` whose message says to reload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from torchvista_dash.app.traces import registry
from torchvista_dash.model.errors import TorchvistaDashError
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.render.viewport import Ranges
from torchvista_dash.view.build import check_spec
from torchvista_dash.view.types import ViewSpec

VERSION = 1  # the store's layout; a store with another (or none) was written by another version
MAX_IDS = 200_000  # ids per list (a 25,000-box view opens a few thousand calls)
MAX_ID_CHARS = 2_000
MAX_SENT = 4  # ranges sent lately, remembered to recognise plotly echoing them (viewport.is_echo)
MAX_RELAYOUT_KEYS = 64
MAX_TEXT = 4_000  # chars of any other text value
MAX_HITS = 100

_SPEC_KEYS = ("expanded", "unfolded", "pinned", "fold", "params")  # the ViewSpec's fields in the store


class PageStateError(TorchvistaDashError, ValueError):
    """The page's view state (its ``dcc.Store``) cannot be read; the message says what to do."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"This page's view state cannot be read: {why}; reload the page to start again from the "
            "model's first view."
        )


@dataclass(frozen=True)
class ZoomBack:
    """The zoom to return to when the module that an open click zoomed out for (``id``) is closed again
    without the user moving meanwhile: ``before`` the click, ``after`` it."""

    id: str
    before: Ranges
    after: Ranges


@dataclass(frozen=True)
class PageState:
    """One ModelGraph's state in the browser.

    ``trace``: the registry id; ``spec``/``draw``: the view and how it is drawn; ``ranges``: the axes the
    server last sent, ``rev`` how many view changes it has answered (state.uirevision), ``relayout`` the last
    relayout event it read (a repeated one is stale), ``sent`` the ranges it sent lately (newest first);
    ``pending``: the first view is still to be laid out (firstview.py); ``found``: a search hit whose
    details follow the view; ``zoom_back``: see ``ZoomBack``.
    """

    trace: str
    spec: ViewSpec
    draw: DrawOptions
    ranges: Ranges
    rev: int = 0
    relayout: dict[str, Any] | None = None
    sent: tuple[Ranges, ...] = ()
    pending: bool = False
    found: str | None = None
    zoom_back: ZoomBack | None = None
    hits: tuple[str, ...] = ()  # what the find box matched (graph ids), gone through with N / Shift+N
    hit: int = 0  # the one shown
    bookmarks: tuple[tuple[int, str], ...] = ()  # (digit, view) saved with Shift+1-9 (app/actions/keys.py)

    def __post_init__(self) -> None:
        if not self.sent:
            object.__setattr__(self, "sent", (self.ranges,))

    def to_store(self) -> dict[str, Any]:
        """The JSON dict the page holds (``from_store`` reads it back)."""
        spec = self.spec
        return {
            "v": VERSION,
            "trace": self.trace,
            "expanded": sorted(spec.expanded),
            "unfolded": sorted(spec.unfolded),
            "pinned": sorted(spec.pinned),
            "fold": spec.fold_repeats,
            "params": spec.show_params,
            **{f.name: getattr(self.draw, f.name) for f in fields(self.draw)},
            "ranges": self.ranges,
            "rev": self.rev,
            "relayout": self.relayout,
            "sent": list(self.sent),
            "pending": self.pending,
            "found": self.found,
            "zoom_back": None
            if self.zoom_back is None
            else {"id": self.zoom_back.id, "before": self.zoom_back.before, "after": self.zoom_back.after},
            "hits": list(self.hits),
            "hit": self.hit,
            "bookmarks": {str(d): text for d, text in self.bookmarks},
        }

    @classmethod
    def from_store(cls, data: Any) -> PageState:
        """The state a store holds; ``PageStateError`` for anything this version did not write."""
        if not isinstance(data, dict):
            raise PageStateError(f"expected an object, got {type(data).__name__}")
        if data.get("v") != VERSION:
            raise PageStateError(
                f"it was written by another version of torchvista_dash (store version "
                f"{_show(data.get('v'))}; this server reads {VERSION})"
            )
        unknown = sorted(set(data) - _KNOWN)
        if unknown:
            raise PageStateError(f"unknown key(s) {', '.join(_show(k) for k in unknown[:5])}")
        spec = ViewSpec(
            expanded=_ids(data, "expanded"),
            fold_repeats=_bool(data, "fold", default=True),
            unfolded=_ids(data, "unfolded"),
            show_params=_bool(data, "params", default=False),
            pinned=_ids(data, "pinned"),
        )
        draw_values = {f.name: data[f.name] for f in fields(DrawOptions) if f.name in data}
        for name, value in draw_values.items():
            if isinstance(value, str):
                _text(value, name)
        try:
            draw = DrawOptions(**draw_values)
        except (TypeError, ValueError) as exc:
            raise PageStateError(str(exc)) from None
        ranges = _ranges(data.get("ranges"), "ranges")
        sent = data.get("sent") or [ranges]
        if not isinstance(sent, list) or len(sent) > MAX_SENT:
            raise PageStateError(f"sent must be a list of at most {MAX_SENT} ranges")
        back = data.get("zoom_back")
        if back is not None:
            if not isinstance(back, dict):
                raise PageStateError("zoom_back must be an object or null")
            back = ZoomBack(
                _text(back.get("id"), "zoom_back.id"),
                _ranges(back.get("before"), "zoom_back.before"),
                _ranges(back.get("after"), "zoom_back.after"),
            )
        return cls(
            trace=_text(data.get("trace"), "trace"),
            spec=spec,
            draw=draw,
            ranges=ranges,
            rev=_int(data.get("rev", 0), "rev"),
            relayout=_relayout(data.get("relayout")),
            sent=tuple(_ranges(r, "sent") for r in sent),
            pending=_bool(data, "pending", default=False),
            found=None if data.get("found") is None else _text(data["found"], "found"),
            zoom_back=back,
            hits=_id_list(data, "hits", MAX_HITS),
            hit=_int(data.get("hit", 0), "hit"),
            bookmarks=_bookmarks(data.get("bookmarks")),
        )


_KNOWN = frozenset(
    ["v", "trace", "ranges", "rev", "relayout", "sent", "pending", "found", "zoom_back", "hits", "hit"]
    + ["bookmarks"]
    + list(_SPEC_KEYS)
    + [f.name for f in fields(DrawOptions)]
)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise PageStateError(f"{key} must be a non-empty text of at most {MAX_TEXT:,} characters")
    return value


def _int(value: Any, key: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**53:
        raise PageStateError(f"{key} must be a whole number ≥ 0, not {_show(value)}")
    return value


def _bool(data: dict[str, Any], key: str, *, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise PageStateError(f"{key} must be true or false, not {_show(value)}")
    return value


def _ids(data: dict[str, Any], key: str) -> frozenset[str]:
    return frozenset(_id_list(data, key, MAX_IDS))


def _id_list(data: dict[str, Any], key: str, limit: int) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or len(value) > limit:
        raise PageStateError(f"{key} must be a list of at most {limit:,} ids")
    if not all(isinstance(v, str) and 0 < len(v) <= MAX_ID_CHARS for v in value):
        raise PageStateError(f"{key} must hold ids (texts of at most {MAX_ID_CHARS:,} characters)")
    return tuple(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _ranges(value: Any, key: str) -> Ranges:
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(r, list) and len(r) == 2 and all(_number(v) for v in r) for r in value)
    )
    if not ok:
        raise PageStateError(f"{key} must be [[x0, x1], [y0, y1]] of finite numbers, not {_show(value)}")
    return [[float(v) for v in r] for r in value]


def _bookmarks(value: Any) -> tuple[tuple[int, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(k in "123456789" and len(k) == 1 for k in value):
        raise PageStateError("bookmarks must be an object keyed by the digits 1 to 9")
    return tuple(sorted((int(k), _text(v, f"bookmark {k}")) for k, v in value.items()))


def _relayout(value: Any) -> dict[str, Any] | None:
    """plotly's relayoutData as last read: a small object of numbers, flags, short texts and ranges."""
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > MAX_RELAYOUT_KEYS:
        raise PageStateError(f"relayout must be an object of at most {MAX_RELAYOUT_KEYS} keys")
    for k, v in value.items():
        flat = v if isinstance(v, list) and len(v) <= 4 else [v]
        if len(k) > 200 or not all(
            v is None or isinstance(v, bool) or _number(v) or (isinstance(v, str) and len(v) <= 200)
            for v in flat
        ):
            raise PageStateError(f"relayout holds a value this version does not read ({_show(k)})")
    return dict(value)


def load(data: Any) -> PageState:
    """The state a page sent, its ids checked against its trace: what every callback reads a store with.
    A trace the server no longer holds is ``registry.UnknownTrace`` (its message says to reload)."""
    page = PageState.from_store(data)
    graph = registry.get(page.trace).graph
    try:
        check_spec(graph, page.spec)
    except ValueError:
        raise PageStateError(f"it names modules {graph.model_name or 'this model'} does not have") from None
    return page
