"""Style rules: boxes coloured by name or class pattern, first match wins, in figures, exports and the CLI's
text form; bad rules are refused with what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchvista_dash.demos import demo_trace
from torchvista_dash.model.options import DrawOptions, style_rules, style_text
from torchvista_dash.pipeline import paint_of
from torchvista_dash.view import build as view

RULES = [("re:.*attn.*", "#e45756"), ("cls:Linear", "#4c78a8"), ("re:.*", "#999999")]


def test_the_first_matching_rule_colours_a_box() -> None:
    g = demo_trace("gpt").graph
    vg = view.build_view(g, view.make_spec(g, expanded={"blocks.0"}))
    paint = paint_of(g, vg, DrawOptions(style=RULES))
    assert paint is not None
    fills = {vid: bp.fill for vid, bp in paint.boxes.items()}
    assert fills["mod:blocks.0.attn"] == "#e45756"  # a name match
    assert fills["mod:lm_head"] == "#4c78a8"  # a class match (lm_head is an nn.Linear)
    assert fills["mod:blocks.0.ln_1"] == "#999999"  # the catch-all, last
    assert paint.clusters["mod:blocks.0"].line == "#999999"  # an open module: its outline
    assert paint.boxes["mod:lm_head"].text == "#ffffff" and paint.boxes["mod:blocks.0.ln_1"].text == "#111111"
    only_class = paint_of(g, vg, DrawOptions(style=[("cls:Linear", "#4c78a8")]))
    assert only_class is not None and "mod:blocks.0.attn" not in only_class.boxes


def test_rules_have_a_text_form_and_bad_ones_say_what_to_write() -> None:
    rules = style_rules("re:.*attn.*=#E45756; cls:Linear=#4c78a8")
    assert rules == (("re:.*attn.*", "#e45756"), ("cls:Linear", "#4c78a8"))
    assert style_rules(style_text(rules)) == rules
    assert DrawOptions(style=[["cls:Linear", "#abc"]]).style == (("cls:Linear", "#abc"),)  # JSON lists
    with pytest.raises(ValueError, match="must start with 're:'"):
        style_rules([("attn", "#e45756")])
    with pytest.raises(ValueError, match="not a regular expression"):
        style_rules("re:(=#e45756")
    with pytest.raises(ValueError, match="must be #rgb or #rrggbb"):
        style_rules([("cls:Linear", "red; stroke:url(javascript:x)")])
    with pytest.raises(ValueError, match="needs a colour"):
        style_rules("cls:Linear")


def test_figures_and_exports_draw_the_rules(tmp_path: Path) -> None:
    t = demo_trace("gpt")
    svg = t.export(tmp_path / "s.svg", style=RULES[:2]).read_text()
    assert "#4c78a8" in svg.lower()
    fig = t.figure(style=RULES[:2])
    pictures = [im.source for im in fig.layout.images]
    assert pictures and any("4c78a8" in _decoded(src) for src in pictures)


def _decoded(src: str) -> str:
    import base64

    return base64.b64decode(src.split(",", 1)[1]).decode() if src.startswith("data:") else src
