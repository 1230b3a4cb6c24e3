"""Reading dot's JSON while dot writes it (layout/graphviz/stream.py) gives the same Layout as reading it
whole."""

from __future__ import annotations

import json

import pytest
from support_graphs import nested_graph, stack_graph, twice_graph

from torchvista_dash import layout
from torchvista_dash.layout import DOT_FORMAT
from torchvista_dash.layout.graphviz.stream import JsonStream
from torchvista_dash.layout.single.dot import build_dot
from torchvista_dash.layout.single.parse import parse_json
from torchvista_dash.view import build as view


def _views():
    for g in (stack_graph(12), nested_graph(), twice_graph()):
        for spec in (
            view.make_spec(g),
            view.make_spec(g, depth=None, fold_repeats=False),
            view.make_spec(g, depth=0),
        ):
            yield view.build_view(g, spec)


def _dot_output(vg, rankdir="TB"):
    dot, names = build_dot(vg, rankdir)
    return layout.run_dot(dot.to_string(), DOT_FORMAT), names


def _streamed(raw: bytes, vg, names, size: int, rankdir="TB") -> tuple[layout.Layout, str]:
    stream = JsonStream(vg, names, rankdir)
    for i in range(0, len(raw), size):
        stream.feed(raw[i : i + size])
    section = stream.section
    return stream.layout(), section


@pytest.mark.parametrize("size", [1, 7, 500, 4096, 10**9])
def test_streamed_output_reads_like_the_whole_document_in_any_chunking(dot_binary, size):
    for vg in _views():
        raw, names = _dot_output(vg)
        lay, section = _streamed(raw, vg, names, size)
        assert section == "done"  # read as it came, not left to the end
        assert lay == parse_json(raw, vg, names, "TB")


def test_output_in_another_shape_is_read_whole_at_the_end(dot_binary):
    vg = view.build_view(stack_graph(6), view.make_spec(stack_graph(6), depth=None, fold_repeats=False))
    raw, names = _dot_output(vg, "LR")
    expected = parse_json(raw, vg, names, "LR")
    data = json.loads(raw)
    compact = json.dumps(data).encode()  # one line: no element boundaries to cut at
    lay, section = _streamed(compact, vg, names, 300, "LR")
    assert section != "done" and lay == expected
    # same indentation as dot, but edges out of dot's numbering order: the streamed reading gives up
    data["edges"].reverse()
    shuffled = json.dumps(data, indent=2).encode()
    lay, section = _streamed(shuffled, vg, names, 300, "LR")
    assert section == "whole" and lay == expected


def test_layout_view_reads_dots_output_as_it_streams(dot_binary):
    layout.clear_cache()
    for vg in _views():
        raw, names = _dot_output(vg)
        assert layout.layout_view(vg, method="single") == parse_json(raw, vg, names, "TB")


def test_garbled_output_is_a_clear_error(dot_binary):
    vg = view.build_view(twice_graph(), view.make_spec(twice_graph()))
    raw, names = _dot_output(vg)
    stream = JsonStream(vg, names, "TB")
    stream.feed(raw[: len(raw) // 2])  # dot died half-way through its output
    with pytest.raises(layout.GraphvizError, match="could not read Graphviz JSON"):
        stream.layout()
