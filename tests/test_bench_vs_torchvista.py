"""The torchvista side of bench/bench_vs_torchvista.py on a tiny model, in real Chromium: its export with
every module open loads, the bench's readiness check sees it drawn, its ops inside built-in modules are drawn
(as ours draws them), and the bench's clicks on ⊖ and ⊕ close and reopen a block."""

from __future__ import annotations

from pathlib import Path

import torch

from bench.bench_vs_torchvista import TV_COUNTS, TV_NAMES, _first, _load_tv, _tv_click, export_torchvista


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + x


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return x


def _op_names(page: object) -> list[str]:
    return page.evaluate("""() => { const uid = document.querySelector('[id^="graph_"]').id.slice(6);
      return Array.from(document.querySelectorAll('.node_' + uid)).map(g => { const d = g.__data__;
        return String(Array.isArray(d) ? d[0] : d); }); }""")  # type: ignore[attr-defined]


def test_every_op_export_draws_and_a_block_closes_and_reopens(browser: object, tmp_path: Path) -> None:
    html = export_torchvista(Tiny().eval(), torch.ones(1, 4), tmp_path / "tiny.html")
    ctx, page, drawn_ms = _load_tv(browser, html)
    try:
        assert drawn_ms > 0
        nodes, _, clusters, svg = page.evaluate(TV_COUNTS)
        ops = _op_names(page)
        # nn.Linear traced into: its linear op is drawn, inside an open Linear cluster, in both blocks
        assert sum(n.startswith("linear_") for n in ops) == 2, ops
        assert {n.rsplit("_", 1)[0] for n in page.evaluate(TV_NAMES)} >= {"Block", "Linear"}
        assert clusters >= 4 and nodes == len(ops) and svg > nodes
        block = _first(page.evaluate(TV_NAMES), "Block")
        _tv_click(page, block, "collapse")
        assert sum(n.startswith("linear_") for n in _op_names(page)) == 1
        assert block in _op_names(page)  # drawn as one collapsed box
        _tv_click(page, block, "expand")
        assert sum(n.startswith("linear_") for n in _op_names(page)) == 2
    finally:
        ctx.close()
