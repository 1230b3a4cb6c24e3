"""Other sources in the real app, in headless Chromium: an FX graph without shapes says so in the notes line,
and an exported program with a dynamic batch draws its symbol on the page; a click opens a module as in a
live trace."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from support_app import click_id, css_id, figure_picture, start, wait_drawn, wait_ids
from torch import nn
from torch.export import Dim

from torchvista_dash import from_exported, from_fx
from torchvista_dash.app.server.server import make_app
from torchvista_dash.demos import build_demo
from torchvista_dash.frontends.fx.module import NO_SHAPES_NOTE

pytestmark = pytest.mark.browser
M = "main"


def test_an_fx_graph_without_shapes_says_so_in_the_notes_line(page: Any) -> None:
    model, _ = build_demo("resnet")
    srv = start(make_app([from_fx(torch.fx.symbolic_trace(model))]))
    try:
        page.goto(srv.url)
        wait_drawn(page, M)
        notes = page.locator(css_id(M, "notes"))
        assert NO_SHAPES_NOTE in notes.inner_text()
        click_id(page, M, "mod:stem")  # opens like a live trace's module
        wait_ids(page, M, "clusters:headers", present=("mod:stem",))
        assert NO_SHAPES_NOTE in notes.inner_text()  # every view keeps it
    finally:
        srv.stop()


class _Two(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_an_exported_program_with_a_dynamic_batch_draws_its_symbol(page: Any) -> None:
    ep = torch.export.export(_Two().eval(), (torch.randn(4, 8),), dynamic_shapes={"x": {0: Dim("batch")}})
    t = from_exported(ep)
    sym = next(n for n in t.graph.nodes if n.kind == "input").outputs[0].dims
    assert sym is not None
    srv = start(make_app([t]))
    try:
        page.goto(srv.url)
        wait_drawn(page, M)
        assert f"{sym[0]}×8" in figure_picture(page, M)  # on the edges and under the boxes
    finally:
        srv.stop()
