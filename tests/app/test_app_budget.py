"""Over the node budget the view collapses deeper calls; the app must then act on what it drew."""

from __future__ import annotations

import pytest
from test_app_state import _find

from torchvista_dash.app import ModelGraph
from torchvista_dash.app.actions import viewstep
from torchvista_dash.app.traces import registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.demos import demo_trace
from torchvista_dash.view import build as view


@pytest.fixture()
def small_budget(monkeypatch):
    monkeypatch.setattr(state, "NODE_BUDGET", 40)
    registry.clear_caches()
    yield
    registry.clear_caches()


def test_store_holds_the_drawn_spec_and_a_click_opens_a_budget_closed_module(small_budget, dot_binary):
    trace = demo_trace("gpt")
    data = PageState.from_store(
        _find(ModelGraph(trace, id="budget", depth=None, fold_repeats=False), "store").data
    )
    tid = data.trace
    drawn = data.spec
    requested = view.make_spec(trace.graph, depth=None, fold_repeats=False)
    over = state.visible(tid, requested)
    assert over.notes, "the every-op view of the GPT demo should pass a 40-box budget"
    assert over.spec == drawn != requested  # the page holds what it drew, not what was asked
    vg = state.visible(tid, drawn)
    closed = sorted(n.id for n in vg.nodes if n.kind == "module" and n.id in requested.expanded)
    assert closed, "the budget closed no module the request had open"
    nv = viewstep.step("graph", closed[0], data, None)
    assert nv is not None and closed[0] in nv.spec.expanded  # the click opens it (it used to close it again)
