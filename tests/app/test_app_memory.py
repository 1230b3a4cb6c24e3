"""Evicting a trace frees all of it: its views, layouts and figures live in its registry entry only (no second
cache of whole-view layouts elsewhere in the process), so memory measured with tracemalloc returns."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

from support_graphs import stack_graph

from torchvista_dash import layout
from torchvista_dash.app.traces import pictures, registry, state
from torchvista_dash.model.options import DrawOptions
from torchvista_dash.traced import Trace
from torchvista_dash.view import build as view_mod


def _explore(tid: str, depths: tuple[int, ...]) -> None:
    """Lay out and draw a few views of the trace, as a user clicking around does."""
    graph = registry.get(tid).graph
    for depth in depths:
        spec = state.drawn_spec(tid, view_mod.make_spec(graph, depth=depth, fold_repeats=False))
        state.drawn_figure(tid, spec, DrawOptions())


def _measure() -> None:
    # warm the process-wide parts first (pieces, interned strings, imports), then measure only the traces
    warm = Trace(stack_graph(40, d=16 + 99))
    _explore(registry.register(warm), (1, 2))
    del warm
    gc.collect()
    tracemalloc.start()
    try:
        gc.collect()
        base, _ = tracemalloc.get_traced_memory()
        held = []
        for n in range(6):
            trace = Trace(stack_graph(40, d=16 + n))  # distinct content: a distinct trace id
            tid = registry.register(trace)
            _explore(tid, (1, 2))
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0] - base)
            del trace
        # a trace explored this way holds MBs: 2 of them at most stay registered
        one = held[0]
        assert one > 500_000, f"a trace's views should weigh something ({one:,} bytes)"
        assert len(registry._entries) <= 2  # the two newest of the evictable ones
        assert held[-1] < 3.5 * one, f"memory grows with every trace registered: {held}"
        for _ in range(3):  # three more traces push the explored ones out
            registry.register(Trace(stack_graph(2, d=200 + _)))
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] - base
        # what stays is in the two process-wide caches, each with its own bound: layout pieces (shared by
        # every trace) and served pictures; emptied, nothing of the evicted traces is left anywhere
        assert pictures.store.nbytes <= pictures.MAX_BYTES
        layout.clear_piece_cache()
        pictures.store.clear()
        gc.collect()
        rest = tracemalloc.get_traced_memory()[0] - base
        assert rest < 0.15 * one, f"evicted traces did not give their memory back: {rest:,} of {held}"
        assert rest < after
    finally:
        tracemalloc.stop()


def test_evicted_traces_give_their_memory_back(dot_binary: str) -> None:
    """Measured in a process of its own, as a server's is: other tests' traces, threads and caches in this
    process would otherwise be counted as the measured traces' memory."""
    here = Path(__file__).resolve().parent
    env = {
        **os.environ,
        registry.MAX_TRACES_ENV: "2",
        "PYTHONPATH": os.pathsep.join(str(p) for p in (here.parents[1], here.parent, here)),
    }
    run = subprocess.run(
        [sys.executable, "-c", "import test_app_memory as m; m._measure()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
