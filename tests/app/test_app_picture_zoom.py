"""A big-ish view at every zoom, as a user reads it (real Chromium, real server, real wheel and mouse): a
10-layer decoder with every op open (about 330 boxes). Wheel notches in make the labels larger; at every zoom
out to the whole graph some text is drawn at a readable size (op names, then module names, then map-style
overview labels), none over another and no overview label over a box; a click at a box's corner selects that
box."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch
from support_app import css_id, displayed_ranges, graph_dom_id, start, wait_drawn, wait_settled
from support_picture import drawn_labels, in_plot, label_faults, target_boxes
from torch import nn

from torchvista_dash import trace_model
from torchvista_dash.app.server.server import make_app

pytestmark = pytest.mark.browser
M = "main"
READABLE_PX = 6.9  # the smallest text the picture draws (render/svg/picture.py LOD_SCALE)


class Attention(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (
            p(x).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v)
        )
        w = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return self.o((w @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.up, self.down = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class Decoder(nn.Module):
    def __init__(self, n: int = 10, dim: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, dim)
        self.layers = nn.ModuleList(Block(dim) for _ in range(n))
        self.head = nn.Linear(dim, 50)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


@pytest.fixture(scope="module")
def decoder() -> Any:
    torch.manual_seed(0)
    t = trace_model(Decoder(), torch.zeros(1, 6, dtype=torch.long))
    srv = start(make_app([t], depth=None, fold_repeats=False))
    try:
        yield srv.url
    finally:
        srv.stop()


def _shown(page: Any) -> list[dict[str, Any]]:
    got = drawn_labels(page, graph_dom_id(M))
    return [lb for lb in got["labels"] if in_plot(lb, got["plot"])]


def _wheel(page: Any, notches: int) -> None:
    """``notches`` wheel steps at the plot's centre (negative: in), as a mouse wheel sends them."""
    plot = page.locator(css_id(M, "graph") + " .nsewdrag").first.bounding_box()
    page.mouse.move(plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] / 2)
    for _ in range(abs(notches)):
        page.mouse.wheel(0, 100 if notches > 0 else -100)
        page.wait_for_timeout(20)
    wait_settled(page, M, quiet_s=0.4)


def test_wheel_in_grows_labels_and_every_zoom_out_to_the_whole_graph_shows_readable_text(
    page: Any, decoder: str
) -> None:
    page.goto(decoder)
    wait_drawn(page, M)
    wait_settled(page, M)
    first = {lb["text"]: lb["y1"] - lb["y0"] for lb in _shown(page) if " o " in f" {lb['cls']} "}
    assert len(first) >= 3 and min(first.values()) >= READABLE_PX, first
    _wheel(page, -4)  # four notches in: the same op names, larger
    grown = [
        (lb["y1"] - lb["y0"]) / first[lb["text"]]
        for lb in _shown(page)
        if lb["text"] in first and " o " in f" {lb['cls']} "
    ]
    assert grown and min(grown) >= 1.3, grown
    _wheel(page, 4)
    whole = page.evaluate(
        "(d) => document.getElementById(d).querySelector('.js-plotly-plot')"
        ".layout.meta.torchvista_dash.bounds",
        graph_dom_id(M),
    )
    kinds = {lb["cls"].split()[0] for lb in _shown(page)}
    for _ in range(15):  # out, notch by notch, to beyond the whole graph
        _wheel(page, 3)
        shown = _shown(page)
        assert shown, f"nothing readable at {displayed_ranges(page, M)}"
        small = [
            lb for lb in shown if lb["y1"] - lb["y0"] < READABLE_PX and not lb["cls"].startswith(("s", "el"))
        ]
        assert not small, small[:5]
        assert label_faults(page, graph_dom_id(M)) == []  # none over another, no overview name over a box
        kinds |= {lb["cls"].split()[0] for lb in shown}
        (x0, x1), (y0, y1) = displayed_ranges(page, M)
        if y0 <= whole[1] and whole[3] <= y1 and x0 <= whole[0] and whole[2] <= x1:
            break
    else:
        raise AssertionError(f"45 notches out never showed the whole graph {whole}")
    assert "ov" in kinds and "t" in kinds, kinds  # op and module names, then overview labels took over
    over = [lb["text"] for lb in _shown(page) if lb["cls"].startswith("ov")]
    assert any(t.startswith("layers.") for t in over), over


def test_a_click_at_a_box_corner_selects_it(page: Any, decoder: str) -> None:
    page.goto(decoder)
    wait_drawn(page, M)
    wait_settled(page, M)
    plot = drawn_labels(page, graph_dom_id(M))["plot"]
    boxes = [
        b
        for b in target_boxes(page, graph_dom_id(M), "nodes:labels")
        if in_plot(b, plot) and b["id"].startswith("n:")
    ]
    assert len(boxes) >= 3
    for b, (fx, fy) in zip(boxes[:3], [(0.15, 0.15), (0.85, 0.85), (0.85, 0.15)], strict=True):
        x, y = b["x0"] + fx * (b["x1"] - b["x0"]), b["y0"] + fy * (b["y1"] - b["y0"])
        page.mouse.move(x - 2, y)
        page.mouse.move(x, y)
        page.wait_for_function(
            "(a) => (document.getElementById(a[0]).querySelector('.js-plotly-plot')"
            "._hoverdata || []).some(p => p.customdata === a[1])",
            arg=[graph_dom_id(M), b["id"]],
            timeout=10_000,
        )
        page.mouse.click(x, y)
        page.wait_for_function(
            "(a) => { const d = document.getElementById(a[0]); return d && d.innerText.includes(a[1]); }",
            arg=[graph_dom_id(M, "details"), b["id"]],
            timeout=10_000,
        )
        time.sleep(0.6)  # never a double click
