"""Where a figure's pictures go: at their own URL on the Dash server, not inside every figure the browser is
sent.

A view's picture (render/svg/picture.py) is most of its figure: 3.8 MB of SVG at an 80-layer every-op view, a
5.1 MB ``data:`` URI inside the figure JSON, resent at every click. Served instead at
``<prefix>_tvd/picture/<key>.svg``, keyed by a hash of its bytes, the figure carries a short URL: a click
sends only the hit layer, the browser fetches each picture once (and keeps it: the URL never changes meaning,
so it is cached as immutable), and the page's first picture (firstpaint.py) is the same URL, fetched while
Dash's scripts load and drawn again by plotly from the browser's memory cache.

Pictures are kept gzipped (5-8x smaller) once first served, in a bounded LRU (``MAX_BYTES``, ``MAX_PICTURES``)
plus a weak index of the pictures that cached figures still hold (the registry bounds those), so any URL a
figure the server can send names can be answered. The key in a request is untrusted: anything but 32 hex
digits is refused before any lookup. A figure for a static export (``to_html``, the HTML export button) keeps
``data:`` URIs and stands alone; so does a figure drawn outside a request of an app that serves the route (a
layout built at import).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from torchvista_dash.app.traces import shared, sharing
from torchvista_dash.cache import Cache
from torchvista_dash.render.svg import picture as render_picture

GZIP_LEVEL = 5  # 3.8 MB of SVG: about 0.1 s, 0.53 MB (level 1: 0.04 s, 0.68 MB)
MAX_BYTES = 96 * 1024 * 1024  # bytes the LRU holds, gzipped once served (about 150 pictures of 5,000 boxes)
MAX_PICTURES = 512


def key_of(svg: bytes) -> str:
    """A picture's key: the first 128 bits of its bytes' SHA-256, in hex."""
    return hashlib.sha256(svg).hexdigest()[:32]


class Picture:
    """One SVG document under the hash of its bytes, gzipped the first time it is asked for gzipped (then only
    the gzipped bytes are kept): a figure is built at once, its pictures are compressed as they are fetched,
    on the request threads (zlib lets other threads run), not on the way to the figure's answer."""

    __slots__ = ("__weakref__", "_gz", "_lock", "_raw", "key", "size")

    def __init__(self, svg: bytes, key: str | None = None) -> None:
        self.key = key_of(svg) if key is None else key
        self.size = len(svg)
        self._raw: bytes | None = svg
        self._gz: bytes | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_gz(cls, key: str, gz: bytes) -> Picture:
        """A picture another worker drew, as the shared store holds it (checked by sharing.fetch_picture)."""
        pic = cls(b"", key)
        pic._raw, pic._gz, pic.size = None, gz, len(gz)
        return pic

    def gz(self) -> bytes:
        with self._lock:
            if self._gz is None:
                self._gz = gzip.compress(self._raw or b"", compresslevel=GZIP_LEVEL, mtime=0)
                self._raw = None
            return self._gz

    def svg(self) -> bytes:
        raw = self._raw
        return raw if raw is not None else gzip.decompress(self.gz())

    @property
    def nbytes(self) -> int:
        """The bytes it holds now (the SVG, or once compressed the gzipped SVG)."""
        gz = self._gz
        return len(gz) if gz is not None else self.size

    def data_uri(self) -> str:
        return render_picture.data_uri(self.svg().decode("utf-8"))


