"""The shared trace store (app/traces/shared.py, sharing.py) on a real redis-server and a real folder: what
goes in comes out, hostile entries are refused, locks lapse, versions never read each other's layouts."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from support_graphs import stack_graph
from support_redis import RedisServer

from torchvista_dash import layout
from torchvista_dash.app.traces import shared, sharing
from torchvista_dash.traced import Trace
from torchvista_dash.view import build as view_mod


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(params=["folder", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[shared.Store]:
    if request.param == "folder":
        yield shared.open_store(f"file://{tmp_path / 'store'}")
    else:
        server = request.getfixturevalue("redis_server")
        s = shared.open_store(server.url)
        s._client.flushdb()  # type: ignore[attr-defined]
        yield s
        s.close()


def test_urls_name_the_kind_of_store(tmp_path: Path) -> None:
    assert not shared.open_store(None).shared and not shared.open_store("memory").shared
    assert isinstance(shared.open_store(f"file://{tmp_path}"), shared.FolderStore)
    assert isinstance(shared.open_store("redis://127.0.0.1:1/0"), shared.RedisStore)  # not connected yet
    for bad in ("ftp://x/y", "file://host/path", "nonsense"):
        with pytest.raises(shared.StoreError, match="file:///"):
            shared.open_store(bad)


def test_a_trace_goes_in_compressed_and_comes_back_validated(store: shared.Store) -> None:
    trace = Trace(stack_graph(6))
    sharing.publish_trace(trace, store=store)
    raw = store.get(sharing.trace_key(trace.id))
    assert raw is not None and len(raw) < len(trace.graph.to_bytes()) / 3  # compressed
    back = sharing.fetch_trace(trace.id, store=store)
    assert back is not None and back.id == trace.id and back.graph.to_bytes() == trace.graph.to_bytes()
    assert sharing.fetch_trace("0" * 16, store=store) is None


def test_corrupt_truncated_oversized_and_forged_entries_are_refused(
    store: shared.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace, other = Trace(stack_graph(4)), Trace(stack_graph(5))
    good = zlib.compress(trace.graph.to_bytes())
    key = sharing.trace_key(trace.id)
    for entry, why in [
        (b"\x00garbage", "corrupt"),
        (good[: len(good) // 2], "truncated"),
        (zlib.compress(other.graph.to_bytes()), "another trace"),  # forged: not the trace its id names
        (zlib.compress(b'{"schema": "torchvista_dash/1", "nodes": 5}'), "trace"),
        (zlib.compress(b"\x80\x04pickle"), "JSON"),
    ]:
        store.put(key, entry)
        with pytest.raises(ValueError, match=why):
            sharing.fetch_trace(trace.id, store=store)
    monkeypatch.setenv("TVD_MAX_TRACE_BYTES", "2000")  # a small entry that inflates past the cap
    store.put(key, zlib.compress(trace.graph.to_bytes()))
    with pytest.raises(ValueError, match="over 2,000 bytes"):
        sharing.fetch_trace(trace.id, store=store)


def test_layouts_are_shared_once_and_versions_never_mix(
    store: shared.Store, dot_binary: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = stack_graph(5)
    spec = view_mod.make_spec(g, depth=1, fold_repeats=False)
    vg = view_mod.build_view(g, spec)
    key = sharing.layout_key("t1", spec, "TB", 3000)
    runs: list[int] = []

    def compute() -> layout.Layout:
        runs.append(1)
        time.sleep(0.3)  # long enough for every thread to be waiting on the lock
        return layout.layout_view(vg)

    got: list[layout.Layout] = []

    def ask() -> None:
        got.append(sharing.shared_layout(key, vg, "TB", compute, store=store))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(runs) == 1 and len(got) == 4 and all(lay == got[0] for lay in got)
    assert sharing.counts(store)["layouts"] == 1
    assert sharing.decode_layout(sharing.encode_layout(got[0]), vg, "TB") == got[0]  # exact round trip
    # another version of the package: another key, and it refuses this version's entry under any key
    monkeypatch.setattr(sharing, "VERSION", "9.9.9")
    assert sharing.layout_key("t1", spec, "TB", 3000) != key
    with pytest.raises(sharing.StoreEntryError, match="version"):
        sharing.decode_layout(store.get(key) or b"", vg, "TB")


def test_hostile_layout_entries_are_refused_and_made_again(store: shared.Store, dot_binary: str) -> None:
    g = stack_graph(3)
    vg = view_mod.build_view(g, view_mod.make_spec(g, depth=1))
    lay = layout.layout_view(vg)
    good = sharing.encode_layout(lay)
    other_vg = view_mod.build_view(g, view_mod.make_spec(g, depth=0))
    for bad in (b"junk", good[:-9], zlib.compress(b'{"version": 1}')):
        with pytest.raises(sharing.StoreEntryError):
            sharing.decode_layout(bad, vg, "TB")
    with pytest.raises(sharing.StoreEntryError, match="boxes"):
        sharing.decode_layout(good, other_vg, "TB")  # a layout of another view
    nan = zlib.compress(zlib.decompress(good).replace(b'"width":', b'"width":1e999,"w":', 1))
    with pytest.raises(sharing.StoreEntryError):
        sharing.decode_layout(nan, vg, "TB")
    key = sharing.layout_key("t2", view_mod.make_spec(g, depth=1), "TB", 3000)
    store.put(key, b"junk")
    again = sharing.shared_layout(key, vg, "TB", lambda: lay, store=store)
    assert again == lay and sharing.decode_layout(store.get(key) or b"", vg, "TB") == lay


def test_a_dead_holders_lock_lapses(store: shared.Store) -> None:
    assert store.acquire("lock:x", "dead-worker", 0.5)
    assert not store.acquire("lock:x", "me", 0.5)
    start = time.monotonic()
    with store.lock("lock:x", wait_s=5.0, ttl_s=0.5) as got:
        assert got and 0.3 < time.monotonic() - start < 3.0
        time.sleep(0.6)  # renewed while held: no one else gets it
        assert not store.acquire("lock:x", "other", 0.5)
    assert store.acquire("lock:x", "other", 0.5)  # released


def test_kept_entries_stay_and_idle_ones_go(tmp_path: Path, redis_server: RedisServer) -> None:
    folder = shared.FolderStore(tmp_path / "s", idle_s=60, max_bytes=10_000)
    folder.put("kept", b"k" * 6000, keep=True)
    for i in range(5):
        folder.put(f"e{i}", b"x" * 3000)
    folder.sweep()
    assert folder.get("kept") is not None
    held = [i for i in range(5) if folder.get(f"e{i}") is not None]
    assert held and held[-1] == 4 and len(held) <= 3  # bounded by bytes, the newest kept
    folder.sweep(now=time.time() + 120)  # idle past its age
    assert all(folder.get(f"e{i}") is None for i in range(5)) and folder.get("kept") is not None
    r = shared.RedisStore(redis_server.url, idle_s=1)
    r.put("kept", b"k", keep=True)
    r.put("idle", b"i")
    time.sleep(2.2)
    assert r.get("kept") == b"k" and r.get("idle") is None and not r.touch("idle")
    r.close()
