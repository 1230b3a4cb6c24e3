"""Which labels the picture draws and where (render/labels.py), on views of real models laid out by the real
``dot``: zoomed out, no overview label covers a box, a cluster that is not its own, or another label; a closed
module's name stays inside its box; edge labels never cover a box, a header or each other."""

from __future__ import annotations

from typing import Any

import pytest
from support_models import build_clip, build_gpt2, build_whisper

from torchvista_dash import trace_model
from torchvista_dash.demos import demo_trace
from torchvista_dash.layout.types import EdgePath
from torchvista_dash.render.labels import Boxes, edge_labels, header_rect, header_text, place_overview
from torchvista_dash.render.svg import picture
from torchvista_dash.render.viewport import NOMINAL_PLOT_PX, PAD


def _traced(build: Any) -> Any:
    m, args, kwargs = build()
    return trace_model(m, args, kwargs)


VIEWS = {
    "whisper": lambda: (_traced(build_whisper), {}),
    "clip": lambda: (_traced(build_clip), {}),
    "gpt2 every op": lambda: (_traced(build_gpt2), {"depth": None, "fold_repeats": False}),
    "gpt demo every op": lambda: (demo_trace("gpt"), {"depth": None, "fold_repeats": False}),
    "transformer demo": lambda: (demo_trace("transformer"), {"depth": 2}),
}


@pytest.fixture(scope="module", params=list(VIEWS))
def laid_out(request: Any, dot_binary: Any) -> Any:
    t, opts = VIEWS[request.param]()
    vg = t.view(**opts)
    return vg, t.layout(vg)


def _meets(a: tuple[float, ...], b: tuple[float, ...], tol: float = 0.01) -> bool:
    return a[0] < b[2] - tol and b[0] < a[2] - tol and a[1] < b[3] - tol and b[1] < a[3] - tol


def _inside(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return b[0] <= a[0] and b[1] <= a[1] and a[2] <= b[2] and a[3] <= b[3]


def test_overview_labels_cover_no_box_no_foreign_cluster_and_no_other_label(laid_out: Any) -> None:
    vg, lay = laid_out
    ext = picture.canvas_extent(lay, PAD, NOMINAL_PLOT_PX[0] / NOMINAL_PLOT_PX[1])
    placed, ranges = place_overview(vg, lay, ext)
    assert placed and ranges
    closed = [lay.nodes[n.id] for n in vg.nodes if n.kind in ("module", "folded")]
    for k, _, _ in ranges:
        band = [p for p in placed if p.band == k]
        for i, p in enumerate(band):
            assert _inside(p.rect, ext), p
            own = [b for b in closed if _inside(p.rect, b)]
            if own:  # a closed module's name, inside its own box
                continue
            # ... or spilling over its box (too small for it) onto no other box
            on = [b for b in lay.nodes.values() if _meets(p.rect, b)]
            assert not on or (len(on) == 1 and on[0] in closed), p
            # a cluster it crosses holds it whole (its own, an ancestor) or it is the cluster's name set above
            # or beside it, clear of every other
            crossed = [c for c in lay.clusters.values() if _meets(p.rect, c) and not _inside(p.rect, c)]
            assert not crossed, (p, crossed)
            assert not [q for q in band[i + 1 :] if _meets(p.rect, q.rect)], p


def test_the_overview_names_the_model_at_every_band_down_to_the_whole_picture(laid_out: Any) -> None:
    """Whatever the zoom below the box text, the picture names something: every band has a label."""
    vg, lay = laid_out
    ext = picture.canvas_extent(lay, PAD, NOMINAL_PLOT_PX[0] / NOMINAL_PLOT_PX[1])
    placed, ranges = place_overview(vg, lay, ext)
    empty = [k for k, _, _ in ranges if not any(p.band == k for p in placed)]
    # the last bands may be too far out for any name (the picture a few hundred pixels across)
    assert len(empty) <= 2 and all(k >= len(ranges) - 2 for k in empty), (empty, len(ranges))


def test_edge_labels_drawn_cover_no_box_no_header_and_no_other(laid_out: Any) -> None:
    vg, lay = laid_out
    heads = [header_rect(header_text(c.label, lay.clusters[c.id]), lay.clusters[c.id]) for c in vg.clusters]
    kept = edge_labels(lay.edges, Boxes(150.0, lay.nodes.values()), heads)
    assert kept or not any(e.label for e in lay.edges)
    rects = [r for r, _ in kept]
    for i, r in enumerate(rects):
        assert not [b for b in lay.nodes.values() if _meets(r, b)]
        assert not [h for h in heads if _meets(r, h)]
        assert not [q for q in rects[i + 1 :] if _meets(r, q)]


def test_an_edge_label_over_another_a_box_or_a_header_is_left_out() -> None:
    def edge(x: float, y: float, label: str = "1×2×4×16") -> EdgePath:
        return EdgePath(src="a", dst="b", points=((x, y + 20), (x, y - 20)), label=label, label_pos=(x, y))

    box = (100.0, 0.0, 200.0, 30.0)
    header = (300.0, 0.0, 400.0, 12.0)
    edges = [edge(0, 100), edge(10, 103), edge(0, 130), edge(150, 15), edge(320, 5), edge(500, 5, "")]
    kept = [ed for _, ed in edge_labels(edges, Boxes(150.0, [box]), [header])]
    # the second sits on the first (parallel edges, as Whisper's cache edges); the fourth on a box, the fifth
    # on a header; the last has no label
    assert kept == [edges[0], edges[2]]


def test_a_fitted_tall_view_names_its_folded_runs_and_its_cache(dot_binary: Any) -> None:
    """A 32-layer Llama with two layers' modules open is some 3,700 points tall: fitted to the plot, its boxes
    are a few pixels high, too small to hold a name at the overview size, and the folded runs of layers and
    the cache output go unnamed unless their names may spill over their boxes (onto nothing else), smaller."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    cfg = transformers.LlamaConfig(
        num_hidden_layers=32,
        hidden_size=32,
        intermediate_size=64,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=100,
    )
    torch.manual_seed(0)
    t = trace_model(transformers.LlamaModel(cfg).eval(), torch.zeros(1, 6, dtype=torch.long))
    opened = ["layers.5.self_attn", "layers.5.mlp", "layers.5.self_attn.q_proj", "layers.20.self_attn"]
    vg = t.view(depth=1, expanded=opened)
    lay = t.layout(vg)
    ext = picture.canvas_extent(lay, PAD, NOMINAL_PLOT_PX[0] / NOMINAL_PLOT_PX[1])
    placed, ranges = place_overview(vg, lay, ext)
    fit = min(NOMINAL_PLOT_PX[0] / (ext[2] - ext[0]), NOMINAL_PLOT_PX[1] / (ext[3] - ext[1]))
    band = next(k for k, lo, hi in ranges if lo <= fit < hi)
    shown = [p for p in placed if p.band == band]
    folded = [n for n in vg.nodes if n.kind == "folded"]
    boxes = {n.label: lay.nodes[n.id] for n in vg.nodes if n.kind == "folded" or n.id == "io:output:cache"}
    assert len(folded) == 3 and len(boxes) == 4
    named = {label for label, b in boxes.items() if any(_meets(p.rect, b) for p in shown)}
    assert {"LlamaDecoderLayer ×14", "LlamaDecoderLayer ×11"} <= named, named
    assert any(label.startswith("cache") for label in named), named
    assert all(p.small for p in shown if any(_meets(p.rect, b) for b in boxes.values()) and "×" in p.text)
