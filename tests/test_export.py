"""pipeline.export and render/static: real files from a real trace (Graphviz for svg/png/pdf, plotly.js in
html)."""

from __future__ import annotations

import dataclasses
import re
import struct
import xml.etree.ElementTree as ET

import pytest
import torch
from support_render import Broken, TinyNet, grid_case, picture_of

from torchvista_dash import load_trace, trace_model
from torchvista_dash.layout import GraphvizError
from torchvista_dash.layout.types import Layout
from torchvista_dash.pipeline import FORMATS, export
from torchvista_dash.render.labels import header_text
from torchvista_dash.render.static.graphviz import static_image, to_static_dot
from torchvista_dash.render.static.html import HTML_DIV_ID

SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def tiny(dot_binary):
    torch.manual_seed(0)
    return trace_model(TinyNet(), torch.randn(2, 8))


def render_static(g, vg, lay, path, fmt, theme="light"):
    path.write_bytes(static_image(g, vg, lay, fmt, theme))
    return path


def svg_texts(path) -> list[str]:
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG_NS}svg"
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def test_svg_is_valid_and_shows_the_view(tiny, tmp_path):
    out = tiny.export(tmp_path / "model.svg", depth=1, expanded=["blocks"])
    texts = svg_texts(out)
    vg = tiny.view(depth=1, expanded=["blocks"])
    for n in vg.nodes:
        assert any(n.label.split(" ×")[0] in t for t in texts), n.label
    assert any(t.startswith("⊕ embed: Linear") for t in texts)  # collapsed module: can open
    assert any(t.startswith("⊖ blocks: Sequential") for t in texts)  # expanded cluster: can close
    assert any("×3" in t for t in texts)  # folded group
    assert "2×16" in texts  # edge label


def test_png_has_signature_and_real_size(tiny, tmp_path):
    out = tiny.export(tmp_path / "model.png", depth=None)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 100 and height > 300 and len(data) > 5000


def test_pdf_header(tiny, tmp_path):
    data = tiny.export(tmp_path / "model.pdf").read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:] and len(data) > 2000


def test_html_is_standalone_and_deterministic(tiny, tmp_path):
    a = tiny.to_html(tmp_path / "a.html", depth=1)
    b = tiny.export(tmp_path / "b.html", depth=1)
    text = a.read_text(encoding="utf-8")
    assert a.read_bytes() == b.read_bytes()
    assert f'id="{HTML_DIV_ID}"' in text
    assert "<script src=" not in text  # plotly.js embedded: works offline
    assert len(text) > 1_000_000 and "TinyNet — torchvista_dash" in text
    assert '"scrollZoom": true' in text


def test_json_round_trips(tiny, tmp_path):
    out = tiny.export(tmp_path / "trace.json")
    assert load_trace(out).graph == tiny.graph


def test_format_from_fmt_overrides_the_extension(tiny, tmp_path):
    out = export(tiny, tmp_path / "picture.out", fmt="svg")
    assert svg_texts(out)


@pytest.mark.parametrize("name", ["model.gif", "model.jpeg", "model"])
def test_unsupported_or_missing_extension_lists_formats(tiny, tmp_path, name):
    with pytest.raises(ValueError) as info:
        tiny.export(tmp_path / name)
    assert all(f in str(info.value) for f in FORMATS)
    assert not (tmp_path / name).exists()


