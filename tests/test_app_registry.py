"""One bounded cache entry per trace: the registry's LRU cap, what an entry holds, and misses computed once."""

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
from torchvista_dash.app import ModelGraph, firstview, registry, state
from torchvista_dash.app.cache import Cache
from torchvista_dash.app.details import call_io
from torchvista_dash.demos import demo_trace
from torchvista_dash.options import DrawOptions


def _small_trace(width: int):
    """A distinct trace per width (a distinct content id)."""
    return trace_model(nn.Sequential(nn.Linear(width, width), nn.ReLU()), torch.rand(1, width))


def test_a_cache_is_bounded_and_computes_a_miss_once_for_concurrent_callers() -> None:
    cache: Cache[int, int] = Cache(3)
    for k in range(5):
        assert cache.get(k, lambda k=k: k * 10) == k * 10
    assert len(cache) == 3 and 0 not in cache and 4 in cache
    assert cache.get(2, lambda: -1) == 20            # a hit: nothing made
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
    assert results == [7] * 8 and made == [1]        # eight users, one layout

    def failing() -> int:
        raise RuntimeError("dot failed")

    with pytest.raises(RuntimeError):
        cache.get("bad", failing)
    assert "bad" not in cache                        # failures are not cached: the next click tries again


def test_the_pipeline_caches_live_in_the_traces_entry(dot_binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the constructor waits for its first view (not only 0.6 s, which a loaded machine can miss: then the page
    # would ask for it later), so that the caches it fills can be looked at
    monkeypatch.setattr(firstview, "WAIT_S", 120.0)
    trace = _small_trace(5)
    data = _find(ModelGraph(trace, id="entry"), "store").data
    tid = data["trace"]
    entry = registry.entry(tid)
    spec = state.spec_from_store(data)
    assert spec in entry.views and (spec, "TB") in entry.layouts
    assert (spec, state.draw_from_store(data)) in entry.figures
    assert state.layout_of(tid, spec, "TB") is entry.layouts.peek((spec, "TB"))   # the same object: a hit
    call_io(tid, "mod:0")
    assert "inside" in entry.facts                   # the details panel's per-trace table
    registry.clear_caches()
    assert len(entry.views) == len(entry.figures) == 0 and registry.get(tid) is trace


def test_the_registry_keeps_the_most_recent_traces_and_frees_their_caches(monkeypatch: pytest.MonkeyPatch,
                                                                           dot_binary: str) -> None:
    monkeypatch.setenv(registry.MAX_TRACES_ENV, "2")
    kept = registry.register(demo_trace("mlp"), keep=True)     # a server's own trace: never evicted
    t6, t7, t8, t9 = (_small_trace(w) for w in (6, 7, 8, 9))
    id6, id7 = registry.register(t6), registry.register(t7)
    state.drawn_figure(id6, state.initial_spec(id6), DrawOptions())
    freed = weakref.ref(registry.entry(id6))                  # a use: t6 is now more recent than t7
    id8 = registry.register(t8)                               # over the cap: the least recently used goes
    with pytest.raises(registry.UnknownTrace, match="show the trace again"):
        registry.get(id7)
    assert registry.get(id6) is t6 and registry.get(id8) is t8
    registry.register(t9)
    with pytest.raises(registry.UnknownTrace):
        registry.get(id6)
    gc.collect()
    assert freed() is None                                    # its views, layouts and figures went with it
    assert registry.get(kept).graph.model_name
    monkeypatch.setenv(registry.MAX_TRACES_ENV, "none")
    with pytest.raises(ValueError, match="TVD_MAX_TRACES='none' is not a positive whole number"):
        registry.register(t6)