class Store:
    """The pictures the route can answer: the ``max_pictures`` / ``max_bytes`` most recently stored or
    served, and any other that something (a cached figure) still holds."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_pictures: int = MAX_PICTURES) -> None:
        self.max_bytes, self.max_pictures = max_bytes, max_pictures
        self._recent: Cache[str, Picture] = Cache(
            max_pictures, max_bytes=max_bytes, weigh=lambda pic: pic.nbytes
        )
        self._held: weakref.WeakValueDictionary[str, Picture] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def put(self, svg: bytes) -> Picture:
        """The picture of ``svg`` (the one already stored when the same bytes were stored before)."""
        key = key_of(svg)
        with self._lock:
            pic = self._held.get(key)
        if pic is None:
            new = Picture(svg, key)
            with self._lock:
                pic = self._held.setdefault(key, new)
        self._use(pic)
        return pic

    def get(self, key: str) -> Picture | None:
        """The picture under ``key``: held here, or drawn by another worker and shared (sharing.py)."""
        pic = self._recent.peek(key)
        if pic is None:
            with self._lock:
                pic = self._held.get(key)
        if pic is None:
            gz = sharing.fetch_picture(key, key_of)
            if gz is not None:
                pic = Picture.from_gz(key, gz)
                with self._lock:
                    pic = self._held.setdefault(key, pic)
        if pic is not None:
            self._use(pic)
        return pic

    def _use(self, pic: Picture) -> None:
        if pic.key in self._recent:
            self._recent.reweigh(pic.key)  # pictures shrink once compressed
            self._recent.peek(pic.key)
        else:
            self._recent.put(pic.key, pic)

    def __len__(self) -> int:
        return len(self._recent)

    @property
    def nbytes(self) -> int:
        return self._recent.nbytes

    def clear(self) -> None:
        self._recent.clear()


store = Store()


@dataclass(frozen=True)
class Drawn:
    """A figure (JSON-able dicts) whose layout images' sources are kept aside as ``Picture``s: ``figure``'s
    image at index i has no source; ``pictures`` maps i to its picture."""

    figure: dict[str, Any]
    pictures: tuple[tuple[int, Picture], ...]

    def images(self, base: str | None) -> list[dict[str, Any]]:
        """The layout images with their sources: ``base`` + key + ".svg" (a URL path), or, for ``None``, data
        URIs (a figure that stands alone)."""
        images = [dict(im) for im in self.figure.get("layout", {}).get("images", ())]
        for i, pic in self.pictures:
            images[i]["source"] = pic.data_uri() if base is None else f"{base}{pic.key}.svg"
        return images

    @functools.cached_property
    def nbytes(self) -> int:
        """About what this holds in memory: its pictures' SVG and its dicts, which take about five times their
        JSON text (an 80-layer Llama every-op figure: 1.9 MB of JSON, 28 MB in memory with its pictures)."""
        return sum(pic.size for _, pic in self.pictures) + 5 * _json_size(self.figure)


def _json_size(value: Any) -> int:
    """About the length of ``value``'s JSON text, without writing it (json.dumps of an 80-layer figure takes
    tens of milliseconds, on a click's path): strings and numbers summed by C-level maps, containers
    walked."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return sum(len(k) + 4 + _json_size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, str) for v in value):
            return sum(map(len, value)) + 3 * len(value)
        if value and all(isinstance(v, (int, float)) for v in value):
            return 10 * len(value)
        return sum(map(_json_size, value)) + len(value)
    return 8


class Collector:
    """A ``make_figure(picture_source=...)``: each picture's SVG goes into ``into`` (the route's store) and
    its image gets a marker for a source, which ``drawn`` sets aside (no data URI is encoded to be decoded
    again: about 0.2 s per figure at 80 layers)."""

    MARK = "tvd-picture:"

    def __init__(self, into: Store | None = None) -> None:
        self.into = store if into is None else into
        self.by_key: dict[str, Picture] = {}

    def __call__(self, svg: str) -> str:
        pic = self.into.put(svg.encode("utf-8"))
        if shared.current().shared:  # a page from this worker may fetch its pictures from another
            sharing.publish_picture(pic.key, pic.gz())
        self.by_key[pic.key] = pic
        return self.MARK + pic.key

    def drawn(self, fig: dict[str, Any]) -> Drawn:
        """``fig`` (a plotly figure as dicts, drawn with this collector) with its pictures set aside."""
        layout = dict(fig.get("layout", {}))
        images = [dict(im) for im in layout.get("images", ())]
        pics: list[tuple[int, Picture]] = []
        for i, im in enumerate(images):
            src = im.get("source")
            if isinstance(src, str) and src.startswith(self.MARK):
                pics.append((i, self.by_key[src[len(self.MARK) :]]))
                im.pop("source")
        if images:
            layout["images"] = images
        return Drawn({**fig, "layout": layout}, tuple(pics))
