"""color_by: boxes coloured by cost with a colour bar, the value and share in hover; static export; diff
paint."""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from support_models import ReuseNet

from torchvista_dash import compare, trace_model
from torchvista_dash.demos import demo_trace
from torchvista_dash.render.colorby import STEPS, step_colours


def _svg(fig: Any) -> str:
    return base64.b64decode(fig.layout.images[0].source.split(",", 1)[1]).decode("utf-8")


def _styles(fig: Any) -> list[str]:
    """Inline styles of the picture's painted boxes."""
    return re.findall(r'style="(fill:[^"]*)"', _svg(fig))


def _trace(name: str, fig: Any) -> Any:
    return next(t for t in fig.data if t.name == name)


def _hover_of(fig: Any, vid: str) -> str:
    labels = _trace("nodes:labels", fig)
    return labels.hovertext[list(labels.customdata).index(vid)]


def test_flops_colour_the_boxes_with_a_colour_bar_and_shares_in_hover() -> None:
    t = demo_trace("gpt")
    fig = t.figure(color_by="flops")
    names = [tr.name for tr in fig.data]
    assert "colorbar" in names and _trace("colorbar", fig).marker.showscale
    styles = _styles(fig)
    assert styles, names
    assert any(f"fill:{c};" in st for st in styles for c in step_colours())
    # the heaviest box at depth 1 (the folded decoder blocks) gets the top step, its hover the share
    rows = {r["qualname"]: r for r in t.stats()}
    total = rows[""]["flops"]
    blocks = sum(r["flops"] for q, r in rows.items() if re.fullmatch(r"blocks\.\d+", q))
    hover = _hover_of(fig, "fold:mod:blocks.0")
    assert f"({100 * blocks / total:.1f} % of the model)" in hover
    top = [st for st in styles if st.startswith(f"fill:{step_colours()[STEPS - 1]};")]
    assert len(top) == 1  # one box (the folded blocks) carries the top step
    # the colour bar's ticks are powers of ten, in human units
    bar = _trace("colorbar", fig).marker
    assert bar.cmax == pytest.approx(math.log10(max(blocks, rows["lm_head"]["flops"])))
    assert all("FLOP" in txt for txt in bar.colorbar.ticktext)
    assert any("coloured by FLOPs" in a.text for a in fig.layout.annotations)


def test_params_and_bytes_colour_too_and_time_needs_a_timed_trace() -> None:
    t = trace_model(ReuseNet().eval(), torch.randn(3, 8))
    for metric, word in (("params", "parameters"), ("bytes", "output bytes")):
        fig = t.figure(color_by=metric, depth=None)
        assert any(word in h for h in _trace("nodes:labels", fig).hovertext)
    with pytest.raises(ValueError, match=r"timing=True"):
        t.figure(color_by="time")
    timed = trace_model(ReuseNet().eval(), torch.randn(3, 8), timing=True)
    fig = timed.figure(color_by="time", depth=None)
    assert any(" ms (" in h for h in _trace("nodes:labels", fig).hovertext)
    with pytest.raises(ValueError, match="color_by must be one of flops, params, bytes, time"):
        t.figure(color_by="watts")


def test_export_svg_and_html_carry_the_colours(tmp_path: Path) -> None:
    t = demo_trace("gpt")
    svg = t.export(tmp_path / "g.svg", color_by="flops").read_text()
    hexes = {"#" + "".join(f"{int(v):02x}" for v in c[4:-1].split(",")) for c in step_colours()}
    assert any(h in svg for h in hexes)
    html = t.export(tmp_path / "g.html", color_by="flops").read_text()
    assert '"colorbar"' in html


