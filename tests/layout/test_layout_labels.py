"""Hostile names reach Graphviz safely (issue 10, item 7): control characters are escaped, long labels are cut
in the picture while hover and details keep the whole name. Real ``dot`` runs."""

from __future__ import annotations

import base64
import xml.dom.minidom

import pytest
from support_graphs import GraphBuilder

from torchvista_dash import Trace
from torchvista_dash.layout.single.dot import to_dot
from torchvista_dash.model.graph import Graph
from torchvista_dash.view.types import MAX_LABEL_CHARS, label_text

NASTY = {
    "nul": "a\x00b",
    "escape": "red\x1b[31m\x01",
    "newline": "two\nlines\r\t",
    "surrogate": "bad\ud800",
    "bidi": "abc\u202edef",
    "quotes": 'q"\\"\\',
}


def named(name: str) -> Graph:
    """input → blk (a module of class ``name``) holding an op called ``name`` → relu → output."""
    b = GraphBuilder()
    x = b.input("x", (2, 4))
    blk = b.call("blk", name, b.root)
    h = b.op(name, blk, (x,), (2, 4))
    h = b.op("relu", b.root, (h,), (2, 4))
    b.output(h)
    return b.build()


def _picture(fig) -> xml.dom.minidom.Document:
    """The figure's picture (an SVG layout image) parsed as XML: raw control characters would not parse."""
    source = fig.layout.images[0].source
    return xml.dom.minidom.parseString(base64.b64decode(source.split(",", 1)[1]))


def _labels(fig) -> list[str]:
    """Every text the picture draws (labels, sublabels, headers)."""
    return [
        "".join(c.data for c in el.childNodes if c.nodeType == c.TEXT_NODE)
        for el in _picture(fig).getElementsByTagName("text")
        for el in [el, *el.getElementsByTagName("tspan")]
    ]


def _hovers(fig) -> str:
    return "\n".join(h for tr in fig.data if tr.hovertext for h in tr.hovertext)


@pytest.mark.parametrize("case", list(NASTY))
def test_control_characters_in_names_are_escaped_for_dot(case: str, tmp_path) -> None:
    name = NASTY[case]
    t = Trace(named(name))
    for depth in (1, None):  # the collapsed module box, then the open cluster and its op
        vg = t.view(depth=depth)
        dot_text = to_dot(vg).to_string()
        assert not any(ord(c) < 0x20 and c != "\n" for c in dot_text)
        assert "\ud800" not in dot_text
        fig = t.figure(depth=depth)  # real dot: this raised "badly delimited number" for a NUL
        assert any(
            label_text(name) in label
            for label in [n.label for n in vg.nodes] + [c.label for c in vg.clusters]
        )
        assert _labels(fig)  # the picture parses as XML and draws text
    svg = t.export(tmp_path / "m.svg", depth=None).read_text(encoding="utf-8")
    xml.dom.minidom.parseString(svg)  # well-formed: no raw control character reached the SVG


def test_escapes_are_visible_text() -> None:
    assert label_text("a\x00b\nc") == "a\\x00b\\x0ac"
    assert label_text("bad\ud800") == "bad\\ud800"
    assert label_text("ünïcode ✓ 模型") == "ünïcode ✓ 模型"


def test_a_long_name_is_cut_in_the_picture_and_whole_in_hover(tmp_path) -> None:
    name = "VeryLong" + "x" * 12_000  # over dot's 16 KB quoted-string and 65,535-point limits
    t = Trace(named(name))
    for depth in (1, None):
        fig = t.figure(depth=depth)
        assert max(len(text) for text in _labels(fig)) <= len("⊖ ") + MAX_LABEL_CHARS
        assert name in _hovers(fig)  # the hover still has all of it
    cluster = t.view(depth=None).clusters[-1]
    assert len(cluster.label) == MAX_LABEL_CHARS and cluster.label.endswith("…")
    assert t.export(tmp_path / "long.svg", depth=None).stat().st_size > 0
