"""What workers share through the store (shared.py): traces, view layouts and pictures, each compressed, each
read back as untrusted input and checked before use.

- A trace under its id (the content hash): read back, it is parsed and validated as ``load_trace`` does a
  file, and its content hash must be its id. Nothing is unpickled.
- A view's layout under a key of everything it depends on: the trace id, the view, the direction, the node
  budget and this package's version (two versions sharing one store never read each other's layouts). Read
  back, its boxes must be finite numbers for exactly the view's boxes. Two workers asking for one uncached
  view at once compute it once: the first takes a lock in the store, the others wait for its result.
- A picture under its key (the hash of its SVG): read back, its bytes must hash to the key.

When the store does not answer, a worker computes locally what it can (a trace it holds keeps working); what
only the store had is a clear message in the page. ``counts`` tells how many layouts were computed across
workers (the bench and the tests read it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import zlib
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Any

import orjson

from torchvista_dash.app.traces import shared
from torchvista_dash.layout.types import EdgePath, Layout
from torchvista_dash.model.checks import trace_size_limit
from torchvista_dash.model.errors import TorchvistaDashError

if TYPE_CHECKING:  # pragma: no cover
    from torchvista_dash.traced import Trace
    from torchvista_dash.view.types import ViewSpec, VisibleGraph

LAYOUT_WAIT_S = 120.0  # how long a worker waits for another's layout of the same view before its own
MAX_LAYOUT_BYTES = 256 * 2**20  # a layout's JSON read back larger than this is refused


def package_version() -> str:
    try:
        return metadata.version("torchvista_dash")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "0+source"


VERSION = package_version()


class StoreEntryError(TorchvistaDashError, ValueError):
    """A store entry that is not what its key says (corrupt, truncated, oversized or forged)."""


def _compress(data: bytes) -> bytes:
    return zlib.compress(data, 6)


def _decompress(data: bytes, limit: int, what: str) -> bytes:
    """``data`` inflated, refused past ``limit`` bytes (a small entry must not inflate into gigabytes)."""
    inflate = zlib.decompressobj()
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error as exc:
        raise StoreEntryError(f"the store's {what} is corrupt ({exc})") from None
    if len(out) > limit:
        raise StoreEntryError(f"the store's {what} is over {limit:,} bytes once inflated")
    if not inflate.eof:
        raise StoreEntryError(f"the store's {what} is truncated")
    return out


# ---- traces ------------------------------------------------------------------------------------------
def trace_key(trace_id: str) -> str:
    return f"trace:{trace_id}"


def publish_trace(trace: Trace, *, keep: bool = False, store: shared.Store | None = None) -> None:
    """Put ``trace`` in the store (nothing for a store only this process reads)."""
    store = shared.current() if store is None else store
    if store.shared:
        store.put(trace_key(trace.id), _compress(trace.graph.to_bytes()), keep=keep)


def fetch_trace(trace_id: str, *, store: shared.Store | None = None) -> Trace | None:
    """The trace the store holds under ``trace_id``, validated as an untrusted file is; None if it holds none.
    Raises StoreEntryError (or TraceFormatError) for an entry that is not that trace."""
    from torchvista_dash.model.graph import Graph
    from torchvista_dash.traced import Trace

    store = shared.current() if store is None else store
    if not store.shared:
        return None
    data = store.get(trace_key(trace_id))
    if data is None:
        return None
    limit = trace_size_limit()
    graph = Graph.from_json(_decompress(data, limit, "trace"), max_bytes=limit)
    if graph.content_id != trace_id:
        raise StoreEntryError(f"the store's entry for trace {trace_id!r} holds another trace: refused")
    return Trace(graph, _checked=True)


def still_held(trace: Trace, *, keep: bool, store: shared.Store | None = None) -> None:
    """Refresh the trace's idle time in the store, and publish it again if the store lost it (a Redis
    restarted empty)."""
    store = shared.current() if store is None else store
    if store.shared and not store.touch(trace_key(trace.id)):
        publish_trace(trace, keep=keep, store=store)


# ---- layouts ------------------------------------------------------------------------------------------
def layout_key(trace_id: str, spec: ViewSpec, rankdir: str, node_budget: int) -> str:
    view = {
        f.name: sorted(v) if isinstance(v, frozenset) else v
        for f in dataclasses.fields(spec)
        for v in [getattr(spec, f.name)]
    }
    what = json.dumps([trace_id, view, rankdir, node_budget], sort_keys=True, separators=(",", ":"))
    return f"layout:{VERSION}:{hashlib.sha256(what.encode('utf-8')).hexdigest()}"


def encode_layout(lay: Layout) -> bytes:
    edges = [[e.src, e.dst, e.points, e.label, e.label_pos] for e in lay.edges]
    data = {
        "version": VERSION,
        "nodes": lay.nodes,
        "clusters": lay.clusters,
        "parent": lay.parent,
        "edges": edges,
        "width": lay.width,
        "height": lay.height,
        "rankdir": lay.rankdir,
    }
    return _compress(orjson.dumps(data))


def _number(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise StoreEntryError("the store's layout holds something that is not a finite number: refused")
    return float(x)


def _point(p: Any) -> tuple[float, float]:
    if not isinstance(p, list) or len(p) != 2:
        raise StoreEntryError("the store's layout holds a malformed point: refused")
    return (_number(p[0]), _number(p[1]))


def _boxes(raw: Any, ids: set[str], what: str) -> dict[str, tuple[float, float, float, float]]:
    if not isinstance(raw, dict) or set(raw) != ids:
        raise StoreEntryError(f"the store's layout does not place this view's {what}: refused")
    out = {}
    for k, box in raw.items():
        if not isinstance(box, list) or len(box) != 4:
            raise StoreEntryError("the store's layout holds a malformed box: refused")
        out[k] = (_number(box[0]), _number(box[1]), _number(box[2]), _number(box[3]))
    return out


def decode_layout(data: bytes, vg: VisibleGraph, rankdir: str) -> Layout:
    """The layout in ``data`` if it is one of ``vg`` laid out ``rankdir`` by this version; else
    StoreEntryError."""
    try:
        raw = orjson.loads(_decompress(data, MAX_LAYOUT_BYTES, "layout"))
    except orjson.JSONDecodeError:
        raise StoreEntryError("the store's layout is not JSON: refused") from None
    if not isinstance(raw, dict) or raw.get("version") != VERSION or raw.get("rankdir") != rankdir:
        raise StoreEntryError("the store's layout is of another version or direction: refused")
    nodes = _boxes(raw.get("nodes"), {n.id for n in vg.nodes}, "boxes")
    clusters = _boxes(raw.get("clusters"), {c.id for c in vg.clusters}, "modules")
    parent = raw.get("parent")
    if not isinstance(parent, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in parent.items()
    ):
        raise StoreEntryError("the store's layout holds a malformed nesting: refused")
    edges = []
    raw_edges = raw.get("edges")
    for e in raw_edges if isinstance(raw_edges, list) else [None]:
        if not (isinstance(e, list) and len(e) == 5 and isinstance(e[0], str) and isinstance(e[1], str)):
            raise StoreEntryError("the store's layout holds a malformed edge: refused")
        if not isinstance(e[2], list) or not isinstance(e[3], str):
            raise StoreEntryError("the store's layout holds a malformed edge: refused")
        pos = None if e[4] is None else _point(e[4])
        edges.append(EdgePath(e[0], e[1], tuple(_point(p) for p in e[2]), e[3], pos))
    return Layout(
        nodes, clusters, parent, tuple(edges), _number(raw.get("width")), _number(raw.get("height")), rankdir
    )


def shared_layout(
    key: str,
    vg: VisibleGraph,
    rankdir: str,
    compute: Callable[[], Layout],
    *,
    store: shared.Store | None = None,
) -> Layout:
    """The layout under ``key``: from the store if a worker made it already, else computed here once across
    workers (the store's lock), published, and counted. A store that does not answer: computed here."""
    store = shared.current() if store is None else store
    if not store.shared:
        return _computed(compute, store, key)
    try:
        found = _read_layout(store, key, vg, rankdir)
        if found is not None:
            return found
        with store.lock("lock:" + key, wait_s=LAYOUT_WAIT_S):
            found = _read_layout(store, key, vg, rankdir)  # made by the worker we waited for
            if found is not None:
                return found
            lay = _computed(compute, store, key)
            store.put(key, encode_layout(lay))
            return lay
    except shared.StoreUnavailable:
        return compute()


def _read_layout(store: shared.Store, key: str, vg: VisibleGraph, rankdir: str) -> Layout | None:
    data = store.get(key)
    if data is None:
        return None
    try:
        return decode_layout(data, vg, rankdir)
    except StoreEntryError:
        store.delete(key)  # refused like a hostile file, and made again
        return None


def _computed(compute: Callable[[], Layout], store: shared.Store, key: str) -> Layout:
    lay = compute()
    try:
        store.incr(f"count:{VERSION}:layouts")
        store.incr(f"count:{key}")
    except shared.StoreUnavailable:
        pass
    return lay


def counts(store: shared.Store | None = None, key: str | None = None) -> dict[str, int]:
    """How many view layouts the workers sharing the store computed (not read from it): all of them, and
    the one under ``key`` when given."""
    store = shared.current() if store is None else store
    out = {"layouts": int(store.get(f"count:{VERSION}:layouts") or b"0")}
    if key is not None:
        out["view"] = int(store.get(f"count:{key}") or b"0")
    return out


# ---- pictures -----------------------------------------------------------------------------------------
def picture_key(key: str) -> str:
    return f"picture:{key}"


def publish_picture(key: str, gz: bytes, *, store: shared.Store | None = None) -> None:
    store = shared.current() if store is None else store
    if store.shared:
        try:
            store.put(picture_key(key), gz)
        except shared.StoreUnavailable:
            pass  # this worker still serves it; another one will say the picture is gone


MAX_PICTURE_BYTES = 128 * 2**20  # a picture's SVG read back larger than this is refused


def fetch_picture(
    key: str, key_of: Callable[[bytes], str], *, store: shared.Store | None = None
) -> bytes | None:
    """The gzipped SVG under ``key`` if the store holds it and its SVG's ``key_of`` is ``key``, else None."""
    store = shared.current() if store is None else store
    if not store.shared:
        return None
    try:
        gz = store.get(picture_key(key))
    except shared.StoreUnavailable:
        return None
    if gz is None:
        return None
    inflate = zlib.decompressobj(wbits=31)  # gzip
    try:
        svg = inflate.decompress(gz, MAX_PICTURE_BYTES + 1)
    except zlib.error:
        return None
    if len(svg) > MAX_PICTURE_BYTES or not inflate.eof:
        return None
    return gz if key_of(svg) == key else None