def _svg_texts(svg: str) -> list[str]:
    import html as html_lib

    return [html_lib.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def _png_width(data: bytes) -> int:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big")


def _pdf_width(data: bytes) -> float:
    m = re.search(rb"/MediaBox\s*\[\s*[\d.]+\s+[\d.]+\s+([\d.]+)", data)
    assert m is not None
    return float(m.group(1))


def test_static_exports_carry_a_key_of_the_colour_scale(tmp_path: Path) -> None:
    """The SVG/PNG/PDF have no plotly colour bar: they draw a key right of the picture, the title, one swatch
    per step (all of them, not only the colours some box got) with the value it stands for, largest on top."""
    from torchvista_dash.model.costs import human

    t = demo_trace("gpt")
    rows = {r["qualname"]: r for r in t.stats()}
    biggest = sum(r["flops"] for q, r in rows.items() if re.fullmatch(r"blocks\.\d+", q))  # the folded run
    smallest = rows["lm_head"]["flops"]  # the lightest box drawn at depth 1 that costs anything
    svg = t.export(tmp_path / "g.svg", color_by="flops").read_text(encoding="utf-8")
    texts = _svg_texts(svg)
    key = texts[texts.index("coloured by FLOPs") + 1 :]
    assert (
        key[0] == human(biggest, "flops") and key[STEPS - 1] == human(smallest, "flops") and key[STEPS] == "0"
    )
    assert len(key) > STEPS and all(k.endswith("FLOP") for k in key[:STEPS])
    hexes = ["#" + "".join(f"{int(v):02x}" for v in c[4:-1].split(",")) for c in step_colours()]
    assert all(f'fill="{h}"' in svg for h in hexes)  # every step's swatch, boxes use only a few
    plain = t.export(tmp_path / "plain.svg").read_text(encoding="utf-8")
    assert "coloured by" not in plain and sum(f'fill="{h}"' in plain for h in hexes) == 0
    # PNG and PDF: the same drawing, wider by the key
    assert (
        _png_width(t.export(tmp_path / "g.png", color_by="flops").read_bytes())
        > _png_width(t.export(tmp_path / "plain.png").read_bytes()) + 100
    )
    assert (
        _pdf_width(t.export(tmp_path / "g.pdf", color_by="flops").read_bytes())
        > _pdf_width(t.export(tmp_path / "plain.pdf").read_bytes()) + 60
    )
    # HTML is the interactive figure: its colour bar with the values in units
    page = t.export(tmp_path / "g.html", color_by="params").read_text(encoding="utf-8")
    assert '"colorbar"' in page and "params" in page


def test_static_diff_export_has_a_key_of_its_colours(tmp_path: Path) -> None:
    from support_models import build_gpt2

    m2, a2, k2 = build_gpt2(n_layer=2)
    m3, a3, k3 = build_gpt2(n_layer=3)
    d = compare(trace_model(m2, a2, kwargs=k2), trace_model(m3, a3, kwargs=k3))
    texts = _svg_texts(d.export(tmp_path / "d.svg").read_text(encoding="utf-8"))
    i = texts.index(f"diff: +{len(d.summary()['added'])} added · −0 removed · 0 changed")  # h.2 and inside
    assert texts[i + 1 : i + 4] == ["added", "removed", "changed"]


def test_diff_figure_marks_added_and_compares_folded_runs_by_count() -> None:
    from support_models import build_gpt2

    m2, a2, k2 = build_gpt2(n_layer=2)
    m3, a3, k3 = build_gpt2(n_layer=3)
    d = compare(trace_model(m2, a2, kwargs=k2), trace_model(m3, a3, kwargs=k3))
    folded = d.figure()
    labels = _trace("nodes:labels", folded)
    i = list(labels.customdata).index("fold:mod:h.0")
    assert "×2 → ×3: +1" in labels.hovertext[i] and "×2 → ×3: +1" in _svg(folded)
    assert any("stroke:#e8590c" in st for st in _styles(folded))
    # unfolded, the new block is drawn added, the old ones untouched; hover gives both sides
    flat = d.figure(fold_repeats=False)
    added = [st for st in _styles(flat) if "stroke:#2f9e44" in st]
    assert len(added) == 1
    hover = _hover_of(flat, "mod:h.2")
    assert "added in the second trace" in hover and "absent →" in hover
    assert "unchanged" in _hover_of(flat, "mod:h.1")


def test_colouring_by_bytes_draws_edges_as_wide_as_their_tensors(tmp_path: Path) -> None:
    from torchvista_dash.render.colorby import EDGE_WIDTHS, edge_widths

    t = demo_trace("gpt")
    vg = t.view(depth=None)
    widths = edge_widths(vg)
    by_bytes = sorted((e.nbytes, widths[(e.src, e.dst)]) for e in vg.edges if e.nbytes)
    assert by_bytes[0][1] == EDGE_WIDTHS[0] and by_bytes[-1][1] == EDGE_WIDTHS[1]
    assert all(
        w1 <= w2 for (_, w1), (_, w2) in zip(by_bytes, by_bytes[1:], strict=False)
    )  # more bytes, wider
    svg = t.export(tmp_path / "bytes.svg", color_by="bytes", depth=None).read_text()
    drawn = {float(w) for w in re.findall(r'class="edge">.*?stroke-width="([0-9.]+)"', svg, flags=re.S)}
    assert set(EDGE_WIDTHS) < drawn  # the lightest, the heaviest and some between
    plain = t.export(tmp_path / "plain.svg", depth=None).read_text()
    assert not {
        float(w) for w in re.findall(r'class="edge">.*?stroke-width="([0-9.]+)"', plain, flags=re.S)
    } - {1.2}
    # the interactive figure's picture too (each such edge its own path: one layer's edges are joined per
    # tile)
    picture = _svg(t.figure(color_by="bytes", depth=None))
    own = {float(w) for w in re.findall(r'class="e" style="stroke-width:([0-9.]+)px"', picture)}
    assert own == {w for w in widths.values()} and set(EDGE_WIDTHS) < own
    assert 'class="e" style="stroke-width' not in _svg(t.figure(color_by="flops", depth=None))  # bytes only


def test_every_metric_colours_a_decoder_with_its_cache_grouped_in_one_output_box() -> None:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=16)).eval()
    t = trace_model(model, torch.randint(0, 64, (1, 6)), {"use_cache": True})
    assert any(vn.id.startswith("io:output:") for vn in t.view().nodes)  # the KV cache: one grouped box
    for metric in ("params", "flops", "bytes"):
        fig = t.figure(color_by=metric)
        assert _trace("colorbar", fig).marker.showscale, metric