def test_missing_directory_is_a_clear_error(tiny, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tiny.export(tmp_path / "nope" / "model.svg")


def test_static_export_keeps_theme_and_failure_colours(dot_binary, tmp_path):
    g, vg, lay = grid_case(12, failed=True)
    dark = render_static(g, vg, lay, tmp_path / "dark.svg", "svg", theme="dark").read_text(encoding="utf-8")
    light = render_static(g, vg, lay, tmp_path / "light.svg", "svg").read_text(encoding="utf-8")
    assert 'fill="#111111"' in dark and 'fill="#ffffff"' in light  # backgrounds of the templates
    assert 'stroke="#d62728"' in light and 'stroke="#ff5c5c"' in dark  # failed op / modules in red
    dot = to_static_dot(g, vg, lay, highlight="n:7")
    assert dot.count('!"') == len(vg.nodes) + 2 * len(vg.clusters) + 1  # every position pinned


def test_failed_trace_exports(dot_binary, tmp_path):
    with pytest.warns(UserWarning):
        t = trace_model(Broken(), torch.randn(2, 8))
    svg = t.export(tmp_path / "broken.svg", depth=None).read_text(encoding="utf-8")
    assert "#d62728" in svg


def test_special_characters_survive_dot_and_svg(dot_binary, tmp_path):
    g, vg, lay = grid_case(12)
    weird = 'a<b> & "c" \\ d'
    nodes = tuple(dataclasses.replace(n, label=weird) if n.id == "n:6" else n for n in vg.nodes)
    clusters = tuple(dataclasses.replace(c, label=weird) if c.id == "mod:enc" else c for c in vg.clusters)
    vg = dataclasses.replace(vg, nodes=nodes, clusters=clusters)
    texts = svg_texts(render_static(g, vg, lay, tmp_path / "weird.svg", "svg"))
    assert weird in texts and f"⊖ {weird}" in texts


def test_a_header_longer_than_its_cluster_is_shortened_with_an_ellipsis(dot_binary, tmp_path):
    g, vg, lay = grid_case(12)
    long = "encoder: " + "VeryLongModuleClassName" * 8
    clusters = tuple(dataclasses.replace(c, label=long) if c.id == "mod:enc" else c for c in vg.clusters)
    vg = dataclasses.replace(vg, clusters=clusters)
    texts = svg_texts(render_static(g, vg, lay, tmp_path / "long.svg", "svg"))
    header = next(t for t in texts if t.startswith("⊖ encoder"))
    assert header.endswith("…") and len(header) < len(long), header
    assert header == header_text(long, lay.clusters["mod:enc"])  # as the interactive picture draws it


def test_empty_view_renders(dot_binary, tmp_path):
    g, vg, _ = grid_case(12)
    empty = dataclasses.replace(vg, nodes=(), edges=(), clusters=())
    lay = Layout(nodes={}, clusters={}, parent={}, edges=(), width=0.0, height=0.0)
    assert svg_texts(render_static(g, empty, lay, tmp_path / "empty.svg", "svg")) == []


def test_html_takes_drawing_options_and_rejects_unknown_ones(tiny, tmp_path):
    text = tiny.to_html(tmp_path / "hl.html", depth=1, highlight="mod:head", labels=False).read_text(
        encoding="utf-8"
    )
    assert '"name":"highlight"' in text and '"images"' in text
    with pytest.raises(TypeError, match="colour"):
        tiny.export(tmp_path / "x.html", colour="red")


def test_png_of_a_tall_view_is_capped_in_pixels(dot_binary, tmp_path):
    from torchvista_dash.render.static.graphviz import PNG_MAX_PX

    g, vg, lay = grid_case(1200, cols=4)  # ~26,000 points tall
    data = render_static(g, vg, lay, tmp_path / "tall.png", "png").read_bytes()
    width, height = struct.unpack(">II", data[16:24])
    assert PNG_MAX_PX * 0.9 < height <= PNG_MAX_PX + 100 and width > 100


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_static_and_interactive_use_the_same_colours(theme):
    from torchvista_dash.render import make_figure

    g, vg, lay = grid_case(12, failed=True)
    fig = make_figure(g, vg, lay, theme=theme)
    dot = to_static_dot(g, vg, lay, theme)
    css = picture_of(fig).find(f"{SVG_NS}style").text  # the interactive picture's colours per kind
    pairs = re.findall(r"\.k[a-z]+\{fill:(#[0-9a-f]{6});stroke:(#[0-9a-f]{6})", css)
    assert len(pairs) >= 4
    for fill, line in pairs:
        assert f'fillcolor="{fill}"' in dot and f'color="{line}"' in dot, (fill, line)


def test_static_export_runs_under_the_graphviz_time_budget(dot_binary, tmp_path, monkeypatch):
    """The static export starts Graphviz through the layout's runner, so $TVD_DOT_TIMEOUT bounds it too."""
    g, vg, lay = grid_case(1200, cols=4)
    monkeypatch.setenv("TVD_DOT_TIMEOUT", "0.001")
    with pytest.raises(GraphvizError, match=r"neato ran past its time budget of 0.001 s"):
        static_image(g, vg, lay, "svg")
    monkeypatch.setenv("TVD_DOT_TIMEOUT", "60")
    assert static_image(g, vg, lay, "svg").lstrip().startswith(b"<?xml")


def test_static_export_leaves_out_edge_labels_over_headers_boxes_or_each_other(dot_binary):
    """The lead's case: GPT2LMHeadModel from a small config, KV cache on; its input's "1×8" lay on the
    "⊖ GPT2LMHeadModel" header in PNG/SVG exports. As in the picture (render/labels.py), such a label is left
    out, and every label drawn covers no box, no header and no other label."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from torchvista_dash.layout.textmetrics import CHAR_EM, EDGE_PT
    from torchvista_dash.render.labels import header_rect
    from torchvista_dash.render.static.graphviz import static_dot
    from torchvista_dash.render.style import CLOSE_MARK

    torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(n_layer=3, n_embd=64, n_head=2, vocab_size=500)).eval()
    t = trace_model(m, (torch.randint(0, 500, (1, 8), generator=torch.Generator().manual_seed(0)),))
    vg = t.view()
    lay = t.layout(vg)
    drawn = []
    for e in static_dot(t.graph, vg, lay).get_edges():
        if e.get("label"):
            label, lp = (getattr(v, "text", v).strip('"') for v in (e.get("label"), e.get("lp")))
            x, y = (float(v) for v in lp.split(","))
            half = len(label) * EDGE_PT * CHAR_EM / 2
            drawn.append((x - half, y - EDGE_PT * 0.6, x + half, y + EDGE_PT * 0.6))
    heads = [header_rect(f"{CLOSE_MARK} {c.label}", lay.clusters[c.id]) for c in vg.clusters]

    def meets(a, b):
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    assert drawn and len(drawn) < sum(1 for e in lay.edges if e.label)
    for i, r in enumerate(drawn):
        assert not [b for b in (*lay.nodes.values(), *heads) if meets(r, b)], r
        assert not [q for q in drawn[i + 1 :] if meets(r, q)], r
