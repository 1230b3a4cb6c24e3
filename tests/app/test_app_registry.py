"""One bounded cache entry per trace: the registry's LRU cap, what an entry holds, and misses computed
once."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest
import torch
from test_app_state import _find
from torch import nn

from torchvista_dash import trace_model
from torchvista_dash.app import ModelGraph
from torchvista_dash.app.actions.details import call_io
from torchvista_dash.app.traces import firstview, registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.cache import Cache
from torchvista_dash.demos import demo_trace
from torchvista_dash.model.options import DrawOptions


def _small_trace(width: int):
    """A distinct trace per width (a distinct content id)."""
    return trace_model(nn.Sequential(nn.Linear(width, width), nn.ReLU()), torch.rand(1, width))


def test_a_cache_is_bounded_and_computes_a_miss_once_for_concurrent_callers() -> None:
    cache: Cache[int, int] = Cache(3)
    for k in range(5):
        assert cache.get(k, lambda k=k: k * 10) == k * 10
    assert len(cache) == 3 and 0 not in cache and 4 in cache
    assert cache.get(2, lambda: -1) == 20  # a hit: nothing made
    made: list[int] = []

    def slow() -> int:
        made.append(1)
        time.sleep(0.2)
        return 7

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("view", slow))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == [7] * 8 and made == [1]  # eight users, one layout

    def failing() -> int:
        raise RuntimeError("dot failed")

    with pytest.raises(RuntimeError):
        cache.get("bad", failing)
    assert "bad" not in cache  # failures are not cached: the next click tries again


def test_the_pipeline_caches_live_in_the_traces_entry(
    dot_binary: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the constructor waits for its first view (not only 0.6 s, which a loaded machine can miss: then the page
    # would ask for it later), so that the caches it fills can be looked at
    monkeypatch.setattr(firstview, "WAIT_S", 120.0)
    trace = _small_trace(5)
    data = PageState.from_store(_find(ModelGraph(trace, id="entry"), "store").data)
    tid = data.trace
    entry = registry.entry(tid)
    spec = data.spec
    assert spec in entry.views and (spec, "TB") in entry.layouts
    assert (spec, data.draw) in entry.figures
    assert state.layout_of(tid, spec, "TB") is entry.layouts.peek((spec, "TB"))  # the same object: a hit
    call_io(tid, "mod:0")
    assert "inside" in entry.facts  # the details panel's per-trace table
    registry.clear_caches()
    assert len(entry.views) == len(entry.figures) == 0 and registry.get(tid) is trace


def test_the_registry_keeps_the_most_recent_traces_and_frees_their_caches(
    monkeypatch: pytest.MonkeyPatch, dot_binary: str
) -> None:
    monkeypatch.setenv(registry.MAX_TRACES_ENV, "2")
    kept = registry.register(demo_trace("mlp"), keep=True)  # a server's own trace: never evicted
    t6, t7, t8, t9 = (_small_trace(w) for w in (6, 7, 8, 9))
    id6, id7 = registry.register(t6), registry.register(t7)
    state.drawn_figure(id6, state.initial_spec(id6), DrawOptions())
    freed = weakref.ref(registry.entry(id6))  # a use: t6 is now more recent than t7
    id8 = registry.register(t8)  # over the cap: the least recently used goes
    with pytest.raises(registry.UnknownTrace, match="show the trace again"):
        registry.get(id7)
    assert registry.get(id6) is t6 and registry.get(id8) is t8
    registry.register(t9)
    with pytest.raises(registry.UnknownTrace):
        registry.get(id6)
    gc.collect()
    assert freed() is None  # its views, layouts and figures went with it
    assert registry.get(kept).graph.model_name
    monkeypatch.setenv(registry.MAX_TRACES_ENV, "none")
    with pytest.raises(ValueError, match="TVD_MAX_TRACES='none' is not a positive whole number"):
        registry.register(t6)


def test_a_cache_with_a_byte_bound_drops_the_oldest_values_past_it() -> None:
    cache: Cache[str, bytes] = Cache(10, max_bytes=100, weigh=len)
    for k in "abc":
        cache.get(k, lambda: b"x" * 40)
    assert "a" not in cache and "b" in cache and "c" in cache and cache.nbytes == 80
    cache.get("big", lambda: b"x" * 500)  # the newest stays, whatever it weighs
    assert len(cache) == 1 and "big" in cache and cache.nbytes == 500
    cache.clear()
    assert cache.nbytes == 0
    with pytest.raises(ValueError, match="needs both"):
        Cache(3, max_bytes=10)


def test_a_traces_figures_and_layouts_are_bounded_by_memory_not_only_by_count(
    monkeypatch: pytest.MonkeyPatch, dot_binary: str
) -> None:
    # a user exploring a big model clicks through many views: each one's figure and layout are cached, and
    # past the entry's byte bound the least recently drawn go (here a bound below one figure: only the last)
    monkeypatch.setattr(registry, "FIGURE_BYTES", 1)
    monkeypatch.setattr(registry, "LAYOUT_BYTES", 1)
    block = nn.Sequential(nn.Linear(13, 13), nn.ReLU())
    trace = trace_model(nn.Sequential(block, nn.Sequential(nn.Linear(13, 13), nn.Tanh())), torch.rand(1, 13))
    tid = registry.register(trace)
    entry = registry.entry(tid)
    specs = [trace.view(depth=d).spec for d in (0, 1, None)]
    drawn = [state.drawn_figure(tid, s, DrawOptions()) for s in specs]
    assert all(d.nbytes > 1000 for d in drawn)  # a figure weighs its picture and its dicts
    assert [(s, DrawOptions()) in entry.figures for s in specs] == [False, False, True]
    assert entry.figures.nbytes == drawn[-1].nbytes
    assert len(entry.layouts) == 1 and (specs[-1], "TB") in entry.layouts
    assert entry.layouts.nbytes == registry.layout_bytes(state.layout_of(tid, specs[-1], "TB"))
